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

Everything that differs per type is one row of `CONVERSIONS` (binary form, lenient Python/Spark
conversion, predicate-literal check, exact SQL-literal conversion, Python value), so adding or
changing a type touches one place and the public functions are plain lookups.
"""
from __future__ import annotations

import datetime as dt
import math
import re
import struct
import uuid
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Callable

from pyice_sql.core.model.types import DecimalType, FixedType, IcebergType, type_kind
from pyice_sql.core.model.zones import wall_clock_instant

EPOCH_DATE = dt.date(1970, 1, 1)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)
EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
MICROS_PER_SECOND = 1_000_000
MICROS_PER_DAY = 86_400 * MICROS_PER_SECOND

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)


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
# Spark SQL string literals


_SQL_DATE = re.compile(r"^\s*\d{4}-\d{2}-\d{2}\s*$")
_SQL_TIMESTAMP = re.compile(
    r"^\s*\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?(?:Z|[+-]\d{2}:\d{2})?\s*$")


def sql_date(text: str) -> dt.date:
    """The date Spark's CAST(text AS DATE) gives, for the one spelling read the same everywhere.

    Raises:
        ValueError: any other spelling (Spark's lenient forms are left to Spark).
    """
    if not _SQL_DATE.match(text):
        raise ValueError(f"{text!r} is not a yyyy-mm-dd date")
    return dt.date.fromisoformat(text.strip())


def sql_timestamp(text: str, without_zone: bool, zone: dt.tzinfo | None = dt.timezone.utc) -> dt.datetime:
    """CAST(text AS TIMESTAMP_NTZ) as a naive datetime (its wall clock), or CAST(text AS TIMESTAMP)
    as the instant it names (UTC-aware): its offset's, else its wall clock's in `zone`, the
    session's time zone (`zones.session_zone`), as Spark reads it.

    Raises:
        ValueError: not an ISO spelling, an offset where the target has no zone, or no offset
            and no known `zone` to read it in.
    """
    if not _SQL_TIMESTAMP.match(text):
        raise ValueError(f"{text!r} is not an ISO timestamp")
    parsed = dt.datetime.fromisoformat(text.strip().replace(" ", "T", 1).replace("Z", "+00:00"))
    if without_zone:
        if parsed.tzinfo is not None:
            raise ValueError(f"{text!r} carries an offset; a timestamp without zone has none")
        return parsed
    return zoned_instant(parsed, zone)


def zoned_instant(value: str | dt.date, zone: dt.tzinfo | None) -> dt.datetime:
    """The instant (UTC-aware) a timestamp value names where Spark reads it as a TIMESTAMP: an
    aware datetime or text with an offset as it is, a zone-less one (text, naive datetime, a date:
    its midnight) as its wall clock in `zone`, the session's time zone.

    Raises:
        ValueError: text that is no ISO timestamp, or a zone-less value and no known `zone`.
    """
    if isinstance(value, str):
        return sql_timestamp(value, False, zone)
    wall = value if isinstance(value, dt.datetime) else dt.datetime.combine(value, dt.time())
    if wall.tzinfo is not None:
        return wall.astimezone(dt.timezone.utc)
    if zone is None:
        raise ValueError(f"{wall.isoformat(sep=' ')} has no offset and Python does not know the session's time "
                         "zone (spark.sql.session.timeZone): give one, e.g. '2024-01-01 00:00:00+00:00'")
    return wall_clock_instant(wall, zone)


# ---------------------------------------------------------------------------------------------
# per-type conversions


class LiteralMismatch(ValueError):
    """A predicate literal is not the internal form of its column type; the message says why."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)


def _cannot(t: IcebergType, v: Any) -> TypeError:
    return TypeError(f"cannot convert {type(v).__name__} {v!r} to Iceberg {t}")


def _not_internal(v: Any) -> LiteralMismatch:
    return LiteralMismatch(f"({type(v).__name__}) is not the internal form")


def _check_range(v: int, bounds: tuple[int, int], what: str) -> int:
    if not bounds[0] <= v <= bounds[1]:
        raise ValueError(f"{v} is out of range for {what}")
    return v


def _float32(v: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", v))[0])


def exact_float32(v: float) -> float:
    """`v` when it is exactly a float32, as Spark compares float columns in double precision.

    Raises:
        ValueError: `v` would round (or overflow) as a float32.
    """
    try:
        exact = _float32(v) == v
    except OverflowError:
        exact = False
    if not exact:
        raise ValueError(f"{v!r} is not exactly a float32")
    return v


def _identity(t: IcebergType, v: Any) -> Any:
    return v


def _refuse(t: IcebergType, v: Any) -> Any:
    raise _cannot(t, v)


def _bytes_of(t: IcebergType, v: Any) -> bytes:
    return bytes(v)


def _struct_codec(fmt: str, cast: Callable[[Any], Any], widened: str | None = None) -> tuple[Callable, Callable]:
    """(to_bytes, from_bytes) for a fixed-width little-endian value; `widened` reads 4-byte bounds
    written before an int->long or float->double promotion."""
    def write(t: IcebergType, v: Any) -> bytes:
        return struct.pack(fmt, v)

    def read(t: IcebergType, b: bytes) -> Any:
        return cast(struct.unpack(widened if widened and len(b) == 4 else fmt, b)[0])
    return write, read


def _ranged_literal(bounds: tuple[int, int]) -> Callable[[IcebergType, Any], Any]:
    """Predicate literal check for a type whose internal form is a bounded int."""
    def check(t: IcebergType, v: Any) -> Any:
        if not _is_int(v):
            raise _not_internal(v)
        if not bounds[0] <= v <= bounds[1]:
            raise LiteralMismatch("is out of range")
        return v
    return check


def _instance_literal(*types: type) -> Callable[[IcebergType, Any], Any]:
    """Predicate literal check for a type whose internal form is one Python type."""
    def check(t: IcebergType, v: Any) -> Any:
        if isinstance(v, types):
            return v
        raise _not_internal(v)
    return check


# boolean


def _boolean_from_python(t: IcebergType, v: Any) -> Any:
    if isinstance(v, (bool, int)):
        return bool(v)
    raise _cannot(t, v)


def _boolean_from_sql(t: IcebergType, v: Any) -> Any:
    if isinstance(v, bool):
        return v
    raise _cannot(t, v)


# int, long


def _integer_from_python(t: IcebergType, v: Any) -> Any:
    if isinstance(v, (int, str)) and not isinstance(v, bool):
        name = type_kind(t)
        return _check_range(int(v), INT_RANGE if name == "int" else LONG_RANGE, name)
    raise _cannot(t, v)


def _integer_from_sql(t: IcebergType, v: Any) -> Any:
    if isinstance(v, (int, Decimal)) and not isinstance(v, bool) and v == int(v):
        return _integer_from_python(t, int(v))
    raise _cannot(t, v)


# float, double


def _floating_from_python(t: IcebergType, v: Any) -> Any:
    if isinstance(v, (int, float, str, Decimal)) and not isinstance(v, bool):
        return _float32(float(v)) if type_kind(t) == "float" else float(v)
    raise _cannot(t, v)


def _floating_literal(t: IcebergType, v: Any) -> Any:
    if not (isinstance(v, (int, float)) and not isinstance(v, bool)):
        raise _not_internal(v)
    if math.isnan(v):
        raise LiteralMismatch("is NaN; use is_nan/not_nan")
    return float(v)


def _floating_from_sql(t: IcebergType, v: Any) -> Any:
    if not _is_number(v):
        raise _cannot(t, v)
    f = float(v)
    if math.isnan(f):
        raise ValueError("NaN literals are left to Spark's NaN ordering rules")
    return exact_float32(f) if type_kind(t) == "float" else f


# date


def _date_from_python(t: IcebergType, v: Any) -> Any:
    if isinstance(v, dt.datetime):
        raise TypeError(f"a datetime ({v!r}) is not a date; pass .date() explicitly")
    if isinstance(v, str):
        v = dt.date.fromisoformat(v.strip())
    if isinstance(v, dt.date):
        return (v - EPOCH_DATE).days
    if _is_int(v):
        return _check_range(v, INT_RANGE, "date")
    raise _cannot(t, v)


def _date_from_sql(t: IcebergType, v: Any) -> Any:
    if isinstance(v, str):
        return _date_from_python(t, sql_date(v))
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        return _date_from_python(t, v)
    raise _cannot(t, v)


def _date_to_python(t: IcebergType, v: Any) -> Any:
    return EPOCH_DATE + dt.timedelta(days=v)


# time


def _time_from_python(t: IcebergType, v: Any) -> Any:
    if isinstance(v, str):
        v = dt.time.fromisoformat(v.strip())
    if isinstance(v, dt.time):
        if v.tzinfo is not None:
            raise ValueError(f"time {v!r} must not carry a time zone")
        return ((v.hour * 60 + v.minute) * 60 + v.second) * MICROS_PER_SECOND + v.microsecond
    if _is_int(v):
        return _check_range(v, (0, MICROS_PER_DAY - 1), "time")
    raise _cannot(t, v)


def _time_to_python(t: IcebergType, v: Any) -> Any:
    seconds, micros = divmod(v, MICROS_PER_SECOND)
    minutes, second = divmod(seconds, 60)
    hour, minute = divmod(minutes, 60)
    return dt.time(hour, minute, second, micros)


# timestamp, timestamptz


def _timestamp_from_python(t: IcebergType, v: Any) -> Any:
    name = type_kind(t)
    if isinstance(v, str):
        v = dt.datetime.fromisoformat(v.strip().replace(" ", "T", 1))
    if isinstance(v, dt.datetime):
        if name == "timestamp" and v.tzinfo is not None:
            raise ValueError(f"timestamp (without zone) needs a naive datetime, got {v!r}")
        return micros_from_datetime(v)
    if isinstance(v, dt.date):
        return (v - EPOCH_DATE).days * MICROS_PER_DAY
    if _is_int(v):
        return _check_range(v, LONG_RANGE, name)
    raise _cannot(t, v)


def _timestamp_from_sql(t: IcebergType, v: Any) -> Any:
    if isinstance(v, str):
        v = sql_timestamp(v, without_zone=type_kind(t) == "timestamp")
    if isinstance(v, dt.date):  # a date compares as its midnight
        return _timestamp_from_python(t, v)
    raise _cannot(t, v)


def _timestamp_to_python(t: IcebergType, v: Any) -> Any:
    return EPOCH_NAIVE + dt.timedelta(microseconds=v)


def _timestamptz_to_python(t: IcebergType, v: Any) -> Any:
    return EPOCH_UTC + dt.timedelta(microseconds=v)


# string


def _string_from_python(t: IcebergType, v: Any) -> Any:
    if isinstance(v, str):
        return v
    raise _cannot(t, v)


# uuid


def _uuid_from_python(t: IcebergType, v: Any) -> Any:
    if isinstance(v, uuid.UUID):
        return v
    if isinstance(v, str):
        return uuid.UUID(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return uuid.UUID(bytes=bytes(v))
    raise _cannot(t, v)


def _uuid_from_sql(t: IcebergType, v: Any) -> Any:
    # Spark sees uuid columns as lowercase canonical strings, so only that spelling is equal.
    if isinstance(v, str):
        u = _uuid_from_python(t, v)
        if str(u) == v:
            return u
    raise _cannot(t, v)


# fixed, binary


def _bytes_from_python(t: IcebergType, v: Any) -> Any:
    if isinstance(v, (bytes, bytearray, memoryview)):
        b = bytes(v)
        if isinstance(t, FixedType) and len(b) != t.length:
            raise ValueError(f"{t} needs {t.length} bytes, got {len(b)}")
        return b
    raise _cannot(t, v)


def _fixed_literal(t: IcebergType, v: Any) -> Any:
    if isinstance(v, bytes):
        return v
    raise LiteralMismatch("is not bytes")


# decimal


def _decimal_to_bytes(t: IcebergType, v: Any) -> bytes:
    assert isinstance(t, DecimalType)
    return min_twos_complement(decimal_unscaled(v, t.scale))


def _decimal_from_bytes(t: IcebergType, b: bytes) -> Any:
    assert isinstance(t, DecimalType)
    return decimal_from_unscaled(int.from_bytes(b, "big", signed=True), t.scale)


def _decimal_from_python(t: IcebergType, v: Any) -> Any:
    assert isinstance(t, DecimalType)
    if not _is_number(v) and not isinstance(v, str):
        raise _cannot(t, v)
    try:
        d = Decimal(repr(v)) if isinstance(v, float) else Decimal(v)
    except InvalidOperation as e:
        raise ValueError(f"{v!r} is not a decimal") from e
    unscaled = decimal_unscaled(d, t.scale)
    if len(str(abs(unscaled))) > t.precision:
        raise ValueError(f"{v} does not fit {t}")
    return decimal_from_unscaled(unscaled, t.scale)


def _decimal_literal(t: IcebergType, v: Any) -> Any:
    if _is_int(v):
        return Decimal(v)
    if isinstance(v, Decimal) and v.is_finite():
        return v
    raise LiteralMismatch("is not a finite Decimal")


def _decimal_from_sql(t: IcebergType, v: Any) -> Any:
    if isinstance(v, (int, Decimal)) and not isinstance(v, bool):
        return _decimal_from_python(t, v)  # exact or refused
    raise _cannot(t, v)


@dataclass(frozen=True)
class PrimitiveConversion:
    """Everything that differs per primitive type, so each conversion is one table lookup.

    `from_python` accepts Python, Spark Row and string values leniently; `check_literal` accepts
    only the internal form (predicate literals, raising `LiteralMismatch`); `from_sql` accepts a
    constant of a Spark SQL condition only where Spark would compare it to the column exactly.
    `from_python` and `from_sql` raise ValueError (value does not fit) or TypeError (wrong kind).
    """

    to_bytes: Callable[[IcebergType, Any], bytes]
    from_bytes: Callable[[IcebergType, bytes], Any]
    from_python: Callable[[IcebergType, Any], Any]
    check_literal: Callable[[IcebergType, Any], Any]
    from_sql: Callable[[IcebergType, Any], Any] = _refuse
    to_python: Callable[[IcebergType, Any], Any] = _identity


_INT32 = _struct_codec("<i", int)
_INT64 = _struct_codec("<q", int)
_INT_LITERAL = _ranged_literal(INT_RANGE)
_LONG_LITERAL = _ranged_literal(LONG_RANGE)
_TIMESTAMP = dict(to_bytes=_INT64[0], from_bytes=_INT64[1], from_python=_timestamp_from_python,
                  check_literal=_LONG_LITERAL, from_sql=_timestamp_from_sql)

CONVERSIONS: dict[str, PrimitiveConversion] = {
    "boolean": PrimitiveConversion(lambda t, v: b"\x01" if v else b"\x00", lambda t, b: any(b),
                                   _boolean_from_python, _instance_literal(bool), _boolean_from_sql),
    "int": PrimitiveConversion(*_INT32, _integer_from_python, _INT_LITERAL, _integer_from_sql),
    "long": PrimitiveConversion(_INT64[0], _struct_codec("<q", int, widened="<i")[1], _integer_from_python,
                                _LONG_LITERAL, _integer_from_sql),
    "float": PrimitiveConversion(*_struct_codec("<f", float), _floating_from_python, _floating_literal,
                                 _floating_from_sql),
    "double": PrimitiveConversion(*_struct_codec("<d", float, widened="<f"), _floating_from_python,
                                  _floating_literal, _floating_from_sql),
    "date": PrimitiveConversion(*_INT32, _date_from_python, _INT_LITERAL, _date_from_sql, _date_to_python),
    "time": PrimitiveConversion(*_INT64, _time_from_python, _LONG_LITERAL, to_python=_time_to_python),
    "timestamp": PrimitiveConversion(**_TIMESTAMP, to_python=_timestamp_to_python),
    "timestamptz": PrimitiveConversion(**_TIMESTAMP, to_python=_timestamptz_to_python),
    "string": PrimitiveConversion(lambda t, v: bytes(v.encode("utf-8")), lambda t, b: bytes(b).decode("utf-8"),
                                  _string_from_python, _instance_literal(str), _string_from_python),
    "uuid": PrimitiveConversion(lambda t, v: bytes(v.bytes), lambda t, b: uuid.UUID(bytes=bytes(b)),
                                _uuid_from_python, _instance_literal(uuid.UUID), _uuid_from_sql),
    "fixed": PrimitiveConversion(_bytes_of, _bytes_of, _bytes_from_python, _fixed_literal),
    "binary": PrimitiveConversion(_bytes_of, _bytes_of, _bytes_from_python, _instance_literal(bytes)),
    "decimal": PrimitiveConversion(_decimal_to_bytes, _decimal_from_bytes, _decimal_from_python,
                                   _decimal_literal, _decimal_from_sql),
}


def conversion(t: IcebergType) -> PrimitiveConversion:
    """The conversions of primitive type `t` (raises TypeError for struct/list/map)."""
    kind = type_kind(t)
    if kind == "nested":
        raise TypeError(f"no single-value form for nested type {t}")
    return CONVERSIONS[kind]


def to_bytes(t: IcebergType, v: Any) -> bytes:
    """Serialise an internal value in Iceberg's single-value binary form (bounds, summaries, spec
    appendix D)."""
    return conversion(t).to_bytes(t, v)


def from_bytes(t: IcebergType, b: bytes) -> Any:
    """Read a single-value binary form back into the internal value of type `t`.

    A 4-byte value read as long or double is a bound written before an int->long or
    float->double promotion, so it is widened rather than rejected.
    """
    return conversion(t).from_bytes(t, bytes(b))


def micros_from_datetime(value: dt.datetime) -> int:
    """Exact µs since the epoch: aware values by their instant, naive ones as UTC wall clock."""
    epoch = EPOCH_UTC if value.tzinfo is not None else EPOCH_NAIVE
    delta = value - epoch
    return (delta.days * 86_400 + delta.seconds) * MICROS_PER_SECOND + delta.microseconds


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
    return conversion(t).from_python(t, v)


def to_python(t: IcebergType, v: Any) -> Any:
    """The natural Python value of an internal one (dates, times and datetimes rebuilt).

    `timestamp` gives a naive datetime (wall clock), `timestamptz` a UTC-aware one.
    """
    if v is None:
        return None
    return conversion(t).to_python(t, v)
