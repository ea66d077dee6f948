"""Branches, tags and snapshot management procedures through the session, checked against
hand-computed rows and lineage (the Iceberg Java comparison is tests/interop/test_snapshot_management_differential.py)."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from pyice_sql.core.catalog.base import TableIdentifier
from pyice_sql.core.commit.producer import SnapshotUpdate, commit_update
from pyice_sql.core.commit.validation import RowLevelValidator
from pyice_sql.core.errors import AnalysisError, ParseError, ValidationError
from pyice_sql.core.expr.predicates import AlwaysTrue
from pyice_sql.core.model.snapshots import Operation

T = "local.db.t"


def rows(ice, sql: str) -> list[tuple]:
    return sorted(tuple(r) for r in ice.sql(sql).collect())


def snapshot_ids(ice) -> list[int]:
    return [r.snapshot_id for r in ice.sql(f"SELECT snapshot_id FROM {T}.snapshots").collect()]


def load(ice):
    return ice.load("local", TableIdentifier(("db",), "t"))


@pytest.fixture
def table(ice):
    ice.sql("CREATE NAMESPACE local.db")
    ice.sql(f"CREATE TABLE {T} (id bigint, s string) USING iceberg PARTITIONED BY (s) "
            "TBLPROPERTIES ('write.update.mode'='merge-on-read')")
    ice.sql(f"INSERT INTO {T} VALUES (1, 'a'), (2, 'b')")
    ice.sql(f"ALTER TABLE {T} CREATE BRANCH dev")
    return ice


def test_writes_to_a_branch_leave_main_alone(table):
    ice = table
    main_head = load(ice).metadata.current_snapshot_id
    ice.sql(f"INSERT INTO {T}.branch_dev VALUES (3, 'a')")
    out = ice.sql(f"UPDATE {T}.branch_dev SET s = 'u' WHERE id = 1").collect()[0]
    ice.sql(f"DELETE FROM {T}.branch_dev WHERE id = 2")
    ice.sql(f"MERGE INTO {T}.branch_dev t USING (SELECT 3L AS id, 'm' AS s UNION ALL SELECT 4L, 'n') src "
            "ON t.id = src.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert rows(ice, f"SELECT * FROM {T}") == [(1, "a"), (2, "b")]
    assert rows(ice, f"SELECT * FROM {T}.branch_dev") == [(1, "u"), (3, "m"), (4, "n")]
    assert rows(ice, f"SELECT * FROM {T} VERSION AS OF 'dev'") == rows(ice, f"SELECT * FROM {T}.branch_dev")
    md = load(ice).metadata
    assert md.current_snapshot_id == main_head and [e.snapshot_id for e in md.snapshot_log] == [main_head]
    chain = [s.snapshot_id for s in md.ancestors(md.refs["dev"].snapshot_id)]
    assert len(chain) == 5 and chain[-1] == main_head  # four branch commits on top of main's head
    assert out.snapshot_id == chain[2]  # the UPDATE's result names the branch snapshot it made
    assert [md.snapshot_by_id(s).operation for s in chain[:4]] == ["overwrite", "delete", "overwrite", "append"]


def test_tags_and_missing_branches_are_not_written(table):
    ice = table
    ice.sql(f"ALTER TABLE {T} CREATE TAG v1")
    with pytest.raises(ParseError, match="cannot write to tag 'v1' of local.db.t"):
        ice.sql(f"INSERT INTO {T}.tag_v1 VALUES (9, 'z')")
    with pytest.raises(AnalysisError, match="local.db.t has no branch 'nope'"):
        ice.sql(f"INSERT INTO {T}.branch_nope VALUES (9, 'z')")
    with pytest.raises(AnalysisError, match="local.db.t has no branch 'nope'"):
        ice.sql(f"SELECT * FROM {T}.branch_nope")
    with pytest.raises(AnalysisError, match="no tag 'dev'"):
        ice.sql(f"SELECT * FROM {T}.tag_dev")  # dev is a branch


def test_branch_reads_use_the_table_schema_and_tags_their_snapshot_schema(table):
    ice = table
    ice.sql(f"ALTER TABLE {T} CREATE TAG v1")
    ice.sql(f"ALTER TABLE {T} ADD COLUMNS (n int)")
    assert rows(ice, f"SELECT * FROM {T}.branch_dev") == [(1, "a", None), (2, "b", None)]
    assert rows(ice, f"SELECT * FROM {T}.tag_v1") == [(1, "a"), (2, "b")]


def test_conflicts_are_checked_against_the_branch_head(table):
    ice = table
    stale = load(ice)
    head = stale.metadata.refs["dev"].snapshot_id
    serializable = RowLevelValidator("DELETE", AlwaysTrue(), "serializable", [], [], [])
    ice.sql(f"INSERT INTO {T} VALUES (5, 'c')")  # main moves: no conflict for a commit to dev
    committed = commit_update(stale, SnapshotUpdate(Operation.DELETE, head, validate=serializable, branch="dev"))
    new_head = committed.metadata.refs["dev"]
    assert committed.metadata.snapshot_by_id(new_head.snapshot_id).parent_snapshot_id == head
    assert rows(ice, f"SELECT * FROM {T}") == [(1, "a"), (2, "b"), (5, "c")]
    stale = load(ice)
    ice.sql(f"INSERT INTO {T}.branch_dev VALUES (6, 'c')")  # dev moves: an insert the stale commit did not see
    with pytest.raises(ValidationError, match="added data file"):
        commit_update(stale, SnapshotUpdate(Operation.DELETE, new_head.snapshot_id, validate=serializable,
                                            branch="dev"))


def test_rollback_set_current_and_cherrypick(table):
    ice = table
    ice.sql(f"INSERT INTO {T} VALUES (3, 'c')")
    s1, s2 = snapshot_ids(ice)
    out = ice.sql(f"CALL local.system.rollback_to_snapshot('db.t', {s1})")
    assert out.columns == ["previous_snapshot_id", "current_snapshot_id"]
    assert [tuple(r) for r in out.collect()] == [(s2, s1)]
    assert rows(ice, f"SELECT * FROM {T}") == [(1, "a"), (2, "b")]
    ice.sql(f"INSERT INTO {T} VALUES (4, 'd')")
    s3 = snapshot_ids(ice)[-1]
    with pytest.raises(ValidationError, match=f"cannot roll back table local.db.t to snapshot {s2}: it is not an "
                       r"ancestor .*\(line 2, column 6\)"):
        ice.sql(f"SELECT 1;\nCALL local.system.rollback_to_snapshot('db.t', {s2})")
    picked = ice.sql(f"CALL local.system.cherrypick_snapshot(table => 'db.t', snapshot_id => {s2})").collect()[0]
    md = load(ice).metadata
    new = md.current_snapshot()
    assert picked.source_snapshot_id == s2 and picked.current_snapshot_id == new.snapshot_id
    assert new.parent_snapshot_id == s3 and new.summary["source-snapshot-id"] == str(s2)
    assert (new.summary["added-records"], new.summary["total-records"]) == ("1", "4")
    assert rows(ice, f"SELECT * FROM {T}") == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    with pytest.raises(ValidationError, match=f"already picked to create ancestor {new.snapshot_id}"):
        ice.sql(f"CALL local.system.cherrypick_snapshot('db.t', {s2})")
    with pytest.raises(AnalysisError, match="either snapshot_id or ref"):
        ice.sql(f"CALL local.system.set_current_snapshot('db.t', {s1}, 'dev')")
    ice.sql("CALL local.system.set_current_snapshot(table => 'db.t', ref => 'dev')")
    assert load(ice).metadata.current_snapshot_id == s1  # dev was made at s1


def test_rollback_to_timestamp_takes_text_in_the_session_zone(table):
    ice = table
    ice.sql(f"INSERT INTO {T} VALUES (3, 'c')")
    s1, s2 = snapshot_ids(ice)
    made = load(ice).metadata.snapshot_by_id(s2).timestamp_ms
    text = dt.datetime.fromtimestamp(made / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    out = ice.sql(f"CALL local.system.rollback_to_timestamp('db.t', '{text}')").collect()[0]
    assert (out.previous_snapshot_id, out.current_snapshot_id) == (s2, s1)  # strictly older than s2
    with pytest.raises(ValidationError, match="no snapshot of the current history is older"):
        ice.sql("CALL local.system.rollback_to_timestamp('db.t', TIMESTAMP '2000-01-01 00:00:00')")


def test_a_branch_of_an_empty_table_gets_an_empty_snapshot(ice, warehouse):
    ice.sql("CREATE NAMESPACE local.db")
    ice.sql(f"CREATE TABLE {T} (id bigint) USING iceberg")
    ice.sql(f"ALTER TABLE {T} CREATE BRANCH b RETAIN 2 DAYS")
    md = load(ice).metadata
    assert md.current_snapshot_id is None and set(md.refs) == {"b"}
    assert md.refs["b"].max_ref_age_ms == 2 * 86_400_000
    assert md.snapshot_by_id(md.refs["b"].snapshot_id).summary["total-records"] == "0"
    ice.sql(f"INSERT INTO {T}.branch_b VALUES (7)")
    assert rows(ice, f"SELECT * FROM {T}.branch_b") == [(7,)] and rows(ice, f"SELECT * FROM {T}") == []
    last = max(Path(warehouse, "db", "t", "metadata").glob("v*.metadata.json"), key=lambda p: int(p.name[1:-14]))
    assert json.loads(last.read_text())["refs"]["b"]["max-ref-age-ms"] == 172_800_000


def test_cherrypick_of_a_dynamic_overwrite_checks_the_partitions_it_replaces(table, spark):
    ice = table
    ice.sql(f"ALTER TABLE {T} CREATE BRANCH ow")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        ice.sql(f"INSERT OVERWRITE {T}.branch_ow VALUES (8, 'b')")  # replaces partition b only
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    overwrite = load(ice).metadata.refs["ow"].snapshot_id
    ice.sql(f"INSERT INTO {T} VALUES (3, 'b')")  # main writes into partition b after the overwrite's base
    with pytest.raises(ValidationError, match="changed partition .* it replaces"):
        ice.sql(f"CALL local.system.cherrypick_snapshot('db.t', {overwrite})")
    ice.sql(f"CALL local.system.rollback_to_snapshot('db.t', {snapshot_ids(ice)[0]})")
    ice.sql(f"INSERT INTO {T} VALUES (4, 'c')")  # another partition: no conflict
    ice.sql(f"CALL local.system.cherrypick_snapshot('db.t', {overwrite})")
    assert rows(ice, f"SELECT * FROM {T}") == [(1, "a"), (4, "c"), (8, "b")]
    md = load(ice).metadata
    assert md.current_snapshot().operation == "overwrite"
    assert md.current_snapshot().summary["source-snapshot-id"] == str(overwrite)
    ice.sql(f"DELETE FROM {T} WHERE id = 4")
    delete = load(ice).metadata.current_snapshot_id
    ice.sql(f"CALL local.system.rollback_to_snapshot('db.t', {snapshot_ids(ice)[0]})")
    with pytest.raises(ValidationError, match="only an append or a dynamic overwrite can be re-applied"):
        ice.sql(f"CALL local.system.cherrypick_snapshot('db.t', {delete})")
