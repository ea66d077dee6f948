"""A MERGE that inserts, over a small source and a large target, broadcasts the source instead of
shuffling the target through an outer join (rules/join_type.py, compile/merge_rows.py): the
matched side's join with the source broadcast, plus the source rows nothing matched. The rows it
writes must be exactly the outer join's. The target-size floor is lowered to 0 here so these small
tables take that path; the truth is hand-computed from the rows each table holds.
"""
from __future__ import annotations

import pytest

import pyice_sql.core.plan.rules.join_type as join_type
import pyice_sql.spark.rowlevel.dml as dml
from pyice_sql.core.errors import CardinalityError

pytestmark = pytest.mark.spark

# a copy-on-write MERGE rewrites by MergeRows again (test_copy_on_write_merge_again.py)
MODES = [("merge-on-read", 2), ("merge-on-read", 3)]


@pytest.fixture(params=MODES, ids=[f"{m}-v{v}" for m, v in MODES])
def table(ice, request, monkeypatch):
    mode, version = request.param
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, data string) USING iceberg TBLPROPERTIES ('format-version'="
            f"'{version}', 'write.delete.mode'='{mode}', 'write.update.mode'='{mode}', 'write.merge.mode'='{mode}')")
    for lo in (0, 100):
        ice.sql(f"INSERT INTO local.db.t SELECT id, concat('r', cast(id as string)) FROM range({lo}, {lo + 100})")
    ice.sql("DELETE FROM local.db.t WHERE id % 10 = 3")  # rows already deleted must stay unmatched
    monkeypatch.setattr(join_type, "BROADCAST_MIN_TARGET_BYTES", 0)
    return ice


@pytest.fixture
def merged_plans(monkeypatch):
    """Whether each MERGE broadcast its source, and the text of the tagged rows' physical plan."""
    seen: list[tuple[bool, str]] = []
    original = dml.RowLevelExecutor._merge_rows

    def spy(self, plan, *args, **kwargs):
        rows = original(self, plan, *args, **kwargs)
        seen.append((plan.broadcast_source, rows._jdf.queryExecution().executedPlan().toString()))
        return rows
    monkeypatch.setattr(dml.RowLevelExecutor, "_merge_rows", spy)
    return seen


def _rows(ice) -> set[tuple]:
    return {(r.id, r.data) for r in ice.sql("SELECT id, data FROM local.db.t").collect()}


def _src(ice, rows):
    """A cached source: once materialized, Spark knows its size (the executor sizes an uncached
    Python-built frame itself: test_a_source_built_in_python_is_sized_first_and_broadcast)."""
    src = ice.spark.createDataFrame(rows, "id long, data string").cache()
    src.count()
    return src


def test_matched_rows_update_and_every_unmatched_source_row_inserts(table, merged_plans):
    ice = table
    # 5, 150 match; 13 was deleted (unmatched: inserted); 500 twice and a NULL id match nothing
    src = _src(ice, [(5, "m5"), (150, "m150"), (13, "m13"), (500, "a"), (500, "b"), (None, "n")])
    out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET data = s.data "
                  "WHEN NOT MATCHED THEN INSERT *", src=src).collect()[0]
    assert (out.num_updated_rows, out.num_inserted_rows, out.num_deleted_rows) == (2, 4, 0)
    ((broadcast, plan),) = merged_plans
    assert broadcast and "BroadcastHashJoin" in plan and "RightOuter" not in plan and "SortMergeJoin" not in plan
    expected = {(i, {5: "m5", 150: "m150"}.get(i, f"r{i}")) for i in range(200) if i % 10 != 3}
    assert _rows(ice) == expected | {(13, "m13"), (500, "a"), (500, "b"), (None, "n")}


def test_not_matched_by_source_clauses_keep_the_target_side_with_a_broadcast_source(table, merged_plans):
    ice = table
    src = _src(ice, [(i, f"m{i}") for i in range(0, 200, 2)] + [(300, "new")])
    out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id "
                  "WHEN MATCHED AND t.id < 50 THEN DELETE WHEN MATCHED THEN UPDATE SET data = s.data "
                  "WHEN NOT MATCHED THEN INSERT * "
                  "WHEN NOT MATCHED BY SOURCE AND t.id > 150 THEN UPDATE SET data = 'gone'", src=src).collect()[0]
    ((broadcast, plan),) = merged_plans
    assert broadcast and "FullOuter" not in plan and "SortMergeJoin" not in plan
    live = [i for i in range(200) if i % 10 != 3]
    expected = {(i, f"m{i}" if i % 2 == 0 else ("gone" if i > 150 else f"r{i}")) for i in live
                if not (i % 2 == 0 and i < 50)}
    # even ids with a deleted target row (none: id % 10 == 3 is odd) would be inserted; 300 is
    assert _rows(ice) == expected | {(300, "new")}
    assert (out.num_deleted_rows, out.num_inserted_rows) == (len([i for i in live if i % 2 == 0 and i < 50]), 1)


def test_a_target_row_matched_twice_fails_with_a_broadcast_source_and_writes_nothing(table, merged_plans):
    ice = table
    before = _rows(ice)
    src = _src(ice, [(7, "x"), (7, "y"), (900, "z")])
    with pytest.raises(CardinalityError, match="id=7"):
        ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET data = s.data "
                "WHEN NOT MATCHED THEN INSERT *", src=src).collect()
    assert merged_plans[0][0]
    assert _rows(ice) == before


def test_a_small_target_keeps_the_outer_join(ice, merged_plans):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, data string) USING iceberg TBLPROPERTIES ("
            "'write.merge.mode'='merge-on-read')")
    ice.sql("INSERT INTO local.db.t VALUES (1, 'a'), (2, 'b')")
    src = _src(ice, [(2, "B"), (3, "C")])
    ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET data = s.data "
            "WHEN NOT MATCHED THEN INSERT *", src=src).collect()
    ((broadcast, plan),) = merged_plans
    assert not broadcast and "RightOuter" in plan
    assert _rows(ice) == {(1, "a"), (2, "B"), (3, "C")}


def test_a_source_built_in_python_is_sized_first_and_broadcast(table, merged_plans):
    """Spark has no size estimate for a Python-built frame (its rows are an RDD): the executor
    caches and counts it first (dml._cached), so it is broadcast as a small source, and the cache
    is released with the statement."""
    from pyice_sql.spark.connect_backend import size_unknown

    ice = table
    src = ice.spark.createDataFrame([(5, "m5"), (150, "m150"), (900, "n")], "id long, data string")
    assert size_unknown(src)
    out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET data = s.data "
                  "WHEN NOT MATCHED THEN INSERT *", src=src).collect()[0]
    ((broadcast, plan),) = merged_plans
    assert broadcast and "BroadcastHashJoin" in plan and "SortMergeJoin" not in plan
    assert (out.num_updated_rows, out.num_inserted_rows) == (2, 1)
    expected = {(i, {5: "m5", 150: "m150"}.get(i, f"r{i}")) for i in range(200) if i % 10 != 3}
    assert _rows(ice) == expected | {(900, "n")}
    level = src.storageLevel
    assert not (level.useMemory or level.useDisk)


def test_the_source_is_broadcast_only_within_sparks_threshold(ice):
    from pyice_sql.spark.connect_backend import within_broadcast_threshold

    small, large = ice.spark.range(100), ice.spark.range(10 ** 12)  # Range: Spark knows its size
    before = ice.spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    try:
        assert within_broadcast_threshold(small) and not within_broadcast_threshold(large)
        ice.spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # broadcasting turned off
        assert not within_broadcast_threshold(small)
    finally:
        ice.spark.conf.set("spark.sql.autoBroadcastJoinThreshold", before)
