"""A table scan handed to the user is split as Iceberg Java splits it (read/splits.py, ScanSplits.java).

Spark would split it by the session's `spark.sql.files.*` settings when the user's query runs; the
scan is read in a companion session holding the split sizes the table's read properties and
Iceberg's adaptive split size give (for a table that sets a split property, or a scan whose
session splits stop at `spark.sql.files.maxPartitionBytes`: the unit tests in
tests/unit/test_scan_split_size.py work those sizes out). The expected task counts are worked out by hand from the
files' sizes and Spark's packing (files largest first, a split closed when the next file would
take it over the size, each file weighing its length and the open cost). The rows must be the
same as a plain read's, and the user's other settings must still reach the scan.
"""
from __future__ import annotations

import pytest

from pyice_sql.core.errors import AnalysisError

pytestmark = pytest.mark.spark


@pytest.fixture
def six_files(ice):
    """A merge-on-read table of six data files of about one size, with position deletes."""
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, data string) USING iceberg "
            "TBLPROPERTIES ('write.delete.mode'='merge-on-read')")
    for lo in range(0, 600, 200):  # range's two partitions: two files per INSERT
        ice.sql(f"INSERT INTO local.db.t SELECT id, concat('r', cast(id as string)) FROM range({lo}, {lo + 200})")
    ice.sql("DELETE FROM local.db.t WHERE id % 10 = 3")
    return ice


def _sizes(ice) -> list[int]:
    return [r[0] for r in ice.sql("SELECT file_size_in_bytes FROM local.db.t.files WHERE content = 0").collect()]


def _scan_tasks(ice) -> int:
    return ice.table("local.db.t").rdd.getNumPartitions()


def test_a_small_scan_is_one_split_where_the_session_would_make_two(six_files, spark):
    # Iceberg: six ~2 KB files are far fewer bytes than the parallelism (8 shuffle partitions) times
    # 16 MB, so the split is 16 MB; with the table's open cost at 1 byte all six fit in one.
    # The session's settings (open cost 4 MB, 2 cores) would make splits of (6 x ~4 MB) / 2 =
    # ~12 MB, three files each: 2 tasks.
    ice = six_files
    assert len(_sizes(ice)) == 6
    ice.sql("ALTER TABLE local.db.t SET TBLPROPERTIES ('read.split.open-file-cost'='1')")
    assert _scan_tasks(ice) == 1
    assert spark.conf.get("spark.sql.files.openCostInBytes", "4MB") in ("4MB", str(4 << 20))  # the user's, untouched


def test_target_size_and_open_cost_from_the_table_properties(six_files):
    ice = six_files
    sizes = sorted(_sizes(ice), reverse=True)
    # two files to a split: the largest two with their open cost (1) fit, a third does not
    target = sizes[0] + sizes[1] + 2
    assert sum(sizes[:3]) + 2 > target
    ice.sql("ALTER TABLE local.db.t SET TBLPROPERTIES ('read.split.adaptive-size.enabled'='false', "
            f"'read.split.open-file-cost'='1', 'read.split.target-size'='{target}')")
    assert _scan_tasks(ice) == 3
    # the open cost weighs each file: at a target just over one file's, one file per split
    ice.sql(f"ALTER TABLE local.db.t SET TBLPROPERTIES ('read.split.target-size'='{sizes[0] + 1}')")
    assert _scan_tasks(ice) == 6
    # hand-computed rows: 600 ids, those ending in 3 deleted
    got = ice.sql("SELECT count(*), sum(id) FROM local.db.t").collect()[0]
    assert (got[0], got[1]) == (540, sum(i for i in range(600) if i % 10 != 3))


def test_the_users_settings_reach_the_scan(six_files, spark):
    ice = six_files
    # a split property set, so that the scan is read in the companion session
    ice.sql("ALTER TABLE local.db.t SET TBLPROPERTIES ('read.split.open-file-cost'='1')")
    assert _scan_tasks(ice) == 1

    def columnar() -> bool:
        plan = ice.table("local.db.t")._jdf.queryExecution().executedPlan().toString()
        return "ColumnarToRow" in plan

    assert columnar()
    spark.conf.set("spark.sql.parquet.enableVectorizedReader", "false")
    try:
        assert not columnar()
    finally:
        spark.conf.unset("spark.sql.parquet.enableVectorizedReader")
    assert columnar()


def test_a_scan_the_sessions_splits_cap_is_split_as_iceberg_splits_it(six_files, spark):
    # with the session's maxPartitionBytes at one file's size (and its 4 MB open cost), Spark caps its
    # splits there (one file each: 6 tasks); Iceberg's adaptive size over 8 slots is its 16 MB floor,
    # which four ~2 KB files and their 4 MB open cost each fill: 2 tasks
    ice = six_files
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(max(_sizes(ice)) + (4 << 20)))
    try:
        assert _scan_tasks(ice) == 2
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")


def test_a_bad_split_property_names_it(six_files):
    ice = six_files
    ice.sql("ALTER TABLE local.db.t SET TBLPROPERTIES ('read.split.target-size'='big')")
    with pytest.raises(AnalysisError, match="read.split.target-size"):
        ice.table("local.db.t")
