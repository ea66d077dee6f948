"""CALL system.rewrite_position_delete_files: compact position delete files, dropping dead rows.

Planning is Iceberg's size-based one (see `binpack`) over the live position delete files of each
partition (the target size is write.delete.target-file-size-bytes, 64 MB), limited to the
partitions `where` may match. A chosen group's rows are read in one Spark job, rows that point
at data files no longer live are dropped, and the rest are written as one file-scoped delete
file per data file (the layout pyice's merge-on-read writes, scoped by every reader). One
`replace` commit swaps them; a concurrent commit that removed any of the rewritten delete files
(e.g. a MERGE that folded them into its own) fails this one, which then deletes what it wrote.

On a format v3 table (as Iceberg Java 1.10) the chosen files are the v2 position-delete files an
upgraded table still has, and they become deletion vectors: each live data file they apply to
gets one DV merging them with its previous DV (spark/write/dv_writer.py), and the commit removes
the chosen files and the DVs replaced. Existing DVs are never candidates; byte counts of DVs are
their blobs' sizes, as Java reports them.
"""
from __future__ import annotations

from typing import Any

from pyice_sql.core import properties as props
from pyice_sql.core.catalog.base import Table
from pyice_sql.core.format.manifests import read_entries, read_manifest_list
from pyice_sql.core.commit.operations import rewrite_files
from pyice_sql.core.commit.producer import RemovedFile
from pyice_sql.core.errors import UnsupportedError
from pyice_sql.core.expr.evaluators import PartitionEvaluator
from pyice_sql.core.expr.predicates import Expression
from pyice_sql.core.model.manifest import EntryStatus, FileContent, ManifestContent
from pyice_sql.spark.procedures.arguments import bool_option, options_map, where_predicate
from pyice_sql.spark.procedures.binpack import OPTIONS as SIZE_OPTIONS, SizeOptions, plan_partition
from pyice_sql.spark.procedures.registry import Parameter, ProcedureContext, procedure
from pyice_sql.core.scan.planner import ScanPlan, plan_files
from pyice_sql.spark.read.deletion_vectors import is_deletion_vector
from pyice_sql.spark.read.reader import read_position_deletes
from pyice_sql.spark.write.dv_writer import write_deletion_vectors
from pyice_sql.spark.write.delete_writer import write_position_deletes
from pyice_sql.core.commit.cleanup import commit_or_clean
from pyice_sql.spark.runtime import spark_session_zone

NAME = "rewrite_position_delete_files"
OPTIONS = (*SIZE_OPTIONS, "partial-progress.enabled", "partial-progress.max-commits",
           "max-concurrent-file-group-rewrites", "rewrite-job-order")


def live_position_deletes(table: Table, where: Expression | None) -> list[RemovedFile]:
    """Live position delete files (not DVs) of the current snapshot (in partitions `where` may match)."""
    md = table.metadata
    snapshot = md.current_snapshot()
    if snapshot is None:
        return []
    evaluators: dict[int, PartitionEvaluator] = {}
    out = []
    for manifest in read_manifest_list(table.io, snapshot.manifest_list):
        if manifest.content != ManifestContent.DELETES:
            continue
        for e in read_entries(table.io, manifest):
            f = e.data_file
            if (e.status == EntryStatus.DELETED or f.content != FileContent.POSITION_DELETES
                    or is_deletion_vector(f)):
                continue
            if where is not None:
                if f.spec_id not in evaluators:
                    evaluators[f.spec_id] = PartitionEvaluator(md.spec_by_id(f.spec_id), md.schema(), where)
                if not evaluators[f.spec_id].eval(f.partition):
                    continue
            out.append(RemovedFile(e, manifest.manifest_path))
    return out


def plan_groups(deletes: list[RemovedFile], sizes: SizeOptions) -> list[list[RemovedFile]]:
    by_partition: dict[tuple, list[RemovedFile]] = {}
    for d in deletes:
        by_partition.setdefault((d.entry.data_file.spec_id, d.entry.data_file.partition), []).append(d)
    return [g for part in by_partition.values()
            for g in plan_partition(part, lambda d: d.entry.data_file.file_size_in_bytes, sizes)]


@procedure(NAME, [Parameter("table", required=True), Parameter("options"), Parameter("where"),
                  Parameter("dry_run", default=False)],
           "rewritten_delete_files_count int, added_delete_files_count int, rewritten_bytes_count long, "
           "added_bytes_count long")
def rewrite_position_delete_files(ctx: ProcedureContext, args: dict[str, Any]) -> list[tuple]:
    table = ctx.load_table(args["table"])
    md = table.metadata
    options = options_map(args["options"], NAME, OPTIONS)
    if bool_option(options, "partial-progress.enabled", False, NAME):
        raise UnsupportedError(f"{NAME}: partial-progress.enabled is not supported (the rewrite commits once)",
                               position=ctx.position)
    sizes = SizeOptions.parse(options, int(md.property(props.DELETE_TARGET_FILE_SIZE_BYTES,
                                                       str(props.DELETE_TARGET_FILE_SIZE_BYTES_DEFAULT))), NAME)
    where = where_predicate(args["where"], md.schema(), NAME, spark_session_zone(ctx.spark))
    groups = plan_groups(live_position_deletes(table, where), sizes)
    chosen = [d for g in groups for d in g]
    nbytes = sum(d.entry.data_file.file_size_in_bytes for d in chosen)
    if not chosen:
        return [(0, 0, 0, 0)]
    scan = plan_files(md, table.io, md.current_snapshot())
    live = {t.file.file_path: t.file for t in scan.tasks}
    if args["dry_run"]:
        return [(len(chosen), 0, nbytes, 0)]
    if md.format_version >= 3:
        return _to_deletion_vectors(ctx, table, chosen, scan, nbytes)
    rows = read_position_deletes(ctx.spark, [d.entry.data_file for d in chosen]).dropDuplicates()
    # the writer keeps only rows whose target is in `live`: deletes of dead files go away here
    written = write_position_deletes(rows, live, ctx.runtime.write_context(table))
    update = rewrite_files(md.current_snapshot_id, chosen, added_deletes=written)
    commit_or_clean(table, update, written)
    return [(len(chosen), len(written), nbytes, sum(f.file_size_in_bytes for f in written))]


def _to_deletion_vectors(ctx: ProcedureContext, table: Table, chosen: list[RemovedFile], scan: ScanPlan,
                         nbytes: int) -> list[tuple]:
    """Format v3: the chosen position-delete files as one deletion vector per live data file."""
    paths = {d.entry.data_file.file_path for d in chosen}
    touched = [t for t in scan.tasks if any(d.data_file.file_path in paths for d in t.deletes)]
    dvs, replaced, _ = write_deletion_vectors(ctx.spark, None, touched, ctx.runtime.write_context(table))
    removed = chosen + [RemovedFile(d, scan.delete_manifests[d.data_file.file_path]) for d in replaced
                        if d.data_file.file_path not in paths]
    update = rewrite_files(table.metadata.current_snapshot_id, removed, added_deletes=dvs)
    commit_or_clean(table, update, dvs)
    return [(len(chosen), len(dvs), nbytes, sum(f.content_size_in_bytes for f in dvs))]
