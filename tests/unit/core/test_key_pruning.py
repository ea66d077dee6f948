"""When narrowing a MERGE's target scan by source keys can skip a file (hand-built file lists)."""
from __future__ import annotations

from pyice_sql.core.model import types as it
from pyice_sql.core.model.conversions import to_bytes
from pyice_sql.core.model.manifest import DataFile, EntryStatus, ManifestEntry
from pyice_sql.core.model.partitioning import PartitionField, PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.transforms import parse_transform
from pyice_sql.core.scan.key_pruning import source_keys_can_prune
from pyice_sql.core.scan.planner import FileScanTask

SCHEMA = Schema((it.NestedField(1, "id", it.LONG, False), it.NestedField(2, "v", it.STRING, False)))
UNPARTITIONED = PartitionSpec(0, ())
BY_BUCKET = PartitionSpec(1, (PartitionField(1, 1000, parse_transform("bucket[4]"), "id_bucket"),))
BY_V = PartitionSpec(2, (PartitionField(2, 1000, parse_transform("identity"), "v"),))


def task(lo: int | None, hi: int | None, spec_id: int = 0) -> FileScanTask:
    bounds = (lambda v: {1: to_bytes(it.LONG, v)} if v is not None else {})
    f = DataFile(file_path=f"/t/{lo}-{hi}.parquet", record_count=10, file_size_in_bytes=100,
                 lower_bounds=bounds(lo), upper_bounds=bounds(hi), spec_id=spec_id)
    return FileScanTask(ManifestEntry(status=EntryStatus.EXISTING, data_file=f), "/t/m.avro")


def can_prune(tasks, specs=(UNPARTITIONED,), keys=("id",)) -> bool:
    by_id = {s.spec_id: s for s in specs}
    return source_keys_can_prune(tasks, SCHEMA, by_id.get, keys)


def test_files_with_disjoint_key_ranges_can_be_pruned():
    assert can_prune([task(0, 99), task(100, 199)])


def test_clustered_files_with_one_outlier_can_be_pruned():
    assert can_prune([task(0, 99), task(100, 199), task(200, 299), task(0, 299)])


def test_files_spread_over_the_whole_range_cannot():
    """Keys spread over files (ids k, k+10, ... per file): every file spans nearly everything."""
    assert not can_prune([task(k, 990 + k) for k in range(10)])


def test_files_sharing_a_key_range_cannot():
    assert not can_prune([task(0, 1000), task(0, 1000), task(10, 20)])


def test_a_single_file_cannot():
    assert not can_prune([task(0, 99)])


def test_files_without_key_bounds_cannot():
    assert not can_prune([task(None, None), task(None, None), task(0, 5)])


def test_a_partition_field_on_the_key_always_can():
    assert can_prune([task(0, 1000, 1), task(0, 1000, 1)], specs=(UNPARTITIONED, BY_BUCKET))


def test_a_partition_field_on_another_column_does_not_count():
    assert not can_prune([task(0, 1000, 2), task(0, 1000, 2)], specs=(UNPARTITIONED, BY_V))


def test_any_separating_key_column_is_enough():
    assert can_prune([task(0, 99), task(100, 199)], keys=("v", "id"))
