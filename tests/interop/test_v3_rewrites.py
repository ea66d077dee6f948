"""Format-v3 rewrites: copy-on-write DML and the maintenance procedures, against Iceberg Java.

Each scenario runs on pyice_sql (`local.db.<name>`) and on Iceberg Java 1.10.2 (its twin
`ref.db.j_<name>`, same warehouse); its SELECT and CALL statements are checkpoints compared
between the two:
  - `cow` (unpartitioned, one file per INSERT): merge-on-read DELETE / UPDATE leave deletion
    vectors, then copy-on-write UPDATE / DELETE / MERGE rewrite the files. Rows, `_row_id` and
    `_last_updated_sequence_number` equal Java's (rows the MERGE inserts: the same rows with fresh
    ids of that commit, as the order inside a file is the engine's), so do every snapshot's
    first-row-id / added-rows and next-row-id, and the rewritten files' DVs are gone;
  - `cowp` (bucket-partitioned, copy-on-write from the start): rows equal Java's; against the
    lineage read before the DML, every surviving row kept its `_row_id`, copied rows their
    sequence number, updated rows the sequence number of their commit;
  - `proc`: a v2 table with a position-delete file, upgraded to v3: rewrite_position_delete_files
    (to a DV), DML, rewrite_data_files (drops the DVs), rewrite_manifests, expire_snapshots: the
    procedures' results, the files, rows and lineage after each equal Java's;
then Java reads our tables with their lineage exactly as we do, and runs DML on them.
Snapshot management needs snapshot ids known before Java's one run, so pyice builds `snap` and
its copy `snap2` the same way, runs rollback / cherry-pick / tag / set_current_snapshot /
fast_forward on `snap` while Java runs them on `snap2`: rows, lineage and next-row-id must agree
(row ids are never reused after a rollback; a cherry-picked append takes fresh ones).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from types import SimpleNamespace

import pytest

import pyice_sql
from tests.interop.engines import ice_rows, java_sql
from tests.interop.test_v3_write import LINEAGE, MERGE_SQL, MOR, _lineage_shape, _live_delete_files, _local, _metadata

pytestmark = pytest.mark.interop

COW = ("'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
       "'write.merge.mode'='copy-on-write'")
READ = "SELECT " + LINEAGE + " FROM {t}"
FILES = "SELECT content, file_format, record_count, referenced_data_file IS NOT NULL FROM {t}.files"
SCRIPTS = {
    "cow": [
        "CREATE TABLE {t} (id bigint, data string) USING iceberg TBLPROPERTIES ('format-version'='3', " + MOR + ")",
        "INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, concat('r', cast(id as string)) FROM range(0, 40)",
        "INSERT INTO {t} VALUES (1000, 'a')",
        "DELETE FROM {t} WHERE id % 5 = 0",
        "UPDATE {t} SET data = 'mor' WHERE id = 7",
        "ALTER TABLE {t} SET TBLPROPERTIES (" + COW + ")",
        "UPDATE {t} SET data = 'u' WHERE id % 3 = 0",
        READ,
        "DELETE FROM {t} WHERE id = 4",
        MERGE_SQL,
        READ,
        FILES,
    ],
    "cowp": [
        "CREATE TABLE {t} (id bigint, data string) USING iceberg PARTITIONED BY (bucket(4, id)) "
        "TBLPROPERTIES ('format-version'='3')",
        "INSERT INTO {t} SELECT /*+ REPARTITION(2) */ id, concat('r', cast(id as string)) FROM range(0, 60)",
        READ,
        "DELETE FROM {t} WHERE id % 5 = 0 OR id BETWEEN 20 AND 24",
        "UPDATE {t} SET data = concat(data, '-u') WHERE id % 3 = 0",
        MERGE_SQL,
        READ,
    ],
    "proc": [
        "CREATE TABLE {t} (id bigint, data string) USING iceberg TBLPROPERTIES ('format-version'='2', " + MOR + ")",
        "INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, concat('r', cast(id as string)) FROM range(0, 20)",
        "DELETE FROM {t} WHERE id % 5 = 0",
        "ALTER TABLE {t} SET TBLPROPERTIES ('format-version'='3')",
        "INSERT INTO {t} VALUES (1000, 'a')",
        "CALL {c}.system.rewrite_position_delete_files(table => 'db.{n}', options => map('rewrite-all', 'true'))",
        FILES,
        READ,
        "DELETE FROM {t} WHERE id = 7",
        "UPDATE {t} SET data = 'u' WHERE id = 8",
        "CALL {c}.system.rewrite_data_files(table => 'db.{n}', options => map('rewrite-all', 'true'))",
        READ,
        FILES,
        "CALL {c}.system.rewrite_manifests('db.{n}')",
        READ,
        "CALL {c}.system.expire_snapshots(table => 'db.{n}', older_than => TIMESTAMP '2100-01-01 00:00:00', "
        "retain_last => 1)",
        "DELETE FROM {t} WHERE id = 9",
        READ,
        FILES,
    ],
}
SNAP_BASE = [
    "CREATE TABLE {t} (id bigint, data string) USING iceberg TBLPROPERTIES ('format-version'='3')",
    "INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, 'a' FROM range(0, 10)",
    "INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, 'b' FROM range(10, 15)",
    "ALTER TABLE {t} CREATE BRANCH br",
    "INSERT INTO {t}.branch_br SELECT /*+ COALESCE(1) */ id, 'c' FROM range(20, 23)",
]
SNAP_PROCEDURES = [
    "CALL {c}.system.rollback_to_snapshot('db.{n}', {first})",
    "INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, 'd' FROM range(30, 32)",
    "CALL {c}.system.cherrypick_snapshot('db.{n}', {second})",
    READ,
    "ALTER TABLE {t} CREATE TAG tg",
    "CALL {c}.system.set_current_snapshot(table => 'db.{n}', ref => 'br')",
    READ,
    "INSERT INTO {t} VALUES (40, 'e')",
    "CALL {c}.system.fast_forward('db.{n}', 'br', 'main')",
    "INSERT INTO {t}.branch_br VALUES (41, 'f')",
    READ + ".branch_br",
    READ + ".tag_tg",
]
# procedure result columns that depend on the engine's file sizes (bytes) or manifest layout
ENGINE_SPECIFIC = {"rewrite_position_delete_files": (2,), "rewrite_data_files": (2,), "expire_snapshots": (3,)}
JAVA_ON_OURS = [
    "DELETE FROM ref.db.proc WHERE id = 11",
    "MERGE INTO ref.db.cow t USING (SELECT id FROM range(30, 50)) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET data = 'java' WHEN NOT MATCHED THEN INSERT (id, data) VALUES (s.id, 'jn')",
]


def _statements(name: str, catalog: str, table: str) -> list[str]:
    return [s.format(t=f"{catalog}.db.{table}", c=catalog, n=table) for s in SCRIPTS[name]]


def _is_checkpoint(sql: str) -> bool:
    return sql.startswith(("SELECT", "CALL"))


def _snap_statements(warehouse: str, catalog: str, name: str) -> list[str]:
    """SNAP_PROCEDURES on `name` (built by pyice from SNAP_BASE), with its own snapshot ids."""
    ids = [s["snapshot-id"] for s in _metadata(warehouse, name)["snapshots"]]
    return [s.format(t=f"{catalog}.db.{name}", c=catalog, n=name, first=ids[0], second=ids[1])
            for s in SNAP_PROCEDURES]


def _plant_orphan(warehouse: str, name: str) -> str:
    """An old copy of a live deletion-vector Puffin file that no metadata reaches."""
    live = _live_delete_files(_metadata(warehouse, name))
    orphan = str(Path(_local(live[0]["file_path"])).with_name("orphan-00001-deletes.puffin"))
    shutil.copyfile(_local(live[0]["file_path"]), orphan)
    os.utime(orphan, (0, 0))
    return orphan


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory):
    """Our tables built by pyice, then ONE Java run: its twins, its reads of ours, its DML on ours."""
    warehouse = str(tmp_path_factory.mktemp("v3-rewrites") / "warehouse")
    ice = pyice_sql.connect(spark, warehouse=warehouse)
    ice.sql("CREATE NAMESPACE IF NOT EXISTS local.db")
    ours: dict[str, list] = {}
    for name in SCRIPTS:
        ours[name] = [ice_rows(ice.sql(sql)) if _is_checkpoint(sql) else ice.sql(sql).collect()
                      for sql in _statements(name, "local", name)]
    for name in ("snap", "snap2"):
        for sql in SNAP_BASE:
            ice.sql(sql.format(t=f"local.db.{name}")).collect()
    ours["snap"] = [ice_rows(ice.sql(sql)) if sql.startswith("SELECT") else ice.sql(sql).collect()
                    for sql in _snap_statements(warehouse, "local", "snap")]
    java_snap = _snap_statements(warehouse, "ref", "snap2")
    orphan = _plant_orphan(warehouse, "proc")
    orphans = [ice_rows(ice.sql("CALL local.system.remove_orphan_files(table => 'db.proc', "
                                f"older_than => TIMESTAMP '{when}', dry_run => {dry})"))
               for when, dry in (("2100-01-01 00:00:00", "true"), ("2000-01-01 00:00:00", "false"))]
    final = {name: ice_rows(ice.sql(f"SELECT {LINEAGE} FROM local.db.{name}")) for name in SCRIPTS}
    metadata = {name: _metadata(warehouse, name) for name in (*SCRIPTS, "snap")}  # before Java changes ours
    twins = [sql for name in SCRIPTS for sql in _statements(name, "ref", f"j_{name}")]
    reads = [f"SELECT {LINEAGE} FROM ref.db.{name}" for name in SCRIPTS]
    after = [f"SELECT {LINEAGE} FROM ref.db.{t}" for t in ("proc", "cow")]
    results = java_sql(warehouse, *twins, *java_snap, *reads, *JAVA_ON_OURS, *after)
    java, i = {}, 0
    for name in SCRIPTS:
        java[name] = results[i:i + len(SCRIPTS[name])]
        i += len(SCRIPTS[name])
    java["snap"] = results[i:i + len(java_snap)]
    i += len(java_snap)
    java_reads = dict(zip(SCRIPTS, results[i:i + len(reads)]))
    java_after = dict(zip(("proc", "cow"), results[-len(after):]))
    return SimpleNamespace(warehouse=warehouse, ice=ice, ours=ours, java=java, java_reads=java_reads,
                           java_after=java_after, final=final, metadata=metadata, orphan=orphan, orphans=orphans)


def _checkpoints(name: str, results: list) -> list[tuple[str, list]]:
    return [(sql, r) for sql, r in zip(SCRIPTS[name], results) if _is_checkpoint(sql)]


def _inserted_by_merge(row: list) -> bool:
    return row[1] == "n"


def test_copy_on_write_rows_and_lineage_equal_javas_twin(world):
    warehouse, ours, java = world.warehouse, world.ours, world.java
    for (sql, mine), (_, theirs) in zip(_checkpoints("cow", ours["cow"]), _checkpoints("cow", java["cow"])):
        if sql == READ:  # rows a MERGE inserted: their ids depend on the order inside the file
            assert [r for r in mine if not _inserted_by_merge(r)] == [r for r in theirs if not _inserted_by_merge(r)]
            assert sorted(r[:2] + r[3:] for r in mine if _inserted_by_merge(r)) == \
                sorted(r[:2] + r[3:] for r in theirs if _inserted_by_merge(r))
        else:
            assert mine == theirs, sql
    assert _lineage_shape(world.metadata["cow"]) == _lineage_shape(_metadata(warehouse, "j_cow"))
    last = world.metadata["cow"]["snapshots"][-1]
    fresh = range(last["first-row-id"], last["first-row-id"] + last["added-rows"])
    assert all(r[2] in fresh for r in ours["cow"][-2] if _inserted_by_merge(r))


def test_copy_on_write_drops_the_rewritten_files_deletion_vectors(world):
    final = world.final
    live = _live_delete_files(world.metadata["cow"])
    # the MoR DELETE's DV on the 40-row file went with it; the one on the (1000) file stays
    assert [f["record_count"] for f in live] == [1] and all(f["file_format"] == "PUFFIN" for f in live)
    assert 1000 not in [r[0] for r in final["cow"]]


def test_partitioned_copy_on_write_keeps_lineage(world):
    ours, java = world.ours, world.java
    before, after = ours["cowp"][2], ours["cowp"][-1]
    assert [r[:2] for r in after] == [r[:2] for r in java["cowp"][-1]]
    old = {r[0]: r for r in before}
    # sequence numbers: 1 INSERT, 2 DELETE, 3 UPDATE, 4 MERGE
    for id_, data, row_id, seq in after:
        if data == "n":  # inserted: a fresh id (its key may have been deleted before)
            assert row_id not in {r[2] for r in before} and seq == 4, id_
            continue
        assert row_id == old[id_][2], id_
        assert seq == {"m": 4}.get(data, 3 if data.endswith("-u") else old[id_][3]), (id_, data)
    assert len({r[2] for r in after}) == len(after)


def test_procedures_results_rows_and_lineage_equal_javas_twin(world):
    warehouse, ours, java = world.warehouse, world.ours, world.java
    for (sql, mine), (_, theirs) in zip(_checkpoints("proc", ours["proc"]), _checkpoints("proc", java["proc"])):
        skip = next((cols for name, cols in ENGINE_SPECIFIC.items() if f".{name}(" in sql), ())
        assert [[v for i, v in enumerate(r) if i not in skip] for r in mine] == \
            [[v for i, v in enumerate(r) if i not in skip] for r in theirs], sql
    assert _lineage_shape(world.metadata["proc"]) == _lineage_shape(_metadata(warehouse, "j_proc"))


def test_rewrite_position_delete_files_turns_v2_deletes_into_a_deletion_vector(world):
    files = world.ours["proc"][SCRIPTS["proc"].index(FILES)]
    assert [r for r in files if r[0] == 1] == [[1, "PUFFIN", 4, True]]


def test_remove_orphan_files_keeps_live_deletion_vectors(world):
    orphan, orphans = world.orphan, world.orphans
    # whatever their age, the only file no metadata reaches is the planted copy; then it is removed
    for listed in orphans:
        assert [Path(_local(r[0])) for r in listed] == [Path(orphan)]
    assert not Path(orphan).exists()
    live = _live_delete_files(world.metadata["proc"])
    assert live and all(Path(_local(f["file_path"])).exists() for f in live)


def test_java_reads_and_changes_our_tables(world):
    for name in SCRIPTS:
        assert world.java_reads[name] == world.final[name], name
    for name in ("proc", "cow"):
        assert ice_rows(world.ice.sql(f"SELECT {LINEAGE} FROM local.db.{name}")) == world.java_after[name], name


def test_snapshot_management_rows_lineage_and_next_row_id_equal_javas(world):
    warehouse, ours, java = world.warehouse, world.ours, world.java
    for sql, mine, theirs in zip(SNAP_PROCEDURES, ours["snap"], java["snap"]):
        if sql.startswith("SELECT"):
            assert mine == theirs, sql
    assert _lineage_shape(world.metadata["snap"]) == _lineage_shape(_metadata(warehouse, "snap2"))
    assert {r[2] for r in ours["snap"][3] if r[1] == "b"} == set(range(20, 25))  # fresh ids, as Java gave
