"""Position deletes and deletion vectors applied inside the scan tasks (PositionDeleteFilter.java).

A merge-on-read DELETE leaves delete files (v2: Parquet position delete files, v3: deletion
vectors); the scan then filters rows with the shim's UDF instead of joining them with the delete
rows. Checked against hand-computed row sets, on the plan (no anti-join), and on failures: a
damaged delete file fails the read naming the file, and two planned files sharing a 64-bit key
make the shim decline (the reader then joins, which is exact).
"""
from __future__ import annotations

import glob
import os

import pytest
from pyspark.sql import functions as F

pytestmark = pytest.mark.spark


def _mor(version: int) -> str:
    return (f"'format-version'='{version}', 'write.delete.mode'='merge-on-read', "
            "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'")


@pytest.fixture(params=[2, 3])
def table(ice, request):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, data string) USING iceberg TBLPROPERTIES ({_mor(request.param)})")
    for lo in (0, 100):  # two files per INSERT (range's two partitions): four data files
        ice.sql(f"INSERT INTO local.db.t SELECT id, concat('r', cast(id as string)) FROM range({lo}, {lo + 100})")
    ice.sql("DELETE FROM local.db.t WHERE id % 10 = 3")
    ice.sql("UPDATE local.db.t SET data = 'u' WHERE id % 10 = 4")  # a second generation of deletes
    return ice


def test_rows_removed_by_position_deletes_stay_removed(table):
    ice = table
    rows = {(r.id, r.data) for r in ice.sql("SELECT id, data FROM local.db.t").collect()}
    expected = {(i, "u" if i % 10 == 4 else f"r{i}") for i in range(200) if i % 10 != 3}
    assert rows == expected
    deletes = ice.sql("SELECT count(*) FROM local.db.t.delete_files").first()[0]
    assert deletes > 0


def test_the_scan_filters_in_its_tasks_instead_of_joining(table):
    plan = table.sql("SELECT id FROM local.db.t")._jdf.queryExecution().optimizedPlan().toString()
    assert "xxhash64" in plan and "LeftAnti" not in plan


def test_a_damaged_position_delete_file_fails_the_read_naming_it(ice, warehouse):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint) USING iceberg TBLPROPERTIES ({_mor(2)})")
    ice.sql("INSERT INTO local.db.t SELECT id FROM range(0, 100)")
    ice.sql("DELETE FROM local.db.t WHERE id = 5")
    (damaged,) = glob.glob(os.path.join(warehouse, "db", "t", "data", "*-deletes.parquet"))
    with open(damaged, "wb") as f:
        f.write(b"not parquet at all")
    with pytest.raises(Exception) as failure:
        ice.sql("SELECT count(*) FROM local.db.t").collect()
    assert "cannot read position delete file" in str(failure.value)
    assert os.path.basename(damaged) in str(failure.value)


def test_the_shim_declines_when_two_planned_files_share_a_key(spark):
    from pyice_sql.spark.jvm.bridge import load_shim

    shim = load_shim(spark)
    path, pos = F.col("p")._jc, F.col("pos")._jc
    one = "file:/w/a.parquet\1/w/a.parquet\1P/w/d.parquet"
    other = "file:/w/b.parquet\1/w/b.parquet"
    assert shim.live_rows("\0".join([one, other]), path, pos) is not None
    assert shim.live_rows("\0".join([one, one]), path, pos) is None  # the same key twice
