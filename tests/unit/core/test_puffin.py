"""Puffin files: writing, reading back, Java's footer, and footers that lie.

The Java-written fixtures are described in tests/unit/core/test_deletion_vector.py.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from pyice_sql.core.format.puffin import (
    MAGIC, Blob, BlobMetadata, PuffinError, blob_bytes, read_puffin, write_puffin,
)
from pyice_sql.core.errors import CorruptTableError, UnsupportedError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "puffin"
WHERE = "/warehouse/db/t/data/x-deletes.puffin"


def _file(payload: bytes, blobs: bytes = b"", flags: int = 0) -> bytes:
    """A Puffin file laid out by hand from the spec: Magic Blobs Magic Payload Size Flags Magic."""
    return MAGIC + blobs + MAGIC + payload + struct.pack("<iI", len(payload), flags) + MAGIC


def test_empty_file_layout():
    data, written = write_puffin([])
    assert written == ()
    assert data == _file(b'{"blobs":[]}')
    assert read_puffin(data, WHERE).blobs == ()


def test_round_trip_two_blobs_with_properties():
    blobs = [Blob("deletion-vector-v1", (2147483645,), b"abc", {"referenced-data-file": "f1", "cardinality": "1"}),
             Blob("apache-datasketches-theta-v1", (1, 2), b"\x00\x01", snapshot_id=5, sequence_number=9)]
    data, written = write_puffin(blobs, {"created-by": "pyice_sql"})
    assert [(w.offset, w.length) for w in written] == [(4, 3), (7, 2)]
    footer = read_puffin(data, WHERE)
    assert footer.blobs == written
    assert footer.properties == {"created-by": "pyice_sql"}
    assert [blob_bytes(data, b, WHERE) for b in footer.blobs] == [b"abc", b"\x00\x01"]
    payload = json.loads(data[data.rindex(MAGIC, 0, len(data) - 4) + 4:-12])
    assert "properties" not in payload["blobs"][1]  # omitted when empty, as Java does


def test_reads_the_footer_java_wrote():
    path = str(FIXTURES / "java_dv_mixed.puffin")
    data = (FIXTURES / "java_dv_mixed.puffin").read_bytes()
    footer = read_puffin(data, path)
    (blob,) = footer.blobs
    assert (blob.type, blob.fields, blob.snapshot_id, blob.sequence_number, blob.offset, blob.length,
            blob.compression_codec) == ("deletion-vector-v1", (2147483645,), -1, -1, 4, 559, None)
    assert blob.properties["cardinality"] == "10191"
    assert blob.properties["referenced-data-file"].endswith(".parquet")
    assert footer.properties["created-by"].startswith("Apache Iceberg 1.10.2")


# --- bad input: a named error naming the file ---

def _assert_puffin_error(data: bytes, fragment: str):
    with pytest.raises(PuffinError) as info:
        read_puffin(data, WHERE)
    assert isinstance(info.value, CorruptTableError)
    assert fragment in str(info.value) and WHERE in str(info.value)
    assert info.value.path == WHERE


def _valid() -> bytes:
    return write_puffin([Blob("deletion-vector-v1", (2147483645,), b"0123456789")])[0]


def test_wrong_leading_magic():
    _assert_puffin_error(b"PFA2" + _valid()[4:], "not a Puffin file")


def test_wrong_trailing_magic():
    _assert_puffin_error(_valid()[:-4] + b"PFA2", "does not end with the magic")


def test_truncated_file():
    _assert_puffin_error(_valid()[:-3], "does not end with the magic")
    _assert_puffin_error(MAGIC * 3, "shorter than the smallest")


def test_footer_size_beyond_the_file():
    data = bytearray(_valid())
    struct.pack_into("<i", data, len(data) - 12, len(data))
    _assert_puffin_error(bytes(data), "does not fit")


def test_negative_footer_size():
    data = bytearray(_valid())
    struct.pack_into("<i", data, len(data) - 12, -5)
    _assert_puffin_error(bytes(data), "does not fit")


def test_footer_size_not_matching_the_footer_magic():
    data = bytearray(_valid())
    size = struct.unpack_from("<i", data, len(data) - 12)[0]
    struct.pack_into("<i", data, len(data) - 12, size - 1)
    _assert_puffin_error(bytes(data), "footer magic missing")


@pytest.mark.parametrize("offset, length", [(4, 100), (1000, 1), (2, 4), (4, -1)])
def test_blob_offsets_outside_the_blob_area(offset, length):
    payload = json.dumps({"blobs": [{"type": "deletion-vector-v1", "fields": [1], "snapshot-id": -1,
                                     "sequence-number": -1, "offset": offset, "length": length}]}).encode()
    _assert_puffin_error(_file(payload, b"0123456789"), "outside the blob area")


def test_footer_not_json():
    _assert_puffin_error(_file(b"{not json"), "not UTF-8 JSON")


@pytest.mark.parametrize("blob", [
    {"fields": [1], "snapshot-id": -1, "sequence-number": -1, "offset": 4, "length": 0},
    {"type": "t", "fields": ["a"], "snapshot-id": -1, "sequence-number": -1, "offset": 4, "length": 0},
    {"type": "t", "fields": [1], "snapshot-id": -1, "sequence-number": -1, "offset": "4", "length": 0},
])
def test_footer_blob_missing_or_mistyped_field(blob):
    _assert_puffin_error(_file(json.dumps({"blobs": [blob]}).encode()), "Puffin footer blob 0: '")


def test_unknown_flags():
    _assert_puffin_error(_file(b'{"blobs":[]}', flags=0x0100), "unknown flags")


def test_compressed_footer_is_refused_by_name():
    with pytest.raises(UnsupportedError, match="LZ4-compressed footer") as info:
        read_puffin(_file(b"\x04\x22\x4d\x18", flags=1), WHERE)
    assert WHERE in str(info.value)


def test_compressed_blob_is_refused_by_name():
    blob = BlobMetadata("t", (1,), -1, -1, 4, 3, "zstd", {})
    with pytest.raises(UnsupportedError, match="'zstd'") as info:
        blob_bytes(_file(b"{}", b"abc"), blob, WHERE)
    assert WHERE in str(info.value)
