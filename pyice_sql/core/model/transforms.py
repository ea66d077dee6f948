"""Partition transforms: identity, bucket[N], truncate[W], year, month, day, hour and void.

Each transform is a frozen value (parsed from and printed as the spec string) that knows, for
one source type:

* `apply`: the partition value of an internal source value (see `conversions`), exactly as
  Iceberg Java computes it, because readers prune files by these values;
* `to_human_string`: the value as it appears in partition paths;
* `project_inclusive` / `project_strict`: how a predicate on the source column becomes a
  predicate on the partition value, for partition pruning and metadata-only deletes.

Predicates are passed as an operator name from `OPS` plus a tuple of internal literal values
(empty for unary operators, one value for comparisons, several for `in`/`not_in`). Time
transforms need the source type to tell a date (days) from a timestamp (µs), so every method
that evaluates values accepts `source`. The bucket hash lives in `hashing`, calendar arithmetic
and Java's value formats in `calendar`, the Spark SQL text of each transform in
`pyice_sql.spark.write.partition_sql`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import Any, Callable, ClassVar, Iterable, Sequence

from pyice_sql.core.model.calendar import EPOCH_YEAR, civil_from_days, human_day, human_value
from pyice_sql.core.model.conversions import MICROS_PER_DAY, decimal_from_unscaled, decimal_scale, decimal_unscaled
from pyice_sql.core.model.hashing import bucket_bytes, murmur3_32
from pyice_sql.core.model.types import (
    DATE, INT, DecimalType, IcebergType, is_primitive, type_kind,
)

UNARY_OPS = frozenset({"is_null", "not_null", "is_nan", "not_nan"})
SET_OPS = frozenset({"in", "not_in"})
OPS = UNARY_OPS | SET_OPS | frozenset({"<", "<=", ">", ">=", "=", "!=", "starts_with", "not_starts_with"})

# `expr.predicates.Op` spells comparisons as words; both spellings are accepted and answered in kind.
_WORD_TO_SYMBOL = {"lt": "<", "lt_eq": "<=", "gt": ">", "gt_eq": ">=", "eq": "=", "not_eq": "!="}
_SYMBOL_TO_WORD = {v: k for k, v in _WORD_TO_SYMBOL.items()}

Projection = tuple[str, tuple[Any, ...]]

MICROS_PER_HOUR = 3_600_000_000


# ---------------------------------------------------------------------------------------------
# projection helpers


def _unique(values: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(values))


# Comparisons on a truncated string/binary value: inclusive (closed) and strict (open) forms.
_TEXT_INCLUSIVE = {"<": "<=", "<=": "<=", ">": ">=", ">=": ">=", "=": "="}
_TEXT_STRICT = {"<": "<", "<=": "<", ">": ">", ">=": ">", "!=": "!="}


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

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        """A partition value as Java prints it in data file paths (`null` for None)."""
        return human_value(value, None)

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

    def check_source(self, source: IcebergType | None) -> IcebergType:
        """`source`, or ValueError when this transform cannot take it."""
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

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        return human_value(value, source)

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
        return type_kind(source) in _BUCKET_SOURCES

    def result_type(self, source: IcebergType | None) -> IcebergType:
        return INT

    def apply(self, value: Any, source: IcebergType | None = None) -> Any:
        if value is None:
            return None
        return (murmur3_32(bucket_bytes(value, source)) & 0x7FFFFFFF) % self.num_buckets

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
        return type_kind(source) in _TRUNCATE_SOURCES

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
            bits = {"int": 32, "long": 64}.get(type_kind(source))
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

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        return human_value(value, source)

    @staticmethod
    def _step(values: tuple[Any, ...], source: IcebergType | None) -> Callable[[Any, int], Any]:
        if isinstance(source, DecimalType) or any(isinstance(v, Decimal) for v in values):
            return _decimal_step(source)
        return _int_step

    def _is_text(self, values: tuple[Any, ...], source: IcebergType | None) -> bool:
        if source is not None:
            return type_kind(source) in ("string", "binary")
        return bool(values) and isinstance(values[0], (str, bytes, bytearray, memoryview))

    def _inclusive(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        if not self._is_text(values, source):
            fn = partial(self.apply, source=source)
            return _project_ordered_inclusive(op, values, fn, self._step(values, source))
        return self._project_text(op, values, source, strict=False)

    def _strict(self, op: str, values: tuple[Any, ...], source: IcebergType | None) -> Projection | None:
        if not self._is_text(values, source):
            fn = partial(self.apply, source=source)
            return _project_ordered_strict(op, values, fn, self._step(values, source))
        return self._project_text(op, values, source, strict=True)

    def _project_text(self, op: str, values: tuple[Any, ...], source: IcebergType | None,
                      strict: bool) -> Projection | None:
        """Prefix projection of a string/binary predicate; `strict` keeps only what the prefix proves.

        A prefix cannot decide < or >: inclusively both sides close (x < v only implies
        trunc(x) <= trunc(v)), strictly they open (trunc(x) < trunc(v) implies x < v).
        """
        fn = partial(self.apply, source=source)
        if op in ("starts_with", "not_starts_with"):
            lit = values[0]
            if len(lit) < self.width:
                return op, (lit,)
            if len(lit) == self.width:
                return ("=" if op == "starts_with" else "!="), (lit,)
            kept = "not_starts_with" if strict else "starts_with"
            return (op, (fn(lit),)) if op == kept else None
        text_ops = _TEXT_STRICT if strict else _TEXT_INCLUSIVE
        set_op = "not_in" if strict else "in"
        if op == set_op:
            return set_op, _unique(fn(v) for v in values)
        return (text_ops[op], (fn(values[0]),)) if op in text_ops else None


@dataclass(frozen=True)
class _TimeTransform(Transform):
    """Shared logic of year/month/day/hour: floor of UTC (or wall-clock) time since the epoch."""

    sources: ClassVar[frozenset[str]] = frozenset({"date", "timestamp", "timestamptz"})

    def can_transform(self, source: IcebergType) -> bool:
        return type_kind(source) in self.sources

    def result_type(self, source: IcebergType | None) -> IcebergType:
        return INT

    def _is_date(self, source: IcebergType | None) -> bool:
        if source is None:
            raise ValueError(f"{self} needs the source type to tell days (date) from µs (timestamp)")
        return type_kind(self.check_source(source)) == "date"

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
        return civil_from_days(days)[0] - EPOCH_YEAR

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        return "null" if value is None else f"{EPOCH_YEAR + value:04d}"


@dataclass(frozen=True)
class Month(_TimeTransform):
    """Months since 1970-01."""

    def __str__(self) -> str:
        return "month"

    def _from_days(self, days: int) -> int:
        y, m, _ = civil_from_days(days)
        return (y - EPOCH_YEAR) * 12 + m - 1

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        if value is None:
            return "null"
        y, m = divmod(value, 12)
        return f"{EPOCH_YEAR + y:04d}-{m + 1:02d}"


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

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        return "null" if value is None else human_day(value)


@dataclass(frozen=True)
class Hour(_TimeTransform):
    """Hours since 1970-01-01T00:00; timestamps only."""

    sources: ClassVar[frozenset[str]] = frozenset({"timestamp", "timestamptz"})

    def __str__(self) -> str:
        return "hour"

    def _is_date(self, source: IcebergType | None) -> bool:
        if source is not None:
            self.check_source(source)
        return False

    def _from_micros(self, micros: int) -> int:
        return micros // MICROS_PER_HOUR

    def to_human_string(self, value: Any, source: IcebergType | None = None) -> str:
        if value is None:
            return "null"
        days, hour = divmod(value, 24)
        return f"{human_day(days)}-{hour:02d}"


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
