"""Observation metrics read in one py4j call agree with pyspark's own `Observation.get`."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("rows", [10, 0])
def test_observed_metrics_equal_pyspark_get(spark, rows):
    from pyspark.sql import Observation, functions as F

    from pyice_sql.spark.observations import observed_metrics

    ours, theirs = Observation(), Observation()
    for o in (ours, theirs):
        spark.range(rows).observe(o, F.count(F.lit(1)).alias("n"), F.sum("id").alias("total"),
                                  F.sum(F.when(F.col("id") > 100, 1)).alias("none")).collect()
    expected = {"n": rows, "total": sum(range(rows)) if rows else None, "none": None}
    assert observed_metrics(ours) == theirs.get == expected


@pytest.mark.parametrize("named", [True, False])
def test_observe_attaches_as_pyspark_does(spark, named):
    """`observe` (the class named whole) gives the frame and the metrics pyspark's `observe` gives,
    with one metric or several, and an Observation it attached cannot be attached again."""
    from pyspark.sql import Observation, functions as F

    from pyice_sql.spark.observations import observe, observed_metrics

    ours, theirs = (Observation("ours") if named else Observation()), Observation("theirs")
    frame = spark.range(7).withColumn("odd", F.col("id") % 2 == 1)
    metrics = (F.count(F.lit(1)).alias("n"), F.sum(F.when(F.col("odd"), F.col("id"))).alias("odd_total"))
    got = observe(frame, ours, *metrics).where(~F.col("odd")).collect()
    assert got == frame.observe(theirs, *metrics).where(~F.col("odd")).collect()
    assert [r.id for r in got] == [0, 2, 4, 6]
    assert observed_metrics(ours) == ours.get == theirs.get == {"n": 7, "odd_total": 1 + 3 + 5}
    single = Observation()
    observe(frame, single, F.max("id").alias("top")).collect()
    assert observed_metrics(single) == {"top": 6}
    with pytest.raises(Exception):
        observe(frame, ours, *metrics)


@pytest.mark.parametrize("rows", [10, 0])
def test_metrics_read_from_the_map_equal_the_row(spark, monkeypatch, rows):
    """Where the JVM's Observation has no row to give (Spark 4.0), the metrics are read from its map,
    an array metric (data_writer's NaN counts) as a list: the same values as the row gives."""
    from pyspark.sql import Observation, functions as F

    from pyice_sql.spark import observations
    from pyice_sql.spark.observations import observe, observed_metrics

    def metrics() -> tuple:
        return (F.count(F.lit(1)).alias("n"), F.sum("id").alias("total"),
                F.expr("array(count_if(id % 2 = 0), count_if(id > 100)) AS counts"))
    by_row, by_map = Observation(), Observation()
    observe(spark.range(rows), by_row, *metrics()).collect()
    observe(spark.range(rows), by_map, *metrics()).collect()
    expected = {"n": rows, "total": sum(range(rows)) if rows else None, "counts": [(rows + 1) // 2, 0]}
    assert observed_metrics(by_row) == expected
    monkeypatch.setattr(observations, "_reads_rows", False)
    assert observed_metrics(by_map) == expected


@pytest.mark.parametrize("by_map", [False, True])
def test_metrics_of_a_plan_proven_empty_are_counted_again(spark, monkeypatch, by_map):
    """Spark drops an observation from a plan it proves empty and reports no metrics (Spark 4.0
    never completes it: read from the map, it gives none after a bounded wait): the row-level
    writers count again (`observed`'s fallback) instead of reading zero. A failure to read the
    metrics is raised, not recounted (Spark 4.0's missing `getRow` once showed only as extra jobs)."""
    from pyspark.sql import Observation, functions as F

    from pyice_sql.spark import observations
    from pyice_sql.spark.observations import observe, observed_metrics
    from pyice_sql.spark.rowlevel import context

    monkeypatch.setattr(observations, "MAP_WAIT_SECONDS", 1)  # Spark 4.0 reads the map either way
    if by_map:
        monkeypatch.setattr(observations, "_reads_rows", False)
    empty = Observation()
    observe(spark.range(10), empty, F.count(F.lit(1)).alias("n")).where("false").write.format("noop") \
        .mode("overwrite").save()
    assert observed_metrics(empty) == {}
    assert context.observed(empty, lambda: {"n": 0, "recounted": True}) == {"n": 0, "recounted": True}

    counted = Observation()
    observe(spark.range(10), counted, F.count(F.lit(1)).alias("n")).write.format("noop").mode("overwrite").save()
    recounts = []
    assert context.observed(counted, lambda: recounts.append(1) or {}) == {"n": 10}

    def unreadable(observation):
        raise RuntimeError("Method getRow([]) does not exist")
    monkeypatch.setattr(context, "observed_metrics", unreadable)
    with pytest.raises(RuntimeError, match="getRow"):
        context.observed(counted, lambda: recounts.append(1) or {})
    assert recounts == []
