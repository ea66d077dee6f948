"""TableScan: pick the snapshot (current, a ref, VERSION AS OF, TIMESTAMP AS OF), plan, read."""
from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.errors import AnalysisError, CorruptTableError
from pyice_sql.core.format.fileio import LocalFileIO, local_path
from pyice_sql.core.expr.predicates import Expression
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.snapshots import MAIN_BRANCH, Snapshot
from pyice_sql.core.model.conversions import zoned_instant
from pyice_sql.core.model.zones import UTC
from pyice_sql.core.scan.planner import ScanPlan, plan_files
from pyice_sql.spark.read.reader import read_tasks
from pyice_sql.spark.runtime import spark_session_zone


@dataclass(frozen=True)
class TimeTravel:
    """A snapshot id, ref name (branch/tag) or timestamp to read instead of the current state.

    `ref_kind` ('branch' or 'tag') is set when the table name chose the ref (`t.branch_b`), which
    must then be of that kind; VERSION AS OF 'name' takes either.
    """

    snapshot_id: int | None = None
    ref: str | None = None
    timestamp: str | int | None = None
    ref_kind: str | None = None


def branch_head(table: Table, branch: str | None) -> Snapshot | None:
    """The snapshot a write to `branch` (None: main) builds on; the branch must exist unless main."""
    md = table.metadata
    if branch is None or branch == MAIN_BRANCH:
        return md.current_snapshot()
    ref = md.refs.get(branch)
    if ref is None:
        raise AnalysisError(f"table {table.full_name} has no branch {branch!r} (create it with "
                            f"ALTER TABLE ... CREATE BRANCH {branch})")
    if not ref.is_branch:
        raise AnalysisError(f"{branch!r} is a tag of table {table.full_name}, not a branch: tags are read-only")
    return md.snapshot_by_id(ref.snapshot_id)


def parse_timestamp_ms(value: str | int, zone: dt.tzinfo | None) -> int:
    """`TIMESTAMP AS OF` accepts epoch millis or an ISO timestamp, read as Spark reads it: in `zone`,
    the session's time zone, unless it gives an offset."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if text.isascii() and text.isdigit():
        return int(text)
    try:
        parsed = dt.datetime.fromisoformat(text.replace(" ", "T") if "T" not in text else text)
    except ValueError as e:
        raise AnalysisError(f"invalid timestamp for TIMESTAMP AS OF: {value!r}") from e
    try:
        return int(zoned_instant(parsed, zone).timestamp() * 1000)
    except ValueError as e:
        raise AnalysisError(f"TIMESTAMP AS OF {e}") from None


def select_snapshot(table: Table, travel: TimeTravel | None, zone: dt.tzinfo | None = UTC
                    ) -> tuple[Snapshot | None, Schema]:
    """The snapshot to read and the schema to read it with (the snapshot's own when time travelling;
    `zone`: the session's time zone, for a `TIMESTAMP AS OF` without an offset)."""
    md = table.metadata
    if travel is None or (travel.snapshot_id is None and travel.ref is None and travel.timestamp is None):
        return md.current_snapshot(), md.schema()
    if travel.snapshot_id is not None:
        snap = md.snapshot_by_id(travel.snapshot_id)
        if snap is None:
            raise AnalysisError(f"table {table.full_name} has no snapshot {travel.snapshot_id}")
    elif travel.ref is not None:
        ref = md.refs.get(travel.ref)
        if travel.ref_kind == "branch":
            return branch_head(table, travel.ref), md.schema()
        if ref is None or (travel.ref_kind == "tag" and ref.is_branch):
            what = "tag" if travel.ref_kind == "tag" else "branch or tag"
            raise AnalysisError(f"table {table.full_name} has no {what} {travel.ref!r}")
        snap = md.snapshot_by_id(ref.snapshot_id)
        if ref.is_branch:  # a branch is read with the table's schema, a tag with its snapshot's (as Iceberg)
            return snap, md.schema()
    else:
        ms = parse_timestamp_ms(travel.timestamp, zone)
        snap = md.snapshot_as_of_timestamp(ms)
        if snap is None:
            raise AnalysisError(f"table {table.full_name} has no snapshot at or before {travel.timestamp}")
    schema = md.schema_by_id(snap.schema_id) if snap.schema_id is not None else None
    return snap, schema or md.schema()


def scan(spark: SparkSession, table: Table, row_filter: Expression | None = None,
         travel: TimeTravel | None = None, with_metadata: bool = False,
         lineage: bool = False) -> tuple[DataFrame, ScanPlan]:
    """`lineage` adds `_row_id` and `_last_updated_sequence_number` (format v3 tables only)."""
    snapshot, schema = select_snapshot(table, travel, spark_session_zone(spark) if travel is not None else UTC)
    plan = plan_files(table.metadata, table.io, snapshot, row_filter)
    check_files_exist(table, plan)
    if lineage and table.metadata.format_version >= 3:
        from pyice_sql.spark.read.row_lineage import read_with_lineage
        return read_with_lineage(spark, schema, plan.tasks, with_metadata), plan
    return read_tasks(spark, schema, plan.tasks, with_metadata), plan


def check_files_exist(table: Table, plan: ScanPlan) -> None:
    """On a local warehouse, name a missing data or delete file now rather than deep in a Spark
    job (a stat per file is cheap locally; remote stores are left to Spark's own error)."""
    if not isinstance(table.io, LocalFileIO):
        return
    for task in plan.tasks:
        for f in (task.file, *(d.data_file for d in task.deletes)):
            if not os.path.exists(local_path(f.file_path)):
                raise CorruptTableError(f"table {table.full_name} references a file that is missing: {f.file_path}")
