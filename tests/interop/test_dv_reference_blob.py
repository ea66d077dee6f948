"""Deletion vectors Iceberg Java writes: our codec decodes exactly the deleted rows and re-encodes Java's bytes.

One reference-engine run (Iceberg Java 1.10.2, Spark 3.5) builds a format-v3 merge-on-read table
with two data files (rows spread by REPARTITION(2), so positions are not ids) and runs two
DELETEs; the second makes Java merge each file's previous DV into a new one. The truth for the
positions comes from the data files themselves (pyarrow reads their `id` column: the position
of each row whose id matches the DELETE predicates), not from our decoder.

What Iceberg Java 1.10.2 writes for such a table (checked in test_v3_metadata_as_java_writes_it):
  - metadata.json: "format-version": 3, "next-row-id" = rows appended so far (300000 here), no
    "row-lineage" field; every snapshot has "first-row-id" (the table's next-row-id when it was
    committed) and "added-rows" (300000 for the append; 0 for each DELETE, whose first-row-id is
    still 300000). Summary of a DV commit: added-dvs, added-delete-files, added-position-deletes;
    the merging DELETE also removed-dvs / removed-delete-files / removed-position-deletes.
  - manifest list (v3): header key `first-row-id`; per manifest `first_row_id` (field 520): 0 for
    the appended data manifest, null for delete manifests.
  - data manifest entries: `first_row_id` (142) null (inherited from the manifest's first_row_id
    plus the preceding files' record counts); sequence numbers null (inherited).
  - DV entries (delete manifest, header content=deletes): content 1 (position deletes),
    file_format "PUFFIN", file_path the .puffin file (`<task>-<op id>-00001-deletes.puffin`, one
    per writing task, one blob per data file), record_count = the DV's cardinality,
    file_size_in_bytes = the Puffin file's size, referenced_data_file = the data file's path,
    content_offset / content_size_in_bytes = the blob's offset / length in the footer (4 for the
    first blob); no column stats, no first_row_id, no sort_order_id. Replaced DVs appear as
    status 2 (DELETED) entries with their sequence numbers.
  - Puffin footer: uncompressed, flags 0, blob "fields" [2147483645] (the _pos column),
    "snapshot-id"/"sequence-number" -1, properties referenced-data-file and cardinality, file
    property created-by "Apache Iceberg 1.10.2 (commit ...)".
"""
from __future__ import annotations

import json
from pathlib import Path

import fastavro
import pyarrow.parquet as pq
import pytest

from pyice_sql.core.format.deletion_vector import deserialize_positions, dv_blob, serialize_positions
from pyice_sql.core.format.puffin import blob_bytes, read_puffin, write_puffin
from tests.interop.engines import java_sql, prefetch, scratch_dir

pytestmark = pytest.mark.interop

TABLE = "ref.db.dv"
ROWS = 300000
STATEMENTS = [
    f"CREATE TABLE {TABLE} (id bigint, data string) USING iceberg TBLPROPERTIES ('format-version'='3', "
    "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read')",
    f"INSERT INTO {TABLE} SELECT /*+ REPARTITION(2) */ id, concat('r', cast(id as string)) FROM range(0, {ROWS})",
    f"DELETE FROM {TABLE} WHERE (id % 2 = 0 AND id < 100000) OR id BETWEEN 150000 AND 170000 OR id % 997 = 0",
    f"DELETE FROM {TABLE} WHERE id % 5 = 1 AND id > 200000",
    f"SELECT count(*) FROM {TABLE}",
]


def first_delete(i: int) -> bool:
    """The first DELETE's predicate, in Python."""
    return (i % 2 == 0 and i < 100000) or 150000 <= i <= 170000 or i % 997 == 0


def second_delete(i: int) -> bool:
    return i % 5 == 1 and i > 200000


def prefetch_java():
    def run():
        warehouse = scratch_dir("dv-reference")
        return warehouse, java_sql(warehouse, *STATEMENTS)
    return prefetch("dv_reference_blob", run)


def _avro(path: str) -> tuple[dict, list[dict]]:
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        return {k: v.decode() if isinstance(v, bytes) else v for k, v in reader.metadata.items()}, list(reader)


@pytest.fixture(scope="module")
def table():
    warehouse, results = prefetch_java().result()
    root = Path(warehouse) / "db" / "dv"
    versions = sorted(root.glob("metadata/v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
    metadata = json.loads(versions[-1].read_text())
    return metadata, results[-1][0][0]


def _snapshot_dvs(snapshot: dict) -> list[dict]:
    """The live (not DELETED) DV entries of a snapshot, from its manifests."""
    live = []
    for manifest in _avro(snapshot["manifest-list"])[1]:
        if manifest["content"] == 1:
            live += [e for e in _avro(manifest["manifest_path"])[1] if e["status"] != 2]
    return live


def _deleted_positions(data_file: str, *predicates) -> list[int]:
    ids = pq.read_table(data_file, columns=["id"]).column("id").to_pylist()
    return [pos for pos, i in enumerate(ids) if any(p(i) for p in predicates)]


@pytest.mark.parametrize("delete_count", [1, 2])
def test_java_dvs_hold_exactly_the_deleted_positions(table, delete_count):
    metadata, remaining = table
    predicates = (first_delete, second_delete)[:delete_count]
    snapshot = metadata["snapshots"][delete_count]
    entries = _snapshot_dvs(snapshot)
    assert len(entries) == 2  # one DV per data file
    total = 0
    for entry in entries:
        dv = entry["data_file"]
        puffin = Path(dv["file_path"]).read_bytes()
        blob = puffin[dv["content_offset"]:dv["content_offset"] + dv["content_size_in_bytes"]]
        positions = list(deserialize_positions(blob, dv["file_path"]))
        assert positions == _deleted_positions(dv["referenced_data_file"], *predicates)
        assert dv["record_count"] == len(positions)
        total += len(positions)
        (footer_blob,) = [b for b in read_puffin(puffin, dv["file_path"]).blobs if b.offset == dv["content_offset"]]
        assert footer_blob.length == dv["content_size_in_bytes"]
        assert footer_blob.properties == {"referenced-data-file": dv["referenced_data_file"],
                                          "cardinality": str(len(positions))}
    assert total == sum(1 for i in range(ROWS) if any(p(i) for p in predicates))
    if delete_count == 2:
        assert remaining == ROWS - total  # what Java's own read says is left


def test_java_dv_files_reencode_byte_for_byte(table):
    metadata, _ = table
    files = {e["data_file"]["file_path"] for s in metadata["snapshots"][1:] for e in _snapshot_dvs(s)}
    assert len(files) == 2  # one Puffin file per DELETE
    for path in sorted(files):
        data = Path(path).read_bytes()
        footer = read_puffin(data, path)
        assert len(footer.blobs) == 2
        blobs = []
        for blob in footer.blobs:
            stored = blob_bytes(data, blob, path)
            positions = deserialize_positions(stored, path)
            assert serialize_positions(positions) == stored
            blobs.append(dv_blob(blob.properties["referenced-data-file"], positions)[0])
        assert write_puffin(blobs, footer.properties)[0] == data


def test_v3_metadata_as_java_writes_it(table):
    metadata, _ = table
    assert metadata["format-version"] == 3 and metadata["next-row-id"] == ROWS
    assert "row-lineage" not in metadata
    append, first, second = metadata["snapshots"]
    assert [(s["first-row-id"], s["added-rows"]) for s in (append, first, second)] == [(0, ROWS), (ROWS, 0), (ROWS, 0)]
    assert second["summary"]["added-dvs"] == second["summary"]["removed-dvs"] == "2"

    header, manifests = _avro(second["manifest-list"])
    assert header["format-version"] == "3" and header["first-row-id"] == str(ROWS)
    data_manifests = [m for m in manifests if m["content"] == 0]
    assert [m["first_row_id"] for m in data_manifests] == [0]
    assert all(m["first_row_id"] is None for m in manifests if m["content"] == 1)

    data_entries = _avro(data_manifests[0]["manifest_path"])[1]
    assert [e["data_file"]["first_row_id"] for e in data_entries] == [None, None]
    assert sum(e["data_file"]["record_count"] for e in data_entries) == ROWS

    statuses = {}
    for manifest in (m for m in manifests if m["content"] == 1):
        mheader, entries = _avro(manifest["manifest_path"])
        assert mheader["content"] == "deletes"
        for e in entries:
            statuses.setdefault(e["status"], []).append(e)
            dv = e["data_file"]
            assert (dv["content"], dv["file_format"], dv["first_row_id"], dv["sort_order_id"]) == \
                (1, "PUFFIN", None, None)
            assert dv["file_path"].endswith("-deletes.puffin") and dv["referenced_data_file"].endswith(".parquet")
            assert dv["file_size_in_bytes"] == Path(dv["file_path"]).stat().st_size
            assert dv["lower_bounds"] is None and dv["value_counts"] is None
    assert sorted(statuses) == [1, 2] and len(statuses[1]) == len(statuses[2]) == 2
    assert sorted(e["data_file"]["content_offset"] for e in statuses[1])[0] == 4
    assert {e["sequence_number"] for e in statuses[2]} == {first["sequence-number"]}
