"""A commit as the Iceberg REST protocol expresses it: requirements plus metadata updates.

Every commit path builds the table's next metadata from the metadata it started from (INSERT,
MERGE/UPDATE/DELETE, ALTER, branches and tags, procedures). `table_changes` turns that
(base, new) pair into the protocol's form, so the same commit runs on a catalog that swaps
metadata files and on a REST catalog whose server writes the file itself.

Requirements follow Iceberg Java's UpdateRequirements: the table is the same table (uuid); every
ref that moves is still where the writer saw it; schema, spec and sort-order changes assert the
ids they were derived from. Fields the server maintains itself (last-updated-ms, the snapshot and
metadata logs, last-sequence-number, current-snapshot-id) are not sent. A difference the protocol
cannot express (a changed snapshot, a new table uuid, ...) is an error rather than a silent drop.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyice_sql.core.errors import UnsupportedError
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.properties import RESERVED_PROPERTIES

LAST_ADDED = -1  # set-current-schema / set-default-spec / set-default-sort-order: "the one just added"


@dataclass
class TableChanges:
    """The body of a REST commit (CommitTableRequest without the identifier)."""

    requirements: list[dict[str, Any]] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"requirements": self.requirements, "updates": self.updates}


def table_changes(base: TableMetadata, new: TableMetadata) -> TableChanges:
    """The requirements and updates that turn `base` into `new` on a REST server."""
    if new.table_uuid != base.table_uuid and base.table_uuid is not None:
        raise UnsupportedError(f"a commit cannot change the table uuid ({base.table_uuid} -> {new.table_uuid})")
    out = TableChanges()
    if base.table_uuid is not None:
        out.requirements.append({"type": "assert-table-uuid", "uuid": base.table_uuid})
    if new.format_version != base.format_version:
        out.updates.append({"action": "upgrade-format-version", "format-version": new.format_version})
    if new.location != base.location:
        out.updates.append({"action": "set-location", "location": new.location})
    _schemas(base, new, out)
    _specs(base, new, out)
    _sort_orders(base, new, out)
    _properties(base, new, out)
    _snapshots_and_refs(base, new, out)
    _statistics(base, new)
    return out


def _added(base_items: tuple, new_items: tuple, key, what: str) -> list:
    """Items of `new` whose id is not in `base`; an item changed or dropped under its id is an error."""
    old = {key(x): x for x in base_items}
    new_ids = {key(x) for x in new_items}
    for x in new_items:
        if key(x) in old and old[key(x)] != x:
            raise UnsupportedError(f"a commit cannot change existing {what} {key(x)}")
    dropped = sorted(set(old) - new_ids)
    if dropped:
        raise UnsupportedError(f"a commit cannot remove {what} {dropped}")
    return [x for x in new_items if key(x) not in old]


def _choose(added_ids: list[int], chosen: int) -> int:
    """The id to send for a set-current/set-default update: -1 when it is the last one added, so the
    server's own id assignment decides (it reuses and numbers ids exactly as Java does)."""
    return LAST_ADDED if added_ids and chosen == added_ids[-1] else chosen


def _schemas(base: TableMetadata, new: TableMetadata, out: TableChanges) -> None:
    added = _added(base.schemas, new.schemas, lambda s: s.schema_id, "schema")
    if added:
        out.requirements.append({"type": "assert-last-assigned-field-id", "last-assigned-field-id": base.last_column_id})
        out.updates += [{"action": "add-schema", "schema": s.to_json()} for s in added]
    if new.current_schema_id != base.current_schema_id:
        out.requirements.append({"type": "assert-current-schema-id", "current-schema-id": base.current_schema_id})
        out.updates.append({"action": "set-current-schema",
                            "schema-id": _choose([s.schema_id for s in added], new.current_schema_id)})


def _specs(base: TableMetadata, new: TableMetadata, out: TableChanges) -> None:
    added = _added(base.specs, new.specs, lambda s: s.spec_id, "partition spec")
    if added:
        out.requirements.append({"type": "assert-last-assigned-partition-id",
                                 "last-assigned-partition-id": base.last_partition_id})
        out.updates += [{"action": "add-spec", "spec": s.to_json()} for s in added]
    if new.default_spec_id != base.default_spec_id:
        out.requirements.append({"type": "assert-default-spec-id", "default-spec-id": base.default_spec_id})
        out.updates.append({"action": "set-default-spec",
                            "spec-id": _choose([s.spec_id for s in added], new.default_spec_id)})


def _sort_orders(base: TableMetadata, new: TableMetadata, out: TableChanges) -> None:
    added = _added(base.sort_orders, new.sort_orders, lambda o: o.order_id, "sort order")
    out.updates += [{"action": "add-sort-order", "sort-order": o.to_json()} for o in added]
    if new.default_sort_order_id != base.default_sort_order_id:
        out.requirements.append({"type": "assert-default-sort-order-id",
                                 "default-sort-order-id": base.default_sort_order_id})
        out.updates.append({"action": "set-default-sort-order",
                            "sort-order-id": _choose([o.order_id for o in added], new.default_sort_order_id)})


def _properties(base: TableMetadata, new: TableMetadata, out: TableChanges) -> None:
    old = {k: v for k, v in base.properties.items() if k not in RESERVED_PROPERTIES}
    now = {k: v for k, v in new.properties.items() if k not in RESERVED_PROPERTIES}
    changed = {k: v for k, v in now.items() if old.get(k) != v}
    removed = sorted(set(old) - set(now))
    if changed:
        out.updates.append({"action": "set-properties", "updates": changed})
    if removed:
        out.updates.append({"action": "remove-properties", "removals": removed})


def _snapshots_and_refs(base: TableMetadata, new: TableMetadata, out: TableChanges) -> None:
    old_snapshots = {s.snapshot_id: s for s in base.snapshots}
    new_ids = {s.snapshot_id for s in new.snapshots}
    for s in new.snapshots:
        if s.snapshot_id in old_snapshots and old_snapshots[s.snapshot_id] != s:
            raise UnsupportedError(f"a commit cannot change existing snapshot {s.snapshot_id}")
    moved = sorted(name for name in set(base.refs) | set(new.refs) if base.refs.get(name) != new.refs.get(name))
    for name in moved:  # the writer's view of every ref it moves, removes or creates
        ref = base.refs.get(name)
        out.requirements.append({"type": "assert-ref-snapshot-id", "ref": name,
                                 "snapshot-id": ref.snapshot_id if ref is not None else None})
    out.updates += [{"action": "remove-snapshot-ref", "ref-name": name} for name in moved if name not in new.refs]
    out.updates += [{"action": "add-snapshot", "snapshot": s.to_json()}
                    for s in new.snapshots if s.snapshot_id not in old_snapshots]
    out.updates += [{"action": "set-snapshot-ref", "ref-name": name, **new.refs[name].to_json()}
                    for name in moved if name in new.refs]
    removed = [sid for sid in old_snapshots if sid not in new_ids]
    if removed:
        out.updates.append({"action": "remove-snapshots", "snapshot-ids": removed})


def _statistics(base: TableMetadata, new: TableMetadata) -> None:
    """Statistics go with their snapshot (remove-snapshots drops them); no commit path edits them."""
    kept = {s.snapshot_id for s in new.snapshots}
    for what, old, now in (("statistics", base.statistics, new.statistics),
                           ("partition statistics", base.partition_statistics, new.partition_statistics)):
        if [s for s in old if s.get("snapshot-id") in kept] != list(now):
            raise UnsupportedError(f"a REST commit cannot change table {what} files")
