"""Format-v3 tables Iceberg Java writes are read by pyice_sql with exactly Java's rows.

One reference-engine run (Iceberg Java 1.10.2, Spark 3.5) builds, in a warehouse of its own:
  - `u` (unpartitioned) and `p` (bucket(4, id) partitioned): format v3, merge-on-read; an INSERT
    spread over two tasks, a DELETE (deletion vectors), a tag, an UPDATE (DVs plus new rows that
    keep their `_row_id`), a MERGE (DVs merged with the previous ones, inserts);
  - `g`: a v2 merge-on-read table (identity partitioned) with partition-scoped position-delete
    files, upgraded to v3, then DELETE / UPDATE in one partition (Java folds that partition's old
    position deletes into the new DVs; the other partition keeps its position-delete file, so one
    scan applies both kinds), and an INSERT;
  - `bad`: a small v3 table with one DV, whose blob the test damages.
and records Java's own SELECTs: the rows, the rows with `_row_id` and `_last_updated_sequence_number`,
and both as of the tag. pyice reads the same folder through its `local` Hadoop catalog.
Java 1.10.2 on Spark 3.5 refuses column DEFAULT values ("setting default values in Spark is
currently unsupported"), so no table here has one.
"""
from __future__ import annotations

import json
from pathlib import Path

import fastavro
import pytest

from tests.interop.engines import ice_rows, java_sql, prefetch, scratch_dir

pytestmark = pytest.mark.interop

MOR = ("'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")
ROWS = 3000
LINEAGE = "id, data, cat, _row_id, _last_updated_sequence_number"
FILE_COLUMNS = ("content, file_path, file_format, record_count, first_row_id, referenced_data_file, "
                "content_offset, content_size_in_bytes")


def _v3_script(t: str, partitioned: bool) -> list[str]:
    return [
        f"CREATE TABLE {t} (id bigint, data string, cat string) USING iceberg "
        f"{'PARTITIONED BY (bucket(4, id)) ' if partitioned else ''}TBLPROPERTIES ('format-version'='3', {MOR})",
        f"INSERT INTO {t} SELECT /*+ REPARTITION(2) */ id, concat('r', cast(id as string)), "
        f"cast(id % 3 as string) FROM range(0, {ROWS})",
        f"DELETE FROM {t} WHERE id % 7 = 0 OR id BETWEEN 1000 AND 1100",
        f"ALTER TABLE {t} CREATE TAG after_delete",
        f"UPDATE {t} SET data = concat(data, '-u') WHERE id % 11 = 0",
        f"MERGE INTO {t} AS t USING (SELECT id, cast(id % 5 as string) AS op FROM range(2900, 3100)) AS s "
        "ON t.id = s.id WHEN MATCHED AND s.op = '0' THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET t.data = 'merged' "
        "WHEN NOT MATCHED THEN INSERT (id, data, cat) VALUES (s.id, 'new', s.op)",
    ]


UPGRADED = [
    f"CREATE TABLE ref.db.g (id bigint, data string, cat string) USING iceberg PARTITIONED BY (cat) "
    f"TBLPROPERTIES ('format-version'='2', 'write.delete.granularity'='partition', {MOR})",
    f"INSERT INTO ref.db.g SELECT /*+ REPARTITION(2) */ id, concat('r', cast(id as string)), "
    f"cast(id % 2 as string) FROM range(0, {ROWS})",
    "DELETE FROM ref.db.g WHERE id % 5 = 0",
    "ALTER TABLE ref.db.g SET TBLPROPERTIES ('format-version'='3')",
    "ALTER TABLE ref.db.g CREATE TAG after_delete",
    "DELETE FROM ref.db.g WHERE cat = '0' AND id % 7 = 1",
    "UPDATE ref.db.g SET data = 'upd' WHERE cat = '0' AND id % 13 = 2",
    "INSERT INTO ref.db.g VALUES (5000, 'late', '0'), (5001, 'late', '1')",
]
BAD = [
    f"CREATE TABLE ref.db.bad (id bigint, data string) USING iceberg TBLPROPERTIES ('format-version'='3', {MOR})",
    "INSERT INTO ref.db.bad SELECT id, 'x' FROM range(0, 100)",
    "DELETE FROM ref.db.bad WHERE id % 3 = 0",
]
TABLES = ("u", "p", "g")
RECORD = [q for t in TABLES for q in (
    f"SELECT id, data, cat FROM ref.db.{t}",
    f"SELECT {LINEAGE} FROM ref.db.{t}",
    f"SELECT id, data, cat FROM ref.db.{t} VERSION AS OF 'after_delete'",
    f"SELECT {LINEAGE} FROM ref.db.{t} VERSION AS OF 'after_delete'",
)] + ["SELECT * FROM ref.db.bad"] + [
    f"SELECT {FILE_COLUMNS} FROM ref.db.{t}.files" for t in TABLES]
STATEMENTS = _v3_script("ref.db.u", False) + _v3_script("ref.db.p", True) + UPGRADED + BAD + RECORD


def prefetch_java():
    def run():
        warehouse = scratch_dir("v3-read")
        return warehouse, java_sql(warehouse, *STATEMENTS)[-len(RECORD):]
    return prefetch("v3_read", run)


@pytest.fixture(scope="module")
def world(spark):
    import pyice_sql

    warehouse, results = prefetch_java().result()
    answers = {}
    for t in TABLES:
        for kind in ("rows", "lineage", "rows_tag", "lineage_tag"):
            answers[(t, kind)] = results[len(answers)]
    answers[("bad", "rows")] = results[len(answers)]
    for t in TABLES:
        answers[(t, "files")] = results[len(answers)]
    return warehouse, answers, pyice_sql.connect(spark, warehouse=warehouse)


def _avro(path: str) -> list[dict]:
    with open(path, "rb") as f:
        return list(fastavro.reader(f))


def _live_delete_files(warehouse: str, table: str) -> list[dict]:
    """The live delete-file entries of a table's current snapshot, from Java's metadata."""
    root = Path(warehouse) / "db" / table / "metadata"
    version = max(root.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    md = json.loads(version.read_text())
    snap = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
    return [e["data_file"] for m in _avro(snap["manifest-list"]) if m["content"] == 1
            for e in _avro(m["manifest_path"]) if e["status"] != 2]


@pytest.mark.parametrize("table", TABLES)
def test_reads_java_rows(world, table):
    _, answers, ice = world
    assert ice_rows(ice.sql(f"SELECT id, data, cat FROM local.db.{table}")) == answers[(table, "rows")]
    assert ice_rows(ice.sql(f"SELECT * FROM local.db.{table}")) == answers[(table, "rows")]  # no lineage in *


@pytest.mark.parametrize("table", TABLES)
def test_reads_java_row_lineage(world, table):
    _, answers, ice = world
    expected = answers[(table, "lineage")]
    assert ice_rows(ice.sql(f"SELECT {LINEAGE} FROM local.db.{table}")) == expected
    if table != "g":  # every row of a table born v3 has an id, and updated rows kept theirs
        assert all(r[3] is not None for r in expected) and len({r[3] for r in expected}) == len(expected)


@pytest.mark.parametrize("table", TABLES)
def test_time_travel_to_tag(world, table):
    _, answers, ice = world
    assert ice_rows(ice.sql(f"SELECT id, data, cat FROM local.db.{table} VERSION AS OF 'after_delete'")) == \
        answers[(table, "rows_tag")]
    assert ice_rows(ice.sql(f"SELECT {LINEAGE} FROM local.db.{table} VERSION AS OF 'after_delete'")) == \
        answers[(table, "lineage_tag")]


@pytest.mark.parametrize("table", TABLES)
def test_files_metadata_table_shows_deletion_vectors(world, table):
    _, answers, ice = world
    assert ice_rows(ice.sql(f"SELECT {FILE_COLUMNS} FROM local.db.{table}.files")) == answers[(table, "files")]
    assert any(r[2] == "PUFFIN" and r[6] is not None for r in answers[(table, "files")])


def test_upgraded_table_has_position_deletes_and_dvs(world):
    """The `g` reads above cover both kinds of deletes at once: check they are really there."""
    warehouse, _, _ = world
    live = _live_delete_files(warehouse, "g")
    assert sorted({f["file_format"] for f in live}) == ["PARQUET", "PUFFIN"]
    # Java folded partition 0's old position deletes into the new DVs; partition 1 keeps its own
    assert {f["partition"]["cat"] for f in live if f["file_format"] == "PUFFIN"} == {"0"}
    assert {f["partition"]["cat"] for f in live if f["file_format"] == "PARQUET"} == {"1"}


def test_damaged_deletion_vector_is_named(world):
    warehouse, answers, ice = world
    assert ice_rows(ice.sql("SELECT * FROM local.db.bad")) == answers[("bad", "rows")]  # intact: Java's rows
    dv = _live_delete_files(warehouse, "bad")[0]
    puffin = Path(dv["file_path"])
    data = bytearray(puffin.read_bytes())
    data[dv["content_offset"] + 12] ^= 0xFF  # inside the bitmap, after length and magic: the CRC catches it
    puffin.write_bytes(bytes(data))
    # Hadoop's local file system would catch the flip first with the `.crc` file Java wrote next to
    # it; object stores keep none, so our own check of the blob must
    puffin.with_name(f".{puffin.name}.crc").unlink()
    with pytest.raises(Exception) as e:
        ice.sql("SELECT * FROM local.db.bad").collect()
    text = str(e.value)
    assert "DeletionVectorError" in text and "CRC" in text and dv["file_path"] in text
