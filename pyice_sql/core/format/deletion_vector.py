"""Deletion vectors (format v3): the `deletion-vector-v1` Puffin blob, encoded and decoded in pure Python.

A deletion vector (DV) is the set of deleted row positions of ONE data file. The blob is
(apache/iceberg format/puffin-spec.md):

    length (4 bytes, big-endian: magic + vector) | magic D1 D3 39 64 | vector | CRC-32 of magic + vector (big-endian)

and `vector` is Roaring's 64-bit "portable" serialization: a little-endian u64 count of 32-bit
Roaring bitmaps, then per bitmap (ascending unsigned key) its key, the high 32 bits of the
positions, as a little-endian u32, and a standard 32-bit RoaringBitmap (RoaringFormatSpec) of the
low 32 bits: cookie (with a run-container bitset when any container is a run), per container its
16-bit key and cardinality - 1, the offset table (always without runs, with runs only from 4
containers on), then the containers: array (sorted u16), bitmap (1024 little-endian u64 words)
or run (u16 run count, then (start, length - 1) u16 pairs).

Reading accepts all three container kinds and sparse 64-bit keys (CRoaring writes those) and
checks everything it can: magic, length, CRC, key order, cardinalities, offsets, trailing bytes.
Writing picks containers as Java's RoaringBitmap does for a vector built by adding positions and
then `runOptimize()`d (which Iceberg's DV writer does before serializing): array up to 4096
values, bitmap above, replaced by a run container when that is strictly smaller; and, like
Iceberg Java's RoaringPositionBitmap, it writes one 32-bit bitmap for EVERY key from 0 to the
highest (empty ones included). So our blob for a set equals Java's byte for byte. One known
exception: when Java merges a previous DV into a new one, a container that was a run stays a run
at the exact size tie (run size == array size), where a freshly built one would be an array; the
decoded positions are equal either way and both are valid.

How this plugs into the rest (the next steps of issue 11):

  - Scan: a DV is a delete-file entry with content = POSITION_DELETES, file_format = PUFFIN,
    `referenced_data_file`, `content_offset` and `content_size_in_bytes` (its blob inside the
    Puffin file; no need to read the footer). It applies to exactly its referenced data file when
    that file's data sequence number is <= the DV's, the same rule scan/delete_index.py already
    applies to file-scoped position deletes, so the DeleteFileIndex can return DVs unchanged. The
    reader then feeds the same machinery as position-delete files: an executor-side job over the DV
    entries reads each blob range, `deserialize_positions` it, and emits `(referenced_data_file, pos)`
    rows for the existing left-anti join on (`_file`, `_pos`). (Cheaper later: the task reading a
    data file loads its one DV and drops those positions itself, no join.)
  - MoR writes (DELETE / UPDATE / MERGE on v3): at most one DV per data file. The job that finds
    deleted rows already has (`_file`, `_pos`); group them by `_file` in a Spark job, and in each
    group's task union the positions with the file's previous DV (read as above) and any v2
    position-delete files scoped to it, then `serialize_positions` here (pure Python, so it runs
    inside the executor task) and write one Puffin file per task with `write_puffin` and
    `dv_blob`. Alternatively the JVM shim can use the RoaringBitmap jar Spark already bundles.
    The commit adds each new DV entry (record_count = cardinality, content_offset/size from the
    returned BlobMetadata, file_size_in_bytes) and removes the DV / position-delete entries it
    replaced.
"""
from __future__ import annotations

import itertools
import struct
import sys
import zlib
from array import array
from typing import Iterable, Iterator

from pyice_sql.core.format.puffin import Blob, blob_bytes, read_puffin
from pyice_sql.core.errors import CorruptTableError

BLOB_TYPE = "deletion-vector-v1"
MAGIC = b"\xd1\xd3\x39\x64"
ROW_POSITION_FIELD_ID = 2147483645  # the `_pos` metadata column: what a DV blob is "computed for"
REFERENCED_DATA_FILE = "referenced-data-file"
CARDINALITY = "cardinality"
MAX_KEY = 2**31 - 2  # Iceberg Java refuses higher keys (the spec: the position's top bit is 0)

_SERIAL_COOKIE_NO_RUN = 12346
_SERIAL_COOKIE = 12347
_NO_OFFSET_THRESHOLD = 4  # with run containers, the offset table is written from 4 containers on
_ARRAY_MAX = 4096
_BITMAP_BYTES = 8192
_ARRAY, _BITMAP, _RUN = "array", "bitmap", "run"
_BIG_ENDIAN_HOST = sys.byteorder == "big"
_BITMAP_VALUES = 1 << 16
# A bitmap container goes to and from 65536 one-byte flags (value v set <=> flags[v] == 1) through
# the integer's binary text, so the per-bit work runs in C rather than in a Python loop.
_TEXT_TO_FLAGS = bytes.maketrans(b"01", b"\x00\x01")
_FLAGS_TO_TEXT = bytes.maketrans(b"\x00\x01", b"01")


class DeletionVectorError(CorruptTableError):
    """A deletion-vector blob is malformed (magic, length, CRC, Roaring layout); names the file."""


def serialize_positions(positions: Iterable[int]) -> bytes:
    """The `deletion-vector-v1` blob (length, magic, vector, CRC) for a set of row positions.

    Positions may come in any order and repeat; each must be in 0 .. 2**63 - 1 with its high
    32 bits <= MAX_KEY.
    """
    ordered = sorted(set(positions))
    if ordered and (ordered[0] < 0 or ordered[-1] >> 32 > MAX_KEY):
        bad = ordered[0] if ordered[0] < 0 else ordered[-1]
        raise ValueError(f"row position {bad} is outside what a deletion vector holds "
                         f"(0 .. {((MAX_KEY + 1) << 32) - 1})")
    by_key: dict[int, list[tuple[int, list[int]]]] = {}
    for high48, group in itertools.groupby(ordered, key=lambda p: p >> 16):
        by_key.setdefault(high48 >> 16, []).append((high48 & 0xFFFF, [p & 0xFFFF for p in group]))
    top = max(by_key, default=-1)
    parts = [struct.pack("<Q", top + 1)]
    for key in range(top + 1):
        parts.append(struct.pack("<I", key))
        parts.append(_bitmap32(by_key.get(key, [])))
    body = MAGIC + b"".join(parts)
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def deserialize_positions(blob: bytes, where: str) -> array:
    """The deleted row positions in a `deletion-vector-v1` blob, ascending, as an array('q').

    `where` is the Puffin file the blob came from; every error names it.
    """
    out = array("q")
    for base, kind, card, payload in _containers(_vector(blob, where), where):
        if kind == _ARRAY:
            values = _u16s(payload)
            if any(a >= b for a, b in zip(values, values[1:])):
                raise DeletionVectorError("deletion vector array container is not strictly ascending", where)
            out.extend(base + v for v in values)
        elif kind == _RUN:
            runs = _u16s(payload)
            end = -1
            for start, extra in zip(runs[::2], runs[1::2]):
                if start <= end or start + extra > 0xFFFF:
                    raise DeletionVectorError("deletion vector run container has overlapping, unordered or "
                                              "overflowing runs", where)
                end = start + extra
                out.extend(range(base + start, base + end + 1))
        else:
            bits = format(int.from_bytes(payload, "little"), f"0{_BITMAP_VALUES}b")[::-1]
            out.extend(itertools.compress(range(base, base + _BITMAP_VALUES),
                                          bits.encode("ascii").translate(_TEXT_TO_FLAGS)))
    return out


def cardinality(blob: bytes, where: str) -> int:
    """The number of positions in a `deletion-vector-v1` blob, from its headers (blob fully checked)."""
    return sum(card for _base, _kind, card, _payload in _containers(_vector(blob, where), where))


def dv_blob(referenced_data_file: str, positions: Iterable[int]) -> tuple[Blob, int]:
    """The Puffin blob of a DV for `referenced_data_file` (its location exactly as in the manifest),
    with the properties the spec requires, and its cardinality (the delete entry's record_count)."""
    ordered = sorted(set(positions))
    return Blob(BLOB_TYPE, (ROW_POSITION_FIELD_ID,), serialize_positions(ordered),
                {REFERENCED_DATA_FILE: referenced_data_file, CARDINALITY: str(len(ordered))}), len(ordered)


def read_deletion_vectors(data: bytes, path: str) -> dict[str, array]:
    """Every DV in the Puffin file `data` read from `path`: referenced data file -> positions.

    Checks each DV blob's required properties and that its `cardinality` matches the bitmap.
    """
    found: dict[str, array] = {}
    for blob in read_puffin(data, path).blobs:
        if blob.type != BLOB_TYPE:
            continue
        target = blob.properties.get(REFERENCED_DATA_FILE)
        declared = blob.properties.get(CARDINALITY)
        if target is None or declared is None:
            raise DeletionVectorError(f"deletion vector at offset {blob.offset} lacks the "
                                      f"'{REFERENCED_DATA_FILE}' or '{CARDINALITY}' property", path)
        positions = deserialize_positions(blob_bytes(data, blob, path), path)
        if declared != str(len(positions)):
            raise DeletionVectorError(f"deletion vector for {target} declares cardinality {declared} but "
                                      f"holds {len(positions)} positions", path)
        found[target] = positions
    return found


def _bitmap32(containers: list[tuple[int, list[int]]]) -> bytes:
    """A 32-bit RoaringBitmap in the standard format; `containers` are (16-bit key, sorted lows)."""
    encoded = [(key, len(lows), *_container(lows)) for key, lows in containers]
    size = len(encoded)
    has_run = any(kind == _RUN for _key, _card, kind, _payload in encoded)
    if has_run:
        run_flags = bytearray((size + 7) // 8)
        for i, (_key, _card, kind, _payload) in enumerate(encoded):
            if kind == _RUN:
                run_flags[i // 8] |= 1 << (i % 8)
        header = [struct.pack("<I", _SERIAL_COOKIE | (size - 1) << 16), bytes(run_flags)]
    else:
        header = [struct.pack("<II", _SERIAL_COOKIE_NO_RUN, size)]
    header += [struct.pack("<HH", key, card - 1) for key, card, _kind, _payload in encoded]
    if not has_run or size >= _NO_OFFSET_THRESHOLD:
        offset = sum(map(len, header)) + 4 * size
        for _key, _card, _kind, payload in encoded:
            header.append(struct.pack("<I", offset))
            offset += len(payload)
    return b"".join(header) + b"".join(payload for _key, _card, _kind, payload in encoded)


def _container(lows: list[int]) -> tuple[str, bytes]:
    """The kind and bytes Java's RoaringBitmap would serialize for these sorted 16-bit values
    after runOptimize: array (<= 4096 values) or bitmap, unless a run container is strictly smaller."""
    card = len(lows)
    starts = [v for i, v in enumerate(lows) if i == 0 or lows[i - 1] != v - 1]
    run_size = 2 + 4 * len(starts)
    if run_size < (2 * card if card <= _ARRAY_MAX else _BITMAP_BYTES):
        ends = [v for i, v in enumerate(lows) if i == card - 1 or lows[i + 1] != v + 1]
        pairs = array("H", itertools.chain.from_iterable((s, e - s) for s, e in zip(starts, ends)))
        return _RUN, struct.pack("<H", len(starts)) + _le(pairs)
    if card <= _ARRAY_MAX:
        return _ARRAY, _le(array("H", lows))
    flags = bytearray(_BITMAP_VALUES)
    for v in lows:
        flags[v] = 1
    return _BITMAP, int(flags.translate(_FLAGS_TO_TEXT)[::-1], 2).to_bytes(_BITMAP_BYTES, "little")


def _vector(blob: bytes, where: str) -> memoryview:
    """The Roaring bytes of a DV blob, after checking its magic, length prefix and CRC."""
    if len(blob) < 12:
        raise DeletionVectorError(f"deletion vector blob is truncated ({len(blob)} bytes, at least 12 needed)", where)
    if blob[4:8] != MAGIC:
        raise DeletionVectorError(f"deletion vector has wrong magic {bytes(blob[4:8]).hex()} "
                                  f"(expected {MAGIC.hex()})", where)
    (length,) = struct.unpack_from(">I", blob, 0)
    if length != len(blob) - 8:
        raise DeletionVectorError(f"deletion vector length prefix says {length} bytes of magic and vector, "
                                  f"the blob holds {len(blob) - 8}: truncated or corrupt", where)
    (crc,) = struct.unpack_from(">I", blob, len(blob) - 4)
    actual = zlib.crc32(blob[4:-4])
    if crc != actual:
        raise DeletionVectorError(f"deletion vector CRC-32 mismatch (stored {crc:08x}, computed {actual:08x})", where)
    return memoryview(blob)[8:-4]


class _Cursor:
    """Reads little-endian fields from the vector; running out of bytes is a named error."""

    def __init__(self, data: memoryview, where: str):
        self.data, self.where, self.pos = data, where, 0

    def take(self, n: int) -> memoryview:
        if self.pos + n > len(self.data):
            raise DeletionVectorError(f"deletion vector is truncated: needs {n} bytes at offset {self.pos} "
                                      f"of a {len(self.data)}-byte vector", self.where)
        self.pos += n
        return self.data[self.pos - n:self.pos]

    def unpack(self, fmt: str) -> tuple[int, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt)))


def _containers(vector: memoryview, where: str) -> Iterator[tuple[int, str, int, memoryview]]:
    """(position base, kind, cardinality, payload) of every container, in ascending order; a run
    container's payload is its (start, length - 1) pairs, without the run count."""
    cur = _Cursor(vector, where)
    (count,) = cur.unpack("Q")
    last_key = -1
    for _ in range(count):
        (key,) = cur.unpack("I")
        if key <= last_key or key > MAX_KEY:
            raise DeletionVectorError(f"deletion vector key {key} is out of order or too large", where)
        last_key = key
        yield from _bitmap32_containers(cur, key << 32)
    if cur.pos != len(vector):
        raise DeletionVectorError(f"deletion vector has {len(vector) - cur.pos} bytes after its last bitmap", where)


def _bitmap32_containers(cur: _Cursor, base: int) -> Iterator[tuple[int, str, int, memoryview]]:
    start = cur.pos
    (cookie,) = cur.unpack("I")
    if cookie & 0xFFFF == _SERIAL_COOKIE:
        size = (cookie >> 16) + 1
        run_flags = bytes(cur.take((size + 7) // 8))
    elif cookie == _SERIAL_COOKIE_NO_RUN:
        (size,) = cur.unpack("I")
        run_flags = bytes((size + 7) // 8)
    else:
        raise DeletionVectorError(f"deletion vector bitmap at offset {start} has an unknown cookie {cookie}", cur.where)
    if size > 1 << 16:
        raise DeletionVectorError(f"deletion vector bitmap at offset {start} claims {size} containers", cur.where)
    header = cur.unpack(f"{2 * size}H")
    keys, cards = header[::2], [c + 1 for c in header[1::2]]
    if any(a >= b for a, b in zip(keys, keys[1:])):
        raise DeletionVectorError(f"deletion vector bitmap at offset {start} has unordered container keys", cur.where)
    has_offsets = cookie == _SERIAL_COOKIE_NO_RUN or size >= _NO_OFFSET_THRESHOLD
    offsets = cur.unpack(f"{size}I") if has_offsets else None
    for i, (key, card) in enumerate(zip(keys, cards)):
        if offsets is not None and offsets[i] != cur.pos - start:
            raise DeletionVectorError(f"deletion vector container {i} of the bitmap at offset {start} is at "
                                      f"{cur.pos - start}, its offset table says {offsets[i]}", cur.where)
        if run_flags[i // 8] >> (i % 8) & 1:
            kind = _RUN
            (runs,) = cur.unpack("H")
            payload = cur.take(4 * runs)
            covered = sum(_u16s(payload)[1::2]) + runs
        elif card > _ARRAY_MAX:
            kind, payload = _BITMAP, cur.take(_BITMAP_BYTES)
            covered = int.from_bytes(payload, "little").bit_count()
        else:
            kind, payload = _ARRAY, cur.take(2 * card)
            covered = card
        if covered != card:
            raise DeletionVectorError(f"deletion vector {kind} container {i} holds {covered} positions, its "
                                      f"header says {card}", cur.where)
        yield base | key << 16, kind, card, payload


def _u16s(data: memoryview | bytes) -> array:
    values = array("H")
    values.frombytes(data)
    if _BIG_ENDIAN_HOST:
        values.byteswap()
    return values


def _le(values: array) -> bytes:
    if _BIG_ENDIAN_HOST:
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()
