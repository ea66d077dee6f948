"""Iceberg's metadata tables (`t.snapshots`, `t.files`, `t.partitions`, ...) as Spark DataFrames.

Users inspect and debug tables through these, and compare them with what Iceberg Java shows, so
column names, order, types and nullability follow Iceberg Java 1.10 (SnapshotsTable,
HistoryTable, FilesTable, ManifestsTable, AllManifestsTable, ManifestEntriesTable,
PartitionsTable, RefsTable, MetadataLogEntriesTable), including its quirks: `partition` columns
use the table's unified partition type (every spec's fields whose source column still exists,
ordered by field id, named as in the newest spec) and are left out entirely when that type is
empty; manifest partition summaries are Java's human strings ("null" for a missing bound);
a snapshot summary does not repeat `operation`.

Rows are built on the driver from metadata, manifest lists and manifests (each manifest is read
at most once per call), then handed to `spark.createDataFrame` with an explicit schema.

Not provided: the `readable_metrics` column of files/entries (use lower_bounds/upper_bounds,
which stay binary maps as in Java), and the `all_files`/`all_entries` tables. `first_row_id`,
`content_offset` and `content_size_in_bytes` are only set in format v3 (deletion vectors, row lineage).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.format.manifests import read_entries, read_manifest_list
from pyice_sql.core.errors import AnalysisError, UnsupportedError
from pyice_sql.core.model.conversions import EPOCH_UTC, from_bytes, to_python
from pyice_sql.core.model.manifest import (
    DataFile, EntryStatus, FieldSummary, FileContent, ManifestContent, ManifestEntry, ManifestFile,
)
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.snapshots import Snapshot
from pyice_sql.core.model.types import IcebergType, NestedField
from pyice_sql.spark.schema import to_spark_struct

Rows = list[tuple[Any, ...]]

_INT, _LONG, _STRING, _BOOL, _BINARY, _TS = (
    T.IntegerType(), T.LongType(), T.StringType(), T.BooleanType(), T.BinaryType(), T.TimestampType())


def _req(name: str, dtype: T.DataType) -> T.StructField:
    return T.StructField(name, dtype, nullable=False)


def _opt(name: str, dtype: T.DataType) -> T.StructField:
    return T.StructField(name, dtype, nullable=True)


def _timestamp(ms: int) -> dt.datetime:
    """A UTC-aware datetime, which PySpark turns into the right TIMESTAMP whatever the local zone."""
    return EPOCH_UTC + dt.timedelta(milliseconds=ms)


# ------------------------------------------------------------------------------ partitions


@dataclass(frozen=True)
class _UnifiedPartition:
    """Java's `Partitioning.partitionType(table)`: one struct that every spec's tuple projects into."""

    fields: tuple[NestedField, ...]

    @classmethod
    def of(cls, metadata: TableMetadata) -> "_UnifiedPartition":
        schema = metadata.schema()
        chosen: dict[int, tuple[str, IcebergType, bool]] = {}
        for spec in sorted(metadata.specs, key=lambda s: s.spec_id, reverse=True):
            types = {f.field_id: f.type for f in spec.partition_type(schema).fields}
            for f in spec.fields:
                if schema.find_field(f.source_id) is None:
                    continue
                void = str(f.transform) == "void"
                known = chosen.get(f.field_id)
                if known is None:
                    chosen[f.field_id] = (f.name, types[f.field_id], void)
                elif known[2] and not void:  # a v1 dropped field: take the real field's type
                    chosen[f.field_id] = (known[0], types[f.field_id], False)
        return cls(tuple(NestedField(fid, name, t, False) for fid, (name, t, _) in sorted(chosen.items())))

    @property
    def spark_type(self) -> T.StructType | None:
        """None when the table was never partitioned: Java then drops the `partition` column."""
        return to_spark_struct(self.fields, with_ids=False) if self.fields else None

    def project(self, spec: PartitionSpec, values: tuple[Any, ...]) -> tuple[int, tuple[Any, ...]]:
        """The file's partition in the unified struct, with the count of fields its spec has.

        Java's partitions table keys on both, so ('a', null) from a spec without the second field
        and ('a', null) from a spec with it are different partitions.
        """
        by_id = {f.field_id: v for f, v in zip(spec.fields, values)}
        return (sum(f.field_id in by_id for f in self.fields),
                tuple(to_python(f.type, by_id.get(f.field_id)) for f in self.fields))


# ------------------------------------------------------------------------------ the tables


@dataclass
class _Source:
    """What a builder reads: the table, the chosen snapshot, and manifest access."""

    table: Table
    snapshot: Snapshot | None

    @property
    def metadata(self) -> TableMetadata:
        return self.table.metadata

    def manifests(self, snapshot: Snapshot | None = None) -> list[ManifestFile]:
        snapshot = snapshot or self.snapshot
        if snapshot is None:
            return []
        if snapshot.manifest_list is None:
            raise UnsupportedError(f"snapshot {snapshot.snapshot_id} of {self.table.full_name} lists its "
                                   "manifests inline (format v1 without a manifest list); not supported")
        return read_manifest_list(self.table.io, snapshot.manifest_list)

    def entries(self, contents: Iterable[ManifestContent], live_only: bool) -> Iterable[ManifestEntry]:
        wanted = set(contents)
        for manifest in self.manifests():
            if manifest.content in wanted:
                for entry in read_entries(self.table.io, manifest):
                    if not live_only or entry.status != EntryStatus.DELETED:
                        yield entry


def _snapshots(src: _Source) -> tuple[T.StructType, Rows]:
    schema = T.StructType([
        _req("committed_at", _TS), _req("snapshot_id", _LONG), _opt("parent_id", _LONG),
        _opt("operation", _STRING), _opt("manifest_list", _STRING),
        _opt("summary", T.MapType(_STRING, _STRING, valueContainsNull=False)),
    ])
    rows = [(_timestamp(s.timestamp_ms), s.snapshot_id, s.parent_snapshot_id, s.operation, s.manifest_list,
             {k: v for k, v in s.summary.items() if k != "operation"} if s.summary else None)
            for s in src.metadata.snapshots]
    return schema, rows


def _history(src: _Source) -> tuple[T.StructType, Rows]:
    schema = T.StructType([_req("made_current_at", _TS), _req("snapshot_id", _LONG),
                           _opt("parent_id", _LONG), _req("is_current_ancestor", _BOOL)])
    metadata = src.metadata
    ancestors = set()
    snapshot = metadata.current_snapshot()
    while snapshot is not None:
        ancestors.add(snapshot.snapshot_id)
        snapshot = (metadata.snapshot_by_id(snapshot.parent_snapshot_id)
                    if snapshot.parent_snapshot_id is not None else None)
    rows = []
    for entry in metadata.snapshot_log:
        snapshot = metadata.snapshot_by_id(entry.snapshot_id)
        rows.append((_timestamp(entry.timestamp_ms), entry.snapshot_id,
                     snapshot.parent_snapshot_id if snapshot else None, entry.snapshot_id in ancestors))
    return schema, rows


def _refs(src: _Source) -> tuple[T.StructType, Rows]:
    schema = T.StructType([
        _req("name", _STRING), _req("type", _STRING), _req("snapshot_id", _LONG),
        _opt("max_reference_age_in_ms", _LONG), _opt("min_snapshots_to_keep", _INT),
        _opt("max_snapshot_age_in_ms", _LONG),
    ])
    rows = [(name, ref.type.upper(), ref.snapshot_id, ref.max_ref_age_ms, ref.min_snapshots_to_keep,
             ref.max_snapshot_age_ms) for name, ref in src.metadata.refs.items()]
    return schema, rows


def _metadata_log_entries(src: _Source) -> tuple[T.StructType, Rows]:
    """Previous metadata files plus the current one, each with the snapshot current at its time."""
    schema = T.StructType([
        _req("timestamp", _TS), _req("file", _STRING), _opt("latest_snapshot_id", _LONG),
        _opt("latest_schema_id", _INT), _opt("latest_sequence_number", _LONG),
    ])
    metadata = src.metadata
    files = [(e.timestamp_ms, e.metadata_file) for e in metadata.metadata_log]
    files.append((metadata.last_updated_ms, src.table.metadata_location))
    rows = []
    for timestamp_ms, path in files:
        # the latest snapshot-log entry at or before this time; the first one wins a tie
        latest = None
        for entry in metadata.snapshot_log:
            if entry.timestamp_ms <= timestamp_ms and (latest is None or entry.timestamp_ms > latest.timestamp_ms):
                latest = entry
        snapshot = metadata.snapshot_by_id(latest.snapshot_id) if latest else None
        rows.append((_timestamp(timestamp_ms), path, latest.snapshot_id if latest else None,
                     snapshot.schema_id if snapshot else None, snapshot.sequence_number if snapshot else None))
    return schema, rows


# --- manifests

def _manifests_schema(all_snapshots: bool) -> T.StructType:
    """ManifestsTable's columns; AllManifestsTable makes a few optional and adds reference_snapshot_id."""
    loose = _opt if all_snapshots else _req
    summary = T.StructType([_req("contains_null", _BOOL), (_req if all_snapshots else _opt)("contains_nan", _BOOL),
                            _opt("lower_bound", _STRING), _opt("upper_bound", _STRING)])
    fields = [
        _req("content", _INT), _req("path", _STRING), _req("length", _LONG),
        loose("partition_spec_id", _INT), loose("added_snapshot_id", _LONG),
        loose("added_data_files_count", _INT), loose("existing_data_files_count", _INT),
        loose("deleted_data_files_count", _INT), _req("added_delete_files_count", _INT),
        _req("existing_delete_files_count", _INT), _req("deleted_delete_files_count", _INT),
        loose("partition_summaries", T.ArrayType(summary, containsNull=False)),
    ]
    if all_snapshots:
        fields.append(_req("reference_snapshot_id", _LONG))
    return T.StructType(fields)


def _human_bound(spec: PartitionSpec, field_type: IcebergType, index: int, bound: bytes | None) -> str:
    value = None if bound is None else from_bytes(field_type, bound)
    return spec.fields[index].transform.to_human_string(value, field_type)


def _summaries(metadata: TableMetadata, spec_id: int, summaries: list[FieldSummary] | None) -> list | None:
    if summaries is None:
        return None
    spec = metadata.spec_by_id(spec_id)
    types = [f.type for f in spec.partition_type(metadata.schema()).fields]
    return [(s.contains_null, s.contains_nan, _human_bound(spec, types[i], i, s.lower_bound),
             _human_bound(spec, types[i], i, s.upper_bound)) for i, s in enumerate(summaries)]


def _manifest_row(metadata: TableMetadata, m: ManifestFile) -> tuple[Any, ...]:
    """Java splits the file counts into data and delete columns by the manifest's content."""
    counts = (m.added_files_count, m.existing_files_count, m.deleted_files_count)
    data, deletes = (counts, (0, 0, 0)) if m.content == ManifestContent.DATA else ((0, 0, 0), counts)
    return (int(m.content), m.manifest_path, m.manifest_length, m.partition_spec_id, m.added_snapshot_id,
            *data, *deletes, _summaries(metadata, m.partition_spec_id, m.partitions))


def _manifests(src: _Source) -> tuple[T.StructType, Rows]:
    return _manifests_schema(False), [_manifest_row(src.metadata, m) for m in src.manifests()]


def _all_manifests(src: _Source) -> tuple[T.StructType, Rows]:
    rows = [(*_manifest_row(src.metadata, m), s.snapshot_id)
            for s in src.metadata.snapshots for m in src.manifests(s)]
    return _manifests_schema(True), rows


# --- files and entries

def _content_file_type(partition: T.StructType | None) -> T.StructType:
    """Java's DataFile type; `partition` is left out for never-partitioned tables."""
    def counts(name: str) -> T.StructField:
        return _opt(name, T.MapType(_INT, _LONG, valueContainsNull=False))

    def bounds(name: str) -> T.StructField:
        return _opt(name, T.MapType(_INT, _BINARY, valueContainsNull=False))

    fields = [_opt("content", _INT), _req("file_path", _STRING), _req("file_format", _STRING), _opt("spec_id", _INT)]
    if partition is not None:
        fields.append(_req("partition", partition))
    fields += [
        _req("record_count", _LONG), _req("file_size_in_bytes", _LONG),
        counts("column_sizes"), counts("value_counts"), counts("null_value_counts"), counts("nan_value_counts"),
        bounds("lower_bounds"), bounds("upper_bounds"), _opt("key_metadata", _BINARY),
        _opt("split_offsets", T.ArrayType(_LONG, containsNull=False)),
        _opt("equality_ids", T.ArrayType(_INT, containsNull=False)), _opt("sort_order_id", _INT),
        _opt("first_row_id", _LONG), _opt("referenced_data_file", _STRING), _opt("content_offset", _LONG),
        _opt("content_size_in_bytes", _LONG),
    ]
    return T.StructType(fields)


def _file_row(src: _Source, unified: _UnifiedPartition, f: DataFile) -> tuple[Any, ...]:
    head: tuple[Any, ...] = (int(f.content), f.file_path, f.file_format.upper(), f.spec_id)
    if unified.fields:
        head += (unified.project(src.metadata.spec_by_id(f.spec_id), f.partition)[1],)
    return head + (
        f.record_count, f.file_size_in_bytes, f.column_sizes, f.value_counts, f.null_value_counts,
        f.nan_value_counts, f.lower_bounds, f.upper_bounds, f.key_metadata, f.split_offsets, f.equality_ids,
        f.sort_order_id, f.first_row_id, f.referenced_data_file, f.content_offset, f.content_size_in_bytes)


def _files_of(*contents: ManifestContent) -> Callable[[_Source], tuple[T.StructType, Rows]]:
    """files, data_files and delete_files: live files of the chosen snapshot's manifests."""
    def build(src: _Source) -> tuple[T.StructType, Rows]:
        unified = _UnifiedPartition.of(src.metadata)
        rows = [_file_row(src, unified, e.data_file) for e in src.entries(contents, live_only=True)]
        return _content_file_type(unified.spark_type), rows
    return build


def _entries(src: _Source) -> tuple[T.StructType, Rows]:
    unified = _UnifiedPartition.of(src.metadata)
    schema = T.StructType([
        _req("status", _INT), _opt("snapshot_id", _LONG), _opt("sequence_number", _LONG),
        _opt("file_sequence_number", _LONG), _req("data_file", _content_file_type(unified.spark_type)),
    ])
    rows = [(int(e.status), e.snapshot_id, e.sequence_number, e.file_sequence_number,
             _file_row(src, unified, e.data_file))
            for e in src.entries(ManifestContent, live_only=False)]
    return schema, rows


# --- partitions

@dataclass
class _PartitionStats:
    values: tuple[Any, ...]
    spec_id: int = 0
    data_records: int = 0
    data_files: int = 0
    data_bytes: int = 0
    position_delete_records: int = 0
    position_delete_files: int = 0
    equality_delete_records: int = 0
    equality_delete_files: int = 0
    last_updated_ms: int | None = None
    last_updated_snapshot_id: int | None = None

    def add(self, f: DataFile, snapshot: Snapshot | None) -> None:
        """Count a live file; the newest snapshot that added one names the partition's spec."""
        if snapshot is not None and (self.last_updated_ms is None or snapshot.timestamp_ms > self.last_updated_ms):
            self.spec_id = f.spec_id
            self.last_updated_ms = snapshot.timestamp_ms
            self.last_updated_snapshot_id = snapshot.snapshot_id
        if f.content == FileContent.DATA:
            self.data_records += f.record_count
            self.data_files += 1
            self.data_bytes += f.file_size_in_bytes
        elif f.content == FileContent.POSITION_DELETES:
            self.position_delete_records += f.record_count
            self.position_delete_files += 1
        else:
            self.equality_delete_records += f.record_count
            self.equality_delete_files += 1

    def row(self, partitioned: bool) -> tuple[Any, ...]:
        """Java drops both `partition` and `spec_id` for a never-partitioned table."""
        head = (self.values, self.spec_id) if partitioned else ()
        return head + (
            self.data_records, self.data_files, self.data_bytes, self.position_delete_records,
            self.position_delete_files, self.equality_delete_records, self.equality_delete_files,
            None if self.last_updated_ms is None else _timestamp(self.last_updated_ms),
            self.last_updated_snapshot_id)


def _partitions(src: _Source) -> tuple[T.StructType, Rows]:
    unified = _UnifiedPartition.of(src.metadata)
    partition_type = unified.spark_type
    head = [] if partition_type is None else [_req("partition", partition_type), _req("spec_id", _INT)]
    schema = T.StructType(head + [
        _req("record_count", _LONG), _req("file_count", _INT), _req("total_data_file_size_in_bytes", _LONG),
        _req("position_delete_record_count", _LONG), _req("position_delete_file_count", _INT),
        _req("equality_delete_record_count", _LONG), _req("equality_delete_file_count", _INT),
        _opt("last_updated_at", _TS), _opt("last_updated_snapshot_id", _LONG),
    ])
    stats: dict[tuple[int, tuple[Any, ...]], _PartitionStats] = {}
    for entry in src.entries(ManifestContent, live_only=True):
        f = entry.data_file
        key = unified.project(src.metadata.spec_by_id(f.spec_id), f.partition)
        stats.setdefault(key, _PartitionStats(key[1])).add(f, src.metadata.snapshot_by_id(entry.snapshot_id))
    return schema, [s.row(partition_type is not None) for s in stats.values()]


# ------------------------------------------------------------------------------ entry point

_BUILDERS: dict[str, Callable[[_Source], tuple[T.StructType, Rows]]] = {
    "snapshots": _snapshots,
    "history": _history,
    "files": _files_of(ManifestContent.DATA, ManifestContent.DELETES),
    "data_files": _files_of(ManifestContent.DATA),
    "delete_files": _files_of(ManifestContent.DELETES),
    "manifests": _manifests,
    "all_manifests": _all_manifests,
    "entries": _entries,
    "partitions": _partitions,
    "refs": _refs,
    "metadata_log_entries": _metadata_log_entries,
}
METADATA_TABLE_NAMES = tuple(_BUILDERS)


def metadata_table(spark: SparkSession, table: Table, name: str, snapshot_id: int | None = None) -> DataFrame:
    """The metadata table `name` of `table` (e.g. "files" for `db.t.files`), as Iceberg Java shows it.

    `snapshot_id` reads files, entries, manifests and partitions as of that snapshot instead of
    the current one; tables about the whole table (snapshots, history, refs,
    metadata_log_entries) accept and ignore it as Java does, and all_manifests refuses it.
    """
    build = _BUILDERS.get(name.lower())
    if build is None:
        raise AnalysisError(f"unknown metadata table {name!r} for {table.full_name}; "
                            f"valid names: {', '.join(METADATA_TABLE_NAMES)}")
    metadata = table.metadata
    if snapshot_id is None:
        snapshot = metadata.current_snapshot()
    elif build is _all_manifests:
        raise AnalysisError(f"cannot select a snapshot in {table.full_name}.all_manifests: it covers every snapshot")
    else:
        snapshot = metadata.snapshot_by_id(snapshot_id)
        if snapshot is None:
            raise AnalysisError(f"snapshot {snapshot_id} does not exist in table {table.full_name}")
    schema, rows = build(_Source(table, snapshot))
    return spark.createDataFrame(rows, schema)
