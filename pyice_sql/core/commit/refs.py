"""Branch and tag DDL: ALTER TABLE ... CREATE [OR REPLACE] / REPLACE / DROP BRANCH | TAG.

Semantics follow Iceberg's Spark extensions: a new ref points at `AS OF VERSION n` or else main's
current snapshot; REPLACE keeps the ref's retention unless the statement sets it; CREATE of an
existing name fails unless IF NOT EXISTS (which then changes nothing); a branch created on a table
without snapshots gets an empty snapshot of its own. Retention lands in the ref's JSON as
`max-ref-age-ms` (RETAIN), `min-snapshots-to-keep` and `max-snapshot-age-ms` (WITH SNAPSHOT
RETENTION); tags carry only the first. Every change is one compare-and-swap commit, except a
branch with retention created on an empty table: its empty snapshot commits first, then the
retention (the branch briefly exists without it).
"""
from __future__ import annotations

import dataclasses

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.commit.operations import append_files
from pyice_sql.core.commit.producer import commit_update, update_metadata
from pyice_sql.core.errors import AnalysisError, ValidationError
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.model.snapshots import BRANCH, MAIN_BRANCH, SnapshotRef
from pyice_sql.core.sql.statements import AlterTableCreateOrReplaceRef, AlterTableDropRef


def create_or_replace_ref(table: Table, stmt: AlterTableCreateOrReplaceRef) -> Table:
    """Run CREATE [OR REPLACE] / REPLACE BRANCH|TAG on `table`."""
    _check_retention(stmt, table)
    if (stmt.kind == BRANCH and stmt.snapshot_id is None and table.metadata.current_snapshot_id is None
            and stmt.create and stmt.name not in table.metadata.refs):
        # Iceberg gives a branch of an empty table an empty snapshot of its own
        table = commit_update(table, append_files(None, branch=stmt.name))
        return update_metadata(table, lambda md: _with_retention(md, stmt))
    return update_metadata(table, lambda md: ref_change(md, table.full_name, stmt))


def ref_change(md: TableMetadata, table: str, stmt: AlterTableCreateOrReplaceRef) -> TableMetadata:
    """The metadata after `stmt`, checked against `md` (the latest state when a commit retries)."""
    what = f"{stmt.kind} {stmt.name!r} of table {table}"
    snapshot_id = stmt.snapshot_id if stmt.snapshot_id is not None else md.current_snapshot_id
    existing = md.refs.get(stmt.name)
    if stmt.replace and (existing is not None or not stmt.create):
        if existing is None:
            raise ValidationError(f"cannot replace {what}: it does not exist", position=stmt.position)
        if existing.type != stmt.kind:
            raise ValidationError(f"cannot replace {what}: {stmt.name!r} is a {existing.type}", position=stmt.position)
        if snapshot_id is None:
            raise ValidationError(f"cannot replace {what}: main has no snapshot", position=stmt.position)
        ref = dataclasses.replace(existing, snapshot_id=snapshot_id)
    else:
        if existing is not None:
            if stmt.if_not_exists:
                return md
            raise ValidationError(f"cannot create {what}: a {existing.type} of that name already exists",
                                  position=stmt.position)
        if snapshot_id is None:
            raise ValidationError(f"cannot create {what}: the table has no snapshot", position=stmt.position)
        ref = SnapshotRef(snapshot_id, stmt.kind)
    if md.snapshot_by_id(snapshot_id) is None:
        raise ValidationError(f"cannot point {what} at snapshot {snapshot_id}: no such snapshot", position=stmt.position)
    return md.set_ref(stmt.name, _retained(ref, stmt))


def _with_retention(md: TableMetadata, stmt: AlterTableCreateOrReplaceRef) -> TableMetadata:
    return md.set_ref(stmt.name, _retained(md.refs[stmt.name], stmt))


def _retained(ref: SnapshotRef, stmt: AlterTableCreateOrReplaceRef) -> SnapshotRef:
    changes = {k: v for k, v in (("min_snapshots_to_keep", stmt.min_snapshots_to_keep),
                                 ("max_snapshot_age_ms", stmt.max_snapshot_age_ms),
                                 ("max_ref_age_ms", stmt.max_ref_age_ms)) if v is not None}
    return dataclasses.replace(ref, **changes)


def _check_retention(stmt: AlterTableCreateOrReplaceRef, table: Table) -> None:
    for label, value in (("snapshots to keep", stmt.min_snapshots_to_keep),
                         ("snapshot retention", stmt.max_snapshot_age_ms), ("RETAIN", stmt.max_ref_age_ms)):
        if value is not None and value <= 0:
            raise AnalysisError(f"{stmt.kind} {stmt.name!r} of table {table.full_name}: {label} must be greater "
                                f"than 0, got {value}", position=stmt.position)


def drop_ref(table: Table, stmt: AlterTableDropRef) -> Table:
    """Run DROP BRANCH|TAG [IF EXISTS] on `table` (main cannot be dropped)."""
    def change(md: TableMetadata) -> TableMetadata:
        what = f"{stmt.kind} {stmt.name!r} of table {table.full_name}"
        existing = md.refs.get(stmt.name)
        if existing is None:
            if stmt.if_exists:
                return md
            raise ValidationError(f"cannot drop {what}: it does not exist", position=stmt.position)
        if stmt.kind == BRANCH and stmt.name == MAIN_BRANCH:
            raise ValidationError(f"cannot drop the main branch of table {table.full_name}", position=stmt.position)
        if existing.type != stmt.kind:
            raise ValidationError(f"cannot drop {what}: {stmt.name!r} is a {existing.type}", position=stmt.position)
        return md.remove_ref(stmt.name)
    return update_metadata(table, change)

