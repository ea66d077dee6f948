"""The deletion-vector SQL functions `pyice_dv_positions` / `pyice_dv_serialize`: DeletionVectors.java in
the JVM shim, and the Python UDFs of the same names Spark Connect gets (connect_backend).

Truth is the Python codec (core/format/deletion_vector.py), which matches the blobs Iceberg Java writes
byte for byte (tests/unit/core/test_deletion_vector.py), and the Java-written Puffin fixtures themselves.
Both implementations run here through Spark SQL in executor tasks: the JVM one on the shared session, the
Python one registered under the same names in a second session (its own function registry).
"""
from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

import pytest

from pyice_sql.core.format.deletion_vector import (
    MAGIC, DeletionVectorError, deserialize_positions, serialize_positions,
)
from pyice_sql.core.format.puffin import read_puffin
from pyice_sql.spark.connect_backend import ConnectBackend, dv_positions
from pyice_sql.spark.jvm.bridge import load_shim

pytestmark = pytest.mark.spark

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "puffin"
JAVA_FIXTURES = {  # the DELETEs that wrote them: see tests/unit/core/test_deletion_vector.py
    "java_dv_array.puffin": [1, 4, 6],
    "java_dv_run.puffin": list(range(2, 9)),
    "java_dv_mixed.puffin": sorted({i for i in range(200000) if i % 1000 == 7} | set(range(70000, 80001))),
}
WHERE = "/warehouse/db/t/data/x-deletes.puffin"
_INPUT = "content binary, offset bigint, length bigint, cardinality bigint, path string"

POSITION_SETS = {
    "empty": [],
    "single-zero": [0],
    "single": [123456789],
    "array": [1, 4, 6],
    "run": list(range(2, 9)),
    "array-at-run-tie": [0, 1, 2],
    "bitmap": list(range(0, 65536, 2)),
    "bitmap-to-run": list(range(5000)),
    "2049-runs-stay-bitmap": list(range(4094)) + list(range(4096, 8192, 2)),
    "4096-is-array": list(range(0, 8192, 2)),
    "4097-is-bitmap": list(range(0, 8194, 2)),
    "4-containers-with-a-run": list(range(10)) + [65536 * k + 3 for k in (1, 2, 3)],  # run cookie + offsets
    "3-containers-with-a-run": list(range(10)) + [65536 * k + 3 for k in (1, 2)],  # run cookie, no offsets
    "several-keys": [5, 2**32 + 5, 3 * 2**32 + 65535, 3 * 2**32 + 65536],
    "sparse-large": sorted(random.Random(7).sample(range(2**40), 20000)),
    "mixed-kinds": sorted(set(random.Random(8).sample(range(131072), 20000))  # bitmaps
                          | set(random.Random(9).sample(range(131072, 262144), 3000))  # arrays
                          | set(range(300000, 320000))),  # runs
}


@pytest.fixture(scope="module")
def sessions(spark):
    """{"jvm": the shared session with the shim's functions, "python": a session with the Connect UDFs}."""
    load_shim(spark).register_deletion_vector_udfs()
    python = spark.newSession()
    ConnectBackend(python).register_deletion_vector_udfs()
    return {"jvm": spark, "python": python}


@pytest.fixture(params=["jvm", "python"])
def session(request, sessions):
    return sessions[request.param]


def _decode(spark, content: bytes, offset: int, length: int, cardinality: int | None, path: str = WHERE) -> list:
    # repartition: no ConvertToLocalRelation, so the function runs in an executor task
    df = spark.createDataFrame([(bytearray(content), offset, length, cardinality, path)], _INPUT).repartition(1)
    return df.selectExpr("pyice_dv_positions(content, offset, length, cardinality, path) p").collect()[0].p


def _serialize(spark, positions: list[int] | None) -> bytes | None:
    df = spark.createDataFrame([(positions,)], "positions array<bigint>").repartition(1)
    out = df.selectExpr("pyice_dv_serialize(positions) b").collect()[0].b
    return None if out is None else bytes(out)


def _frame(vector: bytes) -> bytes:
    body = MAGIC + vector
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def test_round_trips_equal_the_python_codec(session):
    """Every container kind and key layout of POSITION_SETS, one row each, in one job per direction."""
    names = sorted(POSITION_SETS)
    df = session.createDataFrame([(n, POSITION_SETS[n]) for n in names], "name string, positions array<bigint>")
    blobs = {r.name: bytes(r.b) for r in
             df.repartition(2).selectExpr("name", "pyice_dv_serialize(positions) b").collect()}
    assert blobs == {n: serialize_positions(POSITION_SETS[n]) for n in names}
    # each blob inside a larger file, as binaryFile gives a Puffin file's bytes
    files = [(n, bytearray(b"PFA1" + b"\x07" * 13 + blobs[n] + b"footer"), len(blobs[n]), len(POSITION_SETS[n]))
             for n in names]
    decoded = (session.createDataFrame(files, "name string, content binary, length bigint, n bigint").repartition(2)
               .selectExpr("name", "pyice_dv_positions(content, 17, length, n, name) p").collect())
    assert {r.name: r.p for r in decoded} == POSITION_SETS


def test_serialize_takes_unsorted_input_with_duplicates(session):
    positions = [9, 3, 2**33, 3, 65536, 9, 2**33 + 1, 0]
    blob = _serialize(session, positions)
    assert blob == serialize_positions(sorted(set(positions)))
    assert _decode(session, blob, 0, len(blob), 6) == sorted(set(positions))


def test_java_written_puffin_files_through_binary_file(session):
    """The Puffin files Iceberg Java wrote, read with Spark's binaryFile source as the scan does."""
    blobs = []
    for name in sorted(JAVA_FIXTURES):
        path = FIXTURES / name
        (blob,) = read_puffin(path.read_bytes(), str(path)).blobs
        blobs.append((name, blob.offset, blob.length, int(blob.properties["cardinality"])))
    listing = session.createDataFrame(blobs, "name string, offset bigint, length bigint, n bigint")
    files = (session.read.format("binaryFile").load([str(FIXTURES / n) for n in sorted(JAVA_FIXTURES)])
             .selectExpr("substring_index(path, '/', -1) name", "content", "path"))
    rows = (files.join(listing, "name")
            .selectExpr("name", "pyice_dv_positions(content, offset, length, n, path) p",
                        "pyice_dv_serialize(pyice_dv_positions(content, offset, length, n, path)) b").collect())
    assert {r.name: r.p for r in rows} == JAVA_FIXTURES
    assert {r.name: bytes(r.b) for r in rows} == {
        n: (FIXTURES / n).read_bytes()[o:o + ln] for n, o, ln, _card in blobs}


def test_nulls(session):
    assert _serialize(session, None) is None
    df = session.createDataFrame([(None, 0, 0, 0, WHERE)], _INPUT).repartition(1)
    assert df.selectExpr("pyice_dv_positions(content, offset, length, cardinality, path) p").collect()[0].p is None
    # a null cardinality is not checked
    blob = serialize_positions([3, 4])
    assert _decode(session, blob, 0, len(blob), None) == [3, 4]


def _corrupt(blob: bytes, at: int, value: int) -> bytes:
    return blob[:at] + bytes([value]) + blob[at + 1:]


_GOOD = serialize_positions([1, 4, 6, 70000])
BAD_BLOBS = {
    "crc": _corrupt(_GOOD, len(_GOOD) - 1, _GOOD[-1] ^ 1),
    "flipped-payload-bit": _corrupt(_GOOD, 20, _GOOD[20] ^ 4),
    "magic": _GOOD[:4] + b"\x00\x00\x00\x00" + _GOOD[8:],
    "length-prefix": struct.pack(">I", len(_GOOD)) + _GOOD[4:],
    "too-short": _GOOD[:10],
    "truncated-vector": _frame(_GOOD[8:-4][:-3]),
    "trailing-bytes": _frame(_GOOD[8:-4] + b"\x00"),
    "unordered-keys": _frame(struct.pack("<Q", 2) + struct.pack("<I", 1) + struct.pack("<II", 12346, 0)
                             + struct.pack("<I", 0) + struct.pack("<II", 12346, 0)),
    "run-cardinality": _frame(struct.pack("<QI", 1, 0) + struct.pack("<I", 12347) + b"\x01"
                              + struct.pack("<HH", 0, 9) + struct.pack("<H", 1) + struct.pack("<2H", 0, 2)),
    "bitmap-cardinality": _frame(struct.pack("<QI", 1, 0) + struct.pack("<II", 12346, 1)
                                 + struct.pack("<HH", 0, 5000) + struct.pack("<I", 16) + b"\xff" * 8192),
    "unknown-cookie": _frame(struct.pack("<QI", 1, 0) + struct.pack("<I", 999)),
    "array-not-ascending": _frame(struct.pack("<QI", 1, 0) + struct.pack("<II", 12346, 1) + struct.pack("<HH", 0, 2)
                                  + struct.pack("<I", 16) + struct.pack("<3H", 1, 6, 4)),
    "overlapping-runs": _frame(struct.pack("<QI", 1, 0) + struct.pack("<I", 12347) + b"\x01"
                               + struct.pack("<HH", 0, 5) + struct.pack("<H", 2) + struct.pack("<4H", 0, 2, 1, 2)),
}


@pytest.mark.parametrize("name", sorted(BAD_BLOBS))
def test_damaged_blob_fails_the_job_with_the_codecs_message(sessions, name):
    """The Java port's checks, each against the codec's message; the Python UDF raises the codec's own
    errors, so it runs one of them (and the range checks below)."""
    blob = BAD_BLOBS[name]
    with pytest.raises(DeletionVectorError) as expected:
        deserialize_positions(blob, WHERE)
    assert str(expected.value).endswith(": " + WHERE)
    for session in (sessions.values() if name == "crc" else [sessions["jvm"]]):
        with pytest.raises(Exception) as raised:
            _decode(session, b"xx" + blob, 2, len(blob), 4)
        assert str(expected.value) in str(raised.value)


@pytest.mark.parametrize("offset, length, cardinality", [
    pytest.param(2, len(_GOOD) + 1, 4, id="past-end"),
    pytest.param(-1, 10, 4, id="negative-offset"),
    pytest.param(2, 2**63 - 1, 4, id="huge-length"),  # offset + length overflows a long
    pytest.param(2, len(_GOOD), 5, id="cardinality-mismatch"),
])
def test_blob_range_and_cardinality_checks(session, offset, length, cardinality):
    content = b"xx" + _GOOD
    with pytest.raises(DeletionVectorError) as expected:
        dv_positions(content, offset, length, cardinality, WHERE)
    assert str(expected.value).endswith(": " + WHERE)
    with pytest.raises(Exception) as raised:
        _decode(session, content, offset, length, cardinality)
    assert str(expected.value) in str(raised.value)


@pytest.mark.parametrize("positions", [[-1], [3, (2**31 - 1) << 32]])
def test_serialize_refuses_positions_a_deletion_vector_cannot_hold(session, positions):
    with pytest.raises(ValueError) as expected:
        serialize_positions(positions)
    with pytest.raises(Exception) as raised:
        _serialize(session, positions)
    assert str(expected.value) in str(raised.value)
