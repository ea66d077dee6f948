"""Avro encoding of manifests and manifest lists (bytes in, bytes out).

Java, PyIceberg and DuckDB resolve every manifest column by its Iceberg field id and DuckDB
also checks the record names `r2`/`r102`, so the Avro schemas here are built field by field
with Java's ids, names and order (spec notes §2). Reading applies the inheritance rules of §3,
so callers always see concrete snapshot ids, sequence numbers and spec ids.
"""
from __future__ import annotations

import datetime
import io
import json
import math
import string
import uuid
from typing import Any, Callable, Iterable

import fastavro

from pyice_sql.core.model.conversions import to_bytes
from pyice_sql.core.model.manifest import (
    DataFile, EntryStatus, FieldSummary, FileContent, ManifestContent, ManifestEntry, ManifestFile,
)
from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.types import (
    DATE, TIME, TIMESTAMP, TIMESTAMPTZ, UUID, DecimalType, FixedType, IcebergType, PrimitiveType, StructType,
)

CODEC = "deflate"
# Java writes this constant for the v1-only `block_size_in_bytes`; readers ignore it.
_V1_BLOCK_SIZE = 64 * 1024 * 1024
_AVRO_NAME_CHARS = set(string.ascii_letters + string.digits + "_")
_EPOCH_DATE = datetime.date(1970, 1, 1)
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_EPOCH_NAIVE = datetime.datetime(1970, 1, 1)
_ONE_MICRO = datetime.timedelta(microseconds=1)

# (field id, name, key id, value id, Avro value type) of the metric maps, in Java's order.
_METRIC_MAPS_HEAD = (
    (108, "column_sizes", 117, 118, "long"),
    (109, "value_counts", 119, 120, "long"),
    (110, "null_value_counts", 121, 122, "long"),
    (137, "nan_value_counts", 138, 139, "long"),
    (125, "lower_bounds", 126, 127, "bytes"),
    (128, "upper_bounds", 129, 130, "bytes"),
)


# ---------------------------------------------------------------------------------------------
# Avro schema construction


def _field(field_id: int, name: str, avro_type: Any, required: bool = True) -> dict[str, Any]:
    if required:
        return {"name": name, "type": avro_type, "field-id": field_id}
    return {"name": name, "type": ["null", avro_type], "default": None, "field-id": field_id}


def _list(element_id: int, item: Any) -> dict[str, Any]:
    return {"type": "array", "items": item, "element-id": element_id}


def _int_map(key_id: int, value_id: int, value_type: str) -> dict[str, Any]:
    """A map with int keys, which Avro can only express as an array of key/value records."""
    return {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": f"k{key_id}_v{value_id}",
        "fields": [_field(key_id, "key", "int"), _field(value_id, "value", value_type)],
    }}


def avro_name(name: str) -> str:
    """Iceberg's sanitising of a field name into a valid Avro name (leading digit → `_<d>`, else `_x<HEX>`)."""
    out = []
    for i, ch in enumerate(name):
        if ch in _AVRO_NAME_CHARS and not (i == 0 and ch.isdigit()):
            out.append(ch)
        elif ch.isdigit() and ch.isascii():
            out.append("_" + ch)
        else:
            out.append(f"_x{ord(ch):X}")
    return "".join(out)


def _primitive_avro(t: IcebergType, defined: set[str]) -> Any:
    """Avro type of a primitive; named types already in `defined` are referenced by name (Avro forbids redefinition)."""
    named: dict[str, Any] | None = None
    if isinstance(t, DecimalType):
        size = next(n for n in range(1, 17) if 2 ** (8 * n - 1) > 10 ** t.precision - 1)
        named = {"type": "fixed", "name": f"decimal_{t.precision}_{t.scale}", "size": size,
                 "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    elif isinstance(t, FixedType):
        named = {"type": "fixed", "name": f"fixed_{t.length}", "size": t.length}
    elif t == UUID:
        named = {"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"}
    if named is not None:
        if named["name"] in defined:
            return named["name"]
        defined.add(named["name"])
        return named
    if t == DATE:
        return {"type": "int", "logicalType": "date"}
    if t == TIME:
        return {"type": "long", "logicalType": "time-micros"}
    if t in (TIMESTAMP, TIMESTAMPTZ):
        return {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": t == TIMESTAMPTZ}
    if isinstance(t, PrimitiveType):
        return {"binary": "bytes"}.get(t.name, t.name)
    raise ValueError(f"partition values must be primitive, got {t}")


def _partition_record(partition_type: StructType) -> dict[str, Any]:
    defined: set[str] = set()
    fields = []
    for f in partition_type.fields:
        name = avro_name(f.name)
        avro_field = _field(f.field_id, name, _primitive_avro(f.type, defined), required=False)
        if name != f.name:
            avro_field["iceberg-field-name"] = f.name
        fields.append(avro_field)
    return {"type": "record", "name": "r102", "fields": fields}


def manifest_avro_schema(partition_type: StructType, format_version: int = 2) -> dict[str, Any]:
    """The `manifest_entry` Avro schema Java writes for a spec's partition struct."""
    metrics = [_field(fid, name, _int_map(kid, vid, vtype), required=False)
               for fid, name, kid, vid, vtype in _METRIC_MAPS_HEAD]
    tail = [_field(131, "key_metadata", "bytes", required=False),
            _field(132, "split_offsets", _list(133, "long"), required=False)]
    head = [_field(100, "file_path", "string"), _field(101, "file_format", "string"),
            _field(102, "partition", _partition_record(partition_type)),
            _field(103, "record_count", "long"), _field(104, "file_size_in_bytes", "long")]
    if format_version == 1:
        data_file = head + [_field(105, "block_size_in_bytes", "long")] + metrics + tail + [
            _field(140, "sort_order_id", "int", required=False)]
        entry = [_field(0, "status", "int"), _field(1, "snapshot_id", "long")]
    else:
        data_file = [_field(134, "content", "int")] + head + metrics + tail + [
            _field(135, "equality_ids", _list(136, "int"), required=False),
            _field(140, "sort_order_id", "int", required=False)]
        if format_version >= 3:  # row lineage and deletion vectors, in Java's V3Metadata order
            data_file.append(_field(142, "first_row_id", "long", required=False))
        data_file.append(_field(143, "referenced_data_file", "string", required=False))
        if format_version >= 3:
            data_file += [_field(144, "content_offset", "long", required=False),
                          _field(145, "content_size_in_bytes", "long", required=False)]
        entry = [_field(0, "status", "int"), _field(1, "snapshot_id", "long", required=False),
                 _field(3, "sequence_number", "long", required=False),
                 _field(4, "file_sequence_number", "long", required=False)]
    entry.append(_field(2, "data_file", {"type": "record", "name": "r2", "fields": data_file}))
    return {"type": "record", "name": "manifest_entry", "fields": entry}


def manifest_list_avro_schema(format_version: int = 2) -> dict[str, Any]:
    """The `manifest_file` Avro schema of Java's manifest lists (v2 counts are required, v1 optional)."""
    summary = {"type": "record", "name": "r508", "fields": [
        _field(509, "contains_null", "boolean"), _field(518, "contains_nan", "boolean", required=False),
        _field(510, "lower_bound", "bytes", required=False), _field(511, "upper_bound", "bytes", required=False)]}
    partitions = _field(507, "partitions", _list(508, summary), required=False)
    head = [_field(500, "manifest_path", "string"), _field(501, "manifest_length", "long"),
            _field(502, "partition_spec_id", "int")]
    v2 = format_version != 1
    counts = [_field(fid, name, typ, required=v2) for fid, name, typ in (
        (504, "added_files_count", "int"), (505, "existing_files_count", "int"),
        (506, "deleted_files_count", "int"), (512, "added_rows_count", "long"),
        (513, "existing_rows_count", "long"), (514, "deleted_rows_count", "long"))]
    key_metadata = _field(519, "key_metadata", "bytes", required=False)
    if v2:
        fields = head + [_field(517, "content", "int"), _field(515, "sequence_number", "long"),
                         _field(516, "min_sequence_number", "long"), _field(503, "added_snapshot_id", "long")]
        fields += counts + [partitions, key_metadata]
        if format_version >= 3:
            fields.append(_field(520, "first_row_id", "long", required=False))
    else:
        fields = head + [_field(503, "added_snapshot_id", "long", required=False)]
        fields += counts[:3] + [partitions] + counts[3:] + [key_metadata]
    return {"type": "record", "name": "manifest_file", "fields": fields}


def _write_avro(schema: dict[str, Any], records: Iterable[dict[str, Any]], metadata: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=CODEC, metadata=metadata)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# Manifests


def _map_out(values: dict[int, Any] | None) -> list[dict[str, Any]] | None:
    return None if values is None else [{"key": k, "value": v} for k, v in values.items()]


def _partition_out(partition: tuple[Any, ...], partition_type: StructType) -> dict[str, Any]:
    if len(partition) != len(partition_type.fields):
        raise ValueError(f"partition tuple {partition!r} does not match {partition_type}")
    return {avro_name(f.name): (v.bytes if isinstance(v, uuid.UUID) else v)
            for f, v in zip(partition_type.fields, partition)}


def _entry_out(entry: ManifestEntry, partition_type: StructType, snapshot_id: int,
               content: ManifestContent, format_version: int) -> dict[str, Any]:
    """One entry as an Avro record, applying the §3 writing rules for ids and sequence numbers."""
    f = entry.data_file
    if (f.content == FileContent.DATA) != (content == ManifestContent.DATA):
        raise ValueError(f"{f.content.name} file {f.file_path} cannot go in a {content.name} manifest")
    status = EntryStatus(entry.status)
    if status == EntryStatus.ADDED:
        if entry.snapshot_id not in (None, snapshot_id):
            raise ValueError(f"ADDED entry for {f.file_path} belongs to snapshot {entry.snapshot_id}, "
                             f"not {snapshot_id}: carry it over as EXISTING")
        entry_snapshot = snapshot_id
    elif status == EntryStatus.DELETED:
        entry_snapshot = snapshot_id  # the deleting snapshot, as Java records it
    else:
        if entry.snapshot_id is None:
            raise ValueError(f"EXISTING entry for {f.file_path} needs its original snapshot id")
        entry_snapshot = entry.snapshot_id
    data_file: dict[str, Any] = {
        "file_path": f.file_path, "file_format": f.file_format,
        "partition": _partition_out(f.partition, partition_type),
        "record_count": f.record_count, "file_size_in_bytes": f.file_size_in_bytes,
        "column_sizes": _map_out(f.column_sizes), "value_counts": _map_out(f.value_counts),
        "null_value_counts": _map_out(f.null_value_counts), "nan_value_counts": _map_out(f.nan_value_counts),
        "lower_bounds": _map_out(f.lower_bounds), "upper_bounds": _map_out(f.upper_bounds),
        "key_metadata": f.key_metadata, "split_offsets": f.split_offsets, "sort_order_id": f.sort_order_id,
    }
    if format_version == 1:
        if f.content != FileContent.DATA:
            raise ValueError("v1 manifests cannot hold delete files")
        data_file["block_size_in_bytes"] = _V1_BLOCK_SIZE
        return {"status": int(status), "snapshot_id": entry_snapshot, "data_file": data_file}
    data_file.update(content=int(f.content), equality_ids=f.equality_ids,
                     referenced_data_file=f.referenced_data_file)
    if format_version >= 3:
        if status == EntryStatus.ADDED and f.content == FileContent.DATA and f.first_row_id is not None:
            raise ValueError(f"ADDED data file {f.file_path} carries first_row_id {f.first_row_id}: new files "
                             "inherit theirs from the manifest list")
        data_file.update(first_row_id=f.first_row_id if f.content == FileContent.DATA else None,
                         content_offset=f.content_offset, content_size_in_bytes=f.content_size_in_bytes)
    if status == EntryStatus.ADDED:
        # Null sequence numbers inherit the commit's at read time, so the manifest survives a commit retry.
        # An explicit data sequence number (compaction output) is kept.
        data_seq, file_seq = entry.sequence_number, None
    else:
        if entry.sequence_number is None or entry.file_sequence_number is None:
            raise ValueError(f"{status.name} entry for {f.file_path} needs explicit sequence numbers")
        data_seq, file_seq = entry.sequence_number, entry.file_sequence_number
    return {"status": int(status), "snapshot_id": entry_snapshot, "sequence_number": data_seq,
            "file_sequence_number": file_seq, "data_file": data_file}


def write_manifest(entries: Iterable[ManifestEntry], spec: PartitionSpec, schema: Schema, snapshot_id: int,
                   content: ManifestContent, format_version: int = 2) -> bytes:
    """Encode one manifest (one spec, one content type) written by snapshot `snapshot_id`."""
    partition_type = spec.partition_type(schema)
    metadata = {
        "schema": json.dumps(schema.to_json(), separators=(",", ":")),
        "schema-id": str(schema.schema_id),
        "partition-spec": json.dumps([f.to_json() for f in spec.fields], separators=(",", ":")),
        "partition-spec-id": str(spec.spec_id),
        "format-version": str(format_version),
    }
    if format_version != 1:
        metadata["content"] = "data" if content == ManifestContent.DATA else "deletes"
    records = [_entry_out(e, partition_type, snapshot_id, content, format_version) for e in entries]
    return _write_avro(manifest_avro_schema(partition_type, format_version), records, metadata)


def _float_key(v: Any) -> Any:
    """Sort key putting -0.0 before +0.0, so a lower bound is never +0.0 when -0.0 is present."""
    return (v, math.copysign(1.0, v)) if isinstance(v, float) else v


def _field_summary(values: list[Any], result_type: IcebergType) -> FieldSummary:
    contains_null = any(v is None for v in values)
    contains_nan = any(isinstance(v, float) and math.isnan(v) for v in values)
    ordered = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not ordered:
        return FieldSummary(contains_null=contains_null, contains_nan=contains_nan)
    return FieldSummary(contains_null=contains_null, contains_nan=contains_nan,
                        lower_bound=to_bytes(result_type, min(ordered, key=_float_key)),
                        upper_bound=to_bytes(result_type, max(ordered, key=_float_key)))


def summarize_manifest(entries: list[ManifestEntry], spec: PartitionSpec, schema: Schema, path: str, length: int,
                       snapshot_id: int, sequence_number: int, content: ManifestContent) -> ManifestFile:
    """The manifest-list row for a manifest just written by snapshot `snapshot_id` (§2.4 bookkeeping)."""
    counts = {s: 0 for s in EntryStatus}
    rows = {s: 0 for s in EntryStatus}
    for e in entries:
        counts[EntryStatus(e.status)] += 1
        rows[EntryStatus(e.status)] += e.data_file.record_count
    explicit = [e.sequence_number for e in entries
                if e.status != EntryStatus.DELETED and e.sequence_number is not None]
    partition_type = spec.partition_type(schema)
    summaries = [_field_summary([e.data_file.partition[i] for e in entries], f.type)
                 for i, f in enumerate(partition_type.fields)]
    return ManifestFile(
        manifest_path=path, manifest_length=length, partition_spec_id=spec.spec_id, content=content,
        sequence_number=sequence_number, min_sequence_number=min(explicit, default=sequence_number),
        added_snapshot_id=snapshot_id,
        added_files_count=counts[EntryStatus.ADDED], existing_files_count=counts[EntryStatus.EXISTING],
        deleted_files_count=counts[EntryStatus.DELETED], added_rows_count=rows[EntryStatus.ADDED],
        existing_rows_count=rows[EntryStatus.EXISTING], deleted_rows_count=rows[EntryStatus.DELETED],
        partitions=summaries)


def _date_in(v: Any) -> Any:
    return (v - _EPOCH_DATE).days if isinstance(v, datetime.date) else v


def _timestamp_in(v: Any) -> Any:
    if isinstance(v, datetime.datetime):
        return (v - (_EPOCH_NAIVE if v.tzinfo is None else _EPOCH_UTC)) // _ONE_MICRO
    return v


def _time_in(v: Any) -> Any:
    if isinstance(v, datetime.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    return v


def _uuid_in(v: Any) -> Any:
    return uuid.UUID(bytes=v) if isinstance(v, bytes) else v


_LOGICAL_IN: dict[str, Callable[[Any], Any]] = {
    "date": _date_in, "time-micros": _time_in, "timestamp-micros": _timestamp_in,
    "local-timestamp-micros": _timestamp_in, "uuid": _uuid_in,
}


def _identity(v: Any) -> Any:
    return v


def _partition_readers(writer_schema: dict[str, Any]) -> list[Callable[[Any], Any]]:
    """Per r102 field, a function turning fastavro's decoded value into the internal representation."""
    data_file = next(f["type"] for f in writer_schema["fields"] if f["name"] == "data_file")
    partition = next(f["type"] for f in data_file["fields"] if f["name"] == "partition")
    named: dict[str, Any] = {}
    readers = []
    for f in partition["fields"]:
        branches = f["type"] if isinstance(f["type"], list) else [f["type"]]
        t = next(b for b in branches if b != "null")
        if isinstance(t, dict) and "name" in t:
            named[t["name"]] = t
        t = named.get(t, t) if isinstance(t, str) else t
        logical = t.get("logicalType", "") if isinstance(t, dict) else ""
        readers.append(_LOGICAL_IN.get(logical, _identity))
    return readers


def _map_in(values: list[dict[str, Any]] | None) -> dict[int, Any] | None:
    return None if values is None else {kv["key"]: kv["value"] for kv in values}


def read_manifest(data: bytes, manifest: ManifestFile) -> list[ManifestEntry]:
    """Decode a v1 or v2 manifest, filling inherited snapshot ids, sequence numbers and spec id from `manifest`."""
    reader = fastavro.reader(io.BytesIO(data))
    partition_readers = _partition_readers(reader.writer_schema)
    seq = manifest.sequence_number
    out = []
    for rec in reader:
        status = EntryStatus(rec["status"])
        inherits = status == EntryStatus.ADDED or seq == 0
        data_seq, file_seq = rec.get("sequence_number"), rec.get("file_sequence_number")
        d = rec["data_file"]
        partition = tuple(read(v) for read, v in zip(partition_readers, d["partition"].values()))
        data_file = DataFile(
            content=FileContent(d.get("content", 0)), file_path=d["file_path"], file_format=d["file_format"],
            partition=partition, record_count=d["record_count"], file_size_in_bytes=d["file_size_in_bytes"],
            column_sizes=_map_in(d.get("column_sizes")), value_counts=_map_in(d.get("value_counts")),
            null_value_counts=_map_in(d.get("null_value_counts")),
            nan_value_counts=_map_in(d.get("nan_value_counts")),
            lower_bounds=_map_in(d.get("lower_bounds")), upper_bounds=_map_in(d.get("upper_bounds")),
            key_metadata=d.get("key_metadata"), split_offsets=d.get("split_offsets"),
            equality_ids=d.get("equality_ids"), sort_order_id=d.get("sort_order_id"),
            referenced_data_file=d.get("referenced_data_file"), spec_id=manifest.partition_spec_id,
            first_row_id=d.get("first_row_id"), content_offset=d.get("content_offset"),
            content_size_in_bytes=d.get("content_size_in_bytes"))
        snapshot_id = rec.get("snapshot_id")
        out.append(ManifestEntry(
            status=status,
            snapshot_id=manifest.added_snapshot_id if snapshot_id is None else snapshot_id,
            sequence_number=seq if data_seq is None and inherits else data_seq,
            file_sequence_number=seq if file_seq is None and inherits else file_seq,
            data_file=data_file))
    return out


# ---------------------------------------------------------------------------------------------
# Manifest lists


def _manifest_file_out(m: ManifestFile, format_version: int) -> dict[str, Any]:
    counts = {"added_files_count": m.added_files_count, "existing_files_count": m.existing_files_count,
              "deleted_files_count": m.deleted_files_count, "added_rows_count": m.added_rows_count,
              "existing_rows_count": m.existing_rows_count, "deleted_rows_count": m.deleted_rows_count}
    if format_version != 1 and any(v is None for v in counts.values()):
        raise ValueError(f"v2 manifest lists need every file and row count: {m.manifest_path}")
    partitions = None if m.partitions is None else [
        {"contains_null": s.contains_null, "contains_nan": s.contains_nan,
         "lower_bound": s.lower_bound, "upper_bound": s.upper_bound} for s in m.partitions]
    return {"manifest_path": m.manifest_path, "manifest_length": m.manifest_length,
            "partition_spec_id": m.partition_spec_id, "content": int(m.content),
            "sequence_number": m.sequence_number, "min_sequence_number": m.min_sequence_number,
            "added_snapshot_id": m.added_snapshot_id, **counts, "partitions": partitions,
            "key_metadata": m.key_metadata, "first_row_id": m.first_row_id}


def write_manifest_list(manifests: Iterable[ManifestFile], snapshot_id: int, parent_snapshot_id: int | None,
                        sequence_number: int, format_version: int = 2, first_row_id: int | None = None) -> bytes:
    """Encode the manifest list of snapshot `snapshot_id` (v3: whose first row id is `first_row_id`)."""
    metadata = {"snapshot-id": str(snapshot_id),
                "parent-snapshot-id": "null" if parent_snapshot_id is None else str(parent_snapshot_id),
                "format-version": str(format_version)}
    if format_version != 1:
        metadata["sequence-number"] = str(sequence_number)
    if format_version >= 3:
        metadata["first-row-id"] = str(first_row_id)
    records = [_manifest_file_out(m, format_version) for m in manifests]
    return _write_avro(manifest_list_avro_schema(format_version), records, metadata)


def read_manifest_list(data: bytes) -> list[ManifestFile]:
    """Decode a v1 or v2 manifest list; v1 rows get content DATA and sequence numbers 0."""
    out = []
    for rec in fastavro.reader(io.BytesIO(data)):
        partitions = rec.get("partitions")
        out.append(ManifestFile(
            manifest_path=rec["manifest_path"], manifest_length=rec["manifest_length"],
            partition_spec_id=rec["partition_spec_id"], content=ManifestContent(rec.get("content") or 0),
            sequence_number=rec.get("sequence_number") or 0, min_sequence_number=rec.get("min_sequence_number") or 0,
            added_snapshot_id=rec.get("added_snapshot_id"),
            added_files_count=rec.get("added_files_count"), existing_files_count=rec.get("existing_files_count"),
            deleted_files_count=rec.get("deleted_files_count"), added_rows_count=rec.get("added_rows_count"),
            existing_rows_count=rec.get("existing_rows_count"), deleted_rows_count=rec.get("deleted_rows_count"),
            partitions=None if partitions is None else [
                FieldSummary(contains_null=s["contains_null"], contains_nan=s.get("contains_nan"),
                             lower_bound=s.get("lower_bound"), upper_bound=s.get("upper_bound"))
                for s in partitions],
            key_metadata=rec.get("key_metadata"), first_row_id=rec.get("first_row_id")))
    return out
