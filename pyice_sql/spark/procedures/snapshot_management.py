"""Snapshot management procedures: rollback_to_snapshot, rollback_to_timestamp, set_current_snapshot,
cherrypick_snapshot and fast_forward, with Iceberg's parameters, result columns and rules.

Each is a metadata change committed by compare-and-swap (`update_metadata`), re-checked against
the table as it is when a lost race is retried, except a cherry-pick that must copy files into a
new snapshot, which commits through the snapshot producer. Iceberg's rules kept here:
  - rollback moves main only to an ancestor of the current snapshot (by id, or the newest one
    older than a timestamp); set_current_snapshot takes any snapshot, or a ref's;
  - cherry-pick fast-forwards main when the picked snapshot's parent is main's head; otherwise an
    append, or a dynamic partition overwrite (`replace-partitions`) based on an ancestor of main
    whose partitions main has not written to since, is re-applied as a new snapshot (summary
    `source-snapshot-id`), refused when the snapshot is already an ancestor or was picked
    before; other operations can only fast-forward;
  - fast_forward moves a branch to a ref's snapshot only when the branch head is its ancestor.
Format v3: moving a ref never moves the table's `next-row-id` back (row ids are never reused);
a re-applied append's files take fresh row ids from the new snapshot, as in Iceberg Java 1.10.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.commit.producer import RemovedFile, SnapshotUpdate, commit_update, update_metadata
from pyice_sql.core.commit.validation import changes_of
from pyice_sql.core.errors import AnalysisError, ValidationError
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.model.snapshots import Operation, Snapshot, SnapshotRef
from pyice_sql.spark.procedures.arguments import timestamp_ms
from pyice_sql.spark.procedures.registry import Parameter, ProcedureContext, procedure
from pyice_sql.core.scan.planner import plan_files
from pyice_sql.spark.runtime import spark_session_zone

SOURCE_SNAPSHOT_ID = "source-snapshot-id"
WAP_ID = "wap.id"
PUBLISHED_WAP_ID = "published-wap-id"
REPLACE_PARTITIONS = "replace-partitions"


def _snapshot_id(value: Any, procedure_name: str) -> int:
    """A bigint argument; digit text is cast as Spark casts it."""
    if isinstance(value, str) and value.isascii() and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise AnalysisError(f"{procedure_name}: snapshot_id must be a snapshot id (a bigint), got {value!r}")
    return value


def _is_current_ancestor(md: TableMetadata, snapshot_id: int) -> bool:
    return any(s.snapshot_id == snapshot_id for s in md.ancestors(md.current_snapshot_id))


def _require_snapshot(md: TableMetadata, table: str, snapshot_id: int) -> None:
    if md.snapshot_by_id(snapshot_id) is None:
        raise ValidationError(f"table {table} has no snapshot {snapshot_id}")


def rollback_to(md: TableMetadata, table: str, snapshot_id: int) -> TableMetadata:
    """Main back to `snapshot_id`, which must be an ancestor of the current snapshot."""
    _require_snapshot(md, table, snapshot_id)
    if not _is_current_ancestor(md, snapshot_id):
        raise ValidationError(f"cannot roll back table {table} to snapshot {snapshot_id}: it is not an ancestor "
                              f"of the current snapshot {md.current_snapshot_id} (use set_current_snapshot)")
    return md.set_current_snapshot(snapshot_id)


def latest_ancestor_before(md: TableMetadata, timestamp_ms_: int) -> Snapshot | None:
    """The newest ancestor of the current snapshot created strictly before `timestamp_ms_`."""
    older = [s for s in md.ancestors(md.current_snapshot_id) if s.timestamp_ms < timestamp_ms_]
    return max(older, key=lambda s: s.timestamp_ms, default=None)


def set_current(md: TableMetadata, table: str, snapshot_id: int) -> TableMetadata:
    _require_snapshot(md, table, snapshot_id)
    return md.set_current_snapshot(snapshot_id)


def fast_forward_ref(md: TableMetadata, table: str, branch: str, to: str) -> TableMetadata:
    """Move `branch` to `to`'s snapshot; the branch head must be an ancestor of it. A missing
    branch is created there."""
    target = md.refs.get(to)
    if target is None:
        raise ValidationError(f"table {table} has no branch or tag {to!r} to fast-forward to")
    current = md.refs.get(branch)
    if current is None:
        return md.set_ref(branch, SnapshotRef(target.snapshot_id))
    if not current.is_branch:
        raise ValidationError(f"cannot fast-forward {branch!r} of table {table}: it is a tag, not a branch")
    if current.snapshot_id == target.snapshot_id:
        return md
    if not any(s.snapshot_id == current.snapshot_id for s in md.ancestors(target.snapshot_id)):
        raise ValidationError(f"cannot fast-forward branch {branch!r} of table {table} to {to!r}: its head "
                              f"{current.snapshot_id} is not an ancestor of {to!r} ({target.snapshot_id})")
    return md.set_ref(branch, dataclasses.replace(current, snapshot_id=target.snapshot_id))


# ----------------------------------------------------------------------------- cherry-pick

def can_fast_forward(md: TableMetadata, picked: Snapshot) -> bool:
    """Main's head is the picked snapshot's parent (or both are absent)."""
    return picked.parent_snapshot_id == md.current_snapshot_id


def check_pickable(md: TableMetadata, table: str, picked: Snapshot) -> None:
    """A picked append must not already be in main's history, directly or as an earlier pick."""
    ancestors = md.ancestors(md.current_snapshot_id)
    sid = picked.snapshot_id
    if any(s.snapshot_id == sid for s in ancestors):
        raise ValidationError(f"cannot cherry-pick snapshot {sid} into table {table}: it is already an ancestor "
                              "of the current snapshot")
    again = next((s for s in ancestors if s.summary.get(SOURCE_SNAPSHOT_ID) == str(sid)), None)
    if again is not None:
        raise ValidationError(f"cannot cherry-pick snapshot {sid} into table {table}: it was already picked to "
                              f"create ancestor {again.snapshot_id}")
    wap_id = picked.summary.get(WAP_ID)
    if wap_id is not None and any(s.summary.get(PUBLISHED_WAP_ID) == wap_id for s in ancestors):
        raise ValidationError(f"cannot cherry-pick snapshot {sid} into table {table}: its write-audit-publish "
                              f"id {wap_id!r} was already published")


def _is_dynamic_overwrite(snapshot: Snapshot) -> bool:
    return snapshot.operation == Operation.OVERWRITE and snapshot.summary.get(REPLACE_PARTITIONS) == "true"


def check_replaced_partitions(table: Table, picked: Snapshot, partitions: set) -> None:
    """A picked dynamic overwrite must be based on an ancestor of main, and main must not have
    added files to the partitions it replaces since that base."""
    md = table.metadata
    base = picked.parent_snapshot_id
    since = []
    for s in md.ancestors(md.current_snapshot_id):
        if s.snapshot_id == base:
            break
        since.append(s)
    else:
        if base is not None:
            raise ValidationError(f"cannot cherry-pick overwrite {picked.snapshot_id} into table {table.full_name}: "
                                  f"it is based on {base}, which is not an ancestor of the current snapshot")
    for s in since:
        for f in changes_of(table, s).added_data:
            if (f.spec_id, f.partition) in partitions:
                raise ValidationError(f"cannot cherry-pick overwrite {picked.snapshot_id} into table "
                                      f"{table.full_name}: snapshot {s.snapshot_id} changed partition {f.partition} "
                                      "it replaces")


def cherrypick(table: Table, snapshot_id: int) -> Table:
    """Apply snapshot `snapshot_id`'s change to main (see the module docstring)."""
    md = table.metadata
    picked = md.snapshot_by_id(snapshot_id)
    if picked is None:
        raise ValidationError(f"cannot cherry-pick unknown snapshot {snapshot_id} of table {table.full_name}")
    reapply = picked.operation == Operation.APPEND or _is_dynamic_overwrite(picked)
    if not reapply or can_fast_forward(md, picked):
        def fast_forward(latest: TableMetadata) -> TableMetadata:
            if not can_fast_forward(latest, picked):
                raise ValidationError(
                    f"cannot cherry-pick snapshot {snapshot_id} ({picked.operation}) into table {table.full_name}: "
                    f"only an append or a dynamic overwrite can be re-applied, and main's head "
                    f"{latest.current_snapshot_id} is not its parent {picked.parent_snapshot_id}, so it cannot "
                    "fast-forward")
            return latest.set_current_snapshot(snapshot_id)
        return update_metadata(table, fast_forward)
    check_pickable(md, table.full_name, picked)
    changes = changes_of(table, picked)
    removed: list[RemovedFile] = []
    partitions: set = set()
    if _is_dynamic_overwrite(picked):
        partitions = {(f.spec_id, f.partition) for f in changes.added_data}
        check_replaced_partitions(table, picked, partitions)
        live = {t.file.file_path: t for t in plan_files(md, table.io, md.current_snapshot()).tasks}
        missing = [f.file_path for f in changes.removed_data if f.file_path not in live]
        if missing:
            raise ValidationError(f"cannot cherry-pick overwrite {snapshot_id} into table {table.full_name}: files it "
                                  f"removed are no longer in the table: {missing[:3]}")
        removed = [RemovedFile(live[f.file_path].entry, live[f.file_path].manifest_path) for f in changes.removed_data]
    extra = {SOURCE_SNAPSHOT_ID: str(snapshot_id)}
    if WAP_ID in picked.summary:
        extra[PUBLISHED_WAP_ID] = picked.summary[WAP_ID]

    def validate(latest: Table, _) -> None:
        check_pickable(latest.metadata, table.full_name, picked)
        if partitions:
            check_replaced_partitions(latest, picked, partitions)

    # re-added files take fresh row ids from this commit (format v3), as Java's cherry-pick does
    added = [dataclasses.replace(f, first_row_id=None) for f in changes.added_data]
    update = SnapshotUpdate(picked.operation, md.current_snapshot_id, added_data_files=added,
                            removed=removed, summary_extra=extra, validate=validate)
    return commit_update(table, update)


# ----------------------------------------------------------------------------- procedures

@procedure("rollback_to_snapshot", [Parameter("table", required=True), Parameter("snapshot_id", required=True)],
           "previous_snapshot_id bigint, current_snapshot_id bigint")
def _rollback_to_snapshot(ctx: ProcedureContext, args: dict[str, Any]) -> Sequence[tuple]:
    table = ctx.load_table(args["table"])
    snapshot_id = _snapshot_id(args["snapshot_id"], "rollback_to_snapshot")
    previous = _require_current(table, "rollback_to_snapshot")
    update_metadata(table, lambda md: rollback_to(md, table.full_name, snapshot_id))
    return [(previous, snapshot_id)]


@procedure("rollback_to_timestamp", [Parameter("table", required=True), Parameter("timestamp", required=True)],
           "previous_snapshot_id bigint, current_snapshot_id bigint")
def _rollback_to_timestamp(ctx: ProcedureContext, args: dict[str, Any]) -> Sequence[tuple]:
    table = ctx.load_table(args["table"])
    ts = timestamp_ms(args["timestamp"], "rollback_to_timestamp", "timestamp", spark_session_zone(ctx.spark))
    previous = _require_current(table, "rollback_to_timestamp")

    def change(md: TableMetadata) -> TableMetadata:
        target = latest_ancestor_before(md, ts)
        if target is None:
            raise ValidationError(f"cannot roll back table {table.full_name}: no snapshot of the current "
                                  f"history is older than {args['timestamp']} ({ts} ms)")
        return md.set_current_snapshot(target.snapshot_id)

    committed = update_metadata(table, change)
    return [(previous, committed.metadata.current_snapshot_id)]


@procedure("set_current_snapshot", [Parameter("table", required=True), Parameter("snapshot_id"), Parameter("ref")],
           "previous_snapshot_id bigint, current_snapshot_id bigint")
def _set_current_snapshot(ctx: ProcedureContext, args: dict[str, Any]) -> Sequence[tuple]:
    if (args["snapshot_id"] is None) == (args["ref"] is None):
        raise AnalysisError("set_current_snapshot: give either snapshot_id or ref, not both", position=ctx.position)
    table = ctx.load_table(args["table"])
    previous = table.metadata.current_snapshot_id
    if args["ref"] is not None:
        ref = table.metadata.refs.get(str(args["ref"]))
        if ref is None:
            raise ValidationError(f"set_current_snapshot: table {table.full_name} has no branch or tag "
                                  f"{args['ref']!r}", position=ctx.position)
        snapshot_id = ref.snapshot_id
    else:
        snapshot_id = _snapshot_id(args["snapshot_id"], "set_current_snapshot")
    update_metadata(table, lambda md: set_current(md, table.full_name, snapshot_id))
    return [(previous, snapshot_id)]


@procedure("cherrypick_snapshot", [Parameter("table", required=True), Parameter("snapshot_id", required=True)],
           "source_snapshot_id bigint, current_snapshot_id bigint")
def _cherrypick_snapshot(ctx: ProcedureContext, args: dict[str, Any]) -> Sequence[tuple]:
    table = ctx.load_table(args["table"])
    snapshot_id = _snapshot_id(args["snapshot_id"], "cherrypick_snapshot")
    committed = cherrypick(table, snapshot_id)
    return [(snapshot_id, committed.metadata.current_snapshot_id)]


@procedure("fast_forward", [Parameter("table", required=True), Parameter("branch", required=True),
                            Parameter("to", required=True)],
           "branch_updated string, previous_ref bigint, updated_ref bigint")
def _fast_forward(ctx: ProcedureContext, args: dict[str, Any]) -> Sequence[tuple]:
    table = ctx.load_table(args["table"])
    branch, to = str(args["branch"]), str(args["to"])
    before = table.metadata.refs.get(branch)
    committed = update_metadata(table, lambda md: fast_forward_ref(md, table.full_name, branch, to))
    return [(branch, before.snapshot_id if before else None, committed.metadata.refs[branch].snapshot_id)]


def _require_current(table: Table, procedure_name: str) -> int:
    current = table.metadata.current_snapshot_id
    if current is None:
        raise ValidationError(f"{procedure_name}: table {table.full_name} has no current snapshot to roll back")
    return current
