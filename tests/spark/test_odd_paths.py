"""Deletes and `_file` on paths Spark percent-encodes: spaces, '%', '+', '#', non-ASCII, and the
`/x`, `file:/x`, `file:///x` spellings of one local path.

The scan matches delete rows to data rows on Spark's raw `_metadata.file_path`, spelled on the
driver once per file (`spark_paths`); a wrong spelling would leave deleted rows visible, so the
results are checked against counts and sums computed here by hand.
"""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import pyice_sql
from pyice_sql.core.catalog.base import TableIdentifier
from pyice_sql.spark.read.spark_paths import spark_spellings
from pyice_sql.spark.read.table_scan import scan

pytestmark = pytest.mark.spark

ODD = ["sp ace", "per%cent", "per%25cent", "pl+us", "ha#sh", "qu?ery", "ünï", "ca^ret`",
       "nb\u00a0sp", "ideo\u3000space", "c:d=e,f;g"]


@pytest.mark.parametrize("name", ODD)
def test_spelling_equals_spark_metadata_file_path(spark, tmp_path, name):
    folder = tmp_path / name
    spark.range(3).coalesce(1).write.parquet(str(folder))
    written = str(next(p for p in folder.iterdir() if p.name.endswith(".parquet")))
    for spelling in (written, "file:" + written, "file://" + written):
        df = spark.read.parquet(spelling)
        seen = [r[0] for r in df.select("_metadata.file_path").distinct().collect()]
        assert seen == [spark_spellings(df, [spelling])[spelling]], spelling


def _expected(ids):
    live = [i for i in ids if i % 7 != 0]
    return len(live), sum(i + (1000 if i % 5 == 0 else 0) for i in live)


@pytest.mark.parametrize("prefix", ["", "file:", "file://"])
def test_merge_on_read_deletes_apply_on_odd_paths(spark, tmp_path, prefix):
    warehouse = prefix + str(tmp_path / "wa rehouse %41 ü#1")
    ice = pyice_sql.connect(spark, warehouse=warehouse)
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, part string, amount bigint) USING iceberg PARTITIONED BY (part) "
            "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', "
            "'write.update.mode'='merge-on-read')")
    parts = ["a b", "50%", "x+y", "é", "h#", "plain"]
    rows = spark.range(120).select("id", F.element_at(F.array(*[F.lit(p) for p in parts]),
                                                      (F.col("id") % len(parts) + 1).cast("int")).alias("part"),
                                   F.col("id").alias("amount"))
    ice.append("local.db.t", rows)
    ice.sql("DELETE FROM local.db.t WHERE id % 14 = 0")
    ice.sql("UPDATE local.db.t SET amount = amount + 1000 WHERE id % 5 = 0")
    ice.sql("DELETE FROM local.db.t WHERE id % 7 = 0")  # on top of the first DELETE's delete files
    count, total = _expected(range(120))
    got = ice.sql("SELECT count(*), sum(amount) FROM local.db.t").collect()[0]
    assert (got[0], got[1]) == (count, total)
    assert ice.sql("SELECT count(*) FROM local.db.t WHERE id % 7 = 0").collect()[0][0] == 0
    # _file reports the manifest's path string and _pos the row's position in that file
    files = {r[0] for r in ice.sql("SELECT file_path FROM local.db.t.files").collect()}
    table = ice.load("local", TableIdentifier(("db",), "t"))
    meta = scan(spark, table, with_metadata=True)[0].select("_file", "_pos", "id").collect()
    assert {r["_file"] for r in meta} <= files and len(meta) == count
    by_file: dict[str, dict[int, int]] = {}
    for r in meta:
        by_file.setdefault(r["_file"], {})[r["_pos"]] = r["id"]
    for path, positions in by_file.items():
        stored = spark.read.parquet(path).select("id", "_metadata.row_index").collect()
        assert all(positions[r["row_index"]] == r["id"] for r in stored if r["row_index"] in positions), path
