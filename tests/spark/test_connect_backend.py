"""The Spark Connect backend gives what the JVM shim gives: Parquet footer summaries identical to
FooterStats.java's (many column types, several row groups, NaN, signed zeros, nested fields), the
bucket transform of the spec's examples, and Spark's answers on determinism and boolean settings."""
from __future__ import annotations

import glob
from decimal import Decimal

import pytest

from pyice_sql.spark.connect_backend import analyzed_deterministic, bucket, conf_enabled, footer_summary
from pyice_sql.spark.jvm.bridge import load_shim

pytestmark = pytest.mark.spark


def test_footer_summaries_equal_the_shims(spark, ice, warehouse, tmp_path):
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (i int, l bigint, f float, d double, s string, b binary, d1 decimal(9,2), "
            "d2 decimal(18,2), d3 decimal(30,2), dt date, ts timestamp, tn timestamp_ntz, bo boolean, "
            "st struct<a: int, `x.y`: string>, ar array<int>, m map<string, int>) USING iceberg")
    ice.sql("INSERT INTO local.db.t VALUES (1, 2, 1.5, double('NaN'), 'héllo', X'00FF', 1.25, -3.50, "
            "12345678901234567890.12, DATE '2024-01-02', TIMESTAMP '2024-01-02 03:04:05', "
            "TIMESTAMP_NTZ '2024-01-02 03:04:05', true, named_struct('a', 5, 'x.y', 'q'), array(1, 2), map('k', 1)), "
            "(-7, NULL, -0.0, 2.5, 'a', X'01', -1.00, 99.99, -1.00, DATE '1969-12-31', TIMESTAMP '1960-01-01 00:00:00', "
            "NULL, false, NULL, NULL, NULL), (NULL, NULL, 0.0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
            "NULL, NULL, NULL)")
    raw = str(tmp_path / "raw")
    (spark.range(20000).selectExpr("id", "cast(id % 97 as string) s", "id * 0.5 d").repartition(1)
     .write.option("parquet.block.size", "16384").parquet(raw))
    files = sorted(glob.glob(f"{warehouse}/db/t/data/**/*.parquet", recursive=True)) + sorted(glob.glob(f"{raw}/*.parquet"))
    assert len(files) >= 2
    java = load_shim(spark).footer_stats(files)
    ours = [footer_summary(p) for p in files]
    assert max(f["rowGroups"] for f in ours) > 1
    for j, o in zip(java, ours):
        j["columns"] = [{k: c[k] for k in o["columns"][0]} for c in j["columns"]]
        assert o == {k: j[k] for k in o}


def test_bucket_matches_the_specs_examples():
    """Iceberg spec, Appendix B: the 32-bit hashes of sample values; bucket N = (hash & MAX_INT) % N."""
    def expected(h: int, n: int) -> int:
        return (h & 0x7FFFFFFF) % n

    for n in (16, 1000, 2**31 - 1):
        assert bucket(n, 34) == expected(2017239379, n)
        assert bucket(n, "iceberg") == expected(1210000089, n)
        assert bucket(n, b"\x00\x01\x02\x03") == expected(-188683207, n)
        assert bucket(n, bytearray(b"\x00\x01\x02\x03")) == expected(-188683207, n)
        assert bucket(n, Decimal("14.20")) == expected(-500754589, n)
    assert bucket(None, 1) is None and bucket(4, None) is None


def test_determinism_is_sparks(spark):
    assert analyzed_deterministic(spark.range(3).selectExpr("id + 1"))
    assert not analyzed_deterministic(spark.range(3).selectExpr("id + rand()"))


@pytest.mark.parametrize("text", ["TRUE", " true ", "False", "false"])
def test_boolean_settings_read_as_sparks(spark, text):
    key = "spark.sql.adaptive.enabled"
    before = spark.conf.get(key)
    try:
        spark.conf.set(key, text)
        assert conf_enabled(spark, key, False) == bool(spark._jsparkSession.sessionState().conf().adaptiveExecutionEnabled())
    finally:
        spark.conf.set(key, before)
    assert conf_enabled(spark, "spark.pyice.test.unset", True) and not conf_enabled(spark, "spark.pyice.test.unset", False)
