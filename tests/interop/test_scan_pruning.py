"""Scan planning prunes by partition and by column metrics: counted in files, against ground truth.

For point lookups on tables with several partitions and files, the files pyice plans to read
(`ice.last_plan`) must be exactly the files that hold matching rows (found by reading every file
unpruned and asking Spark which file each matching row came from), and the counters must add up:
every file of the snapshot is either in a skipped manifest, pruned by partition, pruned by
metrics, or kept. Each answer must also equal the unpruned filter's.
"""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from tests.interop.engines import assert_same_rows, ice_rows, sort_rows

pytestmark = pytest.mark.interop


def _path_key(path: str) -> str:
    return path.removeprefix("file:").lstrip("/")


def _all_files(ice, table: str) -> dict[str, int]:
    from pyice_sql.core.catalog.base import TableIdentifier
    from pyice_sql.core.scan.planner import plan_files

    t = ice.load("local", TableIdentifier(("db",), table))
    plan = plan_files(t.metadata, t.io, t.metadata.current_snapshot())
    return {_path_key(task.file.file_path): task.file.file_size_in_bytes for task in plan.tasks}


def _check_lookup(ice, table: str, where: str, all_files: dict[str, int], manifests: int) -> object:
    """Run the lookup; assert kept files == files with matches; return the plan's metrics."""
    full = ice.table(f"local.db.{table}").withColumn("__file", F.input_file_name())
    full.createOrReplaceTempView("__unpruned")
    try:
        matches = ice.spark.sql(f"SELECT * FROM __unpruned WHERE {where}").collect()
    finally:
        ice.spark.catalog.dropTempView("__unpruned")
    expected_rows = sort_rows(list(r)[:-1] for r in matches)
    matching_files = {_path_key(r["__file"]) for r in matches}
    assert matching_files <= set(all_files), "ground truth read files outside the snapshot"

    got = ice_rows(ice.sql(f"SELECT * FROM local.db.{table} WHERE {where}"))
    plan = ice.last_plan
    assert_same_rows(expected_rows, got, f"pyice's pruned answer to WHERE {where}")
    kept = {_path_key(t.file.file_path) for t in plan.tasks}
    m = plan.metrics
    assert kept == matching_files, (f"WHERE {where}: planned {len(kept)} files, {len(matching_files)} hold matches "
                                    f"({m})\n  extra: {sorted(kept - matching_files)}\n"
                                    f"  missing: {sorted(matching_files - kept)}")
    assert m.manifests_total == manifests
    assert m.data_files_total - m.skipped_by_partition - m.skipped_by_metrics == len(kept), m
    assert m.data_files_total <= len(all_files), m
    # files of skipped manifests are not counted in data_files_total; each manifest here has >= 1 file
    assert m.data_files_total + m.manifests_skipped <= len(all_files), m
    assert m.bytes_to_scan == sum(all_files[p] for p in kept), m
    return m


def test_partition_and_metrics_pruning_point_lookups(ice):
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.pr (id bigint, cat string, v string) USING iceberg PARTITIONED BY (cat)")
    # two INSERTs of every cat: one file per (cat, insert), ids disjoint per file
    for r in range(2):
        ice.sql("INSERT INTO local.db.pr VALUES " + ", ".join(
            f"({(c * 2 + r) * 1000 + i}, '{cat}', 'v{(c * 2 + r) * 1000 + i:05d}')"
            for c, cat in enumerate("abc") for i in range(50)))
    files = _all_files(ice, "pr")
    assert len(files) == 6, f"expected one file per partition and insert, got {len(files)}"

    # no partition predicate: only column metrics can prune (5 of 6 files)
    m = _check_lookup(ice, "pr", "id = 3017", files, manifests=2)
    assert (m.manifests_skipped, m.skipped_by_partition, m.skipped_by_metrics) == (0, 0, 5), m

    # partition + id: the other partitions' files go by partition, the other 'b' file by metrics
    m = _check_lookup(ice, "pr", "cat = 'b' AND id = 3017", files, manifests=2)
    assert m.manifests_skipped + m.skipped_by_partition == 4 and m.skipped_by_metrics == 1, m

    m = _check_lookup(ice, "pr", "cat = 'c'", files, manifests=2)
    assert m.manifests_skipped + m.skipped_by_partition == 4 and m.skipped_by_metrics == 0, m

    m = _check_lookup(ice, "pr", "v = 'v01049'", files, manifests=2)  # string bounds
    assert m.skipped_by_metrics == 5, m

    m = _check_lookup(ice, "pr", "id = 99999", files, manifests=2)  # matches nothing: reads nothing
    assert m.bytes_to_scan == 0, m


def test_bucket_partition_pruning_point_lookup(ice):
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.pb (id bigint, v string) USING iceberg PARTITIONED BY (bucket(8, id))")
    ice.sql("INSERT INTO local.db.pb SELECT id, concat('v', id) FROM range(0, 400)")
    files = _all_files(ice, "pb")
    assert len(files) == 8, f"expected one file per bucket, got {len(files)}"
    m = _check_lookup(ice, "pb", "id = 17", files, manifests=1)
    assert m.skipped_by_partition == 7, m
    m = _check_lookup(ice, "pb", "id IN (17, 18)", files, manifests=1)
    assert m.skipped_by_partition >= 6, m  # at most two buckets hold 17 and 18
