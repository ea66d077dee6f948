"""Format-v3 tables pyice_sql writes: Iceberg Java's rows and row ids, Java and the peers read ours.

Each scenario runs the same statements on pyice_sql (`local.db.<name>`) and on Iceberg Java
1.10.2 (its own twin `ref.db.j_<name>` in the same warehouse), then:
  - `lin` (unpartitioned, merge-on-read, one data file per INSERT so row positions are the same
    in both engines): INSERTs, two DELETEs (the second merges each file's deletion vector),
    UPDATE, MERGE. Rows, `_row_id` and `_last_updated_sequence_number` must equal Java's twin's
    (rows a MERGE inserts get fresh ids in the order Spark hands them to the writer, so for those
    only the set of ids per commit is compared), and so must every snapshot's first-row-id /
    added-rows and the table's next-row-id;
  - `upg`: a v2 merge-on-read table with a position-delete file, upgraded to v3 with ALTER TABLE,
    then INSERT / DELETE (the DV folds the old position deletes) / UPDATE: rows and lineage equal
    Java's twin's exactly, and the old position-delete file is gone from the table;
  - `part` (bucket-partitioned, rows spread over tasks): DELETE / UPDATE / MERGE; rows equal
    Java's twin's, Java reads our rows with their lineage exactly as we do, PyIceberg and DuckDB
    read our rows; then Java DELETEs and MERGEs into our table (its commits merge our DVs) and we
    read exactly what Java reads.
Downgrading a v3 table is refused. Copy-on-write DML and procedures on v3: test_v3_rewrites.py.
"""
from __future__ import annotations

import json
from pathlib import Path

import fastavro
import pytest

import pyice_sql
from tests.interop.engines import EngineError, ice_rows, java_sql, peer_rows, sort_rows

pytestmark = pytest.mark.interop

MOR = ("'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")
LINEAGE = "id, data, _row_id, _last_updated_sequence_number"
MERGE_SQL = ("MERGE INTO {t} t USING (SELECT id FROM range(35, 45)) s ON t.id = s.id "
             "WHEN MATCHED AND s.id % 2 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET data = 'm' "
             "WHEN NOT MATCHED THEN INSERT (id, data) VALUES (s.id, 'n')")
SCRIPTS = {
    "lin": [
        "CREATE TABLE {t} (id bigint, data string) USING iceberg TBLPROPERTIES ('format-version'='3', " + MOR + ")",
        "INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, concat('r', cast(id as string)) FROM range(0, 40)",
        "INSERT INTO {t} VALUES (1000, 'a')",
        "DELETE FROM {t} WHERE id % 5 = 0",
        "DELETE FROM {t} WHERE id % 7 = 0",
        "UPDATE {t} SET data = 'u' WHERE id % 3 = 0",
        MERGE_SQL,
    ],
    "upg": [
        "CREATE TABLE {t} (id bigint, data string) USING iceberg TBLPROPERTIES ('format-version'='2', " + MOR + ")",
        "INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, concat('r', cast(id as string)) FROM range(0, 30)",
        "DELETE FROM {t} WHERE id % 5 = 0",
        "ALTER TABLE {t} SET TBLPROPERTIES ('format-version'='3')",
        "INSERT INTO {t} VALUES (100, 'x')",
        "DELETE FROM {t} WHERE id % 7 = 1",
        "UPDATE {t} SET data = 'u' WHERE id % 4 = 2",
    ],
    "part": [
        "CREATE TABLE {t} (id bigint, data string) USING iceberg PARTITIONED BY (bucket(4, id)) "
        "TBLPROPERTIES ('format-version'='3', " + MOR + ")",
        "INSERT INTO {t} SELECT /*+ REPARTITION(2) */ id, concat('r', cast(id as string)) FROM range(0, 60)",
        "DELETE FROM {t} WHERE id % 5 = 0 OR id BETWEEN 20 AND 24",
        "UPDATE {t} SET data = concat(data, '-u') WHERE id % 3 = 0",
        MERGE_SQL,
    ],
}
JAVA_ON_OURS = [
    "DELETE FROM ref.db.part WHERE id % 4 = 1",
    "MERGE INTO ref.db.part t USING (SELECT id FROM range(50, 70)) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET data = 'java' WHEN NOT MATCHED THEN INSERT (id, data) VALUES (s.id, 'jn')",
]


def _metadata(warehouse: str, table: str) -> dict:
    root = Path(warehouse) / "db" / table / "metadata"
    version = max(root.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    return json.loads(version.read_text())


def _lineage_shape(md: dict) -> tuple:
    return md["next-row-id"], [(s.get("first-row-id"), s.get("added-rows")) for s in md["snapshots"]]


def _local(uri: str) -> str:
    return uri.removeprefix("file:")


def _live_delete_files(md: dict) -> list[dict]:
    snap = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
    with open(_local(snap["manifest-list"]), "rb") as f:
        manifests = list(fastavro.reader(f))
    out = []
    for m in manifests:
        if m["content"] == 1:
            with open(_local(m["manifest_path"]), "rb") as f:
                out += [e["data_file"] for e in fastavro.reader(f) if e["status"] != 2]
    return out


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory):
    """Our tables built by pyice, then ONE Java run: its twins, its reads of ours, its DML on ours."""
    warehouse = str(tmp_path_factory.mktemp("v3-write") / "warehouse")
    ice = pyice_sql.connect(spark, warehouse=warehouse)
    ice.sql("CREATE NAMESPACE IF NOT EXISTS local.db")
    for name, script in SCRIPTS.items():
        for sql in script:
            ice.sql(sql.format(t=f"local.db.{name}")).collect()
    ours = {name: ice_rows(ice.sql(f"SELECT {LINEAGE} FROM local.db.{name}")) for name in SCRIPTS}
    try:  # before Java changes `part`
        peers: dict | EngineError = peer_rows(Path(warehouse) / "db" / "part")
    except EngineError as e:
        peers = e
    twins = [sql.format(t=f"ref.db.j_{name}") for name, script in SCRIPTS.items() for sql in script]
    reads = [f"SELECT {LINEAGE} FROM ref.db.{t}" for name in SCRIPTS for t in (f"j_{name}", name)]
    after = [f"SELECT {LINEAGE} FROM ref.db.part"]
    results = java_sql(warehouse, *twins, *reads, *JAVA_ON_OURS, *after)
    java = dict(zip([(t, "read") for name in SCRIPTS for t in (f"j_{name}", name)],
                    results[len(twins):len(twins) + len(reads)]))
    java[("part", "after_java")] = results[-1]
    java["peers"] = peers
    return warehouse, ice, ours, java


def _inserted_by_merge(row: list) -> bool:
    return row[1] == "n"


@pytest.mark.parametrize("name", ["lin", "upg"])
def test_rows_and_row_ids_equal_javas_twin(world, name):
    warehouse, _, ours, java = world
    twin = java[(f"j_{name}", "read")]
    assert [r for r in ours[name] if not _inserted_by_merge(r)] == [r for r in twin if not _inserted_by_merge(r)]
    # rows a MERGE inserted: the same rows and sequence number; their ids are first_row_id + position
    # in a file they share with the updated rows, in whatever order each engine wrote them: so
    # only check they are fresh ids of the MERGE's commit in both
    assert sorted(r[:2] + r[3:] for r in ours[name] if _inserted_by_merge(r)) == \
        sorted(r[:2] + r[3:] for r in twin if _inserted_by_merge(r))
    for table, rows in ((name, ours[name]), (f"j_{name}", twin)):
        last = _metadata(warehouse, table)["snapshots"][-1]
        fresh = range(last["first-row-id"], last["first-row-id"] + last["added-rows"])
        assert all(r[2] in fresh for r in rows if _inserted_by_merge(r)), table
    assert _lineage_shape(_metadata(warehouse, name)) == _lineage_shape(_metadata(warehouse, f"j_{name}"))
    ids = [r[2] for r in ours[name]]
    assert None not in ids and len(set(ids)) == len(ids)


def test_java_reads_our_tables_with_lineage(world):
    _, _, ours, java = world
    for name in SCRIPTS:
        assert java[(name, "read")] == ours[name], name


def test_partitioned_rows_equal_javas_twin(world):
    _, _, ours, java = world
    assert [r[:2] for r in ours["part"]] == [r[:2] for r in java[("j_part", "read")]]
    # updated rows kept the id they had before the UPDATE / MERGE: ids are unique and every id
    # is below the ids the later commits handed out only for rows they inserted
    ids = [r[2] for r in ours["part"]]
    assert len(set(ids)) == len(ids)
    assert all(r[2] < 60 for r in ours["part"] if r[1] != "n")


def test_upgrade_folds_position_deletes_into_deletion_vectors(world):
    warehouse, _, _, _ = world
    for table in ("upg", "j_upg"):
        live = _live_delete_files(_metadata(warehouse, table))
        assert {f["file_format"] for f in live} == {"PUFFIN"}, table
        assert all(f["referenced_data_file"] and f["content_offset"] is not None for f in live), table


def test_deletion_vector_entries_as_java_writes_them(world):
    warehouse, _, _, _ = world
    for table in ("lin", "part"):
        live = _live_delete_files(_metadata(warehouse, table))
        assert live and all(f["file_format"] == "PUFFIN" and f["content"] == 1 for f in live), table
        referenced = [f["referenced_data_file"] for f in live]
        assert len(set(referenced)) == len(referenced), f"{table}: more than one DV for a data file"
        for f in live:
            assert f["file_path"].endswith("-deletes.puffin") and f["first_row_id"] is None
            assert Path(_local(f["file_path"])).stat().st_size == f["file_size_in_bytes"]


def test_peers_read_our_v3_table(world):
    _, _, ours, java = world
    peers = java["peers"]
    if isinstance(peers, EngineError):
        raise peers
    for reader in ("pyiceberg", "duckdb"):
        assert peers[reader] == sort_rows(r[:2] for r in ours["part"]), reader


def test_we_read_javas_dml_on_our_table(world):
    _, ice, _, java = world
    assert ice_rows(ice.sql(f"SELECT {LINEAGE} FROM local.db.part")) == java[("part", "after_java")]


def test_downgrade_is_refused(world):
    warehouse, ice, _, _ = world
    with pytest.raises(Exception, match="cannot downgrade local.db.lin from format v3 to v2"):
        ice.sql("ALTER TABLE local.db.lin SET TBLPROPERTIES ('format-version'='2')")
    assert _metadata(warehouse, "lin")["format-version"] == 3
