"""A MERGE reads, of the target rows, only those its source's keys can pair with (key_filter.py).

Ten files whose ids all span 0-999 (no file can be skipped): a 3-key merge-on-read MERGE moves
(shuffles or broadcasts) a handful of target rows between its stages, not the table's 1,000, from
SQL VALUES (its keys collected) and from a source Spark computes (a semi join with its keys).
Copy-on-write moves the touched file's rows, every one rewritten (its first pass joins a broadcast
source, so there the filter saves the join's probes, not rows moved).
Rows moved are read from Spark's own plan metrics (records each exchange wrote). Every result is
checked against a hand-computed table, including key types the filter must leave alone and a
copy-on-write MERGE that cannot run its second pass, which rewrites from the unfiltered scan.
A copy-on-write MERGE whose first pass touches every planned file reads them again through the same
scan, taken before the filter: checked here too, with and without deletes to apply.
"""
from __future__ import annotations

import pytest
from pyspark.sql import types as T

from pyice_sql.core.model import types as it
from pyice_sql.core.model.schema import Schema
from pyice_sql.spark.rowlevel.compile.key_filter import key_row_filter

MODES = ["merge-on-read", "copy-on-write"]


def _table(ice, mode: str, key_type: str = "bigint") -> None:
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.t (id {key_type}, v string) USING iceberg TBLPROPERTIES "
            f"('write.merge.mode'='{mode}', 'write.update.mode'='{mode}', 'write.delete.mode'='{mode}')")
    for k in range(10):  # one file per INSERT, each spanning the whole id range
        ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ CAST(id AS {key_type}), 'old' "
                f"FROM range({k}, 1000, 10)")


def _rows_moved(spark, run) -> int:
    """Rows the statement's plans moved between stages: records written by shuffles, rows built
    into broadcasts (Spark's SQL metrics of every query `run` executes)."""
    store = spark._jsparkSession.sharedState().statusStore()

    def newest() -> list:  # the store keeps the last 1000 executions, oldest first
        count = store.executionsCount()
        found = store.executionsList(max(0, count - 50), 50)
        return [found.apply(i) for i in range(found.size())]

    last = max((e.executionId() for e in newest()), default=-1)
    run()
    moved = 0
    for e in newest():
        if e.executionId() <= last:
            continue
        values = store.executionMetrics(e.executionId())
        nodes = store.planGraph(e.executionId()).allNodes()
        for n in (nodes.apply(j) for j in range(nodes.size())):
            metrics = n.metrics()
            for m in (metrics.apply(k) for k in range(metrics.size())):
                counted = m.name() == "shuffle records written" or (
                    n.name() == "BroadcastExchange" and m.name() == "number of output rows")
                value = values.get(m.accumulatorId())
                if counted and value.isDefined():
                    moved += int(value.get().replace(",", ""))
    return moved


def _merge(ice, source: str, clauses: str = "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"):
    out = []
    moved = _rows_moved(ice.spark, lambda: out.append(ice.sql(
        f"MERGE INTO local.db.t t USING ({source}) s ON t.id = s.id {clauses}").collect()[0]))
    return out[0], moved


def _rows(ice) -> dict:
    return {r.id: r.v for r in ice.sql("SELECT id, v FROM local.db.t").collect()}


OLD = {i: "old" for i in range(1000)}


@pytest.mark.spark
@pytest.mark.parametrize("mode", MODES)
def test_a_few_keys_move_only_their_target_rows(ice, mode):
    _table(ice, mode)
    result, moved = _merge(ice, "SELECT * FROM VALUES (CAST(510 AS BIGINT), 'new'), (CAST(520 AS BIGINT), 'new'), "
                                "(CAST(5000 AS BIGINT), 'ins') AS v(id, v)")
    assert len(ice.last_plan.tasks) == 10  # no file skipped: the keys are in every file's range
    assert (result.num_updated_rows, result.num_inserted_rows) == (2, 1)
    assert _rows(ice) == OLD | {510: "new", 520: "new", 5000: "ins"}
    # 510 and 520 are both in the file of ids = 0 mod 10: copy-on-write rewrites its 100 rows
    limit = 20 if mode == "merge-on-read" else 100 + 20
    assert moved <= limit, moved


@pytest.mark.spark
def test_a_local_source_over_the_size_bound_is_not_collected_for_the_rows_alone(ice, monkeypatch):
    """Where no file can be skipped, a source held in the plan has its keys collected for the row
    filter only up to `LOCAL_KEYS_MAX_BYTES` (a larger one's keys would be a range): over it, the
    join alone pairs the rows (this table is under the semi join's 16 MiB), with the same result."""
    from pyice_sql.spark.rowlevel import dml

    monkeypatch.setattr(dml, "LOCAL_KEYS_MAX_BYTES", 0)
    _table(ice, "merge-on-read")
    result, moved = _merge(ice, "SELECT * FROM VALUES (CAST(510 AS BIGINT), 'new'), (CAST(5000 AS BIGINT), 'ins') "
                                "AS v(id, v)")
    assert (result.num_updated_rows, result.num_inserted_rows) == (1, 1)
    assert _rows(ice) == OLD | {510: "new", 5000: "ins"}
    assert moved >= 1000, moved


@pytest.mark.spark
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("key_type", ["bigint", "double"])
def test_a_computed_source_moves_only_the_rows_its_keys_pair_with(ice, mode, key_type, monkeypatch):
    """A source Spark computes (its keys are not collected where no file can be skipped): merge-on-
    read joins the target scan with its keys, broadcast, before the shuffle (here over any target
    scan: it takes 16 MiB otherwise); a double key pairs with bigint ids by Spark's widening
    (510.0 = 510), as in the MERGE's own join."""
    from pyice_sql.core.plan.rules import join_type

    monkeypatch.setattr(join_type, "SEMI_JOIN_MIN_TARGET_BYTES", 0)
    _table(ice, mode)
    src = (ice.spark.range(500, 530, 10).selectExpr(f"CAST(id AS {key_type}) AS id", "'new' AS v")
           .union(ice.spark.range(5000, 5001).selectExpr(f"CAST(id AS {key_type})", "'ins'")))
    out = []
    moved = _rows_moved(ice.spark, lambda: out.append(ice.sql(
        "MERGE INTO local.db.t t USING src s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *", src=src).collect()[0]))
    assert len(ice.last_plan.tasks) == 10
    assert (out[0].num_updated_rows, out[0].num_inserted_rows) == (3, 1)
    assert _rows(ice) == OLD | {500: "new", 510: "new", 520: "new", 5000: "ins"}
    limit = 30 if mode == "merge-on-read" else 100 + 30  # copy-on-write: the one touched file
    assert moved <= limit, moved


@pytest.mark.spark
@pytest.mark.parametrize("mode", MODES)
def test_an_int_column_paired_with_bigint_keys_and_null_keys(ice, mode):
    _table(ice, mode, key_type="int")
    result, _ = _merge(ice, "SELECT * FROM VALUES (CAST(7 AS BIGINT), 'new'), (CAST(NULL AS BIGINT), 'null'), "
                            "(CAST(4000000000 AS BIGINT), 'big') AS v(id, v)",
                       "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED AND s.id IS NULL THEN INSERT (id, v) "
                       "VALUES (-1, s.v)")
    assert (result.num_updated_rows, result.num_inserted_rows) == (1, 1)
    assert _rows(ice) == OLD | {7: "new", -1: "null"}


@pytest.mark.spark
@pytest.mark.parametrize("mode", MODES)
def test_only_null_keys_pair_with_nothing(ice, mode):
    _table(ice, mode)
    result, moved = _merge(ice, "SELECT * FROM VALUES (CAST(NULL AS BIGINT), 'a'), (CAST(NULL AS BIGINT), 'b') "
                                "AS v(id, v)",
                           "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id, v) VALUES (2000, s.v)")
    assert (result.num_deleted_rows, result.num_inserted_rows) == (0, 2)
    assert sorted(r.v for r in ice.sql("SELECT v FROM local.db.t WHERE id = 2000").collect()) == ["a", "b"]
    assert len(_rows(ice)) == 1001
    assert moved <= 10, moved


@pytest.mark.spark
@pytest.mark.parametrize("mode", MODES)
def test_string_keys_pair_by_exact_value(ice, mode):
    _table(ice, mode, key_type="string")
    result, _ = _merge(ice, "SELECT * FROM VALUES ('510', 'new'), ('0510', 'pad') AS v(id, v)")
    assert (result.num_updated_rows, result.num_inserted_rows) == (1, 1)
    assert _rows(ice) == {str(i): "old" for i in range(1000)} | {"510": "new", "0510": "pad"}


@pytest.mark.spark
@pytest.mark.parametrize("mode", MODES)
def test_a_double_key_pairs_by_spark_widening(ice, mode):
    """7.0 = 7 by Spark's widening: no row condition is written for a double key, the join decides."""
    _table(ice, mode)
    result, _ = _merge(ice, "SELECT * FROM VALUES (7.0D, 'new'), (7.5D, 'ins') AS v(id, v)",
                       "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (-7, s.v)")
    assert (result.num_updated_rows, result.num_inserted_rows) == (1, 1)
    assert _rows(ice) == OLD | {7: "new", -7: "ins"}


@pytest.mark.spark
def test_copy_on_write_rewrite_that_cannot_merge_again_keeps_every_row(ice, monkeypatch):
    """When Spark finds the first pass's rows non-deterministic (as Spark Connect can, judging a
    cached source by its plan's text: simulated here), copy-on-write cannot run MergeRows twice: it
    copies the rows of the touched files that no action changed from a scan of its own."""
    from pyice_sql.spark.rowlevel import dml
    from pyice_sql.spark.rowlevel.compile.merge_rows import MATCHED_PAIR

    real = dml.analyzed_deterministic
    monkeypatch.setattr(dml, "analyzed_deterministic", lambda df: real(df) and MATCHED_PAIR not in df.columns)
    _table(ice, "copy-on-write")
    result, _ = _merge(ice, "SELECT * FROM VALUES (CAST(510 AS BIGINT), 'new'), (CAST(5000 AS BIGINT), 'ins') "
                            "AS v(id, v)")
    assert (result.num_updated_rows, result.num_inserted_rows) == (1, 1)
    assert _rows(ice) == OLD | {510: "new", 5000: "ins"}


def _scans_built(monkeypatch) -> list:
    """The row filter of each target scan the statement builds (dml's `read_tasks`), in order."""
    from pyice_sql.spark.rowlevel import dml

    built, real = [], dml.read_tasks
    monkeypatch.setattr(dml, "read_tasks", lambda *a, **k: built.append(k.get("row_filter")) or real(*a, **k))
    return built


TEN_KEYS = ", ".join(f"(CAST({k} AS BIGINT), 'new')" for k in range(510, 520))  # one id in each file


@pytest.mark.spark
@pytest.mark.parametrize("source", ["values", "computed"])
def test_copy_on_write_second_pass_reads_every_planned_file_through_the_first_scan(ice, monkeypatch, source):
    """A matched row in every planned file: the second pass reads them through the first pass's scan,
    taken before the key filter (one scan built), and every row of the rewritten files stays."""
    _table(ice, "copy-on-write")
    built = _scans_built(monkeypatch)
    if source == "values":  # keys collected: the first pass filters the shared scan by them
        result, _ = _merge(ice, f"SELECT * FROM VALUES {TEN_KEYS}, (CAST(5000 AS BIGINT), 'ins') AS v(id, v)")
    else:  # no keys collected (no file to skip): both passes read the same scan whole
        src = ice.spark.range(510, 520).selectExpr("id", "'new' AS v").union(
            ice.spark.range(5000, 5001).selectExpr("id", "'ins'"))
        result = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id "
                         "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *", src=src).collect()[0]
    assert (result.num_updated_rows, result.num_inserted_rows, result.num_removed_data_files) == (10, 1, 10)
    assert _rows(ice) == OLD | {k: "new" for k in range(510, 520)} | {5000: "ins"}
    assert built == [None]


@pytest.mark.spark
def test_copy_on_write_second_pass_scans_again_where_deletes_apply(ice, monkeypatch):
    """With position deletes to apply, the key filter stays inside the first pass's scan (ahead of the
    delete filter), so the second pass builds a scan of its own; deleted rows stay deleted."""
    _table(ice, "merge-on-read")
    ice.sql("DELETE FROM local.db.t WHERE id IN (511, 600)")
    ice.sql("ALTER TABLE local.db.t SET TBLPROPERTIES ('write.merge.mode'='copy-on-write')")
    built = _scans_built(monkeypatch)
    result, _ = _merge(ice, f"SELECT * FROM VALUES {TEN_KEYS}, (CAST(5000 AS BIGINT), 'ins') AS v(id, v)")
    assert (result.num_updated_rows, result.num_inserted_rows) == (9, 2)  # 511 was deleted: inserted again
    expected = OLD | {k: "new" for k in range(510, 520)} | {5000: "ins"}
    del expected[600]
    assert _rows(ice) == expected
    assert len(built) == 2 and built[0] is not None and built[1] is None


@pytest.mark.spark
@pytest.mark.parametrize("mode", MODES)
def test_a_key_range_compiles_no_code_of_its_own(ice, mode):
    """Over 1000 keys the filter is their range, held by the shim's function, not written into Spark's
    generated code: a MERGE whose range differs from the last one's compiles nothing new (BETWEEN
    compiled the scan stages again). Each result is checked against the same MERGE done in Python."""
    _table(ice, mode)
    compiled = ice.spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    expected = dict(OLD)

    def merge(lo: int) -> int:
        keys = range(lo, lo + 1200)  # SQL VALUES: held in the plan, its keys collected without a job
        rows = ", ".join(f"(CAST({k} AS BIGINT), 'new{lo}')" for k in keys)
        before = compiled.getCount()
        _merge(ice, f"SELECT * FROM VALUES {rows} AS v(id, v)")
        expected.update((k, f"new{lo}") for k in keys)
        assert _rows(ice) == expected
        return compiled.getCount() - before

    merge(-600)
    merge(-300)  # the table now as it stays (rewritten files, or delete files to apply)
    assert merge(-450) == 0


def _field(name: str, dt: T.DataType, metadata: dict | None = None) -> T.StructType:
    return T.StructType([T.StructField(name, dt, True, metadata or {})])


SCHEMA = Schema((it.NestedField(1, "id", it.LONG, False), it.NestedField(2, "name", it.STRING, False),
                 it.NestedField(3, "ts", it.TIMESTAMP, False)))


def test_filter_text_for_values_ranges_and_types():
    assert key_row_filter([("id", "ID")], SCHEMA, _field("Id", T.IntegerType()), {"id": [3, 1]}, {}) == \
        "array_contains(array(CAST(3 AS int), CAST(1 AS int)), `id`)"
    assert key_row_filter([("id", "k")], SCHEMA, _field("k", T.LongType()), {"id": [1] * 2000}, {"id": (-5, 9)}) == \
        "`id` BETWEEN CAST(-5 AS bigint) AND CAST(9 AS bigint)"
    assert key_row_filter([("id", "k")], SCHEMA, _field("k", T.LongType()), {"id": []}, {}) == "FALSE"
    # an integral range by the given function where it answers (the shim's), else BETWEEN; never a string's
    held = lambda column, lo, hi: f"in_range_{lo}_{hi}({column})"  # noqa: E731
    wide = T.StructType(_field("k", T.LongType()).fields + _field("n", T.StringType()).fields)
    assert key_row_filter([("id", "k"), ("name", "n")], SCHEMA, wide, {}, {"id": (-5, 9), "name": ("a", "b")},
                          integral_range=held) == "in_range_-5_9(`id`) AND `name` BETWEEN CAST(X'61' AS string) AND " \
                                                  "CAST(X'62' AS string)"
    assert key_row_filter([("id", "k")], SCHEMA, _field("k", T.LongType()), {}, {"id": (-5, 9)},
                          integral_range=lambda *_: None) == "`id` BETWEEN CAST(-5 AS bigint) AND CAST(9 AS bigint)"
    # two key columns: both conditions; a string one as a hex literal (nothing to escape)
    both = key_row_filter([("id", "k"), ("name", "n")], SCHEMA,
                          T.StructType(_field("k", T.LongType()).fields + _field("n", T.StringType()).fields),
                          {"id": [1], "name": ["a'b"]}, {})
    assert both == ("array_contains(array(CAST(1 AS bigint)), `id`) AND "
                    "array_contains(array(CAST(X'612762' AS string)), `name`)")


def test_no_filter_where_the_join_compares_otherwise():
    keys = {"id": [1], "name": ["a"], "ts": [0]}
    assert key_row_filter([("id", "k")], SCHEMA, _field("k", T.DoubleType()), keys, {}) is None
    assert key_row_filter([("id", "k")], SCHEMA, _field("k", T.StringType()), keys, {}) is None
    assert key_row_filter([("name", "k")], SCHEMA, _field("k", T.IntegerType()), keys, {}) is None
    assert key_row_filter([("ts", "k")], SCHEMA, _field("k", T.TimestampType()), keys, {}) is None
    # a CHAR(n) source column compares padded: not by the collected value
    char = _field("k", T.StringType(), {"__CHAR_VARCHAR_TYPE_STRING": "char(3)"})
    assert key_row_filter([("name", "k")], SCHEMA, char, keys, {}) is None
    assert key_row_filter([("id", "k")], SCHEMA, T.StructType(_field("k", T.LongType()).fields * 2), keys, {}) is None
