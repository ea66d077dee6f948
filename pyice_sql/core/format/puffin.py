"""Puffin files: Iceberg's container for blobs (deletion vectors, statistics sketches).

Layout (apache/iceberg format/puffin-spec.md):

    Magic Blob1 ... BlobN Magic FooterPayload FooterPayloadSize Flags Magic

`Magic` is `PFA1`; `FooterPayload` is UTF-8 JSON (a `FileMetadata`: `blobs` and `properties`);
`FooterPayloadSize` and `Flags` are 4-byte little-endian integers. Bit 0 of the first flag byte
says the footer is LZ4-compressed; we write it uncompressed (as Iceberg Java does for DV files)
and refuse a compressed one by name rather than guess, since LZ4 is not in the standard library.

This module is a pure codec over bytes: the caller reads the file with its FileIO and passes the
file's path along only so that every error names it. A reader never trusts the footer: magic at
both ends, payload size, and every blob's offset/length are checked against the file size.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from pyice_sql.core.errors import CorruptTableError, UnsupportedError

MAGIC = b"PFA1"
FOOTER_COMPRESSED_FLAG = 0x01  # byte 0, bit 0
_TAIL = struct.Struct("<iI4s")  # FooterPayloadSize, Flags, Magic
_MIN_FILE_SIZE = len(MAGIC) + len(MAGIC) + _TAIL.size  # header magic + footer magic + tail, no payload


class PuffinError(CorruptTableError):
    """A Puffin file is malformed (magic, footer size, flags, blob offsets); names the file."""


@dataclass(frozen=True)
class BlobMetadata:
    """One blob as the footer describes it (spec `BlobMetadata`)."""

    type: str
    fields: tuple[int, ...]
    snapshot_id: int
    sequence_number: int
    offset: int
    length: int
    compression_codec: str | None = None
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PuffinFile:
    """The parsed footer of a Puffin file (spec `FileMetadata`)."""

    blobs: tuple[BlobMetadata, ...]
    properties: Mapping[str, str]


@dataclass(frozen=True)
class Blob:
    """A blob to write: its bytes and the footer fields not derived from its place in the file.

    `snapshot_id` and `sequence_number` stay -1 for blobs written before the commit knows them,
    which the spec requires for deletion vectors.
    """

    type: str
    fields: tuple[int, ...]
    payload: bytes
    properties: Mapping[str, str] = field(default_factory=dict)
    snapshot_id: int = -1
    sequence_number: int = -1


def write_puffin(blobs: Sequence[Blob], properties: Mapping[str, str] | None = None
                 ) -> tuple[bytes, tuple[BlobMetadata, ...]]:
    """The bytes of a Puffin file holding `blobs` (uncompressed), and each blob's footer entry.

    The footer JSON keeps Iceberg Java's key order and compact separators, and omits empty
    `properties` as Java does, so a file we write compares byte for byte with Java's.
    """
    parts = [MAGIC]
    offset = len(MAGIC)
    written = []
    for blob in blobs:
        written.append(BlobMetadata(blob.type, tuple(blob.fields), blob.snapshot_id, blob.sequence_number,
                                    offset, len(blob.payload), None, dict(blob.properties)))
        parts.append(blob.payload)
        offset += len(blob.payload)
    payload = json.dumps(_footer_json(written, properties or {}), separators=(",", ":"),
                         ensure_ascii=False).encode("utf-8")
    parts += [MAGIC, payload, _TAIL.pack(len(payload), 0, MAGIC)]
    return b"".join(parts), tuple(written)


def _footer_json(blobs: Sequence[BlobMetadata], properties: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"blobs": [_blob_json(b) for b in blobs]}
    if properties:
        out["properties"] = dict(properties)
    return out


def _blob_json(blob: BlobMetadata) -> dict[str, Any]:
    out: dict[str, Any] = {"type": blob.type, "fields": list(blob.fields), "snapshot-id": blob.snapshot_id,
                           "sequence-number": blob.sequence_number, "offset": blob.offset, "length": blob.length}
    if blob.compression_codec is not None:
        out["compression-codec"] = blob.compression_codec
    if blob.properties:
        out["properties"] = dict(blob.properties)
    return out


def read_puffin(data: bytes, path: str) -> PuffinFile:
    """Parse and check the footer of the Puffin file `data` (all of the file's bytes) read from `path`."""
    size = len(data)
    if size < _MIN_FILE_SIZE:
        raise PuffinError(f"not a Puffin file: {size} bytes is shorter than the smallest Puffin file "
                          f"({_MIN_FILE_SIZE})", path)
    if data[:4] != MAGIC:
        raise PuffinError(f"not a Puffin file: starts with {data[:4].hex()}, not the magic {MAGIC.hex()}", path)
    payload_size, flags, tail_magic = _TAIL.unpack_from(data, size - _TAIL.size)
    if tail_magic != MAGIC:
        raise PuffinError(f"Puffin footer does not end with the magic {MAGIC.hex()} (found {tail_magic.hex()}); "
                          "the file is truncated or not Puffin", path)
    footer_start = size - _TAIL.size - payload_size - len(MAGIC)
    if payload_size < 0 or footer_start < len(MAGIC):
        raise PuffinError(f"Puffin footer claims a payload of {payload_size} bytes, which does not fit "
                          f"in the {size}-byte file", path)
    if data[footer_start:footer_start + 4] != MAGIC:
        raise PuffinError(f"Puffin footer magic missing at offset {footer_start} (footer payload size "
                          f"{payload_size} does not match the file)", path)
    if flags & ~FOOTER_COMPRESSED_FLAG:
        raise PuffinError(f"Puffin footer has unknown flags set (0x{flags:08x})", path)
    if flags & FOOTER_COMPRESSED_FLAG:
        raise UnsupportedError(f"Puffin file with an LZ4-compressed footer is not supported: {path}")
    payload = data[footer_start + 4:footer_start + 4 + payload_size]
    try:
        obj = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise PuffinError(f"Puffin footer payload is not UTF-8 JSON ({e})", path) from None
    blobs = tuple(_parse_blob(b, i, footer_start, path) for i, b in enumerate(_get(obj, "blobs", list, path)))
    properties = obj.get("properties", {})
    if not _is_string_map(properties):
        raise PuffinError("Puffin footer 'properties' is not an object of strings", path)
    return PuffinFile(blobs, properties)


def blob_bytes(data: bytes, blob: BlobMetadata, path: str) -> bytes:
    """The stored bytes of `blob` in the Puffin file `data` (as checked by `read_puffin`).

    Compressed blobs are refused by name: none of the blob types we read may be compressed.
    """
    if blob.compression_codec is not None:
        raise UnsupportedError(f"Puffin blob '{blob.type}' at offset {blob.offset} is compressed with "
                               f"'{blob.compression_codec}', which is not supported: {path}")
    return data[blob.offset:blob.offset + blob.length]


def _parse_blob(obj: Any, index: int, footer_start: int, path: str) -> BlobMetadata:
    if not isinstance(obj, dict):
        raise PuffinError(f"Puffin footer blob {index} is not an object", path)
    fields = _get(obj, "fields", list, path, f"Puffin footer blob {index}")
    if not all(_is_int(f) for f in fields):
        raise PuffinError(f"Puffin footer blob {index}: 'fields' must be a list of ints", path)
    codec = obj.get("compression-codec")
    if codec is not None and not isinstance(codec, str):
        raise PuffinError(f"Puffin footer blob {index}: 'compression-codec' must be a string", path)
    properties = obj.get("properties", {})
    if not _is_string_map(properties):
        raise PuffinError(f"Puffin footer blob {index}: 'properties' is not an object of strings", path)
    where = f"Puffin footer blob {index}"
    blob = BlobMetadata(_get(obj, "type", str, path, where), tuple(fields), _get(obj, "snapshot-id", int, path, where),
                        _get(obj, "sequence-number", int, path, where), _get(obj, "offset", int, path, where),
                        _get(obj, "length", int, path, where), codec, properties)
    if blob.offset < len(MAGIC) or blob.length < 0 or blob.offset + blob.length > footer_start:
        raise PuffinError(f"Puffin footer blob {index} ('{blob.type}') claims bytes {blob.offset}.."
                          f"{blob.offset + blob.length} outside the blob area 4..{footer_start} of the file", path)
    return blob


def _get(obj: dict, key: str, kind: type, path: str, where: str = "Puffin footer") -> Any:
    value = obj.get(key)
    ok = _is_int(value) if kind is int else isinstance(value, kind)
    if not ok:
        raise PuffinError(f"{where}: '{key}' is missing or not a JSON {kind.__name__}", path)
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
