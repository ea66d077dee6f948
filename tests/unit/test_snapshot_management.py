"""Snapshot management rules and branch/tag DDL, on metadata built by hand.

The lineage (ids and timestamps chosen here) is

    11 (t=1000) ── 12 (t=2000) ── 14 (t=4000)          main at 14
           └────── 13 (t=3000, append)                  branch audit at 13

so every expected outcome below follows from Iceberg's rules by hand: rollback only along 14→12→11,
cherry-pick of 13 re-applies it (parent 11 is not main's head), of 14's child fast-forwards.
"""
from __future__ import annotations

import dataclasses

import pytest

from pyice_sql.core.errors import ParseError, ValidationError
from pyice_sql.core.model.metadata import TableMetadata, new_table_metadata
from pyice_sql.core.model.partitioning import UNPARTITIONED
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.snapshots import Snapshot, SnapshotRef
from pyice_sql.core.model.sort_order import UNSORTED
from pyice_sql.core.model.types import LONG, NestedField
from pyice_sql.spark.procedures.snapshot_management import (
    can_fast_forward, check_pickable, fast_forward_ref, latest_ancestor_before, rollback_to, set_current,
)
from pyice_sql.core.commit.refs import ref_change
from pyice_sql.core.sql import statements as st
from pyice_sql.core.sql.parser import parse_statement

T = "local.db.t"


def snap(sid: int, parent: int | None, ts: int, seq: int, **summary: str) -> Snapshot:
    return Snapshot(sid, parent, seq, ts, f"/m/snap-{sid}.avro", {"operation": "append", **summary}, 0)


@pytest.fixture
def md() -> TableMetadata:
    base = new_table_metadata(Schema((NestedField(1, "id", LONG),)), UNPARTITIONED, UNSORTED, "/w/db/t")
    base = base.add_snapshot(snap(11, None, 1000, 1)).add_snapshot(snap(12, 11, 2000, 2))
    base = base.add_snapshot(snap(13, 11, 3000, 3), "audit")
    return base.add_snapshot(snap(14, 12, 4000, 4))


def test_rollback_only_to_an_ancestor_of_main(md):
    assert rollback_to(md, T, 11).current_snapshot_id == 11
    assert rollback_to(md, T, 11).snapshot_log[-1].snapshot_id == 11
    with pytest.raises(ValidationError, match="not an ancestor .* local.db.t|local.db.t .* not an ancestor"):
        rollback_to(md, T, 13)
    with pytest.raises(ValidationError, match="no snapshot 99"):
        rollback_to(md, T, 99)
    assert rollback_to(md, T, 14) is md  # already current: nothing to commit


def test_set_current_takes_any_snapshot(md):
    moved = set_current(md, T, 13)
    assert moved.current_snapshot_id == 13 and moved.refs["main"].snapshot_id == 13
    assert moved.refs["audit"].snapshot_id == 13


@pytest.mark.parametrize("ts,expected", [(4001, 14), (4000, 12), (2500, 12), (1001, 11), (1000, None)])
def test_rollback_to_timestamp_picks_newest_ancestor_strictly_older(md, ts, expected):
    found = latest_ancestor_before(md, ts)
    assert (found.snapshot_id if found else None) == expected  # 13 (t=3000) is never chosen: not an ancestor


def test_fast_forward_needs_the_branch_head_to_be_an_ancestor(md):
    md = md.set_ref("dev", SnapshotRef(12, "branch", max_ref_age_ms=5))
    ahead = fast_forward_ref(md, T, "dev", "main")
    assert ahead.refs["dev"] == SnapshotRef(14, "branch", max_ref_age_ms=5)  # retention kept
    assert ahead.current_snapshot_id == 14
    with pytest.raises(ValidationError, match="not an ancestor"):
        fast_forward_ref(md, T, "audit", "main")  # 13 is not on 14's line
    assert fast_forward_ref(md, T, "new", "audit").refs["new"] == SnapshotRef(13)
    with pytest.raises(ValidationError, match="no branch or tag 'nope'"):
        fast_forward_ref(md, T, "dev", "nope")
    tagged = md.set_ref("v1", SnapshotRef(11, "tag"))
    with pytest.raises(ValidationError, match="it is a tag"):
        fast_forward_ref(tagged, T, "v1", "main")
    main_moved = fast_forward_ref(rollback_to(md, T, 12), T, "main", "dev")
    assert main_moved.current_snapshot_id == 12  # dev is at 12 too: unchanged


def test_cherrypick_rules(md):
    picked = md.snapshot_by_id(13)
    assert not can_fast_forward(md, picked)
    assert can_fast_forward(rollback_to(md, T, 11), picked)
    check_pickable(md, T, picked)  # not in main's history
    with pytest.raises(ValidationError, match="already an ancestor"):
        check_pickable(md, T, md.snapshot_by_id(12))
    picked_before = md.add_snapshot(snap(15, 14, 5000, 5, **{"source-snapshot-id": "13"}))
    with pytest.raises(ValidationError, match="already picked to create ancestor 15"):
        check_pickable(picked_before, T, picked)
    staged = snap(16, 14, 6000, 6, **{"wap.id": "w1"})
    published = md.add_snapshot(snap(17, 14, 7000, 6, **{"published-wap-id": "w1"}))
    with pytest.raises(ValidationError, match="'w1' was already published"):
        check_pickable(published, T, staged)


def ddl(sql: str):
    return parse_statement(sql, lambda c: c == "local", "local")


def test_branch_and_tag_ddl_parse_with_retention_in_milliseconds():
    s = ddl("ALTER TABLE db.t CREATE OR REPLACE BRANCH `b-1` AS OF VERSION 12 RETAIN 2 HOURS "
            "WITH SNAPSHOT RETENTION 3 SNAPSHOTS 5 MINUTES")
    assert (s.kind, s.name, s.create, s.replace, s.snapshot_id) == ("branch", "b-1", True, True, 12)
    assert (s.max_ref_age_ms, s.min_snapshots_to_keep, s.max_snapshot_age_ms) == (7_200_000, 3, 300_000)
    s = ddl("alter table db.t create tag if not exists v1 retain 30 days")
    assert (s.kind, s.create, s.replace, s.if_not_exists, s.max_ref_age_ms) == ("tag", True, False, True, 2_592_000_000)
    s = ddl("ALTER TABLE db.t WITH SNAPSHOT RETENTION 4 DAYS".replace("WITH", "CREATE BRANCH b WITH"))
    assert (s.min_snapshots_to_keep, s.max_snapshot_age_ms) == (None, 345_600_000)
    d = ddl("ALTER TABLE local.db.t DROP BRANCH IF EXISTS b")
    assert (type(d).__name__, d.kind, d.name, d.if_exists) == ("AlterTableDropRef", "branch", "b", True)
    with pytest.raises(ParseError, match="DAYS, HOURS or MINUTES"):
        ddl("ALTER TABLE db.t CREATE BRANCH b RETAIN 3 WEEKS")
    with pytest.raises(ParseError, match="Unexpected 'WITH' in TAG options .*line 1, column 31"):
        ddl("ALTER TABLE db.t CREATE TAG v WITH SNAPSHOT RETENTION 2 SNAPSHOTS")  # tags keep no snapshots


def test_branch_and_tag_table_names():
    q = ddl("SELECT * FROM db.t.branch_dev JOIN local.db.t.tag_V1 x ON true")
    assert [(r.name, r.ref, r.ref_kind) for r in q.tables] == [("t", "dev", "branch"), ("t", "V1", "tag")]
    assert ddl("INSERT INTO db.t.branch_dev VALUES (1)").table.branch == "dev"
    assert ddl("DELETE FROM local.db.t.branch_dev WHERE id = 1").table.branch == "dev"
    assert ddl("SELECT * FROM db.branch_x").tables[0].name == "branch_x"  # two parts: a table so named
    with pytest.raises(ParseError, match="cannot write to tag 'v1' of local.db.t"):
        ddl("UPDATE db.t.tag_v1 SET id = 1")
    with pytest.raises(ParseError, match="time-travel"):
        ddl("DELETE FROM db.t VERSION AS OF 'dev' WHERE id = 1")


def ref_stmt(sql: str) -> st.AlterTableCreateOrReplaceRef:
    return ddl(sql)


def test_ref_ddl_semantics(md):
    created = ref_change(md, T, ref_stmt("ALTER TABLE db.t CREATE BRANCH dev RETAIN 1 DAYS "
                                         "WITH SNAPSHOT RETENTION 2 SNAPSHOTS"))
    assert created.refs["dev"] == SnapshotRef(14, "branch", 2, None, 86_400_000)  # at main's head
    assert created.refs["dev"].to_json() == {"snapshot-id": 14, "type": "branch", "min-snapshots-to-keep": 2,
                                             "max-ref-age-ms": 86_400_000}
    replaced = ref_change(created, T, ref_stmt("ALTER TABLE db.t REPLACE BRANCH dev AS OF VERSION 11"))
    assert replaced.refs["dev"] == SnapshotRef(11, "branch", 2, None, 86_400_000)  # retention kept
    assert ref_change(created, T, ref_stmt("ALTER TABLE db.t CREATE BRANCH IF NOT EXISTS dev AS OF VERSION 11")) \
        is created
    with pytest.raises(ValidationError, match="tag 'dev' of table local.db.t: a branch of that name already"):
        ref_change(created, T, ref_stmt("ALTER TABLE db.t CREATE TAG dev"))
    with pytest.raises(ValidationError, match="'audit' is a branch"):
        ref_change(md, T, ref_stmt("ALTER TABLE db.t REPLACE TAG audit"))
    with pytest.raises(ValidationError, match="does not exist"):
        ref_change(md, T, ref_stmt("ALTER TABLE db.t REPLACE BRANCH nope"))
    with pytest.raises(ValidationError, match="no such snapshot"):
        ref_change(md, T, ref_stmt("ALTER TABLE db.t CREATE TAG v AS OF VERSION 99"))
    upserted = ref_change(md, T, ref_stmt("ALTER TABLE db.t CREATE OR REPLACE TAG v AS OF VERSION 12 RETAIN 1 HOURS"))
    assert upserted.refs["v"] == SnapshotRef(12, "tag", max_ref_age_ms=3_600_000)
    main = ref_change(md, T, ref_stmt("ALTER TABLE db.t REPLACE BRANCH main AS OF VERSION 13"))
    assert main.current_snapshot_id == 13 and main.snapshot_log[-1].snapshot_id == 13
    empty = dataclasses.replace(md, refs={}, current_snapshot_id=None)
    with pytest.raises(ValidationError, match="no snapshot"):
        ref_change(empty, T, ref_stmt("ALTER TABLE db.t CREATE TAG v"))
