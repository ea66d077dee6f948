"""Table writes that add data: append (INSERT INTO), overwrite (INSERT OVERWRITE) and replace
(CREATE OR REPLACE TABLE).

Each one writes its data files first and then commits one snapshot; if the commit fails for
good, the files it wrote are deleted so nothing half-done is left visible or referenced.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from pyspark.sql import DataFrame

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.commit.cleanup import commit_or_clean, delete_written_on_failure
from pyice_sql.core.commit.operations import append_files, overwrite_files, replace_partitions
from pyice_sql.core.commit.producer import RemovedFile, file_key, update_metadata
from pyice_sql.core.errors import AnalysisError, ValidationError
from pyice_sql.core.expr.evaluators import InclusiveMetricsEvaluator, PartitionEvaluator, rows_must_match
from pyice_sql.core.expr.predicates import AlwaysTrue, Expression
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.model.snapshots import MAIN_BRANCH
from pyice_sql.spark.runtime import Runtime
from pyice_sql.core.scan.planner import plan_files
from pyice_sql.spark.read.table_scan import branch_head
from pyice_sql.spark.write.data_writer import write_data_files


@dataclass(frozen=True)
class WriteResult:
    table: Table
    added_files: int
    added_rows: int
    removed_files: int = 0


def append(rt: Runtime, table: Table, df: DataFrame, branch: str = MAIN_BRANCH) -> WriteResult:
    head = branch_head(table, branch)
    files = write_data_files(df, rt.write_context(table))
    if not files:
        return WriteResult(table, 0, 0)
    update = append_files(head.snapshot_id if head else None, files, branch=branch)
    committed = commit_or_clean(table, update, files)
    return WriteResult(committed, len(files), sum(f.record_count for f in files))


def replace_table(rt: Runtime, table: Table, change: Callable[[TableMetadata], TableMetadata],
                  df: DataFrame | None) -> WriteResult:
    """CREATE OR REPLACE TABLE [AS SELECT]: `change` (the replacement metadata) and the new rows
    commit together as one snapshot with no parent, so no reader sees the table empty between."""
    replaced = replace(table, metadata=change(table.metadata))
    files = write_data_files(df, rt.write_context(replaced)) if df is not None else []
    if not files:
        return WriteResult(update_metadata(table, change), 0, 0)

    def prepare(metadata: TableMetadata) -> TableMetadata:
        new = change(metadata)
        if new.schema().fields != replaced.metadata.schema().fields or new.spec() != replaced.metadata.spec():
            raise ValidationError(f"table {table.full_name} changed schema or partitioning during "
                                  "CREATE OR REPLACE TABLE; run it again")
        return new

    update = overwrite_files(None, files, prepare=prepare)  # as Java
    committed = commit_or_clean(table, update, files)
    return WriteResult(committed, len(files), sum(f.record_count for f in files))


def overwrite(rt: Runtime, table: Table, df: DataFrame, *, dynamic: bool,
              static_filter: Expression | None = None, branch: str = MAIN_BRANCH,
              statement: str = "INSERT OVERWRITE") -> WriteResult:
    """INSERT OVERWRITE: replace the partitions the new rows land in (dynamic), or the rows that
    match `static_filter` (static; the whole table when None), as Spark's modes define."""
    head = branch_head(table, branch)
    start = head.snapshot_id if head else None
    files = write_data_files(df, rt.write_context(table))
    with delete_written_on_failure(table.io, files):
        plan = plan_files(table.metadata, table.io, head)
        if dynamic:
            spec_id = table.metadata.default_spec_id
            targets = {f.partition for f in files}
            doomed = [t for t in plan.tasks if t.file.spec_id == spec_id and t.file.partition in targets]
        else:
            doomed = _files_fully_matching(table, plan.tasks, static_filter or AlwaysTrue(), statement)
    removed = [RemovedFile(t.entry, t.manifest_path) for t in doomed]
    removed += [RemovedFile(d, t.manifest_path) for t in doomed for d in t.deletes]
    removed = list({file_key(r.entry.data_file): r for r in removed}.values())
    if not files and not removed:
        return WriteResult(table, 0, 0)
    if dynamic:
        update = replace_partitions(start, files, removed, branch=branch)
    elif removed:
        update = overwrite_files(start, files, removed, branch=branch)
    else:
        update = append_files(start, files, branch=branch)
    committed = commit_or_clean(table, update, files)
    return WriteResult(committed, len(files), sum(f.record_count for f in files),
                       sum(1 for r in removed if r.entry.data_file.content == 0))


def _files_fully_matching(table: Table, tasks, row_filter: Expression, statement: str):
    """Files whose every row matches `row_filter`; a file that may match only partly (by its
    partition and its column metrics, as Iceberg's overwriteByRowFilter judges) is an error."""
    schema = table.metadata.schema()
    must_match = rows_must_match(schema, table.metadata.spec_by_id, row_filter)
    metrics = InclusiveMetricsEvaluator(schema, row_filter)
    out = []
    for t in tasks:
        f = t.file
        inclusive = PartitionEvaluator(table.metadata.spec_by_id(f.spec_id), schema, row_filter)
        if must_match(f):
            out.append(t)
        elif inclusive.eval(f.partition) and metrics.eval(f):
            raise AnalysisError(f"{statement} on {table.full_name}: file {f.file_path} holds rows both "
                                f"inside and outside the replaced rows ({row_filter}); Iceberg replaces whole "
                                "files only")
    return out
