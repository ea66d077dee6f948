"""Format v3 writes in the model: row ids a commit assigns, v3 manifests and metadata as Java writes them.

Truth: the spec's "Row lineage example" (format/spec.md: snapshot first-row-id 1000, manifests
added1/added2/added3 get 1000/1125/1225, next-row-id becomes 1375) and the fields Iceberg Java
1.10.2 writes (V3Metadata: data_file 142 first_row_id, 143, 144 content_offset, 145
content_size_in_bytes; manifest list 520 first_row_id and header `first-row-id`).
"""
from __future__ import annotations

import io

import fastavro
import pytest

from pyice_sql.core.format import avro_codec
from pyice_sql.core.model.manifest import DataFile, EntryStatus, FileContent, ManifestContent, ManifestEntry, ManifestFile
from pyice_sql.core.model.metadata import new_table_metadata
from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.row_lineage import advance_next_row_id, assign_manifest_first_row_ids
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.snapshots import Snapshot, build_summary
from pyice_sql.core.model.sort_order import UNSORTED
from pyice_sql.core.model.types import LONG, NestedField

SCHEMA = Schema((NestedField(1, "id", LONG, False),), 0)


def _m(name: str, added: int, existing: int, first_row_id: int | None = None,
       content: ManifestContent = ManifestContent.DATA) -> ManifestFile:
    return ManifestFile(manifest_path=name, manifest_length=1, partition_spec_id=0, content=content,
                        added_snapshot_id=1, added_rows_count=added, existing_rows_count=existing,
                        first_row_id=first_row_id)


def test_spec_row_lineage_example():
    manifests = [_m("existing", 75, 0, 925), _m("added1", 100, 25), _m("added2", 0, 100),
                 _m("deletes", 9, 9, content=ManifestContent.DELETES), _m("added3", 125, 25)]
    assigned, added_rows = assign_manifest_first_row_ids(manifests, 1000)
    assert [(m.manifest_path, m.first_row_id) for m in assigned] == [
        ("existing", 925), ("added1", 1000), ("added2", 1125), ("deletes", None), ("added3", 1225)]
    assert added_rows == 375
    snap = Snapshot(1, None, 1, 0, "l", {"operation": "append"}, first_row_id=1000, added_rows=added_rows)
    assert advance_next_row_id(1000, snap) == 1375
    assert advance_next_row_id(None, snap) is None  # below v3: no row ids
    with pytest.raises(ValueError, match="behind the table's next-row-id 1001"):
        advance_next_row_id(1001, snap)


def test_new_v3_table_starts_row_ids_at_zero_and_writes_null_current_snapshot():
    md = new_table_metadata(SCHEMA, PartitionSpec(0, ()), UNSORTED, "/t", {"format-version": "3"})
    out = md.to_json()
    assert out["format-version"] == 3 and out["next-row-id"] == 0 and out["current-snapshot-id"] is None
    v2 = new_table_metadata(SCHEMA, PartitionSpec(0, ()), UNSORTED, "/t").to_json()
    assert "next-row-id" not in v2 and v2["current-snapshot-id"] == -1
    assert new_table_metadata(SCHEMA, PartitionSpec(0, ()), UNSORTED, "/t").upgrade_format_version(3).next_row_id == 0


def _decode(data: bytes) -> tuple[dict, dict, list[dict]]:
    reader = fastavro.reader(io.BytesIO(data))
    return reader.writer_schema, {k: v.decode() if isinstance(v, bytes) else v
                                  for k, v in reader.metadata.items()}, list(reader)


def _ids(record_schema: dict) -> list[tuple[int, str]]:
    return [(f["field-id"], f["name"]) for f in record_schema["fields"]]


def test_v3_manifest_carries_first_row_id_and_dv_fields():
    spec = PartitionSpec(0, ())
    data = DataFile(file_path="/t/data/a.parquet", record_count=5, file_size_in_bytes=10)
    existing = DataFile(file_path="/t/data/b.parquet", record_count=3, file_size_in_bytes=10, first_row_id=40)
    raw = avro_codec.write_manifest(
        [ManifestEntry(status=EntryStatus.ADDED, data_file=data),
         ManifestEntry(status=EntryStatus.EXISTING, snapshot_id=3, sequence_number=2, file_sequence_number=2,
                       data_file=existing)], spec, SCHEMA, 7, ManifestContent.DATA, format_version=3)
    schema, meta, records = _decode(raw)
    data_file = next(f["type"] for f in schema["fields"] if f["name"] == "data_file")
    assert _ids(data_file)[-5:] == [(140, "sort_order_id"), (142, "first_row_id"), (143, "referenced_data_file"),
                                    (144, "content_offset"), (145, "content_size_in_bytes")]
    assert meta["format-version"] == "3"
    assert [r["data_file"]["first_row_id"] for r in records] == [None, 40]
    dv = DataFile(content=FileContent.POSITION_DELETES, file_path="/t/data/x.puffin", file_format="PUFFIN",
                  record_count=2, file_size_in_bytes=99, referenced_data_file="/t/data/a.parquet",
                  content_offset=4, content_size_in_bytes=40)
    _, meta, records = _decode(avro_codec.write_manifest([ManifestEntry(status=EntryStatus.ADDED, data_file=dv)],
                                                        spec, SCHEMA, 7, ManifestContent.DELETES, 3))
    d = records[0]["data_file"]
    assert (meta["content"], d["file_format"], d["referenced_data_file"], d["content_offset"],
            d["content_size_in_bytes"], d["first_row_id"]) == ("deletes", "PUFFIN", "/t/data/a.parquet", 4, 40, None)
    with pytest.raises(ValueError, match="inherit theirs from the manifest list"):
        avro_codec.write_manifest([ManifestEntry(status=EntryStatus.ADDED, data_file=existing)], spec, SCHEMA, 7,
                                  ManifestContent.DATA, 3)


def test_v3_manifest_list_has_first_row_ids_and_header():
    ml = [_m("a", 5, 0, 100), _m("d", 1, 0, content=ManifestContent.DELETES)]
    ml = [m.__class__(**{**m.__dict__, "added_files_count": 1, "existing_files_count": 0, "deleted_files_count": 0,
                         "deleted_rows_count": 0}) for m in ml]
    schema, meta, records = _decode(avro_codec.write_manifest_list(ml, 7, None, 3, 3, first_row_id=100))
    assert _ids(schema)[-1] == (520, "first_row_id")
    assert meta["first-row-id"] == "100" and meta["format-version"] == "3"
    assert [r["first_row_id"] for r in records] == [100, None]
    assert [m.first_row_id for m in avro_codec.read_manifest_list(
        avro_codec.write_manifest_list(ml, 7, None, 3, 3, first_row_id=100))] == [100, None]


def test_summary_counts_deletion_vectors_as_java():
    dv = DataFile(content=FileContent.POSITION_DELETES, file_path="/t/x.puffin", file_format="PUFFIN",
                  record_count=3, file_size_in_bytes=1000, content_offset=4, content_size_in_bytes=40)
    old = DataFile(content=FileContent.POSITION_DELETES, file_path="/t/y.puffin", file_format="PUFFIN",
                   record_count=1, file_size_in_bytes=500, content_offset=4, content_size_in_bytes=30)
    s = build_summary("delete", None, added_data_files=[], removed_data_files=[], added_delete_files=[dv],
                      removed_delete_files=[old])
    assert {k: s[k] for k in ("added-dvs", "removed-dvs", "added-delete-files", "removed-delete-files",
                              "added-position-deletes", "removed-position-deletes", "added-files-size",
                              "removed-files-size")} == {
        "added-dvs": "1", "removed-dvs": "1", "added-delete-files": "1", "removed-delete-files": "1",
        "added-position-deletes": "3", "removed-position-deletes": "1", "added-files-size": "40",
        "removed-files-size": "30"}
    assert "added-position-delete-files" not in s
