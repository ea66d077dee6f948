"""NaN counts of written data files (Parquet's statistics have none): counted per file by the task
writing it through the shim's DataFileParquetFormat; through Spark's own Parquet source (where the
shim cannot load), by the write job as a whole.

Expected values are counted by hand from the inserted rows.
"""
from __future__ import annotations

import pytest

from pyice_sql.spark.write import data_writer

pytestmark = pytest.mark.spark


def nan_counts(ice, table, partitioned=True):
    part = "partition.p" if partitioned else "NULL"
    return sorted((r[0], dict(r[1]) if r[1] is not None else None)
                  for r in ice.sql(f"SELECT {part}, nan_value_counts FROM {table}.files").collect())


def test_nan_counts_per_file_from_the_writer(ice, spark):
    assert data_writer.data_file_format(spark) == data_writer.DATA_FILE_FORMAT
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.mixed (id int, d double, `we/i,r=d` struct<x: float, y: double>, p string) "
            "USING iceberg PARTITIONED BY (p) "
            "TBLPROPERTIES ('write.metadata.metrics.column.we/i,r=d.y' = 'none')")
    ice.sql("INSERT INTO local.db.mixed VALUES "
            "(1, double('NaN'), named_struct('x', float('NaN'), 'y', double('NaN')), 'a'), "
            "(2, 2.0, named_struct('x', float('NaN'), 'y', 1.0), 'a'), (3, double('NaN'), NULL, 'a'), "
            "(4, 4.0, named_struct('x', 1.0, 'y', double('NaN')), 'b'), (5, NULL, named_struct('x', NULL, 'y', 1.0), 'b')")
    # ids: id 1, d 2, the struct 3 (x 5, y 6), p 4; y's metrics mode is none: no count, as Java
    assert nan_counts(ice, "local.db.mixed") == [("a", {2: 2, 5: 2}), ("b", {2: 0, 5: 0})]

    # files rolled over within one task (a target file size of a few rows) each count their own rows
    ice.sql("CREATE TABLE local.db.rolled (id bigint, d double) USING iceberg "
            "TBLPROPERTIES ('write.target-file-size-bytes' = '1')")
    ice.sql("INSERT INTO local.db.rolled SELECT /*+ COALESCE(1) */ id, "
            "CASE WHEN id % 3 = 0 THEN double('NaN') ELSE id END FROM range(0, 6)")
    files = ice.sql("SELECT file_path, record_count, nan_value_counts FROM local.db.rolled.files").collect()
    assert len(files) > 1 and sum(f.record_count for f in files) == 6
    for f in files:
        in_file = ice.sql(f"SELECT count_if(isnan(d)) AS n FROM parquet.`{f.file_path}`").first().n
        assert dict(f.nan_value_counts) == {2: in_file}
    assert sum(dict(f.nan_value_counts)[2] for f in files) == 2


def test_nan_counts_exact_or_left_unknown_through_sparks_parquet(ice, monkeypatch):
    monkeypatch.setattr(data_writer, "data_file_format", lambda spark: "parquet")
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.one (id int, d double, f float) USING iceberg")
    ice.sql("INSERT INTO local.db.one VALUES (2, double('NaN'), float('NaN'))")  # one data file: exact
    assert nan_counts(ice, "local.db.one", partitioned=False) == [(None, {2: 1, 3: 1})]

    ice.sql("CREATE TABLE local.db.clean (id int, d double, p string) USING iceberg PARTITIONED BY (p)")
    ice.sql("INSERT INTO local.db.clean VALUES (1, 1.0, 'a'), (2, 2.0, 'b')")
    assert nan_counts(ice, "local.db.clean") == [("a", {2: 0}), ("b", {2: 0})]  # no NaN anywhere: 0 each

    ice.sql("CREATE TABLE local.db.mixed (id int, d double, p string) USING iceberg PARTITIONED BY (p)")
    ice.sql("INSERT INTO local.db.mixed VALUES (3, double('NaN'), 'a'), (4, 4.0, 'b')")
    # two files, one NaN: which file holds it is not known here, so the count is left out
    assert nan_counts(ice, "local.db.mixed") == [("a", None), ("b", None)]
    assert [r.id for r in ice.sql("SELECT id FROM local.db.mixed WHERE isnan(d)").collect()] == [3]
    assert [r.id for r in ice.sql("SELECT id FROM local.db.clean WHERE isnan(d)").collect()] == []
