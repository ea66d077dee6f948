"""CALL system.rewrite_data_files: bin-pack small (or oversized, or delete-laden) data files.

Planning follows Iceberg's bin-pack planner: per partition of the current spec (files of older
specs form one group), pick files outside [min-file-size, max-file-size], with at least
`delete-file-threshold` delete files, or with ≥ `delete-ratio-threshold` of their rows deleted
by file-scoped deletes (all files with `rewrite-all`); pack them in order into groups of at most
`max-file-group-size-bytes`; keep a group with ≥ `min-input-files` files, more than a target
file of content, more than max-file-size, or a file picked for its deletes.

Execution is one Spark job: the chosen files are read with their deletes applied and written
as new files of the current spec. The commit is one `replace` snapshot that removes the old
files and the delete files that no longer apply to any live file (pyice default; Iceberg's
`remove-dangling-deletes` does it as a separate step), keeps the starting snapshot's data
sequence number for the new files (so equality deletes committed meanwhile still apply), and
fails rather than lose a delete: a concurrent commit that removed one of the files or added
deletes for them makes this rewrite fail and delete what it wrote.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from pyice_sql.catalog.base import Table
from pyice_sql.commit.producer import RemovedFile, SnapshotUpdate
from pyice_sql.commit.validation import RowLevelValidator
from pyice_sql.errors import AnalysisError, UnsupportedError
from pyice_sql.expr.predicates import AlwaysTrue
from pyice_sql.model.manifest import FileContent, ManifestEntry
from pyice_sql.model.snapshots import Operation
from pyice_sql.procedures.arguments import bool_option, long_option, options_map, where_predicate
from pyice_sql.procedures.registry import Parameter, ProcedureContext, procedure
from pyice_sql.scan.delete_index import referenced_path
from pyice_sql.scan.planner import FileScanTask, ScanPlan, plan_files
from pyice_sql.scan.reader import read_tasks
from pyice_sql.write.data_writer import DEFAULT_TARGET_FILE_SIZE, write_data_files
from pyice_sql.write.operations import commit_or_clean

NAME = "rewrite_data_files"
_IGNORED = ("max-concurrent-file-group-rewrites", "partial-progress.max-commits",
            "partial-progress.max-failed-commits", "rewrite-job-order")
OPTIONS = {
    "target-file-size-bytes": None, "min-file-size-bytes": None, "max-file-size-bytes": None,
    "min-input-files": 5, "rewrite-all": False, "max-file-group-size-bytes": 100 * 1024 ** 3,
    "delete-file-threshold": 2 ** 31 - 1, "delete-ratio-threshold": 0.3, "partial-progress.enabled": False,
    "use-starting-sequence-number": True, "remove-dangling-deletes": True, **dict.fromkeys(_IGNORED),
}


@dataclass(frozen=True)
class BinPackOptions:
    target_file_size: int
    min_file_size: int
    max_file_size: int
    min_input_files: int = 5
    rewrite_all: bool = False
    max_group_size: int = 100 * 1024 ** 3
    delete_file_threshold: int = 2 ** 31 - 1
    delete_ratio_threshold: float = 0.3

    @classmethod
    def parse(cls, options: Mapping[str, str], table_target: int) -> "BinPackOptions":
        target = long_option(options, "target-file-size-bytes", table_target, NAME)
        made = cls(
            target_file_size=target,
            min_file_size=long_option(options, "min-file-size-bytes", int(target * 0.75), NAME),
            max_file_size=long_option(options, "max-file-size-bytes", int(target * 1.8), NAME),
            min_input_files=long_option(options, "min-input-files", 5, NAME),
            rewrite_all=bool_option(options, "rewrite-all", False, NAME),
            max_group_size=long_option(options, "max-file-group-size-bytes", OPTIONS["max-file-group-size-bytes"],
                                       NAME),
            delete_file_threshold=long_option(options, "delete-file-threshold", 2 ** 31 - 1, NAME),
            delete_ratio_threshold=float(options.get("delete-ratio-threshold", 0.3)))
        made.check()
        return made

    def check(self) -> None:
        def bad(why: str) -> AnalysisError:
            return AnalysisError(f"{NAME}: {why}")
        if self.target_file_size <= 0:
            raise bad(f"target-file-size-bytes must be > 0, got {self.target_file_size}")
        if self.min_file_size < 0 or self.min_file_size >= self.target_file_size:
            raise bad(f"min-file-size-bytes ({self.min_file_size}) must be >= 0 and < target-file-size-bytes "
                      f"({self.target_file_size})")
        if self.max_file_size <= self.target_file_size:
            raise bad(f"max-file-size-bytes ({self.max_file_size}) must be > target-file-size-bytes "
                      f"({self.target_file_size})")
        if self.min_input_files <= 0:
            raise bad(f"min-input-files must be > 0, got {self.min_input_files}")
        if self.delete_file_threshold < 0:
            raise bad(f"delete-file-threshold must be >= 0, got {self.delete_file_threshold}")
        if not 0 < self.delete_ratio_threshold <= 1:
            raise bad(f"delete-ratio-threshold must be in (0, 1], got {self.delete_ratio_threshold}")

    @property
    def write_max_file_size(self) -> int:
        return int(self.target_file_size + (self.max_file_size - self.target_file_size) * 0.5)

    def expected_output_files(self, input_bytes: int) -> int:
        """How many files a group's bytes make (Iceberg's rule: keep a remainder worth a file)."""
        target = self.target_file_size
        if input_bytes < target:
            return 1
        with_rest, without_rest = math.ceil(input_bytes / target), input_bytes // target
        if input_bytes % target > self.min_file_size:
            return with_rest
        if input_bytes / without_rest < min(1.1 * target, self.write_max_file_size):
            return without_rest
        return with_rest


@dataclass
class FileGroup:
    """Files of one partition rewritten together."""

    partition_key: tuple
    tasks: list[FileScanTask]

    @property
    def input_bytes(self) -> int:
        return sum(t.file.file_size_in_bytes for t in self.tasks)


def _too_many_deletes(t: FileScanTask, o: BinPackOptions) -> bool:
    return len(t.deletes) >= o.delete_file_threshold


def _too_high_delete_ratio(t: FileScanTask, o: BinPackOptions) -> bool:
    known = sum(d.data_file.record_count for d in t.deletes
                if d.data_file.content == FileContent.POSITION_DELETES and referenced_path(d.data_file))
    rows = t.file.record_count
    return rows > 0 and bool(t.deletes) and min(known, rows) / rows >= o.delete_ratio_threshold


def _pack(tasks: list[FileScanTask], max_group_size: int) -> list[list[FileScanTask]]:
    """In order, a new group whenever the next file does not fit the open one (look-back 1)."""
    groups: list[list[FileScanTask]] = []
    size = 0
    for t in tasks:
        n = t.file.file_size_in_bytes
        if groups and size + n <= max_group_size:
            groups[-1].append(t)
            size += n
        else:
            groups.append([t])
            size = n
    return groups


def plan_groups(tasks: Iterable[FileScanTask], default_spec_id: int, o: BinPackOptions) -> list[FileGroup]:
    """The file groups to rewrite, per Iceberg's bin-pack planner (see the module docstring)."""
    by_partition: dict[tuple, list[FileScanTask]] = {}
    for t in tasks:
        key = (t.file.spec_id, t.file.partition) if t.file.spec_id == default_spec_id else (None, ())
        by_partition.setdefault(key, []).append(t)
    out = []
    for key, part in by_partition.items():
        chosen = part if o.rewrite_all else [
            t for t in part if not o.min_file_size <= t.file.file_size_in_bytes <= o.max_file_size
            or _too_many_deletes(t, o) or _too_high_delete_ratio(t, o)]
        for group in _pack(chosen, o.max_group_size):
            size = sum(t.file.file_size_in_bytes for t in group)
            if (o.rewrite_all or (len(group) > 1 and (len(group) >= o.min_input_files or size > o.target_file_size))
                    or size > o.max_file_size
                    or any(_too_many_deletes(t, o) or _too_high_delete_ratio(t, o) for t in group)):
                out.append(FileGroup(key, group))
    return out


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
    table_target = int(md.property("write.target-file-size-bytes", str(DEFAULT_TARGET_FILE_SIZE)))
    binpack = BinPackOptions.parse(options, table_target)
    where = where_predicate(args["where"], md.schema(), NAME)
    return run(ctx, table, binpack, where, bool(args["dry_run"]),
               use_starting_sequence=bool_option(options, "use-starting-sequence-number", True, NAME),
               drop_dangling=bool_option(options, "remove-dangling-deletes", True, NAME))


def run(ctx: ProcedureContext, table: Table, binpack: BinPackOptions, where, dry_run: bool,
        use_starting_sequence: bool = True, drop_dangling: bool = True) -> list[tuple]:
    md = table.metadata
    snapshot = md.current_snapshot()
    if snapshot is None:
        return _result(0, 0, 0, 0)
    plan = plan_files(md, table.io, snapshot, where)
    groups = plan_groups(plan.tasks, md.default_spec_id, binpack)
    tasks = [t for g in groups for t in g.tasks]
    if not tasks:
        return _result(0, 0, 0, 0)
    paths = {t.file.file_path for t in tasks}
    nbytes = sum(t.file.file_size_in_bytes for t in tasks)
    full_plan = plan if where is None else plan_files(md, table.io, snapshot)
    dangling = dangling_deletes(full_plan, paths) if drop_dangling else []
    if dry_run:
        expected = sum(binpack.expected_output_files(g.input_bytes) for g in groups)
        return _result(len(tasks), expected, nbytes, len(dangling))

    write_ctx = ctx.runtime.write_context(table)
    rows = sum(t.file.record_count for t in tasks)
    write_ctx = dataclasses.replace(
        write_ctx, properties={**write_ctx.properties, "write.target-file-size-bytes": str(binpack.target_file_size)},
        bytes_per_row=nbytes / rows if rows else write_ctx.bytes_per_row)
    df = read_tasks(ctx.spark, md.schema(), tasks)
    if md.spec().is_unpartitioned:  # one file per target size, not one per input split
        df = df.coalesce(max(1, sum(binpack.expected_output_files(g.input_bytes) for g in groups)))
    files = write_data_files(df, write_ctx)
    removed = [RemovedFile(t.entry, t.manifest_path) for t in tasks]
    removed += [RemovedFile(d, full_plan.delete_manifests[d.data_file.file_path]) for d in dangling]
    validator = RowLevelValidator(NAME, AlwaysTrue(), "snapshot", paths, (),
                                  {(t.file.spec_id, t.file.partition) for t in tasks})
    update = SnapshotUpdate(Operation.REPLACE, snapshot.snapshot_id, added_data_files=files, removed=removed,
                            validate=validator,
                            added_data_sequence_number=snapshot.sequence_number if use_starting_sequence else None)
    commit_or_clean(table, update, files)
    return _result(len(tasks), len(files), nbytes, len(dangling))
