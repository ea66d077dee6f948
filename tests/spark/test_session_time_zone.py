"""A session whose time zone is not UTC (Spark's default is the machine's zone), in a Python process
whose own zone is a third one: a statement's timestamps written without an offset name the
session zone's wall clock, as Spark reads them, in pyice's file pruning too, and a MERGE's source
keys, which pyspark hands to Python as wall clocks of the process's zone, are the instants Spark
joins on. Before, both were read as UTC: west of UTC (Los Angeles) the files holding the rows a
condition matches were pruned away (DELETE and UPDATE changed nothing, a SELECT returned nothing,
a MERGE inserted the rows it should have updated); east of it (Kolkata) a file some of whose rows
do not match was deleted whole by its metadata.

The truth for every statement is Spark's own evaluation of it over the same rows, as a VALUES
relation in the same session (condition, join), never pyice's."""
from __future__ import annotations

import os
import time

import pytest

pytestmark = pytest.mark.spark

# one data file each (one INSERT per row): the pruning decides per file; wall clocks of the session zone
ROWS = [(1, "2024-01-01 03:00:00"), (2, "2024-01-01 05:00:00"), (3, "2024-01-01 09:00:00"),
        (4, "2024-01-01 23:30:00"), (5, "2024-01-02 03:00:00"), (6, "2024-03-10 03:30:00")]
SOURCE = [(7, "2024-01-01 05:00:00"), (8, "2024-01-03 05:00:00"), (9, "2024-03-10 03:30:00")]


def values(rows: list[tuple[int, str]]) -> str:
    body = ", ".join(f"({i}, TIMESTAMP '{ts}')" for i, ts in rows)
    return f"(SELECT * FROM VALUES {body} AS v(id, ts))"


def table_rows(ice, sql: str) -> list[tuple]:
    return sorted(tuple(r) for r in ice.sql(sql).collect())


def spark_rows(spark, sql: str) -> list[tuple]:
    return sorted(tuple(r) for r in spark.sql(sql).collect())


@pytest.fixture(params=[("America/Los_Angeles", "Asia/Tokyo"), ("Asia/Kolkata", "America/New_York")],
                ids=["session-los-angeles", "session-kolkata"])
def zones(request, spark):
    """The session's time zone and the Python process's (pyspark's naive datetimes are in the
    latter), both restored after the test."""
    session_zone, process_zone = request.param
    before_session, before_process = spark.conf.get("spark.sql.session.timeZone"), os.environ.get("TZ")
    spark.conf.set("spark.sql.session.timeZone", session_zone)
    os.environ["TZ"] = process_zone
    time.tzset()
    yield request.param
    spark.conf.set("spark.sql.session.timeZone", before_session)
    if before_process is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before_process
    time.tzset()


@pytest.fixture(params=[("copy-on-write", "PARTITIONED BY (days(ts))"), ("merge-on-read", "PARTITIONED BY (days(ts))"),
                        ("copy-on-write", "")], ids=["cow-days", "mor-days", "cow-unpartitioned"])
def table(request, ice, zones):
    mode, partitioning = request.param
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.e (id bigint, ts timestamp) USING iceberg {partitioning} TBLPROPERTIES "
            f"('write.delete.mode'='{mode}', 'write.update.mode'='{mode}', 'write.merge.mode'='{mode}')")
    for row in ROWS:
        ice.sql(f"INSERT INTO local.db.e SELECT * FROM {values([row])}")
    return "local.db.e"


def test_conditions_on_timestamps_match_the_rows_spark_matches(ice, spark, table):
    everything = values(ROWS)
    read = f"SELECT id, CAST(ts AS STRING) FROM {table}"
    truth = f"SELECT id, CAST(ts AS STRING) FROM {everything}"
    for cond in ("ts < TIMESTAMP '2024-01-01 06:00:00'", "ts >= '2024-01-02 00:00:00'", "ts < DATE '2024-01-02'",
                 "ts = TIMESTAMP '2024-03-10 03:30:00'", "ts IN ('2024-01-01 05:00:00', '2024-01-02 03:00:00')"):
        assert table_rows(ice, f"{read} WHERE {cond}") == spark_rows(spark, f"{truth} WHERE {cond}"), cond

    # in Kolkata the file of 09:00 (03:30 UTC) holds no row before 04:00 there (22:30 UTC the day
    # before), though every row of it is before 04:00 UTC: it must not be deleted whole
    ice.sql(f"DELETE FROM {table} WHERE ts < TIMESTAMP '2024-01-01 04:00:00'")
    kept = f"{truth} WHERE NOT (ts < TIMESTAMP '2024-01-01 04:00:00')"
    assert table_rows(ice, read) == spark_rows(spark, kept)

    ice.sql(f"UPDATE {table} SET id = id + 100 WHERE ts >= '2024-01-02 00:00:00'")
    updated = f"SELECT IF(ts >= '2024-01-02 00:00:00', id + 100, id), CAST(ts AS STRING) FROM ({kept})"
    assert table_rows(ice, read) == spark_rows(spark, updated)


def test_merge_on_a_timestamp_key_pairs_the_rows_spark_pairs(ice, spark, table):
    source = values(SOURCE)
    ice.sql(f"MERGE INTO {table} t USING {source} s ON t.ts = s.ts "
            "WHEN MATCHED THEN UPDATE SET id = s.id WHEN NOT MATCHED THEN INSERT *")
    expected = spark_rows(spark, f"SELECT coalesce(s.id, t.id), CAST(coalesce(s.ts, t.ts) AS STRING) "
                                 f"FROM {values(ROWS)} t FULL OUTER JOIN {source} s ON t.ts = s.ts")
    assert table_rows(ice, f"SELECT id, CAST(ts AS STRING) FROM {table}") == expected

    # a source Spark holds as a cache (its keys found by an aggregate, not read from the plan)
    cached = spark.sql(f"SELECT id + 10 AS id, ts FROM {source}").cache()
    try:
        cached.createOrReplaceTempView("tz_source")
        ice.sql(f"MERGE INTO {table} t USING tz_source s ON t.ts = s.ts WHEN MATCHED THEN UPDATE SET id = s.id")
        expected = spark_rows(spark, f"SELECT coalesce(s.id, t.id), CAST(t.ts AS STRING) FROM "
                                     f"(SELECT * FROM VALUES {', '.join(f'({i}, {ts!r})' for i, ts in expected)} "
                                     "AS v(id, ts)) t LEFT JOIN tz_source s ON CAST(t.ts AS TIMESTAMP) = s.ts")
        assert table_rows(ice, f"SELECT id, CAST(ts AS STRING) FROM {table}") == expected
    finally:
        spark.catalog.dropTempView("tz_source")
        cached.unpersist()


def test_time_travel_and_defaults_read_the_session_zone(ice, spark, zones):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql("CREATE TABLE local.db.h (id bigint) USING iceberg TBLPROPERTIES ('format-version'='3')")
    ice.sql("INSERT INTO local.db.h VALUES (1)")
    ice.sql("INSERT INTO local.db.h VALUES (2)")
    # the first snapshot's commit time as the session zone's wall clock (Spark renders TIMESTAMPs so)
    first = ice.sql("SELECT CAST(committed_at AS STRING) FROM local.db.h.snapshots ORDER BY committed_at").first()[0]
    assert table_rows(ice, f"SELECT id FROM local.db.h TIMESTAMP AS OF '{first}'") == [(1,)]

    ice.sql("ALTER TABLE local.db.h ADD COLUMN at timestamp DEFAULT TIMESTAMP '2024-01-01 00:00:00'")
    assert table_rows(ice, "SELECT id, CAST(at AS STRING) FROM local.db.h") == \
        [(1, "2024-01-01 00:00:00"), (2, "2024-01-01 00:00:00")]


def test_insert_overwrite_of_a_static_timestamp_partition_replaces_that_partition(ice, spark, zones):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql("CREATE TABLE local.db.p (id bigint, ts timestamp) USING iceberg PARTITIONED BY (ts)")
    ice.sql(f"INSERT INTO local.db.p SELECT * FROM {values(ROWS[:2])}")
    ice.sql("INSERT OVERWRITE local.db.p PARTITION (ts = TIMESTAMP '2024-01-01 03:00:00') SELECT 10")
    assert table_rows(ice, "SELECT id, CAST(ts AS STRING) FROM local.db.p") == \
        [(2, "2024-01-01 05:00:00"), (10, "2024-01-01 03:00:00")]
