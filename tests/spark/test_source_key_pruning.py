"""A MERGE narrows its target scan by the source's join keys only where that can skip files.

Ten files of a table: with disjoint id ranges (data clustered by key), a MERGE whose source keys
fall in one range reads that one file; with every file spanning the whole id range (keys spread
over files), no file can be skipped, so the pass over the source keys is not run (fewer Spark
jobs) and every file is read. The rows are checked against a hand-computed result either way.
A source held in the plan (SQL VALUES) gives its keys without any Spark job.
"""
from __future__ import annotations

import pytest

from pyice_sql.spark.rowlevel.dml import MAX_SOURCE_KEY_VALUES as MAX_KEYS
from tests.spark.test_job_budget import _jobs

pytestmark = pytest.mark.spark

MERGE = ("MERGE INTO local.db.t t USING src s ON t.id = s.id "
         "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")


def _table(ice, clustered: bool) -> None:
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, v string) USING iceberg")
    for k in range(10):  # one file per INSERT
        ids = f"range({k * 100}, {k * 100 + 100})" if clustered else f"range({k}, 1000, 10)"
        ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ id, 'old' FROM {ids}")


def _source(spark, rows: list[tuple], kind: str = "dataframe"):
    """`rows` (id, v) as a Python-built DataFrame, or as SQL VALUES (data held in the plan)."""
    if kind == "dataframe":
        return spark.createDataFrame(rows, "id bigint, v string")
    values = ", ".join(f"(CAST({i} AS BIGINT), '{v}')" for i, v in rows)
    return spark.sql(f"SELECT * FROM VALUES {values} AS s(id, v)")


def _merge(ice, kind: str = "dataframe"):
    src = _source(ice.spark, [(510, "new"), (520, "new"), (5000, "ins")], kind)
    return _jobs(ice, lambda: ice.sql(MERGE, src=src).collect()[0])


def _check_rows(ice):
    rows = {r.id: r.v for r in ice.sql("SELECT id, v FROM local.db.t").collect()}
    expected = {i: "old" for i in range(1000)} | {510: "new", 520: "new", 5000: "ins"}
    assert rows == expected


@pytest.mark.parametrize("kind", ["dataframe", "values"])
def test_clustered_keys_read_only_the_matching_file(ice, kind):
    _table(ice, clustered=True)
    _, result = _merge(ice, kind)
    assert (result.num_updated_rows, result.num_inserted_rows) == (2, 1)
    assert len(ice.last_plan.tasks) == 1, ice.last_plan.metrics
    _check_rows(ice)


def test_spread_keys_skip_the_source_key_pass(ice, spark, warehouse):
    import pyice_sql

    _table(ice, clustered=False)
    spread_jobs, result = _merge(ice)
    assert (result.num_updated_rows, result.num_inserted_rows) == (2, 1)
    assert len(ice.last_plan.tasks) == 10, ice.last_plan.metrics
    _check_rows(ice)
    # the same MERGE on clustered files (same file count and sizes) runs the source-key pass
    other = pyice_sql.connect(spark, warehouse=warehouse + "-clustered")
    _table(other, clustered=True)
    clustered_jobs, _ = _merge(other)
    assert spread_jobs < clustered_jobs, (spread_jobs, clustered_jobs)


@pytest.mark.parametrize("kind", ["dataframe", "values"])
@pytest.mark.parametrize("far_keys,files_read", [(999, 1), (1096, 5)])
def test_many_source_keys_narrow_by_their_range_never_by_some_of_them(ice, far_keys, files_read, kind):
    """Up to 1000 distinct keys prune by their exact values; with more, by their range [510, ...]
    (files 500-999): never by an IN list of only some of the keys, which would skip the files
    of the others and turn their updates into duplicate inserts."""
    _table(ice, clustered=True)
    far = [100_000 + k * 7919 for k in range(far_keys)]
    src = _source(ice.spark, [(510, "new")] + [(i, "ins") for i in far], kind)
    result = ice.sql(MERGE, src=src).collect()[0]
    assert (result.num_updated_rows, result.num_inserted_rows) == (1, far_keys)
    assert len(ice.last_plan.tasks) == files_read, ice.last_plan.metrics
    rows = {r.id: r.v for r in ice.sql("SELECT id, v FROM local.db.t").collect()}
    assert rows == {i: "old" for i in range(1000)} | {510: "new"} | {i: "ins" for i in far}


def test_values_source_gives_its_keys_without_a_job(ice, monkeypatch):
    from pyice_sql.spark.rowlevel import dml

    _table(ice, clustered=True)
    pass_jobs = []
    original = dml.RowLevelExecutor._source_keys

    def counted(self, plan, source, local, small):
        jobs, found = _jobs(ice, lambda: original(self, plan, source, local, small))
        pass_jobs.append(jobs)
        return found

    monkeypatch.setattr(dml.RowLevelExecutor, "_source_keys", counted)
    _, result = _merge(ice, "values")
    assert pass_jobs == [0]
    assert (result.num_updated_rows, result.num_inserted_rows) == (2, 1)
    assert len(ice.last_plan.tasks) == 1, ice.last_plan.metrics
    _check_rows(ice)


def test_a_nan_source_key_prunes_nothing_by_its_column(ice):
    """Spark orders NaN above every number: a key range [1.0, NaN] taken as file bounds would skip
    the file holding 1.0 and turn its update into an insert. NaN keys leave the column unpruned."""
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (id double, v string) USING iceberg")
    for lo in (0, 100):  # two files, disjoint ranges
        ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ CAST(id AS double), 'old' "
                f"FROM range({lo}, {lo + 100})")
    far = [1e6 + k for k in range(MAX_KEYS)]  # more keys than an IN list takes: the range is used
    src = ice.spark.createDataFrame([(1.0, "new"), (float("nan"), "ins")] + [(k, "ins") for k in far],
                                    "id double, v string")
    result = ice.sql(MERGE, src=src).collect()[0]
    assert (result.num_updated_rows, result.num_inserted_rows) == (1, 1 + len(far))
    rows = ice.sql("SELECT id, v FROM local.db.t").collect()
    assert sorted(r.v for r in rows if r.id == 1.0) == ["new"]
    assert len(rows) == 200 + 1 + len(far)


def _recording_sets(monkeypatch) -> list[bool]:
    from pyice_sql.spark.rowlevel import dml

    calls = []
    original = dml._small_source_keys
    monkeypatch.setattr(dml, "_small_source_keys",
                        lambda plan, source, sets=True: calls.append(sets) or original(plan, source, sets))
    return calls


def test_a_source_spark_counts_many_rows_of_goes_to_its_key_range(ice, monkeypatch):
    """A cached source Spark has counted (20,001 rows, over ten times the keys a set holds) gets
    its one key column's range with no set of its keys built: the files of [510, far] are read
    (5 of 10), as with the set, and the rows come out the same."""
    _table(ice, clustered=True)
    sets = _recording_sets(monkeypatch)
    far = [100_000 + k for k in range(20_000)]
    src = ice.spark.createDataFrame([(510, "new")] + [(i, "ins") for i in far], "id bigint, v string").cache()
    src.count()  # filled: Spark's statistics now hold its row count
    result = ice.sql(MERGE, src=src).collect()[0]
    assert sets == [False]
    assert (result.num_updated_rows, result.num_inserted_rows) == (1, len(far))
    assert len(ice.last_plan.tasks) == 5, ice.last_plan.metrics
    rows = {r.id: r.v for r in ice.sql("SELECT id, v FROM local.db.t").collect()}
    assert rows == {i: "old" for i in range(1000)} | {510: "new"} | {i: "ins" for i in far}


def test_many_rows_of_null_keys_match_nothing_and_read_no_file(ice, monkeypatch):
    """Every key of a many-row source is NULL: no range, nothing can match, no file is read, every
    source row is inserted."""
    _table(ice, clustered=True)
    sets = _recording_sets(monkeypatch)
    src = ice.spark.range(20_001).selectExpr("CAST(NULL AS BIGINT) AS id", "'ins' AS v").cache()
    src.count()
    result = ice.sql(MERGE, src=src).collect()[0]
    assert sets == [False]
    assert (result.num_updated_rows, result.num_inserted_rows) == (0, 20_001)
    assert len(ice.last_plan.tasks) == 0, ice.last_plan.metrics
    assert ice.sql("SELECT count(*), count(id) FROM local.db.t").collect()[0][:] == (21_001, 1000)


def test_several_key_columns_keep_their_sets(ice, monkeypatch):
    """With two key columns one may hold few values (a region beside an id), whose exact set prunes
    better than its range: both keep their sets however many rows the source has."""
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (r string, id bigint, v string) USING iceberg")
    for region in ("a", "m", "z"):  # one file per region
        ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ '{region}', id, 'old' FROM range(100)")
    sets = _recording_sets(monkeypatch)
    src = ice.spark.range(20_001).selectExpr("IF(id % 2 = 0, 'a', 'z') AS r", "id + 50 AS id", "'new' AS v").cache()
    src.count()
    result = ice.sql("MERGE INTO local.db.t t USING src s ON t.r = s.r AND t.id = s.id "
                     "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *", src=src).collect()[0]
    assert sets == [True]
    assert len(ice.last_plan.tasks) == 2, ice.last_plan.metrics  # 'a' and 'z', not 'm' inside [a, z]
    # ids 50-99 match: the even ones in 'a', the odd ones in 'z'
    assert (result.num_updated_rows, result.num_inserted_rows) == (50, 20_001 - 50)
