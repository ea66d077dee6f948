"""Maintenance procedures end to end: expire_snapshots, remove_orphan_files, rewrite_data_files,
rewrite_manifests, rewrite_position_delete_files.

Truth is hand-computed (which files each commit wrote, which of them a retained snapshot still
reaches) and checked on disk; every file any remaining snapshot references (found through the
metadata tables, not the procedures' own walk) must still exist, rows must not change, and
nothing may be deleted that a branch or tag still references. Concurrency: a compaction that
races a merge-on-read DELETE on the same files must fail one side, never lose the delete.
"""
from __future__ import annotations

import os
import time

import pytest

from pyice_sql.core.catalog.base import TableIdentifier
from pyice_sql.core.commit.producer import RemovedFile, SnapshotUpdate, commit_update, publish_metadata
from pyice_sql.core.errors import AnalysisError, UnsupportedError, ValidationError
from pyice_sql.core.format.fileio import LocalFileIO, local_path
from pyice_sql.core.model.snapshots import Operation, SnapshotRef
from pyice_sql.spark.procedures import bulk_files
from pyice_sql.spark.read.metadata_tables import metadata_table
from pyice_sql.core.scan.planner import plan_files

MOR = "TBLPROPERTIES ('write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')"
FUTURE = "TIMESTAMP '2999-01-01 00:00:00'"


def _table(ice, name="t"):
    return ice.load("local", TableIdentifier(("db",), name))


def _rows(ice, sql="SELECT * FROM local.db.t"):
    return sorted(tuple(r) for r in ice.sql(sql).collect())


def _files_on_disk(ice, name="t") -> set[str]:
    root = local_path(_table(ice, name).metadata.location)
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if not f.startswith(".")
            and "/." not in d and not f.startswith("_")}


def _referenced(ice, name="t") -> set[str]:
    """Every file a snapshot of the table references, via the metadata tables."""
    table = _table(ice, name)
    out = {local_path(table.metadata_location), *(local_path(e.metadata_file) for e in table.metadata.metadata_log)}
    for s in table.metadata.snapshots:
        out.add(local_path(s.manifest_list))
        out |= {local_path(r.file_path) for r in metadata_table(ice.spark, table, "files", s.snapshot_id).collect()}
        out |= {local_path(r.path) for r in metadata_table(ice.spark, table, "manifests", s.snapshot_id).collect()}
    return out


def _assert_intact(ice, name="t"):
    missing = _referenced(ice, name) - _files_on_disk(ice, name)
    assert not missing, f"referenced files were deleted: {sorted(missing)[:5]}"


def _age_files(ice, name="t", days=10):
    old = time.time() - days * 86400
    root = local_path(_table(ice, name).metadata.location)
    for d, _, fs in os.walk(root):
        for f in fs:
            os.utime(os.path.join(d, f), (old, old))


def _call(ice, sql):
    return [tuple(r) for r in ice.sql(sql).collect()]


@pytest.fixture
def three_appends_and_a_delete(ice):
    """s1..s3 append one file each (ids 1, 2, 3); s4 deletes file 1 whole (metadata only)."""
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, p string) USING iceberg")
    for i in (1, 2, 3):
        ice.sql(f"INSERT INTO local.db.t VALUES ({i}, 'x')")
    ice.sql("DELETE FROM local.db.t WHERE id = 1")
    return [s.snapshot_id for s in _table(ice).metadata.snapshots]


# ------------------------------------------------------------------------------ expire_snapshots

def test_expire_deletes_exactly_what_only_expired_snapshots_reached(ice, three_appends_and_a_delete):
    before = _files_on_disk(ice)
    dry = _call(ice, f"CALL local.system.expire_snapshots(table => 'db.t', older_than => {FUTURE}, dry_run => true)")
    assert _files_on_disk(ice) == before and len(_table(ice).metadata.snapshots) == 4
    # file 1 (removed by s4), s1's manifest (s4 rewrote it), and the three older manifest lists
    assert dry == [(1, 0, 0, 1, 3, 0)]
    assert _call(ice, f"CALL local.system.expire_snapshots('db.t', {FUTURE})") == dry
    table = _table(ice)
    assert [s.snapshot_id for s in table.metadata.snapshots] == three_appends_and_a_delete[-1:]
    assert len(before - _files_on_disk(ice)) == 5
    _assert_intact(ice)
    assert _rows(ice) == [(2, "x"), (3, "x")]
    assert _call(ice, f"CALL local.system.expire_snapshots('db.t', {FUTURE})") == [(0,) * 6]


def test_expire_defaults_keep_young_snapshots(ice, three_appends_and_a_delete):
    assert _call(ice, "CALL local.system.expire_snapshots('db.t')") == [(0,) * 6]  # all younger than 5 days
    assert _call(ice, f"CALL local.system.expire_snapshots(table => 'db.t', older_than => {FUTURE}, "
                      "retain_last => 3)") == [(0, 0, 0, 0, 1, 0)]  # only s1's list: s2 still has its manifest
    assert len(_table(ice).metadata.snapshots) == 3


def test_expire_never_deletes_what_a_tag_or_branch_references(ice, three_appends_and_a_delete):
    s1, s2, s3, s4 = three_appends_and_a_delete
    table = _table(ice)
    md = table.metadata.set_ref("keep_s1", SnapshotRef(s1, "tag")).set_ref("dev", SnapshotRef(s2, "branch"))
    publish_metadata(table, md)
    with pytest.raises(AnalysisError, match=f"cannot expire {s1}. Still referenced by refs: \\['keep_s1'\\]"):
        ice.sql(f"CALL local.system.expire_snapshots(table => 'db.t', snapshot_ids => array({s1}))")
    result = _call(ice, f"CALL local.system.expire_snapshots('db.t', {FUTURE})")
    assert result == [(0, 0, 0, 0, 1, 0)]  # only s3 expires; its files are all still reached by s4
    assert {s.snapshot_id for s in _table(ice).metadata.snapshots} == {s1, s2, s4}
    _assert_intact(ice)
    assert _rows(ice, f"SELECT * FROM local.db.t VERSION AS OF {s1}") == [(1, "x")]
    # orphan removal keeps the tagged snapshot's file 1, which main no longer has
    _age_files(ice)
    assert _call(ice, "CALL local.system.remove_orphan_files(table => 'db.t')") == []
    _assert_intact(ice)


def test_expire_refuses_when_gc_is_disabled(ice, three_appends_and_a_delete):
    ice.sql("ALTER TABLE local.db.t SET TBLPROPERTIES ('gc.enabled'='false')")
    with pytest.raises(AnalysisError, match="GC is disabled"):
        ice.sql(f"CALL local.system.expire_snapshots('db.t', {FUTURE})")
    with pytest.raises(AnalysisError, match="at least 1"):
        ice.sql("CALL local.system.expire_snapshots(table => 'db.t', retain_last => 0)")


# ------------------------------------------------------------------------------ remove_orphan_files

def test_orphans_are_unreferenced_old_files_only(ice, three_appends_and_a_delete):
    table = _table(ice)
    root = local_path(table.metadata.location)
    os.makedirs(f"{root}/data/stray", exist_ok=True)
    orphans = [f"{root}/data/stray/a.parquet", f"{root}/metadata/old.avro", f"{root}/x.txt"]
    for p in orphans + [f"{root}/data/_SUCCESS2", f"{root}/data/stray/.hidden"]:
        open(p, "w").write("x")
    _age_files(ice)
    open(f"{root}/data/stray/young.parquet", "w").write("x")  # younger than the 3-day default
    before = _files_on_disk(ice)
    found = _call(ice, "CALL local.system.remove_orphan_files(table => 'db.t', dry_run => true)")
    assert sorted(local_path(p) for (p,) in found) == sorted(orphans)
    assert _files_on_disk(ice) == before
    assert _call(ice, "CALL local.system.remove_orphan_files('db.t')") == found
    assert before - _files_on_disk(ice) == set(orphans)
    _assert_intact(ice)
    assert _rows(ice) == [(2, "x"), (3, "x")]


def test_orphan_arguments_are_checked(ice, three_appends_and_a_delete):
    with pytest.raises(AnalysisError, match="less than 24 hours"):
        ice.sql("CALL local.system.remove_orphan_files(table => 'db.t', older_than => current_timestamp())"
                .replace("current_timestamp()", "TIMESTAMP '2999-01-01 00:00:00'"))
    with pytest.raises(AnalysisError, match="not inside the table location"):
        ice.sql("CALL local.system.remove_orphan_files(table => 'db.t', location => '/tmp', dry_run => true)")


def test_many_files_are_listed_and_deleted_by_spark_jobs(ice, tmp_path):
    io = LocalFileIO()
    expected = set()
    for d in range(bulk_files.DRIVER_LIMIT + 8):  # more leaf folders than the driver lists
        for sub in ("", "/deep"):
            os.makedirs(tmp_path / f"top/d{d}{sub}", exist_ok=True)
            p = tmp_path / f"top/d{d}{sub}/f.bin"
            p.write_text("x")
            expected.add(str(p))
    (tmp_path / "root.bin").write_text("x")
    expected.add(str(tmp_path / "root.bin"))
    shim = ice.runtime.shim
    listed = bulk_files.list_files(shim, io, f"file://{tmp_path}")
    assert {local_path(f.path) for f in listed} == expected
    assert bulk_files.delete_files(shim, io, [f.path for f in listed]) == []
    assert not any(fs for _, _, fs in os.walk(tmp_path))


# ------------------------------------------------------------------------------ rewrite_data_files

@pytest.fixture
def small_files(ice):
    """Partition a: 4 two-row files; partition b: 2 two-row files; a MoR DELETE of ids 2 and 11."""
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, p string) USING iceberg PARTITIONED BY (p) {MOR}")
    for i in range(4):
        ice.sql(f"INSERT INTO local.db.t VALUES ({i}, 'a'), ({20 + i}, 'a')"
                + (f", ({10 + i}, 'b'), ({30 + i}, 'b')" if i < 2 else ""))
    ice.sql("DELETE FROM local.db.t WHERE id IN (2, 11)")
    return _rows(ice)


def _live_files(ice, content):
    return ice.sql(f"SELECT file_path, record_count FROM local.db.t.files WHERE content = {content}").collect()


def test_rewrite_data_files_bin_packs_applies_and_drops_deletes(ice, small_files):
    assert len(_live_files(ice, 1)) == 2
    old_paths = [r.file_path for r in _live_files(ice, 0)]
    start = _table(ice).metadata.current_snapshot()
    dry = _call(ice, "CALL local.system.rewrite_data_files(table => 'db.t', options => map('min-input-files', '2'), "
                     "dry_run => true)")
    assert _table(ice).metadata.current_snapshot_id == start.snapshot_id
    result = _call(ice, "CALL local.system.rewrite_data_files(table => 'db.t', options => map('min-input-files', '2'))")
    assert dry[0][:3] + dry[0][4:] == result[0][:3] + result[0][4:]
    rewritten, added, nbytes, failed, removed_deletes = result[0]
    # the two file-scoped delete files go with their data files (uncounted, as in Iceberg)
    assert (rewritten, added, failed, removed_deletes) == (6, 2, 0, 0)
    assert _rows(ice) == small_files
    assert sorted(r.record_count for r in _live_files(ice, 0)) == [3, 7]  # b: 4 - 1 rows; a: 8 - 1
    assert _live_files(ice, 1) == []
    md = _table(ice).metadata
    assert md.current_snapshot().operation == "replace"
    seqs = {r.sequence_number for r in ice.sql("SELECT sequence_number FROM local.db.t.entries WHERE status = 1")
            .collect()}
    assert seqs == {start.sequence_number}  # the starting snapshot's data sequence number
    assert nbytes == sum(os.path.getsize(local_path(p)) for p in old_paths)
    _assert_intact(ice)


def test_rewrite_data_files_where_and_thresholds(ice, small_files):
    # fewer than min-input-files (5) small files per partition, and half of a file deleted is
    # under a 0.9 delete ratio: nothing to do
    assert _call(ice, "CALL local.system.rewrite_data_files(table => 'db.t', "
                      "options => map('delete-ratio-threshold', '0.9'))") == [(0, 0, 0, 0, 0)]
    # by default a file with >= 30% of its rows deleted is rewritten with the small files around it
    result = _call(ice, "CALL local.system.rewrite_data_files(table => 'db.t', where => 'p = \"a\"')")
    assert result[0][:2] == (4, 1) and result[0][4] == 0
    assert len(_live_files(ice, 0)) == 3 and len(_live_files(ice, 1)) == 1
    assert _rows(ice) == small_files
    with pytest.raises(UnsupportedError, match="sort strategy"):
        ice.sql("CALL local.system.rewrite_data_files(table => 'db.t', strategy => 'sort')")
    with pytest.raises(AnalysisError, match="unsupported option\\(s\\) nope"):
        ice.sql("CALL local.system.rewrite_data_files(table => 'db.t', options => map('nope', '1'))")
    with pytest.raises(AnalysisError, match="unknown column 'q'"):
        ice.sql("CALL local.system.rewrite_data_files(table => 'db.t', where => 'q = 1')")


def test_compaction_fails_when_a_delete_lands_on_its_files_first(ice, small_files, monkeypatch):
    from pyice_sql.spark.procedures import rewrite_data_files as rdf

    original = rdf.write_data_files
    written = []

    def write_then_concurrent_delete(df, ctx):
        files = original(df, ctx)
        written.extend(files)
        ice.sql("DELETE FROM local.db.t WHERE id = 3")  # another writer, on a file being rewritten
        return files

    monkeypatch.setattr(rdf, "write_data_files", write_then_concurrent_delete)
    with pytest.raises(ValidationError, match="added delete file"):
        ice.sql("CALL local.system.rewrite_data_files(table => 'db.t', options => map('rewrite-all', 'true'))")
    assert written and not any(os.path.exists(local_path(f.file_path)) for f in written)
    assert _rows(ice) == [r for r in small_files if r[0] != 3]
    _assert_intact(ice)


def test_delete_fails_when_a_compaction_replaced_its_files_first(ice, small_files, monkeypatch):
    from pyice_sql.spark.rowlevel import dml

    original = dml.commit_or_clean

    def compaction_first(table, update, written):
        ice.sql("CALL local.system.rewrite_data_files(table => 'db.t', options => map('rewrite-all', 'true'))")
        return original(table, update, written)

    monkeypatch.setattr(dml, "commit_or_clean", compaction_first)
    with pytest.raises(ValidationError, match="removed data files"):
        ice.sql("DELETE FROM local.db.t WHERE id = 3")
    monkeypatch.setattr(dml, "commit_or_clean", original)
    assert _rows(ice) == small_files  # the compaction landed, the DELETE did not: nothing half-done
    ice.sql("DELETE FROM local.db.t WHERE id = 3")  # a retry on the compacted files works
    assert _rows(ice) == [r for r in small_files if r[0] != 3]


# ------------------------------------------------------------------------------ rewrite_manifests

def test_rewrite_manifests_clusters_into_one_manifest(ice, small_files):
    before = {tuple(r) for r in ice.sql("SELECT content, path FROM local.db.t.manifests").collect()}
    assert sorted(c for c, _ in before) == [0, 0, 0, 0, 1]  # one data manifest per INSERT, one for the DELETE
    # the 4 data manifests become 1; a single delete manifest under the 8 MB target stays as is
    assert _call(ice, "CALL local.system.rewrite_manifests('db.t')") == [(4, 1)]
    after = ice.sql("SELECT content, path, existing_data_files_count FROM local.db.t.manifests").collect()
    assert sorted((r.content, r.existing_data_files_count) for r in after) == [(0, 6), (1, 0)]
    assert {(c, p) for c, p in before if c == 1} == {(r.content, r.path) for r in after if r.content == 1}
    assert _table(ice).metadata.current_snapshot().operation == "replace"
    assert _rows(ice) == small_files
    assert _call(ice, "CALL local.system.rewrite_manifests('db.t')") == [(0, 0)]
    with pytest.raises(AnalysisError, match="invalid spec id 9"):
        ice.sql("CALL local.system.rewrite_manifests(table => 'db.t', spec_id => 9)")


# ------------------------------------------------------------------------------ rewrite_position_delete_files

def test_rewrite_position_deletes_drops_rows_of_dead_files(ice, small_files):
    # an engine that drops a data file but leaves its delete file (as Iceberg before 1.8 did):
    # remove the file holding ids 2 and 22 (2 is deleted) and keep its delete file
    table = _table(ice)
    md = table.metadata
    task, = [t for t in plan_files(md, table.io, md.current_snapshot()).tasks if t.deletes and t.file.partition == ("a",)]
    commit_update(table, SnapshotUpdate(Operation.DELETE, md.current_snapshot_id,
                                        removed=[RemovedFile(task.entry, task.manifest_path)]))
    expected = [r for r in small_files if r[0] != 22]
    deletes = _live_files(ice, 1)
    assert len(deletes) == 2 and _rows(ice) == expected
    dry = _call(ice, "CALL local.system.rewrite_position_delete_files(table => 'db.t', "
                     "options => map('rewrite-all', 'true'), dry_run => true)")
    nbytes = sum(os.path.getsize(local_path(r.file_path)) for r in deletes)
    assert dry == [(2, 0, nbytes, 0)] and len(_live_files(ice, 1)) == 2
    result = _call(ice, "CALL local.system.rewrite_position_delete_files(table => 'db.t', "
                        "options => map('rewrite-all', 'true'))")
    # a's delete file targets a file no longer live: its row goes; b's row is rewritten
    (path, rows), = [tuple(r) for r in _live_files(ice, 1)]
    assert result == [(2, 1, nbytes, os.path.getsize(local_path(path)))] and rows == 1
    assert _rows(ice) == expected
    assert _table(ice).metadata.current_snapshot().operation == "replace"
    _assert_intact(ice)
    assert _call(ice, "CALL local.system.rewrite_position_delete_files('db.t')") == [(0, 0, 0, 0)]


def test_many_manifests_are_read_by_a_spark_job(ice, small_files, monkeypatch):
    from pyice_sql.spark.procedures import reachability

    table = _table(ice)
    on_driver = reachability.reachable_files(table.io, table.metadata, shim=ice.runtime.shim)
    monkeypatch.setattr(reachability, "DRIVER_MANIFESTS", 0)
    in_spark = reachability.reachable_files(table.io, table.metadata, shim=ice.runtime.shim)
    assert in_spark == on_driver and len(on_driver.content) == 8  # 6 data files, 2 delete files
    assert {c for _, c in on_driver.content.values()} == {0, 1}
    # expiry through the Spark path deletes what the driver path would
    assert _call(ice, f"CALL local.system.expire_snapshots('db.t', {FUTURE})")[0][:2] == (0, 0)
    _assert_intact(ice)
