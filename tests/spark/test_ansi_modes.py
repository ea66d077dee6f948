"""Every statement kind gives the same answers with Spark's ANSI mode off (Spark 3.5's default) and on
(Spark 4's default), where Spark's own SQL does: the SQL pyice_sql generates (partition values,
store assignment, scan filters, MERGE's joins) must not lean on non-ANSI casts or wrapping arithmetic.
Expected rows are computed by hand."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from pyice_sql.core.errors import AnalysisError

pytestmark = pytest.mark.spark


@pytest.fixture(params=["false", "true"], ids=["legacy", "ansi"])
def ansi_ice(ice, request):
    spark = ice.spark
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", request.param)
    yield ice
    spark.conf.set("spark.sql.ansi.enabled", before)


def rows(df):
    return sorted(tuple(r) for r in df.collect())


def _ts(day: int, hour: int) -> dt.datetime:
    return dt.datetime(2024, 1, day, hour)


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_dml_on_transform_partitions(ansi_ice, mode):
    ice = ansi_ice
    ice.sql("CREATE DATABASE local.db")
    ice.sql(f"""CREATE TABLE local.db.t (id int, ts timestamp, s string, d decimal(9, 2)) USING iceberg
                PARTITIONED BY (bucket(4, id), days(ts), truncate(2, s))
                TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = '{mode}',
                               'write.update.mode' = '{mode}', 'write.merge.mode' = '{mode}')""")
    # store assignment of narrower and literal types: smallint -> int, int literal -> decimal
    ice.sql("""INSERT INTO local.db.t VALUES
               (CAST(-2147483648 AS int), TIMESTAMP '1969-12-31 23:00:00', 'abc', 1),
               (CAST(1 AS smallint), TIMESTAMP '2024-01-01 10:00:00', 'abd', 2.5),
               (2, TIMESTAMP '2024-01-02 11:00:00', NULL, -3.25),
               (2147483647, TIMESTAMP '2024-01-03 00:00:00', 'x', 0)""")
    # filters with a string compared to a timestamp and to an int (Spark casts the string both ways)
    ice.sql("UPDATE local.db.t SET d = d * 2, s = concat(s, '!') WHERE ts >= '2024-01-02' AND id <> '2147483647'")
    ice.sql("DELETE FROM local.db.t WHERE id = -2147483648")
    ice.sql("""MERGE INTO local.db.t t
               USING (SELECT 1 AS id, 'new' AS s UNION ALL SELECT 5, 'five') src ON t.id = src.id
               WHEN MATCHED THEN UPDATE SET t.s = src.s, t.ts = t.ts + INTERVAL 1 HOUR
               WHEN NOT MATCHED THEN INSERT (id, ts, s, d) VALUES (src.id, TIMESTAMP '2024-01-05 00:00:00', src.s, 5)
               WHEN NOT MATCHED BY SOURCE AND t.id > 100 THEN DELETE""")
    assert rows(ice.sql("SELECT * FROM local.db.t")) == [
        (1, _ts(1, 11), "new", Decimal("2.50")),
        (2, _ts(2, 11), None, Decimal("-6.50")),
        (5, _ts(5, 0), "five", Decimal("5.00")),
    ]
    # pruning by each transform gives Spark's answer for the same filter
    assert rows(ice.sql("SELECT id FROM local.db.t WHERE ts < '2024-01-02' OR s LIKE 'fi%' OR id = 2")) == [
        (1,), (2,), (5,)]
    # the inserted row's partition (the other partitions depend on the write mode)
    assert rows(ice.sql("SELECT partition.ts_day, partition.s_trunc, record_count FROM local.db.t.partitions "
                        "WHERE partition.s_trunc = 'fi'")) == [(dt.date(2024, 1, 5), "fi", 1)]


def test_store_assignment_overflow_is_refused_in_both_modes(ansi_ice):
    """Spark's store-assignment policy is ANSI in both modes: an out-of-range value is an error."""
    ice = ansi_ice
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, n int) USING iceberg")
    ice.sql("INSERT INTO local.db.t VALUES (1, 10)")
    for sql in ["UPDATE local.db.t SET n = CAST(n AS bigint) + 2147483647",
                "INSERT INTO local.db.t SELECT 2, CAST(3000000000 AS bigint)",
                "MERGE INTO local.db.t t USING (SELECT 1 AS id) s ON t.id = s.id "
                "WHEN MATCHED THEN UPDATE SET n = 4294967296"]:
        snapshots = ice.sql("SELECT count(*) FROM local.db.t.snapshots").collect()[0][0]
        with pytest.raises(Exception) as raised:
            ice.sql(sql).collect()
        assert "out of range" in str(raised.value).lower() or "overflow" in str(raised.value).lower(), sql
        assert ice.sql("SELECT count(*) FROM local.db.t.snapshots").collect()[0][0] == snapshots, sql
    assert rows(ice.sql("SELECT * FROM local.db.t")) == [(1, 10)]


def test_ctas_overwrite_and_time_travel(ansi_ice):
    ice = ansi_ice
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.c USING iceberg PARTITIONED BY (k) AS "
            "SELECT CAST(id AS int) AS n, CAST(id % 3 AS string) AS k, id / 4 AS q FROM range(6)")
    first = ice.sql("SELECT snapshot_id FROM local.db.c.snapshots").collect()[0][0]
    ice.sql("INSERT OVERWRITE local.db.c PARTITION (k = '1') SELECT n + 10, q FROM local.db.c WHERE k = 1")
    assert rows(ice.sql("SELECT * FROM local.db.c")) == [
        (0, "0", 0.0), (2, "2", 0.5), (3, "0", 0.75), (5, "2", 1.25), (11, "1", 0.25), (14, "1", 1.0)]
    assert rows(ice.sql(f"SELECT n FROM local.db.c VERSION AS OF {first} WHERE k = '1'")) == [(1,), (4,)]
    with pytest.raises(AnalysisError):
        ice.sql("SELECT * FROM local.db.c VERSION AS OF 'no_such_tag'")
