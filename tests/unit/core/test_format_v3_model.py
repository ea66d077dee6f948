"""Format v3 in the model: metadata Iceberg Java writes, first-row-id inheritance, the write refusal.

Evidence: `data/java_v3_row_lineage.metadata.json` was written by Iceberg Java 1.10.2 (the
reference engine: a v3 merge-on-read table after INSERT, DELETE, UPDATE, MERGE, as in
tests/interop/test_v3_read.py); inheritance is checked against sums computed by hand.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyice_sql.core.catalog.base import read_metadata_file
from pyice_sql.core.model.format_versions import FormatVersionWriteError, check_writable
from pyice_sql.core.model.row_lineage import inherit_first_row_ids, is_lineage_column
from pyice_sql.core.errors import CorruptTableError
from pyice_sql.core.format.fileio import LocalFileIO
from pyice_sql.core.model.manifest import DataFile, EntryStatus, ManifestContent, ManifestEntry, ManifestFile
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.model.types import field_from_json, field_to_json, type_from_json

JAVA_V3 = Path(__file__).parent.parent / "data" / "java_v3_row_lineage.metadata.json"


def _entry(status: EntryStatus, records: int, first_row_id: int | None = None) -> ManifestEntry:
    return ManifestEntry(status=status, snapshot_id=1, sequence_number=1, data_file=DataFile(
        file_path=f"/t/data/{records}.parquet", record_count=records, file_size_in_bytes=1,
        first_row_id=first_row_id))


def _manifest(first_row_id: int | None, content: ManifestContent = ManifestContent.DATA) -> ManifestFile:
    return ManifestFile(manifest_path="/t/m.avro", manifest_length=1, partition_spec_id=0, content=content,
                        added_snapshot_id=1, first_row_id=first_row_id)


def test_live_files_without_an_id_inherit_the_running_row_count():
    entries = [_entry(EntryStatus.ADDED, 10), _entry(EntryStatus.EXISTING, 5, first_row_id=500),
               _entry(EntryStatus.DELETED, 7), _entry(EntryStatus.EXISTING, 3), _entry(EntryStatus.ADDED, 4)]
    got = [e.data_file.first_row_id for e in inherit_first_row_ids(entries, _manifest(100))]
    # 100; explicit 500 kept and not counted; DELETED neither assigned nor counted; 100 + 10; 110 + 3
    assert got == [100, 500, None, 110, 113]


@pytest.mark.parametrize("manifest", [_manifest(None), _manifest(7, ManifestContent.DELETES)])
def test_no_inheritance_without_a_manifest_first_row_id_or_for_deletes(manifest):
    entries = [_entry(EntryStatus.ADDED, 10)]
    assert inherit_first_row_ids(entries, manifest) == entries


def test_java_v3_metadata_reads_and_keeps_row_lineage():
    obj = json.loads(JAVA_V3.read_text())
    md = TableMetadata.from_json(obj)
    assert md.format_version == 3
    assert [(s.first_row_id, s.added_rows) for s in md.snapshots] == \
        [(s["first-row-id"], s["added-rows"]) for s in obj["snapshots"]]
    assert md.snapshots[0].first_row_id == 0 and md.snapshots[0].added_rows > 0
    assert md.next_row_id == obj["next-row-id"]
    again = md.to_json()
    assert again["next-row-id"] == obj["next-row-id"]
    assert [s.get("first-row-id") for s in again["snapshots"]] == [s["first-row-id"] for s in obj["snapshots"]]


def test_read_metadata_file_accepts_v3_and_names_a_v4_file(tmp_path):
    obj = json.loads(JAVA_V3.read_text())
    good = tmp_path / "v3.metadata.json"
    good.write_text(json.dumps(obj))
    assert read_metadata_file(LocalFileIO(), str(good)).format_version == 3
    bad = tmp_path / "v4.metadata.json"
    bad.write_text(json.dumps({**obj, "format-version": 4}))
    with pytest.raises(CorruptTableError, match="format-version 4.*reads versions 1 to 3") as e:
        read_metadata_file(LocalFileIO(), str(bad))
    assert str(bad) in str(e.value)


def test_field_defaults_and_unknown_type_round_trip():
    obj = {"id": 4, "name": "c", "required": False, "type": "int", "initial-default": 7, "write-default": 8}
    f = field_from_json(obj)
    assert (f.initial_default, f.write_default) == (7, 8)
    assert field_to_json(f) == obj
    assert str(type_from_json("unknown")) == "unknown"


def test_writes_above_v3_are_refused_by_name():
    check_writable(3, "local.db.t")
    with pytest.raises(FormatVersionWriteError, match=r"^format v4 writes not supported yet by pyice_sql: local\.db\.t$"):
        check_writable(4, "local.db.t")


def test_lineage_column_names():
    assert is_lineage_column("_ROW_ID") and is_lineage_column("_last_updated_sequence_number")
    assert not is_lineage_column("_file") and not is_lineage_column("row_id")
