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
