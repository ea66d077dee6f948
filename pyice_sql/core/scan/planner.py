"""Scan planning: from a snapshot and a row filter to the data files to read and their deletes.

manifest list → data manifests pruned by partition summaries (per spec) → entries pruned by
partition (inclusive projection of the filter) and by column metrics → each surviving data
file is paired with the delete files that apply to it (DeleteFileIndex). Planning runs on the
driver and touches each manifest once and each entry once: its cost grows with files, not
rows. The counters it keeps are what EXPLAIN and the pruning tests report.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from pyice_sql.core.format.manifests import read_entries, read_manifest_list
from pyice_sql.core.expr.evaluators import InclusiveMetricsEvaluator, ManifestEvaluator, PartitionEvaluator
from pyice_sql.core.expr.predicates import AlwaysTrue, Expression
from pyice_sql.core.format.fileio import FileIO
from pyice_sql.core.model.conversions import to_bytes
from pyice_sql.core.model.default_values import from_json, read_as_initial_default
from pyice_sql.core.model.manifest import DataFile, EntryStatus, ManifestContent, ManifestEntry
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.types import is_primitive, walk_fields
from pyice_sql.core.model.snapshots import Snapshot
from pyice_sql.core.scan.delete_index import DeleteFileIndex


@dataclass(frozen=True)
class FileScanTask:
    """A live data file to read, the manifest it was found in, and the delete files that apply."""

    entry: ManifestEntry
    manifest_path: str
    deletes: tuple[ManifestEntry, ...] = ()
    # the table schema when the file was added (its snapshot's), set only for tables with several
    # schemas: the reader needs a file's own column types after a type promotion (int → long, ...)
    # and its own column names after a rename
    written_schema: Schema | None = field(default=None, compare=False, repr=False)
    # where that snapshot has expired: the ids of the fields whose name another field had, or whose
    # type was promoted, in some schema of the table, or (in a table with a list or map, read by
    # names) that were renamed: the reader then asks the file's footer
    changed_ids: frozenset[int] = field(default=frozenset(), compare=False, repr=False)
    # and then every name each field id had in the table's schemas: a file written without ids is
    # matched by them, as a name mapping matches it
    former_names: dict[int, tuple[str, ...]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def file(self) -> DataFile:
        return self.entry.data_file

    @property
    def data_sequence_number(self) -> int:
        return self.entry.sequence_number or 0


@dataclass
class ScanMetrics:
    manifests_total: int = 0
    manifests_skipped: int = 0
    data_files_total: int = 0
    skipped_by_partition: int = 0
    skipped_by_metrics: int = 0
    delete_files: int = 0
    bytes_to_scan: int = 0
    planning_s: float = 0.0  # driver wall time of plan_files (manifest reads + pruning)

    def __str__(self) -> str:
        return (f"manifests {self.manifests_total - self.manifests_skipped}/{self.manifests_total} read, "
                f"data files {self.data_files_total - self.skipped_by_partition - self.skipped_by_metrics}/"
                f"{self.data_files_total} kept ({self.skipped_by_partition} pruned by partition, "
                f"{self.skipped_by_metrics} by column metrics), {self.delete_files} delete files, "
                f"{self.bytes_to_scan} bytes to scan")


@dataclass
class ScanPlan:
    snapshot: Snapshot | None
    tasks: list[FileScanTask] = field(default_factory=list)
    metrics: ScanMetrics = field(default_factory=ScanMetrics)
    row_filter: Expression = field(default_factory=AlwaysTrue)
    delete_manifests: dict[str, str] = field(default_factory=dict)  # delete file path → its manifest

    @property
    def delete_files(self) -> list[ManifestEntry]:
        seen: dict[str, ManifestEntry] = {}
        for t in self.tasks:
            for d in t.deletes:
                seen.setdefault((d.data_file.file_path, d.data_file.content_offset), d)  # DVs share files
        return list(seen.values())


def plan_files(metadata: TableMetadata, io: FileIO, snapshot: Snapshot | None,
               row_filter: Expression | None = None, case_sensitive: bool = False) -> ScanPlan:
    started = time.perf_counter()
    row_filter = row_filter if row_filter is not None else AlwaysTrue()
    plan = ScanPlan(snapshot, row_filter=row_filter)
    if snapshot is None:
        return plan
    if snapshot.manifest_list is None:
        raise NotImplementedError("v1 snapshots with inline manifests (no manifest list) are not supported")
    schema = metadata.schema()
    manifest_evals: dict[int, ManifestEvaluator] = {}
    partition_evals: dict[int, PartitionEvaluator] = {}
    metrics_eval = InclusiveMetricsEvaluator(schema, row_filter, case_sensitive)
    m = plan.metrics

    def manifest_eval(spec_id: int) -> ManifestEvaluator:
        if spec_id not in manifest_evals:
            manifest_evals[spec_id] = ManifestEvaluator(metadata.spec_by_id(spec_id), schema, row_filter,
                                                        case_sensitive)
        return manifest_evals[spec_id]

    def partition_eval(spec_id: int) -> PartitionEvaluator:
        if spec_id not in partition_evals:
            partition_evals[spec_id] = PartitionEvaluator(metadata.spec_by_id(spec_id), schema, row_filter,
                                                          case_sensitive)
        return partition_evals[spec_id]

    data: list[tuple[ManifestEntry, str]] = []
    deletes = DeleteFileIndex()
    written = _written_schemas(metadata)
    defaulted = {sid: default_metrics(schema, s) for sid, s in written.items()}
    for manifest in read_manifest_list(io, snapshot.manifest_list):
        m.manifests_total += 1
        if not manifest_eval(manifest.partition_spec_id).eval(manifest):
            m.manifests_skipped += 1
            continue
        for entry in read_entries(io, manifest):
            if entry.status == EntryStatus.DELETED:
                continue
            f = entry.data_file
            if manifest.content == ManifestContent.DELETES:
                if partition_eval(f.spec_id).eval(f.partition):
                    deletes.add(entry, metadata.spec_by_id(f.spec_id).is_unpartitioned)
                    plan.delete_manifests[f.file_path] = manifest.manifest_path
                continue
            m.data_files_total += 1
            if not partition_eval(f.spec_id).eval(f.partition):
                m.skipped_by_partition += 1
            elif not metrics_eval.eval(with_default_metrics(f, defaulted.get(entry.snapshot_id))):
                m.skipped_by_metrics += 1
            else:
                data.append((entry, manifest.manifest_path))
    names = _field_names(metadata) if written else {}
    changed = _changed_ids(metadata, names) if written else frozenset()
    for entry, manifest_path in data:
        applicable = deletes.for_data_file(entry.data_file, entry.sequence_number or 0)
        known = written.get(entry.snapshot_id)
        plan.tasks.append(FileScanTask(entry, manifest_path, applicable, known,
                                       changed if known is None else frozenset(),
                                       names if known is None and changed else {}))
        m.bytes_to_scan += entry.data_file.file_size_in_bytes
    m.delete_files = len(plan.delete_files)
    m.planning_s = time.perf_counter() - started
    return plan


def default_metrics(schema: Schema, written: Schema) -> dict[int, bytes]:
    """Field id → single-value bytes of the initial-default of each column files written with
    `written` lack (see `read_as_initial_default`)."""
    return {f.field_id: to_bytes(f.type, from_json(f.type, f.initial_default))
            for f in read_as_initial_default(schema, written)}


def with_default_metrics(f: DataFile, defaults: dict[int, bytes] | None) -> DataFile:
    """`f` with the column metrics its missing defaulted columns have (all rows the default, no
    nulls or NaN), so a filter on such a column prunes by the default rather than by nothing."""
    if not defaults or f.record_count < 0:
        return f

    def merged(stats: dict | None, values: dict) -> dict:
        return {**(stats or {}), **values}
    counts = {i: f.record_count for i in defaults}
    zeros = dict.fromkeys(defaults, 0)
    return dataclasses.replace(f, value_counts=merged(f.value_counts, counts),
                               null_value_counts=merged(f.null_value_counts, zeros),
                               nan_value_counts=merged(f.nan_value_counts, zeros),
                               lower_bounds=merged(f.lower_bounds, defaults),
                               upper_bounds=merged(f.upper_bounds, defaults))


def _field_names(metadata: TableMetadata) -> dict[int, tuple[str, ...]]:
    """Field id → every name it had in the table's schemas."""
    names: dict[int, dict[str, None]] = {}
    for schema in metadata.schemas:
        for _, f in walk_fields(schema.struct):
            names.setdefault(f.field_id, {})[f.name] = None
    return {i: tuple(n) for i, n in names.items()}


def _changed_ids(metadata: TableMetadata, names: dict[int, tuple[str, ...]]) -> frozenset[int]:
    """The ids of the fields (at any depth) whose full name, in any case, another field id had in
    some schema of the table (a column dropped and added again, names swapped), or whose type
    differs between two schemas (promoted): a file of an unknown schema may hold them otherwise.
    In a table with a list or map column, which Spark reads by names (`reader`), also those
    renamed (`names`: every name of each id)."""
    renamed = {i for i, n in names.items() if len(n) > 1} if metadata.schema().has_list_or_map() else set()
    ids_by_name: dict[tuple[str, ...], set[int]] = {}
    types_by_id: dict[int, set] = {}
    for schema in metadata.schemas:
        for path, f in walk_fields(schema.struct):
            ids_by_name.setdefault(tuple(p.lower() for p in path), set()).add(f.field_id)
            if is_primitive(f.type):
                types_by_id.setdefault(f.field_id, set()).add(f.type)
    return frozenset({i for ids in ids_by_name.values() if len(ids) > 1 for i in ids}
                     | {i for i, types in types_by_id.items() if len(types) > 1} | renamed)


def _written_schemas(metadata: TableMetadata) -> dict[int | None, Schema]:
    """Snapshot id → the schema current when it was committed (empty for single-schema tables)."""
    if len(metadata.schemas) < 2:
        return {}
    out: dict[int | None, Schema] = {}
    for snap in metadata.snapshots:
        schema = metadata.schema_by_id(snap.schema_id) if snap.schema_id is not None else None
        if schema is not None:
            out[snap.snapshot_id] = schema
    return out
