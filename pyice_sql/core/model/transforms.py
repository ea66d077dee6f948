"""Partition transforms: identity, bucket[N], truncate[W], year, month, day, hour and void.

Each transform is a frozen value (parsed from and printed as the spec string) that knows, for
one source type:

* `apply`: the partition value of an internal source value (see `conversions`), exactly as
  Iceberg Java computes it, because readers prune files by these values;
* `to_sql`: the same computation as a Spark SQL expression, so Spark can partition rows
  without a Python UDF (bucket excepted, which calls the JVM shim's `pyice_bucket`);
* `to_human_string`: the value as it appears in partition paths;
* `project_inclusive` / `project_strict`: how a predicate on the source column becomes a
  predicate on the partition value, for partition pruning and metadata-only deletes.

Predicates are passed as an operator name from `OPS` plus a tuple of internal literal values
(empty for unary operators, one value for comparisons, several for `in`/`not_in`). Time
transforms need the source type to tell a date (days) from a timestamp (µs), so every method
that evaluates values accepts `source`.
"""
from __future__ import annotations

import base64
import re
import uuid
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import Any, Callable, ClassVar, Iterable, Sequence

from pyice_sql.core.model.conversions import (
    MICROS_PER_DAY, decimal_from_unscaled, decimal_scale, decimal_unscaled, min_twos_complement,
)
from pyice_sql.core.model.types import (
    DATE, INT, DecimalType, FixedType, IcebergType, PrimitiveType, is_primitive,
)

UNARY_OPS = frozenset({"is_null", "not_null", "is_nan", "not_nan"})
SET_OPS = frozenset({"in", "not_in"})
OPS = UNARY_OPS | SET_OPS | frozenset({"<", "<=", ">", ">=", "=", "!=", "starts_with", "not_starts_with"})

# `expr.predicates.Op` spells comparisons as words; both spellings are accepted and answered in kind.
_WORD_TO_SYMBOL = {"lt": "<", "lt_eq": "<=", "gt": ">", "gt_eq": ">=", "eq": "=", "not_eq": "!="}
_SYMBOL_TO_WORD = {v: k for k, v in _WORD_TO_SYMBOL.items()}

Projection = tuple[str, tuple[Any, ...]]

MICROS_PER_HOUR = 3_600_000_000
_M32 = 0xFFFFFFFF
_EPOCH_YEAR = 1970


# ---------------------------------------------------------------------------------------------
# murmur3 and bucket hashing


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


# ---------------------------------------------------------------------------------------------
# calendar helpers (proleptic Gregorian, any range, floor semantics)


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01, for any integer (not limited to 1..9999)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0), month, day


def _human_day(days: int) -> str:
    y, m, d = civil_from_days(days)
    return f"{y:04d}-{m:02d}-{d:02d}"


def _iso_year(y: int) -> str:
    """java.time's ISO year: four digits, a sign when negative, '+' beyond 9999."""
    if y > 9999:
        return f"+{y}"
    return f"-{-y:04d}" if y < 0 else f"{y:04d}"


def _iso_timestamp(micros: int) -> str:
    """ISO_LOCAL_DATE_TIME as Java prints it: seconds always, fraction without trailing zeros."""
    days, rem = divmod(micros, MICROS_PER_DAY)
    y, m, d = civil_from_days(days)
    secs, frac = divmod(rem, 1_000_000)
    text = f"{_iso_year(y)}-{m:02d}-{d:02d}T{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    return text + (f".{frac:06d}".rstrip("0") if frac else "")


def _java_local_time(micros: int) -> str:
    """java.time.LocalTime.toString(): seconds only when non-zero, fraction in 3-digit groups."""
    secs, frac = divmod(micros, 1_000_000)
    text = f"{secs // 3600:02d}:{secs // 60 % 60:02d}"
    if secs % 60 or frac:
        text += f":{secs % 60:02d}"
    if frac:
        text += f".{frac // 1000:03d}" if frac % 1000 == 0 else f".{frac:06d}"
    return text


def _human_value(value: Any, source: IcebergType | None) -> str:
    """Java's Transform.toHumanString for an untransformed (identity/truncate) value."""
    if value is None:
        return "null"
    name = source.name if isinstance(source, PrimitiveType) else None
    if name == "date":
        return _human_day(value)
    if name == "time":
        return _java_local_time(value)
    if name == "timestamp":
        return _iso_timestamp(value)
    if name == "timestamptz":
        return _iso_timestamp(value) + "+00:00"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# ---------------------------------------------------------------------------------------------
# Spark SQL helpers


def _type_name(t: IcebergType | None) -> str:
    if isinstance(t, PrimitiveType):
        return t.name
    if isinstance(t, DecimalType):
        return "decimal"
    if isinstance(t, FixedType):
        return "fixed"
    return "nested"


def spark_internal_type(t: IcebergType) -> str:
    """The Spark SQL type of the internal representation of `t` (what `to_sql` produces)."""
    if isinstance(t, DecimalType):
        return f"DECIMAL({t.precision},{t.scale})"
    names = {"boolean": "BOOLEAN", "int": "INT", "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE",
             "date": "INT", "time": "BIGINT", "timestamp": "BIGINT", "timestamptz": "BIGINT",
             "string": "STRING", "uuid": "STRING", "fixed": "BINARY", "binary": "BINARY"}
    try:
        return names[_type_name(t)]
    except KeyError:
        raise ValueError(f"no Spark representation for partition source type {t}") from None


def _ntz_micros_sql(col: str) -> str:
    """µs since the epoch of a Spark TIMESTAMP_NTZ column, by field arithmetic (no time zone)."""
    return (f"(CAST(unix_date(CAST({col} AS DATE)) AS BIGINT) * {MICROS_PER_DAY}L"
            f" + CAST(hour({col}) * 3600 + minute({col}) * 60 AS BIGINT) * 1000000L"
            f" + CAST(extract(SECOND FROM {col}) * 1000000 AS BIGINT))")


def _micros_sql(col: str, source: IcebergType) -> str:
    """Spark `timestamp` holds Iceberg timestamptz (an instant); `timestamp_ntz` holds `timestamp`."""
    return f"unix_micros({col})" if _type_name(source) == "timestamptz" else _ntz_micros_sql(col)


def _floor_div_sql(expr: str, divisor: int) -> str:
    """Exact floor division of a BIGINT expression (Spark's `/` goes through double)."""
    return f"CAST((({expr}) - pmod({expr}, {divisor}L)) div {divisor}L AS INT)"


def _wrapping_floor_sql(col: str, width: int, bits: int) -> str:
    """`col - pmod(col, width)` with Java's two's-complement wrap-around for the few values near
    the type's minimum (Iceberg's truncate wraps there), and no overflow error under ANSI mode
    (Spark 4's default): those values take an exact detour through a wider type."""
    low, span = 2 ** (bits - 1), 2 ** bits
    wide, int_type = ("BIGINT", "INT") if bits == 32 else ("DECIMAL(21,0)", "BIGINT")
    wrapped = (f"CAST(pmod(CAST({col} AS {wide}) - pmod({col}, {width}) + {low}, {span}) - {low} "
               f"AS {int_type})")
    return f"(CASE WHEN {col} < {-low + width} THEN {wrapped} ELSE {col} - pmod({col}, {width}) END)"


def _days_sql(col: str, source: IcebergType) -> str:
    name = _type_name(source)
    if name == "date":
        return f"unix_date({col})"
    if name == "timestamp":
        return f"unix_date(CAST({col} AS DATE))"
    return _floor_div_sql(f"unix_micros({col})", MICROS_PER_DAY)


def _date_sql(col: str, source: IcebergType) -> str:
    """A DATE expression for the UTC (or wall-clock) calendar day, safe for year()/month()."""
    name = _type_name(source)
    if name == "date":
        return col
    if name == "timestamp":
        return f"CAST({col} AS DATE)"
    return f"date_from_unix_date({_days_sql(col, source)})"


# ---------------------------------------------------------------------------------------------
# projection helpers


def _unique(values: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(values))


def _project_ordered_inclusive(op: str, values: tuple[Any, ...], fn: Callable[[Any], Any],
                               step: Callable[[Any, int], Any]) -> Projection | None:
    """Inclusive projection through a monotone transform of a discrete domain.

    Open bounds are first closed on the source side (x < v is x <= v-1) because the
    partition of v-1 may differ from that of v.
    """
    if op == "in":
        return "in", _unique(fn(v) for v in values)
    ops = {"<": ("<=", -1), "<=": ("<=", 0), ">": (">=", 1), ">=": (">=", 0), "=": ("=", 0)}
    if op not in ops:
        return None
    new_op, delta = ops[op]
    return new_op, (fn(step(values[0], delta) if delta else values[0]),)


def _project_ordered_strict(op: str, values: tuple[Any, ...], fn: Callable[[Any], Any],
                            step: Callable[[Any, int], Any]) -> Projection | None:
    """Strict projection: a partition qualifies only if every source value in it matches."""
    if op == "not_in":
        return "not_in", _unique(fn(v) for v in values)
    ops = {"<": ("<", 0), "<=": ("<", 1), ">": (">", 0), ">=": (">", -1), "!=": ("!=", 0)}
    if op not in ops:
        return None
    new_op, delta = ops[op]
    return new_op, (fn(step(values[0], delta) if delta else values[0]),)


def _fix_inclusive_time(p: Projection | None) -> Projection | None:
    """Widen for files from Iceberg <= 0.10, whose time transforms rounded negatives toward zero.

    Those writers stored (correct value + 1) for pre-epoch values, so an inclusive projection
    must also accept that value; Iceberg Java still does this when reading.
    """
    if p is None:
        return None
    op, vals = p
    if op == "<=" and vals[0] < 0:
        return op, (vals[0] + 1,)
    if op == "=" and vals[0] < 0:
        return "in", (vals[0], vals[0] + 1)
    if op == "in" and any(v < 0 for v in vals):
        return "in", _unique(x for v in vals for x in ((v, v + 1) if v < 0 else (v,)))
    return p


def _fix_strict_time(p: Projection | None) -> Projection | None:
    """Narrow a strict time projection for the same pre-0.11 off-by-one partition values."""
    if p is None:
        return None
    op, vals = p
    if op == ">" and vals[0] <= 0:
        return op, (vals[0] + 1,)
    if op == "!=" and vals[0] < 0:
        return "not_in", (vals[0], vals[0] + 1)
    if op == "not_in" and any(v < 0 for v in vals):
        return "not_in", _unique(x for v in vals for x in ((v, v + 1) if v < 0 else (v,)))
    return p


def _int_step(v: int, delta: int) -> int:
    return v + delta


def _decimal_step(source: IcebergType | None) -> Callable[[Decimal, int], Decimal]:
    def step(v: Decimal, delta: int) -> Decimal:
        scale = decimal_scale(v, source)
        return decimal_from_unscaled(decimal_unscaled(v, scale) + delta, scale)
    return step


def _canonical_op(op: str) -> tuple[str, bool]:
    """(symbolic operator, whether the caller spelled comparisons as words) for any spelling."""
    name = str(getattr(op, "value", op))
    symbol = _WORD_TO_SYMBOL.get(name, name)
    if symbol not in OPS:
        raise ValueError(f"unknown predicate operator {op!r}; expected one of {sorted(OPS)}")
    return symbol, symbol != name


def _respell(p: Projection | None, words: bool) -> Projection | None:
    if p is None or not words:
        return p
    return _SYMBOL_TO_WORD.get(p[0], p[0]), p[1]


# ---------------------------------------------------------------------------------------------
# transforms


@dataclass(frozen=True)
class Transform:
    """Base of all partition transforms; subclasses are compared and hashed by value."""

    preserves_order: ClassVar[bool] = True

    def can_transform(self, source: IcebergType) -> bool:
        raise NotImplementedError

    def result_type(self, source: IcebergType | None) -> IcebergType:
        raise NotImplementedError

    def apply(self, value: Any, source: IcebergType | None = None) -> Any:
        """The partition value of an internal source value (None stays None)."""
        raise NotImplementedError

    def to_sql(self, column_sql: str, source: IcebergType) -> str:
        """Spark SQL text computing `apply` for `column_sql`, independent of the session zone.

        Column conventions: Spark TIMESTAMP holds timestamptz, TIMESTAMP_NTZ holds timestamp,
        uuid is a STRING and time (which Spark lacks) a BIGINT of µs. The result has the Spark
        type `spark_internal_type(result_type(source))`; a uuid identity value stays its text.
        """
        raise NotImplementedError

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        """A partition value as Java prints it in data file paths (`null` for None)."""
        return _human_value(value, None)

    def project_inclusive(self, op: str, values: Sequence[Any] = (),
                          source: IcebergType | None = None) -> Projection | None:
        """A predicate on the partition value true for every partition holding a matching row.

        `op` is a symbol from `OPS` or its word form (`lt`, `lt_eq`, ...), answered in the
        same spelling. Returns None when no such predicate exists (treat as always true: keep
        the file).
        """
        symbol, words = _canonical_op(op)
        if symbol in UNARY_OPS:
            return symbol, ()
        return _respell(self._inclusive(symbol, tuple(values), source), words)

    def project_strict(self, op: str, values: Sequence[Any] = (),
                       source: IcebergType | None = None) -> Projection | None:
        """A predicate on the partition value true only if every row of the partition matches.

        Returns None when no such predicate exists (treat as always false: the partition
        cannot be proven to match, e.g. for a metadata-only delete).
        """
        symbol, words = _canonical_op(op)
        if symbol in UNARY_OPS:
            return symbol, ()
        return _respell(self._strict(symbol, tuple(values), source), words)

    def _check_source(self, source: IcebergType | None) -> IcebergType:
        if source is None or not self.can_transform(source):
            raise ValueError(f"{self} cannot transform source type {source}")
        return source

    def _inclusive(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        raise NotImplementedError

    def _strict(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        raise NotImplementedError


@dataclass(frozen=True)
class Identity(Transform):
    """The source value itself."""

    def __str__(self) -> str:
        return "identity"

    def can_transform(self, source: IcebergType) -> bool:
        return is_primitive(source)

    def result_type(self, source: IcebergType | None) -> IcebergType:
        if source is None:
            raise ValueError("identity partition of a dropped column has no known type")
        return source

    def apply(self, value: Any, source: IcebergType | None = None) -> Any:
        return value

    def to_sql(self, column_sql: str, source: IcebergType) -> str:
        name = _type_name(self._check_source(source))
        if name == "date":
            return f"unix_date({column_sql})"
        if name in ("timestamp", "timestamptz"):
            return _micros_sql(column_sql, source)
        return column_sql

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        return _human_value(value, source)

    def _inclusive(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        return op, values

    def _strict(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        return op, values


_BUCKET_SOURCES = frozenset({"int", "long", "decimal", "date", "time", "timestamp", "timestamptz", "string",
                             "uuid", "fixed", "binary"})


@dataclass(frozen=True)
class Bucket(Transform):
    """Hash partitioning: (murmur3_32(bytes) & 0x7FFFFFFF) % num_buckets."""

    num_buckets: int
    preserves_order: ClassVar[bool] = False

    def __post_init__(self) -> None:
        if self.num_buckets <= 0:
            raise ValueError(f"bucket count must be positive, got {self.num_buckets}")

    def __str__(self) -> str:
        return f"bucket[{self.num_buckets}]"

    def can_transform(self, source: IcebergType) -> bool:
        return _type_name(source) in _BUCKET_SOURCES

    def result_type(self, source: IcebergType | None) -> IcebergType:
        return INT

    def apply(self, value: Any, source: IcebergType | None = None) -> Any:
        if value is None:
            return None
        return (murmur3_32(bucket_bytes(value, source)) & 0x7FFFFFFF) % self.num_buckets

    def to_sql(self, column_sql: str, source: IcebergType) -> str:
        """Calls the JVM shim's `pyice_bucket(N, x)` with x as BIGINT, STRING, BINARY or DECIMAL.

        A uuid column (a Spark string) is passed as its 16 big-endian bytes, which is what
        Iceberg hashes, rather than as text.
        """
        name = _type_name(self._check_source(source))
        if name in ("int", "long", "time"):
            arg = f"CAST({column_sql} AS BIGINT)"
        elif name == "date":
            arg = f"CAST(unix_date({column_sql}) AS BIGINT)"
        elif name in ("timestamp", "timestamptz"):
            arg = _micros_sql(column_sql, source)
        elif name == "uuid":
            arg = f"unhex(replace({column_sql}, '-', ''))"
        else:
            arg = column_sql
        return f"pyice_bucket({self.num_buckets}, {arg})"

    def _inclusive(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        if op in ("=", "in"):
            return op, _unique(self.apply(v, source) for v in values)
        return None

    def _strict(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        if op in ("!=", "not_in"):
            return op, _unique(self.apply(v, source) for v in values)
        return None


_TRUNCATE_SOURCES = frozenset({"int", "long", "decimal", "string", "binary"})


@dataclass(frozen=True)
class Truncate(Transform):
    """Ranges of width W: ints/decimals floored to a multiple of W, strings/binary to W units."""

    width: int

    def __post_init__(self) -> None:
        if self.width <= 0:
            raise ValueError(f"truncate width must be positive, got {self.width}")

    def __str__(self) -> str:
        return f"truncate[{self.width}]"

    def can_transform(self, source: IcebergType) -> bool:
        return _type_name(source) in _TRUNCATE_SOURCES

    def result_type(self, source: IcebergType | None) -> IcebergType:
        if source is None:
            raise ValueError("truncate partition of a dropped column has no known type")
        return source

    def apply(self, value: Any, source: IcebergType | None = None) -> Any:
        """Floor toward -inf for numbers (decimals on the unscaled value); prefix for str/bytes."""
        if value is None:
            return None
        if isinstance(value, bool) or isinstance(value, float):
            raise TypeError(f"cannot truncate a {type(value).__name__} value")
        if isinstance(value, int):
            bits = {"int": 32, "long": 64}.get(_type_name(source))
            out = value - value % self.width
            # Java computes in int/long arithmetic, so values near the minimum wrap around
            return out if bits is None else (out + (1 << (bits - 1))) % (1 << bits) - (1 << (bits - 1))
        if isinstance(value, Decimal):
            scale = decimal_scale(value, source)
            unscaled = decimal_unscaled(value, scale)
            return decimal_from_unscaled(unscaled - unscaled % self.width, scale)
        if isinstance(value, str):
            return value[:self.width]
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value[:self.width])
        raise TypeError(f"cannot truncate a {type(value).__name__} value")

    def to_sql(self, column_sql: str, source: IcebergType) -> str:
        """Spark SQL for truncate; `substring` counts code points, matching Iceberg.

        A decimal whose floor no longer fits decimal(P, S) (e.g. -9.99 at width 50 in
        decimal(3, 2)) fails the query, as Java refuses to write it, instead of becoming null.
        Raises ValueError for decimal(38, S>6): Spark would round the intermediate difference
        (precision 39 is reduced by dropping scale), giving a wrong partition value.
        """
        name = _type_name(self._check_source(source))
        if name in ("int", "long"):
            return _wrapping_floor_sql(column_sql, self.width, 32 if name == "int" else 64)
        if name == "decimal":
            assert isinstance(source, DecimalType)
            if source.precision >= 38 and source.scale > 6:
                raise ValueError(f"truncate on {source} cannot be computed exactly in Spark SQL")
            step = format(decimal_from_unscaled(self.width, source.scale), "f")
            floor = f"TRY_CAST({column_sql} - pmod({column_sql}, {step}BD) AS DECIMAL({source.precision},{source.scale}))"
            return (f"CASE WHEN {column_sql} IS NULL THEN NULL ELSE coalesce({floor},"
                    f" raise_error('{self} overflows {source}')) END")
        return f"substring({column_sql}, 1, {self.width})"

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        return _human_value(value, source)

    @staticmethod
    def _step(values: tuple[Any, ...], source: IcebergType | None) -> Callable[[Any, int], Any]:
        if isinstance(source, DecimalType) or any(isinstance(v, Decimal) for v in values):
            return _decimal_step(source)
        return _int_step

    def _is_text(self, values: tuple[Any, ...], source: IcebergType | None) -> bool:
        if source is not None:
            return _type_name(source) in ("string", "binary")
        return bool(values) and isinstance(values[0], (str, bytes, bytearray, memoryview))

    def _inclusive(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        fn = partial(self.apply, source=source)
        if not self._is_text(values, source):
            return _project_ordered_inclusive(op, values, fn, self._step(values, source))
        if op in ("starts_with", "not_starts_with"):
            lit = values[0]
            if len(lit) < self.width:
                return op, (lit,)
            if len(lit) == self.width:
                return ("=" if op == "starts_with" else "!="), (lit,)
            return ("starts_with", (fn(lit),)) if op == "starts_with" else None
        # A prefix cannot decide < or >, so both sides close: x < v only implies trunc(x) <= trunc(v).
        text_ops = {"<": "<=", "<=": "<=", ">": ">=", ">=": ">=", "=": "="}
        if op == "in":
            return "in", _unique(fn(v) for v in values)
        return (text_ops[op], (fn(values[0]),)) if op in text_ops else None

    def _strict(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        fn = partial(self.apply, source=source)
        if not self._is_text(values, source):
            return _project_ordered_strict(op, values, fn, self._step(values, source))
        if op in ("starts_with", "not_starts_with"):
            lit = values[0]
            if len(lit) < self.width:
                return op, (lit,)
            if len(lit) == self.width:
                return ("=" if op == "starts_with" else "!="), (lit,)
            return ("not_starts_with", (fn(lit),)) if op == "not_starts_with" else None
        text_ops = {"<": "<", "<=": "<", ">": ">", ">=": ">", "!=": "!="}
        if op == "not_in":
            return "not_in", _unique(fn(v) for v in values)
        return (text_ops[op], (fn(values[0]),)) if op in text_ops else None


@dataclass(frozen=True)
class _TimeTransform(Transform):
    """Shared logic of year/month/day/hour: floor of UTC (or wall-clock) time since the epoch."""

    sources: ClassVar[frozenset[str]] = frozenset({"date", "timestamp", "timestamptz"})

    def can_transform(self, source: IcebergType) -> bool:
        return _type_name(source) in self.sources

    def result_type(self, source: IcebergType | None) -> IcebergType:
        return INT

    def _is_date(self, source: IcebergType | None) -> bool:
        if source is None:
            raise ValueError(f"{self} needs the source type to tell days (date) from µs (timestamp)")
        return _type_name(self._check_source(source)) == "date"

    def _from_days(self, days: int) -> int:
        raise NotImplementedError

    def _from_micros(self, micros: int) -> int:
        return self._from_days(micros // MICROS_PER_DAY)

    def apply(self, value: Any, source: IcebergType | None = None) -> Any:
        if value is None:
            return None
        return self._from_days(value) if self._is_date(source) else self._from_micros(value)

    def _inclusive(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        projected = _project_ordered_inclusive(op, values, partial(self.apply, source=source), _int_step)
        return projected if self._exact_on(source) else _fix_inclusive_time(projected)

    def _strict(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        projected = _project_ordered_strict(op, values, partial(self.apply, source=source), _int_step)
        return projected if self._exact_on(source) else _fix_strict_time(projected)

    def _exact_on(self, source: IcebergType | None) -> bool:
        """Whether old (<= 0.10) writers computed this transform correctly for pre-epoch values."""
        return False


@dataclass(frozen=True)
class Year(_TimeTransform):
    """Years since 1970."""

    def __str__(self) -> str:
        return "year"

    def _from_days(self, days: int) -> int:
        return civil_from_days(days)[0] - _EPOCH_YEAR

    def to_sql(self, column_sql: str, source: IcebergType) -> str:
        self._check_source(source)
        return f"(year({_date_sql(column_sql, source)}) - {_EPOCH_YEAR})"

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        return "null" if value is None else f"{_EPOCH_YEAR + value:04d}"


@dataclass(frozen=True)
class Month(_TimeTransform):
    """Months since 1970-01."""

    def __str__(self) -> str:
        return "month"

    def _from_days(self, days: int) -> int:
        y, m, _ = civil_from_days(days)
        return (y - _EPOCH_YEAR) * 12 + m - 1

    def to_sql(self, column_sql: str, source: IcebergType) -> str:
        self._check_source(source)
        d = _date_sql(column_sql, source)
        return f"((year({d}) - {_EPOCH_YEAR}) * 12 + month({d}) - 1)"

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        if value is None:
            return "null"
        y, m = divmod(value, 12)
        return f"{_EPOCH_YEAR + y:04d}-{m + 1:02d}"


@dataclass(frozen=True)
class Day(_TimeTransform):
    """Days since 1970-01-01; the partition type is `date` (an int of days)."""

    def __str__(self) -> str:
        return "day"

    def result_type(self, source: IcebergType | None) -> IcebergType:
        return DATE

    def _from_days(self, days: int) -> int:
        return days

    def _exact_on(self, source: IcebergType | None) -> bool:
        return self._is_date(source)

    def to_sql(self, column_sql: str, source: IcebergType) -> str:
        self._check_source(source)
        return _days_sql(column_sql, source)

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        return "null" if value is None else _human_day(value)


@dataclass(frozen=True)
class Hour(_TimeTransform):
    """Hours since 1970-01-01T00:00; timestamps only."""

    sources: ClassVar[frozenset[str]] = frozenset({"timestamp", "timestamptz"})

    def __str__(self) -> str:
        return "hour"

    def _is_date(self, source: IcebergType | None) -> bool:
        if source is not None:
            self._check_source(source)
        return False

    def _from_micros(self, micros: int) -> int:
        return micros // MICROS_PER_HOUR

    def to_sql(self, column_sql: str, source: IcebergType) -> str:
        if _type_name(self._check_source(source)) == "timestamp":
            return f"(unix_date(CAST({column_sql} AS DATE)) * 24 + hour({column_sql}))"
        return _floor_div_sql(f"unix_micros({column_sql})", MICROS_PER_HOUR)

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        if value is None:
            return "null"
        days, hour = divmod(value, 24)
        return f"{_human_day(days)}-{hour:02d}"


@dataclass(frozen=True)
class Void(Transform):
    """Always null: how v1 tables drop a partition field."""

    preserves_order: ClassVar[bool] = False

    def __str__(self) -> str:
        return "void"

    def can_transform(self, source: IcebergType) -> bool:
        return True

    def result_type(self, source: IcebergType | None) -> IcebergType:
        """The source type; with the source column dropped any type reads back null, so int."""
        return INT if source is None else source

    def apply(self, value: Any, source: IcebergType | None = None) -> Any:
        return None

    def to_sql(self, column_sql: str, source: IcebergType) -> str:
        return f"CAST(NULL AS {spark_internal_type(source)})"

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        return "null"

    def project_inclusive(self, op: str, values: Sequence[Any] = (),
                          source: IcebergType | None = None) -> Projection | None:
        _canonical_op(op)
        return None

    def project_strict(self, op: str, values: Sequence[Any] = (),
                       source: IcebergType | None = None) -> Projection | None:
        _canonical_op(op)
        return None


_TRANSFORM = re.compile(r"^\s*([A-Za-z]+)\s*(?:\[\s*(\d+)\s*\])?\s*$")
_NO_ARG: dict[str, Callable[[], Transform]] = {
    "identity": Identity, "year": Year, "month": Month, "day": Day, "hour": Hour, "void": Void,
}
_WITH_ARG: dict[str, Callable[[int], Transform]] = {"bucket": Bucket, "truncate": Truncate}


def parse_transform(s: str) -> Transform:
    """Parse a spec transform string (`bucket[16]`, ` Day `); unknown ones raise ValueError.

    Writing under a spec with a transform we cannot compute would produce wrong partition
    values, so unknown transforms fail here rather than later.
    """
    m = _TRANSFORM.match(s)
    if m:
        name, arg = m.group(1).lower(), m.group(2)
        if arg is None and name in _NO_ARG:
            return _NO_ARG[name]()
        if arg is not None and name in _WITH_ARG:
            return _WITH_ARG[name](int(arg))
    raise ValueError(f"unknown partition transform {s!r}")
