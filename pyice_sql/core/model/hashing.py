"""Iceberg's bucket hash: MurmurHash3 x86_32 over the bytes the spec assigns to each value."""
from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from pyice_sql.core.model.conversions import decimal_scale, decimal_unscaled, min_twos_complement
from pyice_sql.core.model.types import IcebergType

_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86_32 of `data`, as a signed 32-bit int (Java's Guava murmur3_32 result).

    Spark's built-in hash() uses seed 42 over its own row layout, so bucket values must be
    computed with this function (or the JVM shim) instead.
    """
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & _M32
    full = len(data) - len(data) % 4
    for i in range(0, full, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = _rotl32((k * c1) & _M32, 15) * c2 & _M32
        h = (_rotl32(h ^ k, 13) * 5 + 0xE6546B64) & _M32
    tail = data[full:]
    if tail:
        k = int.from_bytes(tail, "little")
        h ^= _rotl32((k * c1) & _M32, 15) * c2 & _M32
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def bucket_bytes(value: Any, source: IcebergType | None = None) -> bytes:
    """The bytes Iceberg hashes for an internal value.

    Every integer-backed type (int, long, date, time, timestamps) is hashed as an 8-byte
    little-endian long, so promoting int to long keeps bucket assignments stable.
    """
    if isinstance(value, bool) or isinstance(value, float):
        raise TypeError(f"cannot bucket a {type(value).__name__} value")
    if isinstance(value, int):
        return value.to_bytes(8, "little", signed=True)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, Decimal):
        return min_twos_complement(decimal_unscaled(value, decimal_scale(value, source)))
    raise TypeError(f"cannot bucket a {type(value).__name__} value")
