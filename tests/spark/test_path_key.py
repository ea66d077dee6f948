"""spark_path_key: Spark's `_metadata.file_path` spelling maps back to the manifest's path string."""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from pyice_sql.spark.read.reader import manifest_path_key, spark_path_key

pytestmark = pytest.mark.spark

SPELLINGS = ["file:/tmp/w/db/t/data/part-0.parquet", "file:///tmp/w/db/t/data/part-0.parquet",
             "file:/tmp/a%20b/c+d/%25x/p%2Bq.parquet", "file:/tmp/a+b/plain.parquet", "hdfs://nn:8020/w/t/x%3Dy.parquet",
             "file:/tmp/%C3%A9t%C3%A9/x.parquet"]


def test_fast_path_matches_full_decoding(spark):
    full = manifest_path_key(F.url_decode(F.regexp_replace(F.col("p"), r"\+", "%2B")))
    rows = spark.createDataFrame([(p,) for p in SPELLINGS], "p string").select(
        "p", spark_path_key(F.col("p")).alias("fast"), full.alias("full")).collect()
    for r in rows:
        assert r["fast"] == r["full"], r["p"]


@pytest.mark.parametrize("name", ["plain", "sp ace", "pl+us", "per%25cent", "ünï"])
def test_metadata_path_round_trip(spark, tmp_path, name):
    folder = tmp_path / name
    spark.range(3).coalesce(1).write.parquet(str(folder))
    written = next(p for p in folder.iterdir() if p.name.endswith(".parquet"))
    manifest_spelling = "file://" + str(written)
    got = (spark.read.parquet(manifest_spelling)
           .select(spark_path_key(F.col("_metadata.file_path")).alias("k"),
                   manifest_path_key(F.lit(manifest_spelling)).alias("m")).distinct().collect())
    assert [(r["k"], r["m"]) for r in got] == [(str(written), str(written))]
