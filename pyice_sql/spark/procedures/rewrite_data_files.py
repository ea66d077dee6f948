"""CALL system.rewrite_data_files: bin-pack small (or oversized, or delete-laden) data files.

Planning follows Iceberg's bin-pack planner: per partition of the current spec (files of older
specs form one group), pick files outside [min-file-size, max-file-size], with at least
`delete-file-threshold` delete files, or with ≥ `delete-ratio-threshold` of their rows deleted
by file-scoped deletes (all files with `rewrite-all`); pack them in order into groups of at most
`max-file-group-size-bytes`; keep a group with ≥ `min-input-files` files, more than a target
file of content, more than max-file-size, or a file picked for its deletes.

Execution is one Spark job: the chosen files are read with their deletes applied and written
as new files of the current spec. The commit is one `replace` snapshot that removes the old
files with their file-scoped delete files (as Iceberg does) and the partition-scoped delete
files left with no live file to apply to (counted as removed_delete_files_count; Iceberg's
`remove-dangling-deletes`, on by default here, off with 'false'), keeps the starting snapshot's data
sequence number for the new files (so equality deletes committed meanwhile still apply), and
fails rather than lose a delete: a concurrent commit that removed one of the files or added
deletes for them makes this rewrite fail and delete what it wrote.

Format v3 (as Iceberg Java 1.10): rewritten rows keep their `_row_id` and last-updated sequence
number (stored in the new files), and the deletion vectors of rewritten files, removed with them,
count in removed_delete_files_count.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from pyice_sql.core import properties as props
from pyice_sql.core.catalog.base import Table
from pyice_sql.core.commit.operations import rewrite_files
from pyice_sql.core.commit.producer import RemovedFile
from pyice_sql.core.commit.validation import RowLevelValidator
from pyice_sql.core.errors import AnalysisError, UnsupportedError
from pyice_sql.core.expr.predicates import AlwaysTrue
from pyice_sql.core.model.manifest import FileContent, ManifestEntry
from pyice_sql.spark.procedures.arguments import bool_option, long_option, options_map, where_predicate
from pyice_sql.spark.procedures.binpack import OPTIONS as SIZE_OPTIONS, SizeOptions, plan_partition
from pyice_sql.spark.procedures.registry import Parameter, ProcedureContext, procedure
from pyice_sql.core.scan.delete_index import referenced_path
from pyice_sql.core.scan.planner import FileScanTask, ScanPlan, plan_files
from pyice_sql.spark.read.deletion_vectors import is_deletion_vector
from pyice_sql.spark.read.reader import read_tasks
from pyice_sql.spark.read.row_lineage import read_with_lineage
from pyice_sql.spark.write.data_writer import write_data_files
from pyice_sql.spark.write.lineage_columns import write_with_lineage
from pyice_sql.core.commit.cleanup import commit_or_clean
from pyice_sql.spark.runtime import spark_session_zone

NAME = "rewrite_data_files"
_IGNORED = ("max-concurrent-file-group-rewrites", "partial-progress.max-commits",
            "partial-progress.max-failed-commits", "rewrite-job-order")
OPTIONS = (*SIZE_OPTIONS, "delete-file-threshold", "delete-ratio-threshold", "partial-progress.enabled",
           "use-starting-sequence-number", "remove-dangling-deletes", *_IGNORED)


@dataclass(frozen=True)
class DeleteThresholds:
    """Reasons besides size to rewrite a data file: how many delete files, or how much deleted."""

    delete_file_threshold: int = 2 ** 31 - 1
    delete_ratio_threshold: float = 0.3

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "DeleteThresholds":
        made = cls(long_option(options, "delete-file-threshold", 2 ** 31 - 1, NAME),
                   float(options.get("delete-ratio-threshold", 0.3)))
        if made.delete_file_threshold < 0:
            raise AnalysisError(f"{NAME}: delete-file-threshold must be >= 0, got {made.delete_file_threshold}")
        if not 0 < made.delete_ratio_threshold <= 1:
            raise AnalysisError(f"{NAME}: delete-ratio-threshold must be in (0, 1], got {made.delete_ratio_threshold}")
        return made

    def too_many_deletes(self, t: FileScanTask) -> bool:
        return len(t.deletes) >= self.delete_file_threshold

    def too_high_delete_ratio(self, t: FileScanTask) -> bool:
        """Rows known deleted (by file-scoped position deletes) over the file's rows."""
        known = sum(d.data_file.record_count for d in t.deletes
                    if d.data_file.content == FileContent.POSITION_DELETES and referenced_path(d.data_file))
        rows = t.file.record_count
        return rows > 0 and bool(t.deletes) and min(known, rows) / rows >= self.delete_ratio_threshold


@dataclass
class FileGroup:
    """Files of one partition rewritten together."""

    partition_key: tuple
    tasks: list[FileScanTask]

    @property
    def input_bytes(self) -> int:
        return sum(t.file.file_size_in_bytes for t in self.tasks)


def plan_groups(tasks: Iterable[FileScanTask], default_spec_id: int, sizes: SizeOptions,
                deletes: DeleteThresholds = DeleteThresholds()) -> list[FileGroup]:
    """The file groups to rewrite: per partition of the default spec (files of other specs
    together), size-based as Iceberg's bin-pack planner, plus files with too many deletes."""
    by_partition: dict[tuple, list[FileScanTask]] = {}
    for t in tasks:
        key = (t.file.spec_id, t.file.partition) if t.file.spec_id == default_spec_id else (None, ())
        by_partition.setdefault(key, []).append(t)
    return [FileGroup(key, group) for key, part in by_partition.items()
            for group in plan_partition(part, _file_size, sizes,
                                        lambda t: deletes.too_many_deletes(t) or deletes.too_high_delete_ratio(t))]


def _file_size(t: FileScanTask) -> int:
    return t.file.file_size_in_bytes


def dangling_deletes(full_plan: ScanPlan, rewritten: set[str]) -> list[ManifestEntry]:
    """Delete files whose every live target data file is being rewritten."""
    targets: dict[str, set[str]] = {}
    entries: dict[str, ManifestEntry] = {}
    for t in full_plan.tasks:
        for d in t.deletes:
            targets.setdefault(d.data_file.file_path, set()).add(t.file.file_path)
            entries[d.data_file.file_path] = d
    return [entries[p] for p, files in targets.items() if files <= rewritten]


def _result(rewritten: int, added: int, nbytes: int, removed_deletes: int) -> list[tuple]:
    return [(rewritten, added, nbytes, 0, removed_deletes)]


@procedure(NAME, [
    Parameter("table", required=True), Parameter("strategy"), Parameter("sort_order"), Parameter("options"),
    Parameter("where"), Parameter("dry_run", default=False),
], "rewritten_data_files_count int, added_data_files_count int, rewritten_bytes_count long, "
   "failed_data_files_count int, removed_delete_files_count int")
def rewrite_data_files(ctx: ProcedureContext, args: dict[str, Any]) -> list[tuple]:
    table = ctx.load_table(args["table"])
    strategy = (args["strategy"] or "binpack").lower()
    if strategy not in ("binpack", "sort"):
        raise AnalysisError(f"{NAME}: unsupported strategy: {args['strategy']}. Only binpack or sort is supported",
                            position=ctx.position)
    if strategy == "sort" or args["sort_order"] is not None:
        raise UnsupportedError(f"{NAME}: the sort strategy and sort_order (incl. zorder) are not supported by "
                               "pyice_sql; use strategy => 'binpack'", position=ctx.position)
    options = options_map(args["options"], NAME, OPTIONS)
    if bool_option(options, "partial-progress.enabled", False, NAME):
        raise UnsupportedError(f"{NAME}: partial-progress.enabled is not supported (the rewrite commits once)",
                               position=ctx.position)
    md = table.metadata
    table_target = int(md.property(props.WRITE_TARGET_FILE_SIZE_BYTES, str(props.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT)))
    sizes = SizeOptions.parse(options, table_target, NAME)
    where = where_predicate(args["where"], md.schema(), NAME, spark_session_zone(ctx.spark))
    return run(ctx, table, sizes, DeleteThresholds.parse(options), where, bool(args["dry_run"]),
               use_starting_sequence=bool_option(options, "use-starting-sequence-number", True, NAME),
               drop_dangling=bool_option(options, "remove-dangling-deletes", True, NAME))


def run(ctx: ProcedureContext, table: Table, binpack: SizeOptions, thresholds: DeleteThresholds, where, dry_run: bool,
        use_starting_sequence: bool = True, drop_dangling: bool = True) -> list[tuple]:
    md = table.metadata
    snapshot = md.current_snapshot()
    if snapshot is None:
        return _result(0, 0, 0, 0)
    plan = plan_files(md, table.io, snapshot, where)
    groups = plan_groups(plan.tasks, md.default_spec_id, binpack, thresholds)
    tasks = [t for g in groups for t in g.tasks]
    if not tasks:
        return _result(0, 0, 0, 0)
    paths = {t.file.file_path for t in tasks}
    nbytes = sum(t.file.file_size_in_bytes for t in tasks)
    full_plan = plan if where is None else plan_files(md, table.io, snapshot)
    # file-scoped deletes go with their rewritten file (as Iceberg does, uncounted); partition-
    # scoped ones only when nothing live is left for them (Iceberg's remove-dangling-deletes)
    dangling = dangling_deletes(full_plan, paths)
    scoped = [d for d in dangling if referenced_path(d.data_file)]
    unscoped = [d for d in dangling if not referenced_path(d.data_file)] if drop_dangling else []
    # Java counts the deletion vectors it drops with their files (format v3), not v2 file-scoped deletes
    counted = len(unscoped) + sum(1 for d in scoped if is_deletion_vector(d.data_file))
    if dry_run:
        expected = sum(binpack.expected_output_files(g.input_bytes) for g in groups)
        return _result(len(tasks), expected, nbytes, counted)

    write_ctx = ctx.runtime.write_context(table)
    rows = sum(t.file.record_count for t in tasks)
    write_ctx = dataclasses.replace(
        write_ctx, properties={**write_ctx.properties, props.WRITE_TARGET_FILE_SIZE_BYTES: str(binpack.target_file_size)},
        bytes_per_row=nbytes / rows if rows else write_ctx.bytes_per_row)
    # format v3: rewritten rows keep their _row_id and last-updated sequence number (as Java)
    v3 = md.format_version >= 3
    df = (read_with_lineage if v3 else read_tasks)(ctx.spark, md.schema(), tasks)
    if md.spec().is_unpartitioned:  # one file per target size, not one per input split
        df = df.coalesce(max(1, sum(binpack.expected_output_files(g.input_bytes) for g in groups)))
    files = write_with_lineage(df, write_ctx, rebalance=False) if v3 else write_data_files(df, write_ctx)
    removed = [RemovedFile(t.entry, t.manifest_path) for t in tasks]
    removed += [RemovedFile(d, full_plan.delete_manifests[d.data_file.file_path]) for d in scoped + unscoped]
    validator = RowLevelValidator(NAME, AlwaysTrue(), "snapshot", paths, (),
                                  {(t.file.spec_id, t.file.partition) for t in tasks})
    update = rewrite_files(snapshot.snapshot_id, removed, added_data=files, validate=validator,
                           data_sequence_number=snapshot.sequence_number if use_starting_sequence else None)
    commit_or_clean(table, update, files)
    return _result(len(tasks), len(files), nbytes, counted)
