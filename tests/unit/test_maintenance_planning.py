"""Pure planning of the maintenance procedures, against hand-computed answers.

Which snapshots expire_snapshots keeps follows Iceberg's RemoveSnapshots (refs, their retention
settings, the table's history.expire.* properties); bin-pack planning follows Iceberg's
size-based planner (file selection, packing, group filters, expected output file count).
"""
from __future__ import annotations

import dataclasses

import pytest

from pyice_sql.core.errors import AnalysisError
from pyice_sql.core.model.manifest import DataFile, EntryStatus, FileContent, ManifestEntry
from pyice_sql.core.model.metadata import new_table_metadata
from pyice_sql.core.model.partitioning import UNPARTITIONED
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.snapshots import Snapshot, SnapshotRef
from pyice_sql.core.model.sort_order import UNSORTED
from pyice_sql.core.model.types import LONG, NestedField
from pyice_sql.spark.procedures.binpack import SizeOptions, pack, plan_partition
from pyice_sql.spark.procedures.expire_snapshots import ExpiryPolicy, expire
from pyice_sql.spark.procedures.reachability import path_key
from pyice_sql.spark.procedures.rewrite_data_files import DeleteThresholds, dangling_deletes, plan_groups
from pyice_sql.spark.procedures.rewrite_manifests import chunks
from pyice_sql.core.scan.planner import FileScanTask, ScanPlan

NOW = 10_000


def _table(*snapshots: tuple[int, int | None, int, str | None]):
    """Snapshots as (id, parent, timestamp, branch to move or None); ids double as sequence numbers."""
    md = new_table_metadata(Schema((NestedField(1, "id", LONG, False),)), UNPARTITIONED, UNSORTED, "/tmp/t")
    md = dataclasses.replace(md, last_updated_ms=0)
    for sid, parent, ts, branch in snapshots:
        snap = Snapshot(sid, parent, sid, ts, f"/tmp/t/metadata/snap-{sid}.avro", {"operation": "append"})
        if branch is None:  # a snapshot no branch points at (e.g. after a rollback)
            md = dataclasses.replace(md, snapshots=md.snapshots + (snap,), last_sequence_number=sid)
        else:
            md = md.add_snapshot(snap, branch)
    return md


def _lineage():
    # main: 1 -> 2 -> 3 -> 4; branch b: 2 -> 5; tag t on 1
    md = _table((1, None, 1000, "main"), (2, 1, 2000, "main"), (3, 2, 3000, "main"), (4, 3, 4000, "main"),
                (5, 2, 2500, "b"))
    return md.set_ref("t", SnapshotRef(1, "tag"))


def _ids(md) -> set[int]:
    return {s.snapshot_id for s in md.snapshots}


def test_expire_keeps_each_refs_newest_snapshots_and_tags():
    after = expire(_lineage(), ExpiryPolicy(NOW, older_than_ms=3500, retain_last=1))
    assert _ids(after) == {1, 4, 5}  # 4 heads main, 5 heads b, 1 is tagged; 2 and 3 expire
    assert set(after.refs) == {"main", "b", "t"}


def test_expire_retain_last_counts_per_branch():
    md = _lineage()
    assert expire(md, ExpiryPolicy(NOW, older_than_ms=3500, retain_last=3)) is md  # 4,3,2 / 5,2,1 / 1


def test_expire_refuses_a_snapshot_a_ref_holds():
    with pytest.raises(AnalysisError, match=r"cannot expire 1\. Still referenced by refs: \['t'\]"):
        expire(_lineage(), ExpiryPolicy(NOW, older_than_ms=0, snapshot_ids=(1,)))
    with pytest.raises(AnalysisError, match="Still referenced by refs: \\['main'\\]"):
        expire(_lineage(), ExpiryPolicy(NOW, older_than_ms=0, snapshot_ids=(4,)))


def test_expire_named_snapshot_even_when_young():
    after = expire(_lineage(), ExpiryPolicy(NOW, older_than_ms=0, snapshot_ids=(3,)))
    assert _ids(after) == {1, 2, 4, 5}
    assert after.snapshot_by_id(4).parent_snapshot_id == 3  # lineage stays as written


def test_expire_drops_refs_past_their_max_age():
    md = _lineage().set_ref("t", SnapshotRef(1, "tag", max_ref_age_ms=5000))  # 1 is 9000 ms old
    after = expire(md, ExpiryPolicy(NOW, older_than_ms=3500, retain_last=1))
    assert "t" not in after.refs and _ids(after) == {4, 5}


def test_branch_retention_overrides_the_defaults():
    md = _lineage().set_ref("b", SnapshotRef(5, "branch", min_snapshots_to_keep=2))
    assert _ids(expire(md, ExpiryPolicy(NOW, older_than_ms=3500, retain_last=1))) == {1, 2, 4, 5}
    md = _lineage().set_ref("main", SnapshotRef(4, "branch", max_snapshot_age_ms=7500))  # keeps ts >= 2500
    assert _ids(expire(md, ExpiryPolicy(NOW, older_than_ms=3500, retain_last=1))) == {1, 3, 4, 5}


def test_unreferenced_snapshots_expire_by_age_only():
    md = _table((1, None, 1000, "main"), (2, 1, 2000, None), (3, 1, 9000, None))
    assert _ids(expire(md, ExpiryPolicy(NOW, older_than_ms=3500, retain_last=1))) == {1, 3}


def test_expire_defaults_come_from_table_properties():
    md = _lineage().set_properties({"history.expire.min-snapshots-to-keep": "2",
                                    "history.expire.max-snapshot-age-ms": str(NOW - 3500)})
    assert _ids(expire(md, ExpiryPolicy(NOW))) == {1, 2, 3, 4, 5}  # main 4,3; b 5,2; tag 1
    md = md.set_properties({"history.expire.min-snapshots-to-keep": "1"})
    assert _ids(expire(md, ExpiryPolicy(NOW))) == {1, 4, 5}


def test_expire_then_snapshot_log_has_no_expired_entries():
    after = expire(_lineage(), ExpiryPolicy(NOW, older_than_ms=3500, retain_last=1))
    assert [e.snapshot_id for e in after.snapshot_log] == [4]


# ------------------------------------------------------------------------------ bin-pack

O = SizeOptions(target_file_size=100, min_file_size=75, max_file_size=180)


@pytest.mark.parametrize("input_bytes,files", [(50, 1), (100, 1), (205, 2), (250, 3), (380, 4)])
def test_expected_output_files(input_bytes, files):
    # 205: remainder 5 spread over 2 files (102.5 < 1.1 x 100); 250: 125 each would be too big
    assert O.expected_output_files(input_bytes) == files


def test_pack_in_order_with_one_open_group():
    assert pack([10, 20, 10, 5, 30], lambda n: n, 30) == [[10, 20], [10, 5], [30]]


@pytest.mark.parametrize("sizes,options,groups", [
    ([10] * 5, O, [[10] * 5]),  # min-input-files 5
    ([10] * 4, O, []),  # too few, too little content
    ([10] * 4, dataclasses.replace(O, rewrite_all=True), [[10] * 4]),
    ([200], O, [[200]]),  # a single file above max-file-size
    ([80, 10, 10], O, []),  # 80 is in range; two small ones are not enough
    ([60, 60], O, [[60, 60]]),  # more than one target file of content
    ([10] * 6, dataclasses.replace(O, min_input_files=2, max_group_size=25), [[10, 10]] * 3),
])
def test_plan_partition(sizes, options, groups):
    assert plan_partition(sizes, lambda n: n, options) == groups


def _task(path: str, size: int, rows: int = 10, partition=("a",), spec_id=0, deletes=()) -> FileScanTask:
    f = DataFile(file_path=path, partition=partition, record_count=rows, file_size_in_bytes=size, spec_id=spec_id)
    return FileScanTask(ManifestEntry(status=EntryStatus.ADDED, snapshot_id=1, sequence_number=1, data_file=f),
                        "m.avro", tuple(deletes))


def _pos_delete(path: str, target: str | None, rows: int) -> ManifestEntry:
    f = DataFile(content=FileContent.POSITION_DELETES, file_path=path, partition=("a",), record_count=rows,
                 file_size_in_bytes=10, referenced_data_file=target)
    return ManifestEntry(status=EntryStatus.ADDED, snapshot_id=2, sequence_number=2, data_file=f)


def test_plan_groups_per_partition_and_old_specs_together():
    tasks = [_task(f"a{i}", 10) for i in range(5)] + [_task(f"b{i}", 10, partition=("b",)) for i in range(4)]
    tasks += [_task(f"old{i}", 10, partition=(i,), spec_id=7) for i in range(5)]
    groups = plan_groups(tasks, 0, O)
    assert sorted(sorted(t.file.file_path for t in g.tasks) for g in groups) == [
        [f"a{i}" for i in range(5)], [f"old{i}" for i in range(5)]]


def test_plan_groups_picks_files_with_many_deletes():
    heavy = _task("x", 90, rows=10, deletes=[_pos_delete("d1", "x", 3)])  # in range, 30% deleted
    light = _task("y", 90, rows=10, deletes=[_pos_delete("d2", "y", 2)])
    assert [t.file.file_path for g in plan_groups([heavy, light], 0, O) for t in g.tasks] == ["x"]
    assert plan_groups([heavy, light], 0, O, DeleteThresholds(delete_ratio_threshold=0.5)) == []
    assert len(plan_groups([light], 0, O, DeleteThresholds(delete_file_threshold=1))) == 1


def test_dangling_deletes_need_every_target_rewritten():
    shared = _pos_delete("shared", None, 2)  # partition-scoped: applies to x and y
    own = _pos_delete("own", "x", 1)
    plan = ScanPlan(None, tasks=[_task("x", 10, deletes=[shared, own]), _task("y", 10, deletes=[shared])])
    assert [d.data_file.file_path for d in dangling_deletes(plan, {"x"})] == ["own"]
    assert sorted(d.data_file.file_path for d in dangling_deletes(plan, {"x", "y"})) == ["own", "shared"]


def test_manifest_chunks_cluster_by_partition():
    entries = [ManifestEntry(status=EntryStatus.EXISTING, snapshot_id=1, sequence_number=1, file_sequence_number=1,
                             data_file=DataFile(file_path=f"f{i}", partition=(p,), record_count=1,
                                                file_size_in_bytes=1))
               for i, p in enumerate(["c", None, "a", "b", "a", "c"])]
    parts = [[e.data_file.partition[0] for e in chunk] for chunk in chunks(entries, 3)]
    assert parts == [["a", "a"], ["b", "c"], ["c", None]]


def test_path_key_equates_local_spellings():
    assert path_key("file:/w/t/a.parquet") == path_key("file:///w/t/a.parquet") == path_key("/w/t/a.parquet")
    assert path_key("s3a://bucket/w/a") == "s3a://bucket/w/a" != path_key("s3a://other/w/a")
