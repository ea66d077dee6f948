"""REST commits derived from (base, new) metadata: requirements + updates (catalog/metadata_updates.py).

The independent truth is PyIceberg's own implementation of the protocol's server side: its
`update_table_metadata` applies our updates to the base metadata and must arrive at the metadata
our commit path built, and its requirement checks must pass on the base and fail on a table a
concurrent writer changed.
"""
from __future__ import annotations

import dataclasses
import json

import pytest
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.table import CommitTableRequest
from pyiceberg.table.metadata import TableMetadataUtil
from pyiceberg.table.update import update_table_metadata

from pyice_sql.core.catalog.metadata_updates import table_changes
from pyice_sql.core.errors import UnsupportedError
from pyice_sql.core.model.metadata import TableMetadata, new_table_metadata
from pyice_sql.core.model.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.snapshots import Snapshot, SnapshotRef
from pyice_sql.core.model.sort_order import UNSORTED, SortField, SortOrder
from pyice_sql.core.model.transforms import parse_transform
from pyice_sql.core.model.types import LONG, STRING, NestedField

SCHEMA = Schema((NestedField(1, "id", LONG), NestedField(2, "s", STRING, required=False)))


def snap(sid: int, parent: int | None, seq: int, schema_id: int = 0) -> Snapshot:
    return Snapshot(sid, parent, seq, 1_700_000_000_000 + seq * 1000, f"/w/db/t/metadata/snap-{sid}.avro",
                    {"operation": "append"}, schema_id)


@pytest.fixture
def base() -> TableMetadata:
    md = new_table_metadata(SCHEMA, UNPARTITIONED, UNSORTED, "/w/db/t", {"owner": "a"})
    return md.add_snapshot(snap(11, None, 1)).add_snapshot(snap(12, 11, 2))


def py_metadata(md: TableMetadata):
    return TableMetadataUtil.parse_raw(json.dumps(md.to_json()))


def applied(base: TableMetadata, new: TableMetadata) -> TableMetadata:
    """PyIceberg applies our requirements (checked on `base`) and updates; the result, in our model."""
    changes = table_changes(base, new)
    request = CommitTableRequest.model_validate(
        {"identifier": {"namespace": ["db"], "name": "t"}, **changes.to_json()})
    py_base = py_metadata(base)
    for requirement in request.requirements:
        requirement.validate(py_base)
    result = update_table_metadata(py_base, request.updates)
    return TableMetadata.from_json(json.loads(result.model_dump_json(by_alias=True, exclude_none=True)))


def assert_same_table(got: TableMetadata, want: TableMetadata) -> None:
    """Equal in everything a commit decides (the server keeps its own clocks and logs)."""
    def decided(md: TableMetadata) -> dict:
        out = dataclasses.asdict(md)
        for key in ("last_updated_ms", "snapshot_log", "metadata_log", "extras"):
            out.pop(key)
        return out

    assert decided(got) == decided(want)


def rejected_on(base_after_race: TableMetadata, base: TableMetadata, new: TableMetadata) -> bool:
    request = CommitTableRequest.model_validate(
        {"identifier": {"namespace": ["db"], "name": "t"}, **table_changes(base, new).to_json()})
    try:
        for requirement in request.requirements:
            requirement.validate(py_metadata(base_after_race))
    except CommitFailedException:
        return True
    return False


def test_append_is_add_snapshot_and_a_guarded_main_ref(base):
    new = base.add_snapshot(snap(13, 12, 3))
    changes = table_changes(base, new)
    assert changes.requirements == [
        {"type": "assert-table-uuid", "uuid": base.table_uuid},
        {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 12}]
    assert [u["action"] for u in changes.updates] == ["add-snapshot", "set-snapshot-ref"]
    assert_same_table(applied(base, new), new)
    raced = base.add_snapshot(snap(99, 12, 3))  # another writer's append landed first
    assert rejected_on(raced, base, new)


def test_schema_evolution_sends_the_new_schema_as_last_added(base):
    wider = Schema(SCHEMA.fields + (NestedField(3, "n", LONG, required=False),))
    new = base.add_schema(wider, make_current=True)
    changes = table_changes(base, new)
    assert {"action": "set-current-schema", "schema-id": -1} in changes.updates
    assert {"type": "assert-current-schema-id", "current-schema-id": 0} in changes.requirements
    assert {"type": "assert-last-assigned-field-id", "last-assigned-field-id": 2} in changes.requirements
    assert_same_table(applied(base, new), new)
    other = base.add_schema(Schema(SCHEMA.fields + (NestedField(3, "x", STRING, required=False),)), True)
    assert rejected_on(other, base, new)  # a concurrent ALTER took column id 3


def test_partition_evolution_and_sort_order(base):
    spec = PartitionSpec(0, (PartitionField(1, 1000, parse_transform("bucket[4]"), "id_bucket"),))
    new = base.add_spec(spec, make_default=True)
    order = SortOrder(1, (SortField(1, parse_transform("identity"), "asc", "nulls-first"),))
    new = dataclasses.replace(new, sort_orders=new.sort_orders + (order,), default_sort_order_id=1)
    changes = table_changes(base, new)
    assert [u["action"] for u in changes.updates] == [
        "add-spec", "set-default-spec", "add-sort-order", "set-default-sort-order"]
    assert_same_table(applied(base, new), new)
    raced = base.add_spec(PartitionSpec(0, (PartitionField(2, 1000, parse_transform("identity"), "s"),)), True)
    assert rejected_on(raced, base, new)


def test_properties_set_and_removed(base):
    new = base.set_properties({"write.merge.mode": "merge-on-read", "owner": "b"}).remove_properties(["x"])
    new = new.set_properties({"gone": "1"})
    later = new.remove_properties(["gone", "owner"])
    changes = table_changes(new, later)
    assert changes.updates == [{"action": "remove-properties", "removals": ["gone", "owner"]}]
    assert_same_table(applied(base, new), new)
    assert_same_table(applied(new, later), later)
    assert not rejected_on(base.add_snapshot(snap(13, 12, 3)), base, new)  # only the uuid is asserted


def test_branches_tags_rollback_and_expiry(base):
    tagged = base.set_ref("v1", SnapshotRef(11, "tag")).set_ref("audit", SnapshotRef(12, "branch", 2))
    changes = table_changes(base, tagged)
    assert {"type": "assert-ref-snapshot-id", "ref": "v1", "snapshot-id": None} in changes.requirements
    assert_same_table(applied(base, tagged), tagged)
    rolled = tagged.set_current_snapshot(11).remove_ref("audit")
    assert_same_table(applied(tagged, rolled), rolled)
    expired = rolled.remove_snapshots([12])
    changes = table_changes(rolled, expired)
    assert changes.updates == [{"action": "remove-snapshots", "snapshot-ids": [12]}]
    assert_same_table(applied(rolled, expired), expired)


def test_replace_table_keeps_history_and_moves_main(base):
    schema = Schema((NestedField(1, "id", LONG), NestedField(2, "k", STRING, required=False)))
    spec = PartitionSpec(0, (PartitionField(2, 1000, parse_transform("identity"), "k"),))
    replaced = base.replacement(schema, spec, {"p": "1"})
    new = replaced.add_snapshot(snap(13, None, 3, replaced.current_schema_id))
    assert_same_table(applied(base, new), new)
    empty = base.replacement(schema, spec, {})
    assert {"action": "remove-snapshot-ref", "ref-name": "main"} in table_changes(base, empty).updates
    assert_same_table(applied(base, empty), empty)


def test_upgrade_format_version(base):
    v1 = new_table_metadata(SCHEMA, UNPARTITIONED, UNSORTED, "/w/db/t1", format_version=1)
    v2 = v1.upgrade_format_version(2)
    assert table_changes(v1, v2).updates == [{"action": "upgrade-format-version", "format-version": 2}]
    assert_same_table(applied(v1, v2), v2)


def test_no_change_is_no_update(base):
    changes = table_changes(base, base.with_metadata_log("/w/db/t/metadata/v1.metadata.json", 1))
    assert changes.updates == []


def test_changes_the_protocol_cannot_express_are_errors(base):
    edited = dataclasses.replace(base, snapshots=(base.snapshots[0], dataclasses.replace(
        base.snapshots[1], summary={"operation": "overwrite"})))
    with pytest.raises(UnsupportedError, match="existing snapshot 12"):
        table_changes(base, edited)
    with pytest.raises(UnsupportedError, match="table uuid"):
        table_changes(base, dataclasses.replace(base, table_uuid="00000000-0000-0000-0000-000000000000"))
    with pytest.raises(UnsupportedError, match="remove schema"):
        table_changes(base.add_schema(Schema(SCHEMA.fields[:1])), base)
