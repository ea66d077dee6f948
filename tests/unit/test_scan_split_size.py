"""Iceberg Java's split size for a scan (read/splits.py), against values worked out by hand from
Iceberg's rule: the table's `read.split.target-size`, unless that makes fewer splits than the
parallelism, when it is the bytes scanned (data and delete files) over the parallelism, at least
min(16 MB, target)."""
from __future__ import annotations

import pytest

from pyice_sql.core.errors import AnalysisError
from pyice_sql.core.model.manifest import DataFile, EntryStatus, FileContent, ManifestEntry
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.spark.read.splits import SplitSize, scan_split_size

MB = 1 << 20


def _task(size: int, delete_size: int | None = None, row_groups: int = 64) -> FileScanTask:
    """A data file of `size` bytes in `row_groups` row groups of one size."""
    offsets = [4 + i * (size // row_groups) for i in range(row_groups)]
    f = DataFile(file_path=f"d{size}", partition=(), record_count=1, file_size_in_bytes=size, split_offsets=offsets)
    deletes = ()
    if delete_size is not None:
        d = DataFile(content=FileContent.POSITION_DELETES, file_path=f"p{size}", partition=(), record_count=1,
                     file_size_in_bytes=delete_size)
        deletes = (ManifestEntry(status=EntryStatus.ADDED, snapshot_id=2, sequence_number=2, data_file=d),)
    return FileScanTask(ManifestEntry(status=EntryStatus.ADDED, snapshot_id=1, sequence_number=1, data_file=f),
                        "m", deletes)


def test_a_scan_of_fewer_splits_than_slots_is_spread_over_them():
    # the benchmark's 10M-row table: eight 34.5 MB files and a small one, 8 slots: 3 target splits < 8,
    # so 310.4 MB / 8 = 38.8 MB (each 34.5 MB file and its 4 MB open cost gets a split of its own)
    tasks = [_task(int(34.5 * MB), row_groups=1) for _ in range(8)] + [_task(400 * 1024, row_groups=1)]
    scanned = 8 * int(34.5 * MB) + 400 * 1024
    assert scan_split_size(tasks, {}, 8, True) == SplitSize(scanned // 8, 4 * MB)


def test_no_split_is_smaller_than_the_largest_row_group():
    # the same files over Spark's default 200 shuffle partitions: 1.5 MB a slot, below the 16 MB floor,
    # and the files' single 34.5 MB row groups (Spark would cut each file into three splits, two empty)
    tasks = [_task(int(34.5 * MB), row_groups=1) for _ in range(8)]
    assert scan_split_size(tasks, {}, 200, True).split_bytes == int(34.5 * MB)
    # 69 MB files in two row groups each: the 16 MB floor over 200 slots, raised to a row group
    tasks = [_task(69 * MB, row_groups=2) for _ in range(8)]
    assert scan_split_size(tasks, {}, 200, True).split_bytes == int(34.5 * MB) + 4
    # a file without offsets is one row group; never beyond the target
    bare = DataFile(file_path="bare", partition=(), record_count=1, file_size_in_bytes=300 * MB)
    task = FileScanTask(ManifestEntry(status=EntryStatus.ADDED, snapshot_id=1, sequence_number=1, data_file=bare), "m")
    assert scan_split_size([task] * 2, {}, 200, True).split_bytes == 128 * MB


def test_the_sessions_splits_stay_where_they_are_not_capped_unless_the_table_sets_them():
    # uncapped, Spark's splits are the bytes over the cores: kept; with a property set, Iceberg's
    assert scan_split_size([_task(2 * MB)] * 6, {}, 2, False) is None
    assert scan_split_size([_task(2 * MB)] * 6, {"read.split.open-file-cost": str(MB)}, 2, False) == SplitSize(
        16 * MB, MB)
    # capped: 12 MB over 2 slots is under the floor, so 16 MB; 64 MB over 2 slots, 32 MB
    assert scan_split_size([_task(2 * MB)] * 6, {}, 2, True) == SplitSize(16 * MB, 4 * MB)
    assert scan_split_size([_task(8 * MB)] * 8, {}, 2, True) == SplitSize(32 * MB, 4 * MB)


def test_a_large_scan_gets_the_target():
    # 64 files of 128 MB over 8 slots: 64 target splits, enough
    assert scan_split_size([_task(128 * MB)] * 64, {}, 8, True) == SplitSize(128 * MB, 4 * MB)


def test_delete_files_count_in_the_bytes_scanned():
    # 2 x (100 MB + 40 MB) = 280 MB over 4 slots: 3 target splits < 4, so 70 MB; without deletes 50 MB
    assert scan_split_size([_task(100 * MB, 40 * MB)] * 2, {}, 4, True).split_bytes == 70 * MB
    assert scan_split_size([_task(100 * MB)] * 2, {}, 4, True).split_bytes == 50 * MB
    # 2 x (20 MB + 10 MB) = 60 MB over 2 slots: 30 MB, where the data files alone give the 16 MB floor
    assert scan_split_size([_task(20 * MB, 10 * MB)] * 2, {}, 2, True).split_bytes == 30 * MB
    assert scan_split_size([_task(15 * MB)] * 2, {}, 2, True).split_bytes == 16 * MB


def test_table_properties_set_the_target_the_open_cost_and_adaptivity():
    tasks = [_task(10 * MB)] * 4  # 40 MB
    assert scan_split_size(tasks, {"read.split.target-size": str(8 * MB)}, 2, True) == SplitSize(8 * MB, 4 * MB)
    assert scan_split_size(tasks, {}, 2, True) == SplitSize(20 * MB, 4 * MB)
    # a target below the floor keeps itself as the floor: 40 MB / 16 = 2.5 MB < 8 MB
    assert scan_split_size(tasks, {"read.split.target-size": str(8 * MB)}, 16, True).split_bytes == 8 * MB
    assert scan_split_size(tasks, {"read.split.open-file-cost": "1"}, 2, True) == SplitSize(20 * MB, 1)
    assert scan_split_size(tasks, {"read.split.adaptive-size.enabled": "false"}, 2, True) == SplitSize(128 * MB, 4 * MB)


@pytest.mark.parametrize("value", ["big", "0", "-5"])
def test_a_bad_split_property_is_named(value):
    with pytest.raises(AnalysisError, match="read.split.open-file-cost"):
        scan_split_size([_task(MB)], {"read.split.open-file-cost": value}, 2, True)
