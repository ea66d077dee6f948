"""The deletion-vector-v1 codec: round trips, Java's container choices, Java-written blobs, bad blobs.

The fixtures under tests/fixtures/puffin/ are DV Puffin files Iceberg Java 1.10.2 wrote (the
reference engine, shared/iceberg-reference/iceberg_ref.py). Each table was created with
`TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read')`, filled with
`INSERT INTO t SELECT /*+ REPARTITION(1) */ id[, concat('r', cast(id as string))] FROM range(0, N) ORDER BY id`
(one ordered data file, so row position == id), then one DELETE ran; the fixture is the
`*-deletes.puffin` file it wrote:
  - java_dv_array.puffin: N = 10, `DELETE ... WHERE id IN (1, 4, 6)`          (array container, no runs)
  - java_dv_run.puffin:   N = 10, `DELETE ... WHERE id BETWEEN 2 AND 8`       (one run container, no offsets)
  - java_dv_mixed.puffin: N = 200000 (with a `data` string column),
                          `DELETE ... WHERE id % 1000 = 7 OR id BETWEEN 70000 AND 80000`
                          (4 containers: array, run, array, array; run cookie with offsets)
tests/interop/test_dv_reference_blob.py checks the same against a fresh Java run, with bitmap
containers, and maps ids to positions from the data file itself.
"""
from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

import pytest

from pyice_sql.core.format.deletion_vector import (
    BLOB_TYPE, MAGIC, ROW_POSITION_FIELD_ID, DeletionVectorError, cardinality, deserialize_positions, dv_blob,
    read_deletion_vectors, serialize_positions,
)
from pyice_sql.core.format.puffin import blob_bytes, read_puffin, write_puffin
from pyice_sql.core.errors import CorruptTableError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "puffin"
WHERE = "/warehouse/db/t/data/x-deletes.puffin"

JAVA_FIXTURES = {
    "java_dv_array.puffin": [1, 4, 6],
    "java_dv_run.puffin": list(range(2, 9)),
    "java_dv_mixed.puffin": sorted({i for i in range(200000) if i % 1000 == 7} | set(range(70000, 80001))),
}


def _frame(vector: bytes) -> bytes:
    """A blob around `vector` as the spec lays it out: BE length, magic, vector, BE CRC-32."""
    body = MAGIC + vector
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def _bitmap32_cookie(blob: bytes) -> int:
    """The cookie of the first 32-bit bitmap (after count and key) — tells whether it has runs."""
    return struct.unpack_from("<I", blob, 8 + 8 + 4)[0]


@pytest.mark.parametrize("positions", [
    pytest.param([], id="empty"),
    pytest.param([0], id="single-zero"),
    pytest.param([123456789], id="single"),
    pytest.param(list(range(100000)), id="dense-run"),
    pytest.param(list(range(0, 65536, 2)), id="bitmap-container"),
    pytest.param([5, 2**32 + 1, 3 * 2**32 + 65535, 3 * 2**32 + 65536], id="above-2^32"),
    pytest.param(sorted(random.Random(7).sample(range(2**40), 20000)), id="sparse-large"),
    pytest.param(sorted(set(random.Random(8).sample(range(300000), 150000)) | set(range(400000, 500000))),
                 id="mixed-kinds"),
])
def test_round_trip(positions):
    blob = serialize_positions(positions)
    assert list(deserialize_positions(blob, WHERE)) == positions
    assert cardinality(blob, WHERE) == len(positions)


def test_round_trip_takes_unsorted_input_with_duplicates():
    positions = [9, 3, 2**33, 3, 65536, 9]
    assert list(deserialize_positions(serialize_positions(positions), WHERE)) == sorted(set(positions))


def test_layout_matches_the_spec_byte_for_byte():
    # count=1 | key 0 | no-run cookie 12346, 1 container | key 0, card-1 = 2 | offset 16 | 1, 4, 6
    vector = (struct.pack("<Q", 1) + struct.pack("<I", 0) + struct.pack("<II", 12346, 1)
              + struct.pack("<HH", 0, 2) + struct.pack("<I", 16) + struct.pack("<3H", 1, 4, 6))
    assert serialize_positions([6, 1, 4]) == _frame(vector)


def test_empty_vector_is_a_zero_count():
    assert serialize_positions([]) == _frame(struct.pack("<Q", 0))


def test_keys_from_zero_to_the_highest_are_all_written_like_java():
    # Iceberg Java's RoaringPositionBitmap serializes one (maybe empty) bitmap per key 0..max.
    blob = serialize_positions([2 * 2**32 + 7])
    assert struct.unpack_from("<Q", blob, 8)[0] == 3
    empty = struct.pack("<II", 12346, 0)
    assert blob[16:16 + 4 + 8] == struct.pack("<I", 0) + empty
    assert blob[28:28 + 4 + 8] == struct.pack("<I", 1) + empty


def test_reads_sparse_keys_as_croaring_writes_them():
    bitmap = struct.pack("<II", 12346, 1) + struct.pack("<HH", 0, 0) + struct.pack("<I", 16) + struct.pack("<H", 7)
    vector = struct.pack("<Q", 1) + struct.pack("<I", 2) + bitmap
    assert list(deserialize_positions(_frame(vector), WHERE)) == [2 * 2**32 + 7]


@pytest.mark.parametrize("lows, has_run", [
    pytest.param([0, 1, 2], False, id="array-at-tie"),        # run 2+4*1 = 6 bytes, array 2*3 = 6: stays array
    pytest.param([0, 1, 2, 3], True, id="array-to-run"),      # run 6 < array 8
    pytest.param(list(range(0, 8194, 2)), False, id="4097-is-bitmap"),
    pytest.param(list(range(0, 8192, 2)), False, id="4096-is-array"),
    pytest.param(list(range(5000)), True, id="bitmap-to-run"),
    pytest.param(list(range(4094)) + list(range(4096, 8192, 2)), False, id="2049-runs-stay-bitmap"),  # 8198 B
])
def test_containers_are_chosen_as_java_runoptimize_does(lows, has_run):
    blob = serialize_positions(lows)
    cookie = _bitmap32_cookie(blob)
    assert (cookie & 0xFFFF == 12347) == has_run
    assert list(deserialize_positions(blob, WHERE)) == lows


def test_bitmap_to_run_boundary():
    # 2047 runs: 2 + 4*2047 = 8190 < 8192 -> run; 2048 runs: 8194 -> stays bitmap
    def runs(n):
        return [v for r in range(n) for v in (4 * r, 4 * r + 1, 4 * r + 2)]  # 3 values per run, card > 4096
    assert _bitmap32_cookie(serialize_positions(runs(2047))) & 0xFFFF == 12347
    assert _bitmap32_cookie(serialize_positions(runs(2048))) == 12346


@pytest.mark.parametrize("name", sorted(JAVA_FIXTURES))
def test_java_written_blob_decodes_and_reencodes_byte_for_byte(name):
    path = str(FIXTURES / name)
    data = (FIXTURES / name).read_bytes()
    footer = read_puffin(data, path)
    (blob,) = footer.blobs
    stored = blob_bytes(data, blob, path)
    positions = list(deserialize_positions(stored, path))
    assert positions == JAVA_FIXTURES[name]
    assert blob.properties["cardinality"] == str(len(positions))
    assert serialize_positions(positions) == stored
    rewritten, _ = write_puffin([dv_blob(blob.properties["referenced-data-file"], positions)[0]], footer.properties)
    assert rewritten == data


def test_dv_blob_carries_the_properties_the_spec_requires():
    blob, count = dv_blob("file:/t/data/a.parquet", [3, 1, 3])
    assert (blob.type, blob.fields, count) == (BLOB_TYPE, (ROW_POSITION_FIELD_ID,), 2)
    assert dict(blob.properties) == {"referenced-data-file": "file:/t/data/a.parquet", "cardinality": "2"}
    assert (blob.snapshot_id, blob.sequence_number) == (-1, -1)


def test_read_deletion_vectors_maps_each_data_file_to_its_positions():
    a, _ = dv_blob("s3://b/a.parquet", [1, 2])
    b, _ = dv_blob("s3://b/b.parquet", [2**32])
    data, _ = write_puffin([a, b])
    found = read_deletion_vectors(data, WHERE)
    assert {k: list(v) for k, v in found.items()} == {"s3://b/a.parquet": [1, 2], "s3://b/b.parquet": [2**32]}


# --- bad input: a named error that says what is wrong and names the file ---

def _assert_dv_error(blob: bytes, fragment: str):
    with pytest.raises(DeletionVectorError) as info:
        deserialize_positions(blob, WHERE)
    assert isinstance(info.value, CorruptTableError)
    assert fragment in str(info.value) and WHERE in str(info.value)


def test_wrong_magic():
    blob = bytearray(serialize_positions([1, 2, 3]))
    blob[4] ^= 0xFF
    _assert_dv_error(bytes(blob), "wrong magic")


def test_wrong_crc():
    blob = bytearray(serialize_positions([1, 2, 3]))
    blob[-1] ^= 0x01
    _assert_dv_error(bytes(blob), "CRC-32 mismatch")


def test_flipped_payload_bit_fails_the_crc():
    blob = bytearray(serialize_positions([1, 2, 3]))
    blob[20] ^= 0x10
    _assert_dv_error(bytes(blob), "CRC-32 mismatch")


def test_truncated_blob():
    blob = serialize_positions(list(range(0, 100, 3)))
    _assert_dv_error(blob[:-10], "length prefix")
    _assert_dv_error(blob[:7], "truncated")


def test_truncated_vector_inside_a_consistent_frame():
    vector = serialize_positions(list(range(0, 100, 3)))[8:-4]
    _assert_dv_error(_frame(vector[:-6]), "truncated")


def test_trailing_bytes_after_the_last_bitmap():
    vector = serialize_positions([1])[8:-4]
    _assert_dv_error(_frame(vector + b"\0\0"), "after its last bitmap")


def test_unordered_keys():
    empty = struct.pack("<II", 12346, 0)
    vector = struct.pack("<Q", 2) + struct.pack("<I", 1) + empty + struct.pack("<I", 0) + empty
    _assert_dv_error(_frame(vector), "out of order")


def test_header_cardinality_disagreeing_with_the_container():
    vector = bytearray(serialize_positions(list(range(0, 20000, 2)))[8:-4])  # one bitmap container
    struct.pack_into("<H", vector, 8 + 4 + 8 + 2, 9000)  # card-1 field
    _assert_dv_error(_frame(bytes(vector)), "header says")


def test_unknown_cookie():
    vector = struct.pack("<Q", 1) + struct.pack("<I", 0) + struct.pack("<II", 999, 0)
    _assert_dv_error(_frame(vector), "unknown cookie")


def test_cardinality_property_must_match():
    blob, _ = dv_blob("a.parquet", [1, 2, 3])
    lying = type(blob)(blob.type, blob.fields, blob.payload, {"referenced-data-file": "a.parquet", "cardinality": "4"})
    data, _ = write_puffin([lying])
    with pytest.raises(DeletionVectorError, match="declares cardinality 4 but holds 3"):
        read_deletion_vectors(data, WHERE)


def test_dv_blob_without_its_data_file_property():
    blob, _ = dv_blob("a.parquet", [1])
    data, _ = write_puffin([type(blob)(blob.type, blob.fields, blob.payload, {"cardinality": "1"})])
    with pytest.raises(DeletionVectorError, match="lacks the 'referenced-data-file'") as info:
        read_deletion_vectors(data, WHERE)
    assert WHERE in str(info.value)


def test_positions_out_of_range_are_refused():
    with pytest.raises(ValueError, match="outside"):
        serialize_positions([-1])
    with pytest.raises(ValueError, match="outside"):
        serialize_positions([2**63 - 1])
