"""Iceberg single-value serialisation and the project's "internal" value representation.

Every layer (metrics bounds, partition tuples, predicates, transforms) works on one internal
form per type so values can be compared and hashed without caring where they came from:

======================  ==========================================================
Iceberg type            internal Python value
======================  ==========================================================
boolean                 bool
int, long               int
float, double           float (float values rounded to float32)
date                    int, days since 1970-01-01
time                    int, microseconds since midnight
timestamp, timestamptz  int, microseconds since 1970-01-01T00:00:00 UTC
string                  str
uuid                    uuid.UUID
fixed, binary           bytes
decimal(P, S)           decimal.Decimal with exactly S fractional digits
======================  ==========================================================

`to_bytes`/`from_bytes` are the spec's single-value binary form used for column bounds and
partition summaries; they must match Iceberg Java byte for byte because other engines prune
with them.
"""
from __future__ import annotations

import datetime as dt
import math
import struct
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from pyice_sql.core.model.types import DecimalType, FixedType, IcebergType, PrimitiveType, type_kind

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)


def _name(t: IcebergType) -> str:
    """The primitive name used to dispatch ("decimal"/"fixed" for the parameterised types)."""
    kind = type_kind(t)
    if kind == "nested":
        raise TypeError(f"no single-value form for nested type {t}")
    return kind


# ---------------------------------------------------------------------------------------------
# decimals


def decimal_unscaled(value: Decimal, scale: int) -> int:
    """The unscaled integer of `value` at `scale`; raises if that would drop non-zero digits.

    Silent rounding would make a bound or partition value disagree with the data, so only
    exact rescaling (adding or removing trailing zeros) is allowed.
    """
    if not value.is_finite():
        raise ValueError(f"decimal value {value} is not finite")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int("".join(map(str, digits)) or "0")
    shift = exponent + scale
    if shift >= 0:
        unscaled *= 10**shift
    else:
        unscaled, rest = divmod(unscaled, 10**-shift)
        if rest:
            raise ValueError(f"decimal value {value} has more than {scale} fractional digits")
    return -unscaled if sign else unscaled


def decimal_from_unscaled(unscaled: int, scale: int) -> Decimal:
    """Exact Decimal for an unscaled integer (no context rounding, so 38 digits survive)."""
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return Decimal((1 if unscaled < 0 else 0, digits, -scale))


def decimal_scale(value: Decimal, t: IcebergType | None = None) -> int:
    """The scale to read `value` at: the column's when known, else the value's own exponent."""
    if isinstance(t, DecimalType):
        return t.scale
    exponent = value.as_tuple().exponent
    assert isinstance(exponent, int)
    return -exponent


def min_twos_complement(n: int) -> bytes:
    """Big-endian two's complement in the fewest bytes, as Java's BigInteger.toByteArray().

    The length rule uses the bit length of ~n for negatives; Python's (-n).bit_length() would
    give -128 two bytes instead of one, which changes bucket hashes.
    """
    length = (n.bit_length() if n >= 0 else (~n).bit_length()) // 8 + 1
    return n.to_bytes(length, "big", signed=True)


# ---------------------------------------------------------------------------------------------
# binary single-value serialisation (spec appendix D)


def to_bytes(t: IcebergType, v: Any) -> bytes:
    """Serialise an internal value in Iceberg's single-value binary form (bounds, summaries)."""
    name = _name(t)
    if name == "boolean":
        return b"\x01" if v else b"\x00"
    if name in ("int", "date"):
        return struct.pack("<i", v)
    if name in ("long", "time", "timestamp", "timestamptz"):
        return struct.pack("<q", v)
    if name == "float":
        return struct.pack("<f", v)
    if name == "double":
        return struct.pack("<d", v)
    if name == "string":
        return bytes(v.encode("utf-8"))
    if name == "uuid":
        return bytes(v.bytes)
    if name == "decimal":
        assert isinstance(t, DecimalType)
        return min_twos_complement(decimal_unscaled(v, t.scale))
    return bytes(v)  # fixed and binary: raw bytes


def from_bytes(t: IcebergType, b: bytes) -> Any:
    """Read a single-value binary form back into the internal value of type `t`.

    A 4-byte value read as long or double is a bound written before an int->long or
    float->double promotion, so it is widened rather than rejected.
    """
    name = _name(t)
    b = bytes(b)
    if name == "boolean":
        return any(b)
    if name in ("int", "date"):
        return int(struct.unpack("<i", b)[0])
    if name == "long":
        return int(struct.unpack("<i" if len(b) == 4 else "<q", b)[0])
    if name in ("time", "timestamp", "timestamptz"):
        return int(struct.unpack("<q", b)[0])
    if name == "float":
        return float(struct.unpack("<f", b)[0])
    if name == "double":
        return float(struct.unpack("<f" if len(b) == 4 else "<d", b)[0])
    if name == "string":
        return b.decode("utf-8")
    if name == "uuid":
        return uuid.UUID(bytes=b)
    if name == "decimal":
        assert isinstance(t, DecimalType)
        return decimal_from_unscaled(int.from_bytes(b, "big", signed=True), t.scale)
    return b


# ---------------------------------------------------------------------------------------------
# Python / Spark values <-> internal values


def micros_from_datetime(value: dt.datetime) -> int:
    """Exact µs since the epoch: aware values by their instant, naive ones as UTC wall clock."""
    epoch = EPOCH_UTC if value.tzinfo is not None else EPOCH_NAIVE
    delta = value - epoch
    return (delta.days * 86_400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds


def _check_range(v: int, bounds: tuple[int, int], what: str) -> int:
    if not bounds[0] <= v <= bounds[1]:
        raise ValueError(f"{v} is out of range for {what}")
    return v


def _float32(v: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", v))[0])


def _parse_datetime(v: str) -> dt.datetime:
    return dt.datetime.fromisoformat(v.strip().replace(" ", "T", 1))


def to_internal(t: IcebergType, v: Any) -> Any:
    """Normalise a Python or Spark Row value (or an already-internal one) to the internal form.

    Time zone choice: for `timestamp` a naive datetime is wall-clock time and an aware one is
    rejected (it names an instant, not a wall-clock reading). For `timestamptz` an aware
    datetime is converted to UTC and a naive one is taken as UTC. Note that PySpark returns
    TimestampType values as naive datetimes in the *Python process's local zone*, so run with
    TZ=UTC or pass aware datetimes when converting collected rows.

    Raises:
        ValueError: the value does not fit the type (range, scale, length, aware timestamp).
        TypeError: the value's Python type cannot represent the Iceberg type.
    """
    if v is None:
        return None
    name = _name(t)
    if name == "boolean":
        if isinstance(v, (bool, int)):
            return bool(v)
    elif name in ("int", "long"):
        if isinstance(v, (int, str)) and not isinstance(v, bool):
            return _check_range(int(v), INT_RANGE if name == "int" else LONG_RANGE, name)
    elif name in ("float", "double"):
        if isinstance(v, (int, float, str, Decimal)) and not isinstance(v, bool):
            return _float32(float(v)) if name == "float" else float(v)
    elif name == "date":
        if isinstance(v, dt.datetime):
            raise TypeError(f"a datetime ({v!r}) is not a date; pass .date() explicitly")
        if isinstance(v, str):
            v = dt.date.fromisoformat(v.strip())
        if isinstance(v, dt.date):
            return (v - EPOCH_DATE).days
        if isinstance(v, int) and not isinstance(v, bool):
            return _check_range(v, INT_RANGE, "date")
    elif name == "time":
        if isinstance(v, str):
            v = dt.time.fromisoformat(v.strip())
        if isinstance(v, dt.time):
            if v.tzinfo is not None:
                raise ValueError(f"time {v!r} must not carry a time zone")
            return ((v.hour * 60 + v.minute) * 60 + v.second) * MICROS_PER_SECOND + v.microsecond
        if isinstance(v, int) and not isinstance(v, bool):
            return _check_range(v, (0, MICROS_PER_DAY - 1), "time")
    elif name in ("timestamp", "timestamptz"):
        if isinstance(v, str):
            v = _parse_datetime(v)
        if isinstance(v, dt.datetime):
            if name == "timestamp" and v.tzinfo is not None:
                raise ValueError(f"timestamp (without zone) needs a naive datetime, got {v!r}")
            return micros_from_datetime(v)
        if isinstance(v, dt.date):
            return (v - EPOCH_DATE).days * MICROS_PER_DAY
        if isinstance(v, int) and not isinstance(v, bool):
            return _check_range(v, LONG_RANGE, name)
    elif name == "string":
        if isinstance(v, str):
            return v
    elif name == "uuid":
        if isinstance(v, uuid.UUID):
            return v
        if isinstance(v, str):
            return uuid.UUID(v)
        if isinstance(v, (bytes, bytearray, memoryview)):
            return uuid.UUID(bytes=bytes(v))
    elif name in ("fixed", "binary"):
        if isinstance(v, (bytes, bytearray, memoryview)):
            b = bytes(v)
            if isinstance(t, FixedType) and len(b) != t.length:
                raise ValueError(f"{t} needs {t.length} bytes, got {len(b)}")
            return b
    elif name == "decimal":
        assert isinstance(t, DecimalType)
        if isinstance(v, (int, str, float, Decimal)) and not isinstance(v, bool):
            try:
                d = Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
            except InvalidOperation as e:
                raise ValueError(f"{v!r} is not a decimal") from e
            unscaled = decimal_unscaled(d, t.scale)
            if len(str(abs(unscaled))) > t.precision:
                raise ValueError(f"{v} does not fit {t}")
            return decimal_from_unscaled(unscaled, t.scale)
    raise TypeError(f"cannot convert {type(v).__name__} {v!r} to Iceberg {t}")


def to_python(t: IcebergType, v: Any) -> Any:
    """The natural Python value of an internal one (dates, times and datetimes rebuilt).

    `timestamp` gives a naive datetime (wall clock), `timestamptz` a UTC-aware one.
    """
    if v is None:
        return None
    name = _name(t)
    if name == "date":
        return EPOCH_DATE + dt.timedelta(days=v)
    if name == "time":
        seconds, micros = divmod(v, MICROS_PER_SECOND)
        minutes, second = divmod(seconds, 60)
        hour, minute = divmod(minutes, 60)
        return dt.time(hour, minute, second, micros)
    if name == "timestamp":
        return EPOCH_NAIVE + dt.timedelta(microseconds=v)
    if name == "timestamptz":
        return EPOCH_UTC + dt.timedelta(microseconds=v)
    return v


# ---------------------------------------------------------------------------------------------
# metrics bounds


def truncate_lower_bound(t: IcebergType, v: Any, width: int) -> Any:
    """A lower bound for `v` truncated to `width` (code points for strings, bytes for binary).

    A prefix never sorts after the value, so plain truncation stays a valid lower bound.
    Other types (including fixed) are never truncated.
    """
    if v is None or not isinstance(t, PrimitiveType) or t.name not in ("string", "binary"):
        return v
    return v[:width]


def _next_code_point(cp: int) -> int | None:
    if cp >= _MAX_CODE_POINT:
        return None
    nxt = cp + 1
    return _SURROGATES[1] + 1 if _SURROGATES[0] <= nxt <= _SURROGATES[1] else nxt


def truncate_upper_bound(t: IcebergType, v: Any, width: int) -> Any:
    """An upper bound for `v` no longer than `width`, or None when none exists.

    The prefix is made larger than every value sharing it by incrementing its last
    incrementable unit (code point, skipping surrogates; or byte below 0xFF) and dropping the
    rest, as Iceberg Java's UnicodeUtil/BinaryUtil do. None means "omit the upper bound".
    """
    if v is None or not isinstance(t, PrimitiveType) or t.name not in ("string", "binary"):
        return v
    if len(v) <= width:
        return v
    if t.name == "string":
        for i in range(width - 1, -1, -1):
            nxt = _next_code_point(ord(v[i]))
            if nxt is not None:
                return v[:i] + chr(nxt)
        return None
    for i in range(width - 1, -1, -1):
        if v[i] < 0xFF:
            return bytes(v[:i]) + bytes([v[i] + 1])
    return None


def normalize_float_bounds(lower: float | None, upper: float | None) -> tuple[float | None, float | None]:
    """Make float/double min/max valid Iceberg bounds.

    NaN is never a bound, so a NaN min or max drops both (as Java does). Because -0.0 sorts
    before +0.0 in Iceberg but compares equal in IEEE, a zero lower bound becomes -0.0 and a
    zero upper bound +0.0, so both zeros are always covered.
    """
    if (lower is not None and math.isnan(lower)) or (upper is not None and math.isnan(upper)):
        return None, None
    if lower == 0.0:
        lower = -0.0
    if upper == 0.0:
        upper = 0.0
    return lower, upper
