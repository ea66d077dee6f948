"""Manifest and manifest-list Avro encoding: round trips, inheritance, schema shape, PyIceberg interop."""
from __future__ import annotations

import io
import json
import math
import struct
import uuid
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest

from pyice_sql.core.format import avro_codec as codec
from pyice_sql.core.model.conversions import to_bytes
from pyice_sql.core.model.manifest import (
    DataFile, DeleteFile, EntryStatus, FieldSummary, FileContent, ManifestContent, ManifestEntry, ManifestFile,
)
from pyice_sql.core.model.partitioning import UNPARTITIONED, PartitionField, PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.transforms import parse_transform
from pyice_sql.core.model.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMPTZ, UUID, DecimalType, FixedType,
    ListType, MapType, NestedField,
)

SNAP = 7001
SEQ = 5

SCHEMA = Schema((
    NestedField(1, "id", LONG, True),
    NestedField(2, "category", STRING),
    NestedField(3, "ts", TIMESTAMP),
    NestedField(4, "name", STRING),
    NestedField(5, "price", DecimalType(10, 2)),
    NestedField(6, "d", DATE),
    NestedField(7, "tags", ListType(8, STRING)),
    NestedField(9, "attrs", MapType(10, STRING, 11, LONG)),
), schema_id=3)


def _pf(source_id: int, field_id: int, transform: str, name: str) -> PartitionField:
    return PartitionField(source_id, field_id, parse_transform(transform), name)


SPEC = PartitionSpec(2, (
    _pf(2, 1000, "identity", "category"),
    _pf(1, 1001, "bucket[16]", "id_bucket"),
    _pf(3, 1002, "day", "ts_day"),
    _pf(4, 1003, "truncate[4]", "name_trunc"),
    _pf(5, 1004, "identity", "price"),
    _pf(6, 1005, "identity", "d"),
))

PART_A = ("books", 3, 19723, "abcd", Decimal("12.34"), 19000)
PART_B = ("toys", 15, -1, "z", Decimal("-0.05"), -3)
PART_NULL = (None, 0, None, None, None, None)


def data_file(path: str, partition: tuple[Any, ...], records: int = 10, **kw: Any) -> DataFile:
    return DataFile(
        file_path=path, partition=partition, record_count=records, file_size_in_bytes=1000 + records,
        column_sizes={1: 80, 2: 40}, value_counts={1: records, 2: records}, null_value_counts={1: 0, 2: 1},
        nan_value_counts={}, lower_bounds={1: struct.pack("<q", 1), 2: b"a"},
        upper_bounds={1: struct.pack("<q", 99), 2: b"z"}, split_offsets=[4], sort_order_id=0, **kw)


def data_entries() -> list[ManifestEntry]:
    return [
        ManifestEntry(status=EntryStatus.ADDED, data_file=data_file("file:///t/data/a.parquet", PART_A)),
        ManifestEntry(status=EntryStatus.ADDED, snapshot_id=SNAP,
                      data_file=data_file("file:///t/data/n.parquet", PART_NULL, records=3)),
        ManifestEntry(status=EntryStatus.EXISTING, snapshot_id=6000, sequence_number=2, file_sequence_number=3,
                      data_file=data_file("file:///t/data/b.parquet", PART_B, records=20)),
        ManifestEntry(status=EntryStatus.DELETED, snapshot_id=6000, sequence_number=1, file_sequence_number=1,
                      data_file=data_file("file:///t/data/c.parquet", PART_A, records=7)),
    ]


def manifest_of(entries: list[ManifestEntry], spec: PartitionSpec = SPEC,
                content: ManifestContent = ManifestContent.DATA, path: str = "file:///t/metadata/m0.avro"
                ) -> tuple[bytes, ManifestFile]:
    data = codec.write_manifest(entries, spec, SCHEMA, SNAP, content)
    return data, codec.summarize_manifest(entries, spec, SCHEMA, path, len(data), SNAP, SEQ, content)


def expected_read(entry: ManifestEntry, spec_id: int = SPEC.spec_id) -> ManifestEntry:
    """What a reader must return for a written entry, per the §3 writing and inheritance rules."""
    if entry.status == EntryStatus.ADDED:
        return replace(entry, snapshot_id=SNAP, sequence_number=SEQ, file_sequence_number=SEQ,
                       data_file=replace(entry.data_file, spec_id=spec_id))
    snapshot = SNAP if entry.status == EntryStatus.DELETED else entry.snapshot_id
    return replace(entry, snapshot_id=snapshot, data_file=replace(entry.data_file, spec_id=spec_id))


def header(data: bytes) -> tuple[dict[str, Any], dict[str, str], list[dict[str, Any]]]:
    reader = fastavro.reader(io.BytesIO(data))
    return json.loads(reader.metadata["avro.schema"]), dict(reader.metadata), list(reader)


def walk_records(avro_type: Any, out: dict[str, dict[str, Any]], arrays: list[dict[str, Any]]) -> None:
    """Collect every named record (by name) and every array schema below `avro_type`."""
    if isinstance(avro_type, list):
        for branch in avro_type:
            walk_records(branch, out, arrays)
    elif isinstance(avro_type, dict):
        if avro_type.get("type") == "record":
            out[avro_type["name"]] = avro_type
            for f in avro_type["fields"]:
                walk_records(f["type"], out, arrays)
        elif avro_type.get("type") == "array":
            arrays.append(avro_type)
            walk_records(avro_type["items"], out, arrays)


# ---------------------------------------------------------------------------------------------
# Round trips


def test_partitioned_manifest_round_trip_applies_inheritance() -> None:
    entries = data_entries()
    data, manifest = manifest_of(entries)
    got = codec.read_manifest(data, manifest)
    assert got == [expected_read(e) for e in entries]
    assert got[0].data_file.partition == PART_A
    assert got[1].data_file.partition == PART_NULL
    assert isinstance(got[0].data_file.partition[2], int) and isinstance(got[0].data_file.partition[5], int)


def test_written_sequence_numbers_follow_status_rules() -> None:
    entries = data_entries()
    _, _, records = header(codec.write_manifest(entries, SPEC, SCHEMA, SNAP, ManifestContent.DATA))
    added, added2, existing, deleted = records
    assert (added["snapshot_id"], added["sequence_number"], added["file_sequence_number"]) == (SNAP, None, None)
    assert (added2["sequence_number"], added2["file_sequence_number"]) == (None, None)
    assert (existing["snapshot_id"], existing["sequence_number"], existing["file_sequence_number"]) == (6000, 2, 3)
    # a DELETED entry records the deleting snapshot but keeps the original sequence numbers
    assert (deleted["snapshot_id"], deleted["sequence_number"], deleted["file_sequence_number"]) == (SNAP, 1, 1)


def test_summary_counts_rows_and_min_sequence_number() -> None:
    data, m = manifest_of(data_entries())
    assert (m.manifest_length, m.partition_spec_id, m.content, m.added_snapshot_id) == (
        len(data), 2, ManifestContent.DATA, SNAP)
    assert (m.added_files_count, m.existing_files_count, m.deleted_files_count) == (2, 1, 1)
    assert (m.added_rows_count, m.existing_rows_count, m.deleted_rows_count) == (13, 20, 7)
    # the DELETED entry's seq 1 does not count; EXISTING's 2 does
    assert (m.sequence_number, m.min_sequence_number) == (SEQ, 2)
    only_added = [e for e in data_entries() if e.status == EntryStatus.ADDED]
    assert manifest_of(only_added)[1].min_sequence_number == SEQ


def test_partition_field_summaries() -> None:
    _, m = manifest_of(data_entries())
    ptype = SPEC.partition_type(SCHEMA)
    assert m.partitions is not None and len(m.partitions) == len(SPEC.fields)
    cat, bucket, day, trunc, price, d = m.partitions
    assert cat == FieldSummary(contains_null=True, contains_nan=False, lower_bound=b"books", upper_bound=b"toys")
    assert bucket == FieldSummary(contains_null=False, contains_nan=False,
                                  lower_bound=struct.pack("<i", 0), upper_bound=struct.pack("<i", 15))
    assert (day.lower_bound, day.upper_bound) == (struct.pack("<i", -1), struct.pack("<i", 19723))
    assert (trunc.lower_bound, trunc.upper_bound) == (b"abcd", b"z")
    assert (price.lower_bound, price.upper_bound) == (
        to_bytes(ptype.fields[4].type, Decimal("-0.05")), to_bytes(ptype.fields[4].type, Decimal("12.34")))
    assert price.lower_bound == b"\xfb"
    assert d.contains_null and (d.lower_bound, d.upper_bound) == (struct.pack("<i", -3), struct.pack("<i", 19000))


def test_all_null_partition_field_has_no_bounds() -> None:
    entry = ManifestEntry(status=EntryStatus.ADDED, data_file=data_file("file:///t/n.parquet", PART_NULL))
    _, m = manifest_of([entry])
    assert m.partitions is not None
    assert m.partitions[0] == FieldSummary(contains_null=True, contains_nan=False)


def test_manifest_list_round_trip_and_header() -> None:
    data_bytes, data_m = manifest_of(data_entries())
    deletes = [ManifestEntry(status=EntryStatus.ADDED, data_file=position_delete("file:///t/data/a.parquet", PART_A))]
    _, delete_m = manifest_of(deletes, content=ManifestContent.DELETES, path="file:///t/metadata/m1.avro")
    carried = replace(data_m, manifest_path="file:///t/metadata/old.avro", added_snapshot_id=6000,
                      sequence_number=3, min_sequence_number=1, key_metadata=b"k", partitions=None)
    listed = [data_m, carried, delete_m]
    raw = codec.write_manifest_list(listed, SNAP, None, SEQ)
    assert codec.read_manifest_list(raw) == listed
    schema, meta, _ = header(raw)
    assert meta["snapshot-id"] == str(SNAP)
    assert meta["parent-snapshot-id"] == "null"
    assert meta["sequence-number"] == str(SEQ)
    assert meta["format-version"] == "2"
    assert meta["avro.codec"] == "deflate"
    meta = header(codec.write_manifest_list(listed, SNAP, 6000, SEQ))[1]
    assert meta["parent-snapshot-id"] == "6000"


def position_delete(target: str, partition: tuple[Any, ...]) -> DeleteFile:
    return DeleteFile(
        content=FileContent.POSITION_DELETES, file_path=target.replace(".parquet", "-deletes.parquet"),
        partition=partition, record_count=2, file_size_in_bytes=500,
        value_counts={2147483546: 2, 2147483545: 2}, null_value_counts={2147483546: 0, 2147483545: 0},
        lower_bounds={2147483546: target.encode(), 2147483545: struct.pack("<q", 0)},
        upper_bounds={2147483546: target.encode(), 2147483545: struct.pack("<q", 9)},
        referenced_data_file=target)


def test_delete_manifest_round_trip() -> None:
    entries = [
        ManifestEntry(status=EntryStatus.ADDED, data_file=position_delete("file:///t/data/a.parquet", PART_A)),
        ManifestEntry(status=EntryStatus.EXISTING, snapshot_id=6000, sequence_number=4, file_sequence_number=4,
                      data_file=position_delete("file:///t/data/b.parquet", PART_B)),
        ManifestEntry(status=EntryStatus.ADDED, data_file=DeleteFile(
            content=FileContent.EQUALITY_DELETES, file_path="file:///t/data/eq.parquet", partition=PART_A,
            record_count=1, file_size_in_bytes=300, equality_ids=[1, 2])),
    ]
    data, m = manifest_of(entries, content=ManifestContent.DELETES)
    assert m.content == ManifestContent.DELETES and m.min_sequence_number == 4
    got = codec.read_manifest(data, m)
    assert got == [expected_read(e) for e in entries]
    assert got[0].data_file.referenced_data_file == "file:///t/data/a.parquet"
    assert got[0].data_file.content == FileContent.POSITION_DELETES
    assert got[2].data_file.equality_ids == [1, 2]
    assert header(data)[1]["content"] == "deletes"


def test_manifest_header_metadata() -> None:
    schema, meta, _ = header(codec.write_manifest(data_entries(), SPEC, SCHEMA, SNAP, ManifestContent.DATA))
    assert Schema.from_json(json.loads(meta["schema"])) == SCHEMA
    assert meta["schema-id"] == "3"
    assert json.loads(meta["partition-spec"]) == SPEC.to_json()["fields"]
    assert meta["partition-spec-id"] == "2"
    assert meta["format-version"] == "2"
    assert meta["content"] == "data"
    assert meta["avro.codec"] == "deflate"


def test_unpartitioned_manifest() -> None:
    entry = ManifestEntry(status=EntryStatus.ADDED,
                          data_file=DataFile(file_path="file:///t/x.parquet", record_count=1, file_size_in_bytes=9))
    data, m = manifest_of([entry], spec=UNPARTITIONED)
    assert m.partitions == []
    assert codec.read_manifest(data, m) == [expected_read(entry, spec_id=0)]
    schema, _, _ = header(data)
    records: dict[str, dict[str, Any]] = {}
    walk_records(schema, records, [])
    assert records["r102"]["fields"] == []


# ---------------------------------------------------------------------------------------------
# Inheritance on read


def _raw_manifest(records: list[dict[str, Any]], spec: PartitionSpec = UNPARTITIONED) -> bytes:
    """A manifest encoded without the writer's rules, to test what readers do with any legal input."""
    buf = io.BytesIO()
    avro_schema = codec.manifest_avro_schema(spec.partition_type(SCHEMA))
    fastavro.writer(buf, fastavro.parse_schema(avro_schema), records)
    return buf.getvalue()


def _raw_entry(status: int, snapshot_id: int | None, seq: int | None, file_seq: int | None) -> dict[str, Any]:
    return {"status": status, "snapshot_id": snapshot_id, "sequence_number": seq, "file_sequence_number": file_seq,
            "data_file": {"content": 0, "file_path": f"file:///t/{status}-{seq}.parquet", "file_format": "PARQUET",
                          "partition": {}, "record_count": 1, "file_size_in_bytes": 10}}


def _list_row(seq: int, spec_id: int = 0) -> ManifestFile:
    return ManifestFile(manifest_path="file:///t/m.avro", manifest_length=1, partition_spec_id=spec_id,
                        sequence_number=seq, min_sequence_number=seq, added_snapshot_id=SNAP)


def test_inheritance_rules() -> None:
    data = _raw_manifest([
        _raw_entry(1, None, None, None),    # ADDED, fully inherited
        _raw_entry(1, SNAP, 2, None),       # ADDED compaction output: explicit data seq, inherited file seq
        _raw_entry(0, 6000, 3, 4),          # EXISTING: explicit
        _raw_entry(0, 6000, None, None),    # EXISTING with nulls: not inherited in a v2 manifest (seq > 0)
    ])
    got = codec.read_manifest(data, _list_row(SEQ, spec_id=4))
    assert [(e.snapshot_id, e.sequence_number, e.file_sequence_number) for e in got] == [
        (SNAP, SEQ, SEQ), (SNAP, 2, SEQ), (6000, 3, 4), (6000, None, None)]
    assert {e.data_file.spec_id for e in got} == {4}
    # manifest sequence number 0 (upgraded v1 data): every null inherits 0
    got = codec.read_manifest(data, _list_row(0))
    assert got[3].sequence_number == 0 and got[3].file_sequence_number == 0


def test_added_entry_with_explicit_data_sequence_number_is_kept() -> None:
    entry = ManifestEntry(status=EntryStatus.ADDED, sequence_number=2,
                          data_file=data_file("file:///t/compacted.parquet", PART_A))
    data, m = manifest_of([entry])
    record = header(data)[2][0]
    assert (record["sequence_number"], record["file_sequence_number"]) == (2, None)
    assert m.min_sequence_number == 2
    got = codec.read_manifest(data, m)[0]
    assert (got.sequence_number, got.file_sequence_number) == (2, SEQ)


def test_writer_rejects_entries_breaking_the_rules() -> None:
    df = data_file("file:///t/a.parquet", PART_A)
    with pytest.raises(ValueError, match="explicit sequence numbers"):
        codec.write_manifest([ManifestEntry(status=EntryStatus.EXISTING, snapshot_id=1, data_file=df)],
                             SPEC, SCHEMA, SNAP, ManifestContent.DATA)
    with pytest.raises(ValueError, match="original snapshot id"):
        codec.write_manifest([ManifestEntry(status=EntryStatus.EXISTING, sequence_number=1, file_sequence_number=1,
                                            data_file=df)], SPEC, SCHEMA, SNAP, ManifestContent.DATA)
    with pytest.raises(ValueError, match="EXISTING"):
        codec.write_manifest([ManifestEntry(status=EntryStatus.ADDED, snapshot_id=1, data_file=df)],
                             SPEC, SCHEMA, SNAP, ManifestContent.DATA)
    with pytest.raises(ValueError, match="DELETES manifest"):
        codec.write_manifest([ManifestEntry(status=EntryStatus.ADDED, data_file=df)],
                             SPEC, SCHEMA, SNAP, ManifestContent.DELETES)
    with pytest.raises(ValueError, match="partition tuple"):
        codec.write_manifest([ManifestEntry(status=EntryStatus.ADDED, data_file=replace(df, partition=("x",)))],
                             SPEC, SCHEMA, SNAP, ManifestContent.DATA)
    m = replace(manifest_of(data_entries())[1], added_files_count=None)
    with pytest.raises(ValueError, match="count"):
        codec.write_manifest_list([m], SNAP, None, SEQ)


# ---------------------------------------------------------------------------------------------
# Avro schema shape


def test_every_field_has_field_id_and_records_are_named_like_java() -> None:
    manifest_schema = header(codec.write_manifest(data_entries(), SPEC, SCHEMA, SNAP, ManifestContent.DATA))[0]
    list_schema = header(codec.write_manifest_list([manifest_of(data_entries())[1]], SNAP, None, SEQ))[0]
    for top, expected_names in (
        (manifest_schema, {"manifest_entry", "r2", "r102", "k117_v118", "k119_v120", "k121_v122", "k138_v139",
                           "k126_v127", "k129_v130"}),
        (list_schema, {"manifest_file", "r508"}),
    ):
        records: dict[str, dict[str, Any]] = {}
        arrays: list[dict[str, Any]] = []
        walk_records(top, records, arrays)
        assert set(records) == expected_names
        for record in records.values():
            for f in record["fields"]:
                assert isinstance(f.get("field-id"), int), (record["name"], f["name"])
                if isinstance(f["type"], list):
                    assert f["type"][0] == "null" and f.get("default", "missing") is None
        for array in arrays:
            if array.get("logicalType") == "map":
                key, value = array["items"]["fields"]
                assert array["items"]["name"] == f"k{key['field-id']}_v{value['field-id']}"
                assert (key["name"], value["name"]) == ("key", "value")
            else:
                assert isinstance(array.get("element-id"), int)
    data_file_fields = [f["field-id"] for f in next(
        f for f in manifest_schema["fields"] if f["name"] == "data_file")["type"]["fields"]]
    assert data_file_fields == [134, 100, 101, 102, 103, 104, 108, 109, 110, 137, 125, 128, 131, 132, 135, 140, 143]
    assert [f["field-id"] for f in manifest_schema["fields"]] == [0, 1, 3, 4, 2]
    assert [f["field-id"] for f in list_schema["fields"]] == [
        500, 501, 502, 517, 515, 516, 503, 504, 505, 506, 512, 513, 514, 507, 519]
    records = {}
    walk_records(manifest_schema, records, [])
    partition_fields = records["r102"]["fields"]
    assert [(f["field-id"], f["name"]) for f in partition_fields] == [(f.field_id, f.name) for f in SPEC.fields]
    assert partition_fields[2]["type"] == ["null", {"type": "int", "logicalType": "date"}]
    assert partition_fields[4]["type"][1] == {"type": "fixed", "name": "decimal_10_2", "size": 5,
                                              "logicalType": "decimal", "precision": 10, "scale": 2}


def test_avro_name_sanitising() -> None:
    assert codec.avro_name("ok_Name9") == "ok_Name9"
    assert codec.avro_name("1st") == "_1st"
    assert codec.avro_name("a b") == "a_x20b"
    assert codec.avro_name("a.b-c") == "a_x2Eb_x2Dc"
    assert codec.avro_name("é") == "_xE9"


WIDE_SCHEMA = Schema((
    NestedField(1, "p1", DecimalType(10, 2)), NestedField(2, "p2", DecimalType(10, 2)),
    NestedField(3, "u1", UUID), NestedField(4, "u2", UUID), NestedField(5, "f1", FixedType(3)),
    NestedField(6, "f2", FixedType(3)), NestedField(7, "t", TIME), NestedField(8, "tz", TIMESTAMPTZ),
    NestedField(9, "b", BINARY), NestedField(10, "x", FLOAT), NestedField(11, "y", DOUBLE),
    NestedField(12, "flag", BOOLEAN), NestedField(13, "1 odd-name", STRING), NestedField(14, "nts", TIMESTAMP),
))
WIDE_SPEC = PartitionSpec(0, tuple(
    _pf(f.field_id, 999 + f.field_id, "identity", f.name) for f in WIDE_SCHEMA.fields))


def test_every_primitive_partition_type_round_trips() -> None:
    u = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")
    parts = [
        (Decimal("1.50"), Decimal("-128.00"), u, uuid.UUID(int=0), b"abc", b"\xff\x00\x01", 81068000000,
         -1, b"\x00\x01", -0.0, float("nan"), True, "x y", 1_700_000_000_123_456),
        (Decimal("99999999.99"), None, None, u, None, b"zzz", 0, 0, b"", 0.0, -1.5, False, None, -1),
        tuple([None] * 14),
    ]
    entries = [ManifestEntry(status=EntryStatus.ADDED, data_file=DataFile(
        file_path=f"file:///t/{i}.parquet", partition=p, record_count=1, file_size_in_bytes=9))
        for i, p in enumerate(parts)]
    data = codec.write_manifest(entries, WIDE_SPEC, WIDE_SCHEMA, SNAP, ManifestContent.DATA)
    m = codec.summarize_manifest(entries, WIDE_SPEC, WIDE_SCHEMA, "p", len(data), SNAP, SEQ, ManifestContent.DATA)
    got = [e.data_file.partition for e in codec.read_manifest(data, m)]
    for read, written in zip(got, parts):
        assert len(read) == len(written)
        for r, w in zip(read, written):
            if isinstance(w, float) and math.isnan(w):
                assert math.isnan(r)
            else:
                assert r == w and type(r) is type(w), (r, w)
    assert math.copysign(1.0, got[0][9]) == -1.0
    assert m.partitions is not None
    x, y = m.partitions[9], m.partitions[10]
    # -0.0 sorts below +0.0; NaN is flagged but never a bound
    assert (x.contains_nan, x.lower_bound, x.upper_bound) == (False, struct.pack("<f", -0.0), struct.pack("<f", 0.0))
    assert (y.contains_nan, y.lower_bound, y.upper_bound) == (True, struct.pack("<d", -1.5), struct.pack("<d", -1.5))
    assert (m.partitions[3].lower_bound, m.partitions[3].upper_bound) == (uuid.UUID(int=0).bytes, u.bytes)
    records: dict[str, dict[str, Any]] = {}
    walk_records(header(data)[0], records, [])
    fields = records["r102"]["fields"]
    assert fields[1]["type"] == ["null", "decimal_10_2"]    # named types are defined once
    assert fields[3]["type"] == ["null", "uuid_fixed"]
    assert fields[5]["type"] == ["null", "fixed_3"]
    assert fields[7]["type"][1]["adjust-to-utc"] is True
    assert fields[13]["type"][1]["adjust-to-utc"] is False
    assert (fields[12]["name"], fields[12]["iceberg-field-name"]) == ("_1_x20odd_x2Dname", "1 odd-name")


# ---------------------------------------------------------------------------------------------
# v1 files


def test_v1_manifest_and_list_read_with_defaults() -> None:
    entry = ManifestEntry(status=EntryStatus.ADDED, data_file=data_file("file:///t/v1.parquet", PART_A))
    data = codec.write_manifest([entry], SPEC, SCHEMA, SNAP, ManifestContent.DATA, format_version=1)
    schema, meta, records = header(data)
    assert meta["format-version"] == "1" and "content" not in meta
    assert records[0]["data_file"]["block_size_in_bytes"] > 0
    assert "content" not in records[0]["data_file"]
    m = codec.summarize_manifest([entry], SPEC, SCHEMA, "file:///t/m.avro", len(data), SNAP, 0, ManifestContent.DATA)
    listed = codec.read_manifest_list(codec.write_manifest_list([m], SNAP, None, 0, format_version=1))
    assert listed == [m]
    assert (listed[0].content, listed[0].sequence_number, listed[0].min_sequence_number) == (
        ManifestContent.DATA, 0, 0)
    got = codec.read_manifest(data, listed[0])
    assert got == [replace(entry, snapshot_id=SNAP, sequence_number=0, file_sequence_number=0,
                           data_file=replace(entry.data_file, spec_id=2))]


# ---------------------------------------------------------------------------------------------
# Interop with PyIceberg's own reader and writer


def _py_file_io() -> Any:
    from pyiceberg.io.pyarrow import PyArrowFileIO
    return PyArrowFileIO()


def _py_schema_and_spec(schema: Schema, spec: PartitionSpec) -> tuple[Any, Any]:
    from pyiceberg.partitioning import PartitionSpec as PySpec
    from pyiceberg.schema import Schema as PySchema
    return PySchema.model_validate(schema.to_json()), PySpec.model_validate(spec.to_json())


def test_pyiceberg_reads_our_manifest_list_and_manifests(tmp_path: Path) -> None:
    from pyiceberg.manifest import read_manifest_list

    data_entries_ = data_entries()
    delete_entries = [ManifestEntry(status=EntryStatus.ADDED,
                                    data_file=position_delete("file:///t/data/a.parquet", PART_A))]
    manifests = []
    for name, entries, content in (("m0.avro", data_entries_, ManifestContent.DATA),
                                   ("m1.avro", delete_entries, ManifestContent.DELETES)):
        path = tmp_path / name
        raw = codec.write_manifest(entries, SPEC, SCHEMA, SNAP, content)
        path.write_bytes(raw)
        manifests.append(codec.summarize_manifest(entries, SPEC, SCHEMA, str(path), len(raw), SNAP, SEQ, content))
    list_path = tmp_path / "snap.avro"
    list_path.write_bytes(codec.write_manifest_list(manifests, SNAP, 6000, SEQ))

    file_io = _py_file_io()
    py_manifests = list(read_manifest_list(file_io.new_input(str(list_path))))
    assert len(py_manifests) == 2
    for ours, theirs in zip(manifests, py_manifests):
        assert theirs.manifest_path == ours.manifest_path
        assert theirs.manifest_length == ours.manifest_length
        assert theirs.partition_spec_id == ours.partition_spec_id
        assert int(theirs.content) == int(ours.content)
        assert (theirs.sequence_number, theirs.min_sequence_number) == (ours.sequence_number,
                                                                        ours.min_sequence_number)
        assert theirs.added_snapshot_id == SNAP
        assert (theirs.added_files_count, theirs.existing_files_count, theirs.deleted_files_count) == (
            ours.added_files_count, ours.existing_files_count, ours.deleted_files_count)
        assert (theirs.added_rows_count, theirs.existing_rows_count, theirs.deleted_rows_count) == (
            ours.added_rows_count, ours.existing_rows_count, ours.deleted_rows_count)
        assert ours.partitions is not None
        assert [(s.contains_null, s.contains_nan, s.lower_bound, s.upper_bound) for s in theirs.partitions] == [
            (s.contains_null, s.contains_nan, s.lower_bound, s.upper_bound) for s in ours.partitions]

    for ours_entries, theirs_manifest in ((data_entries_, py_manifests[0]), (delete_entries, py_manifests[1])):
        theirs_entries = theirs_manifest.fetch_manifest_entry(file_io, discard_deleted=False)
        assert len(theirs_entries) == len(ours_entries)
        for ours, theirs in zip(ours_entries, theirs_entries):
            want = expected_read(ours)
            assert int(theirs.status) == int(want.status)
            assert (theirs.snapshot_id, theirs.sequence_number, theirs.file_sequence_number) == (
                want.snapshot_id, want.sequence_number, want.file_sequence_number)
            f, w = theirs.data_file, want.data_file
            assert int(f.content) == int(w.content)
            assert f.file_path == w.file_path and f.file_format.value == w.file_format
            assert (f.record_count, f.file_size_in_bytes, f.spec_id) == (w.record_count, w.file_size_in_bytes, 2)
            assert [f.partition[i] for i in range(len(f.partition))] == list(w.partition)
            assert (f.column_sizes, f.value_counts, f.null_value_counts) == (
                w.column_sizes, w.value_counts, w.null_value_counts)
            assert (f.lower_bounds, f.upper_bounds) == (w.lower_bounds, w.upper_bounds)
            assert f.nan_value_counts == w.nan_value_counts
            assert (f.split_offsets, f.sort_order_id, f.equality_ids) == (
                w.split_offsets, w.sort_order_id, w.equality_ids)


def _pyiceberg_write(tmp_path: Path, format_version: int) -> tuple[bytes, bytes, list[Any], Any]:
    """A manifest and manifest list written by PyIceberg, plus the data files it was given."""
    from pyiceberg.manifest import (
        DataFile as PyDataFile, DataFileContent, FileFormat, ManifestEntry as PyEntry, ManifestEntryStatus,
        write_manifest, write_manifest_list,
    )
    from pyiceberg.typedef import Record

    py_schema, py_spec = _py_schema_and_spec(SCHEMA, SPEC)
    file_io = _py_file_io()
    files = [PyDataFile.from_args(
        content=DataFileContent.DATA,
        file_path=f"file:///t/py{i}.parquet", file_format=FileFormat.PARQUET, partition=Record(*p),
        record_count=5 + i, file_size_in_bytes=100 + i, column_sizes={1: 4}, value_counts={1: 5 + i},
        null_value_counts={1: 0}, nan_value_counts={}, lower_bounds={1: b"\x01" * 8}, upper_bounds={1: b"\x02" * 8},
        split_offsets=[4], sort_order_id=0) for i, p in enumerate((PART_A, PART_NULL))]
    manifest_path = str(tmp_path / f"py-v{format_version}.avro")
    with write_manifest(format_version, py_spec, py_schema, file_io.new_output(manifest_path), SNAP,
                        "deflate") as writer:
        for f in files:
            writer.add(PyEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=SNAP, data_file=f))
    py_manifest = writer.to_manifest_file()
    list_path = str(tmp_path / f"py-list-v{format_version}.avro")
    with write_manifest_list(format_version, file_io.new_output(list_path), SNAP, None, SEQ, "deflate") as lw:
        lw.add_manifests([py_manifest])
    return Path(manifest_path).read_bytes(), Path(list_path).read_bytes(), files, py_manifest


@pytest.mark.parametrize("format_version", [1, 2])
def test_we_read_manifests_pyiceberg_writes(tmp_path: Path, format_version: int) -> None:
    manifest_bytes, list_bytes, files, _ = _pyiceberg_write(tmp_path, format_version)
    [m] = codec.read_manifest_list(list_bytes)
    expected_seq = SEQ if format_version == 2 else 0
    assert (m.partition_spec_id, m.added_snapshot_id, m.content) == (2, SNAP, ManifestContent.DATA)
    assert (m.sequence_number, m.min_sequence_number) == (expected_seq, expected_seq)
    assert (m.added_files_count, m.added_rows_count, m.existing_files_count) == (2, 11, 0)
    assert m.manifest_length == len(manifest_bytes)
    ours_summary = codec.summarize_manifest(
        codec.read_manifest(manifest_bytes, m), SPEC, SCHEMA, m.manifest_path, m.manifest_length, SNAP,
        m.sequence_number, ManifestContent.DATA).partitions
    assert m.partitions == ours_summary
    entries = codec.read_manifest(manifest_bytes, m)
    assert [e.data_file.partition for e in entries] == [PART_A, PART_NULL]
    for entry, f in zip(entries, files):
        assert (entry.status, entry.snapshot_id) == (EntryStatus.ADDED, SNAP)
        assert (entry.sequence_number, entry.file_sequence_number) == (expected_seq, expected_seq)
        df = entry.data_file
        assert (df.content, df.file_path, df.file_format, df.spec_id) == (
            FileContent.DATA, f.file_path, "PARQUET", 2)
        assert (df.record_count, df.file_size_in_bytes) == (f.record_count, f.file_size_in_bytes)
        assert (df.column_sizes, df.value_counts, df.lower_bounds, df.split_offsets) == (
            {1: 4}, f.value_counts, {1: b"\x01" * 8}, [4])
