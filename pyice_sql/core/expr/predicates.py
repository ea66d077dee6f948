"""Boolean filter expressions over Iceberg columns, unbound (by name) and bound (by field id).

Planning needs one filter language that pruning code (projection, metrics and manifest
evaluators) can reason about without Spark. Literals are always the internal values of
`pyice_sql.core.model.conversions` (dates as days, timestamps as µs, ...).

Semantics are two-valued so that NOT is plain negation and `rewrite_not` is exact:

- a null value satisfies only `is_null`, `not_nan`, `!=`, `not_in` and `not_starts_with`;
- a NaN satisfies only `is_nan`, `not_null`, `!=` and `not_in` (it never compares < = > to
  anything, as in Iceberg's metrics evaluators).

SQL's three-valued logic is translated into this form by `pyice_sql.core.expr.from_sql` (for
example `p <> 'a'` becomes `p IS NOT NULL AND p != 'a'`).
"""
from __future__ import annotations

import datetime as dt
import math
import uuid
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Iterable

from pyice_sql.core.model.conversions import LiteralMismatch, conversion, to_python
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.types import IcebergType, PrimitiveType, is_floating, is_primitive


class Op(str, Enum):
    """Predicate operators; the values are the operator names `Transform.project_*` speak."""

    IS_NULL = "is_null"
    NOT_NULL = "not_null"
    IS_NAN = "is_nan"
    NOT_NAN = "not_nan"
    LT = "<"
    LT_EQ = "<="
    GT = ">"
    GT_EQ = ">="
    EQ = "="
    NOT_EQ = "!="
    IN = "in"
    NOT_IN = "not_in"
    STARTS_WITH = "starts_with"
    NOT_STARTS_WITH = "not_starts_with"

    def __str__(self) -> str:
        return self.value


UNARY_OPS = frozenset({Op.IS_NULL, Op.NOT_NULL, Op.IS_NAN, Op.NOT_NAN})
SET_OPS = frozenset({Op.IN, Op.NOT_IN})
# Operators a null or NaN value satisfies (besides the null/NaN tests themselves).
_TRUE_FOR_MISSING = frozenset({Op.NOT_EQ, Op.NOT_IN, Op.NOT_STARTS_WITH})

_NEGATION = {
    Op.IS_NULL: Op.NOT_NULL, Op.IS_NAN: Op.NOT_NAN, Op.LT: Op.GT_EQ, Op.LT_EQ: Op.GT, Op.EQ: Op.NOT_EQ,
    Op.IN: Op.NOT_IN, Op.STARTS_WITH: Op.NOT_STARTS_WITH,
}
_NEGATION.update({v: k for k, v in list(_NEGATION.items())})



class Expression:
    """Base of the expression tree; `&`, `|` and `~` build simplified And/Or/Not nodes."""

    def __and__(self, other: "Expression") -> "Expression":
        return And(self, other)

    def __or__(self, other: "Expression") -> "Expression":
        return Or(self, other)

    def __invert__(self) -> "Expression":
        return Not(self)


class _Constant(Expression):
    """A constant filter; each subclass is a singleton, so `is` comparisons work."""

    _instance: "_Constant | None" = None
    _text = ""

    def __new__(cls) -> "_Constant":
        if cls.__dict__.get("_instance") is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class AlwaysTrue(_Constant):
    """The constant true filter."""

    _text = "true"


class AlwaysFalse(_Constant):
    """The constant false filter."""

    _text = "false"


class _Junction(Expression):
    """And / Or: the constructor simplifies constants (the `_absorbing` one wins, the `_neutral`
    one drops out, as does a repeated operand) and flattens extra operands left-deep."""

    left: Expression
    right: Expression
    _absorbing: type[_Constant]
    _neutral: type[_Constant]
    _word: str

    def __new__(cls, left: Expression, right: Expression, *rest: Expression) -> Expression:  # type: ignore[misc]
        if rest:
            return cls(cls(left, right), *rest)
        if isinstance(left, cls._absorbing) or isinstance(right, cls._absorbing):
            return cls._absorbing()
        if isinstance(left, cls._neutral) or left == right:
            return right
        if isinstance(right, cls._neutral):
            return left
        node = super().__new__(cls)
        node.left, node.right = left, right
        return node

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and (self.left, self.right) == (other.left, other.right)

    def __hash__(self) -> int:
        return hash((self._word, self.left, self.right))

    def __str__(self) -> str:
        return f"({self.left} {self._word} {self.right})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.left!r}, {self.right!r})"


class And(_Junction):
    """Conjunction: false absorbs, true drops out."""

    _absorbing, _neutral, _word = AlwaysFalse, AlwaysTrue, "AND"


class Or(_Junction):
    """Disjunction: true absorbs, false drops out."""

    _absorbing, _neutral, _word = AlwaysTrue, AlwaysFalse, "OR"


class Not(Expression):
    """Negation; constants flip and double negation cancels at construction."""

    child: Expression

    def __new__(cls, child: Expression) -> Expression:  # type: ignore[misc]
        if isinstance(child, AlwaysTrue):
            return AlwaysFalse()
        if isinstance(child, AlwaysFalse):
            return AlwaysTrue()
        if isinstance(child, Not):
            return child.child
        node = super().__new__(cls)
        node.child = child
        return node

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Not) and self.child == other.child

    def __hash__(self) -> int:
        return hash(("not", self.child))

    def __str__(self) -> str:
        return f"NOT {self.child}"

    def __repr__(self) -> str:
        return f"Not({self.child!r})"


@dataclass(frozen=True)
class Ref:
    """A column named in an unbound predicate (a dotted path for struct members)."""

    name: str

    def __str__(self) -> str:
        return self.name


def _normalise_values(op: Op, values: Iterable[Any]) -> tuple[Any, ...]:
    """Dedupe set literals and sort them when possible, so equal predicates compare equal."""
    vals = tuple(values)
    if op not in SET_OPS:
        return vals
    unique = tuple(dict.fromkeys(vals))
    try:
        return tuple(sorted(unique))
    except TypeError:
        return unique


def _check_arity(op: Op, values: tuple[Any, ...]) -> None:
    if op in UNARY_OPS and values:
        raise ValueError(f"{op} takes no literal")
    if op not in UNARY_OPS and op not in SET_OPS and len(values) != 1:
        raise ValueError(f"{op} takes exactly one literal, got {len(values)}")


class _Leaf(Expression):
    """What unbound and bound predicates share: the operator and its literals, checked on creation."""

    op: Op
    values: tuple[Any, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "op", Op(self.op))
        object.__setattr__(self, "values", _normalise_values(self.op, self.values))
        _check_arity(self.op, self.values)

    @property
    def value(self) -> Any:
        return self.values[0]


@dataclass(frozen=True)
class Predicate(_Leaf):
    """An unbound predicate on a column name; `bind` resolves it against a schema."""

    op: Op
    ref: Ref
    values: tuple[Any, ...] = ()

    def __str__(self) -> str:
        return _render(self.op, self.ref.name, self.values, repr)


@dataclass(frozen=True)
class BoundPredicate(_Leaf):
    """A predicate on a field id with its type; `name` is kept only for display."""

    op: Op
    field_id: int
    type: IcebergType
    name: str
    values: tuple[Any, ...] = ()

    def negate(self) -> "BoundPredicate | Expression":
        """The exact complement under the two-valued semantics (nulls and NaN included)."""
        flipped = BoundPredicate(_NEGATION[self.op], self.field_id, self.type, self.name, self.values)
        if self.op not in (Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ):
            return flipped
        # NOT (x < 5) also holds for null (and NaN) x, which x >= 5 does not.
        missing: Expression = BoundPredicate(Op.IS_NULL, self.field_id, self.type, self.name)
        if is_floating(self.type):
            missing = Or(missing, BoundPredicate(Op.IS_NAN, self.field_id, self.type, self.name))
        return Or(flipped, missing)

    def __str__(self) -> str:
        return _render(self.op, self.name, self.values, lambda v: _format_literal(self.type, v))


def _render(op: Op, name: str, values: tuple[Any, ...], fmt: Callable[[Any], str]) -> str:
    if op == Op.IS_NULL:
        return f"{name} IS NULL"
    if op == Op.NOT_NULL:
        return f"{name} IS NOT NULL"
    if op == Op.IS_NAN:
        return f"isnan({name})"
    if op == Op.NOT_NAN:
        return f"NOT isnan({name})"
    if op in SET_OPS:
        keyword = "IN" if op == Op.IN else "NOT IN"
        return f"{name} {keyword} ({', '.join(fmt(v) for v in values)})"
    if op == Op.STARTS_WITH:
        return f"{name} STARTS WITH {fmt(values[0])}"
    if op == Op.NOT_STARTS_WITH:
        return f"{name} NOT STARTS WITH {fmt(values[0])}"
    return f"{name} {op.value} {fmt(values[0])}"


def _format_literal(t: IcebergType, v: Any) -> str:
    """Show a literal as SQL would, so EXPLAIN output reads as dates, not day counts."""
    py = to_python(t, v)
    if isinstance(py, dt.datetime):
        text = py.replace(tzinfo=None).isoformat(sep=" ")
        return f"TIMESTAMP '{text}'"
    if isinstance(py, dt.date):
        return f"DATE '{py.isoformat()}'"
    if isinstance(py, dt.time):
        return f"TIME '{py.isoformat()}'"
    if isinstance(py, (str, uuid.UUID)):
        return "'" + str(py).replace("'", "''") + "'"
    if isinstance(py, bytes):
        return f"X'{py.hex().upper()}'"
    if isinstance(py, bool):
        return "TRUE" if py else "FALSE"
    return str(py)


# --- unbound predicate constructors --------------------------------------------------------------


def is_null(name: str) -> Predicate:
    return Predicate(Op.IS_NULL, Ref(name))


def not_null(name: str) -> Predicate:
    return Predicate(Op.NOT_NULL, Ref(name))


def is_nan(name: str) -> Predicate:
    return Predicate(Op.IS_NAN, Ref(name))


def not_nan(name: str) -> Predicate:
    return Predicate(Op.NOT_NAN, Ref(name))


def lt(name: str, value: Any) -> Predicate:
    return Predicate(Op.LT, Ref(name), (value,))


def lt_eq(name: str, value: Any) -> Predicate:
    return Predicate(Op.LT_EQ, Ref(name), (value,))


def gt(name: str, value: Any) -> Predicate:
    return Predicate(Op.GT, Ref(name), (value,))


def gt_eq(name: str, value: Any) -> Predicate:
    return Predicate(Op.GT_EQ, Ref(name), (value,))


def eq(name: str, value: Any) -> Predicate:
    return Predicate(Op.EQ, Ref(name), (value,))


def not_eq(name: str, value: Any) -> Predicate:
    return Predicate(Op.NOT_EQ, Ref(name), (value,))


def in_(name: str, values: Iterable[Any]) -> Predicate:
    return Predicate(Op.IN, Ref(name), tuple(values))


def not_in(name: str, values: Iterable[Any]) -> Predicate:
    return Predicate(Op.NOT_IN, Ref(name), tuple(values))


def starts_with(name: str, prefix: str) -> Predicate:
    return Predicate(Op.STARTS_WITH, Ref(name), (prefix,))


def not_starts_with(name: str, prefix: str) -> Predicate:
    return Predicate(Op.NOT_STARTS_WITH, Ref(name), (prefix,))


# --- binding -------------------------------------------------------------------------------------



def _bind_literal(t: IcebergType, v: Any, pred: Predicate) -> Any:
    """Check that `v` is an internal value of `t` (ints widened to float/Decimal where exact)."""
    if v is None:
        raise ValueError(f"cannot bind {pred}: literal {v!r} is null; use is_null/not_null for column type {t}")
    try:
        return conversion(t).check_literal(t, v)
    except LiteralMismatch as e:
        raise ValueError(f"cannot bind {pred}: literal {v!r} {e} for column type {t}") from None


def _bind_predicate(pred: Predicate, schema: Schema, case_sensitive: bool) -> Expression:
    field = schema.find_field(pred.ref.name, case_sensitive)
    if field is None:
        known = ", ".join(schema.column_names())
        raise ValueError(f"cannot bind {pred}: unknown column {pred.ref.name!r} (columns: {known})")
    t = field.type
    if not is_primitive(t):
        raise ValueError(f"cannot bind {pred}: column {pred.ref.name!r} has non-primitive type {t}")
    op = pred.op
    if op in (Op.IS_NAN, Op.NOT_NAN) and not is_floating(t):
        raise ValueError(f"cannot bind {pred}: {op} needs a float or double column, not {t}")
    if op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH) and t != PrimitiveType("string"):
        raise ValueError(f"cannot bind {pred}: {op} needs a string column, not {t}")
    # A required field inside an optional struct is NULL wherever its struct is: only a field
    # required all the way down is never NULL.
    parts = pred.ref.name.split(".")
    never_null = all(schema.find_field(".".join(parts[:i]), case_sensitive).required for i in range(1, len(parts) + 1))
    if never_null and op == Op.IS_NULL:
        return AlwaysFalse()
    if never_null and op == Op.NOT_NULL:
        return AlwaysTrue()
    values = tuple(_bind_literal(t, v, pred) for v in pred.values)
    if op in SET_OPS:
        if not values:
            return AlwaysFalse() if op == Op.IN else AlwaysTrue()
        if len(set(values)) == 1:
            op = Op.EQ if op == Op.IN else Op.NOT_EQ
            values = values[:1]
    return BoundPredicate(op, field.field_id, t, pred.ref.name, values)


def bind(expr: Expression, schema: Schema, case_sensitive: bool = False) -> Expression:
    """Resolve column names to field ids and check literals against the column types.

    Raises:
        ValueError: an unknown column, a struct/list/map column, or a literal of the wrong form.
    """
    if isinstance(expr, Predicate):
        return _bind_predicate(expr, schema, case_sensitive)
    if isinstance(expr, And):
        return And(bind(expr.left, schema, case_sensitive), bind(expr.right, schema, case_sensitive))
    if isinstance(expr, Or):
        return Or(bind(expr.left, schema, case_sensitive), bind(expr.right, schema, case_sensitive))
    if isinstance(expr, Not):
        return Not(bind(expr.child, schema, case_sensitive))
    return expr


# --- rewriting and inspection --------------------------------------------------------------------


def rewrite_not(expr: Expression) -> Expression:
    """Push every NOT down into the predicates, so evaluators only see And/Or/leaves.

    Unbound predicates cannot be negated exactly (the column type decides whether NaN needs
    care), so bind first.
    """
    if isinstance(expr, And):
        return And(rewrite_not(expr.left), rewrite_not(expr.right))
    if isinstance(expr, Or):
        return Or(rewrite_not(expr.left), rewrite_not(expr.right))
    if not isinstance(expr, Not):
        return expr
    child = expr.child
    if isinstance(child, And):
        return Or(rewrite_not(Not(child.left)), rewrite_not(Not(child.right)))
    if isinstance(child, Or):
        return And(rewrite_not(Not(child.left)), rewrite_not(Not(child.right)))
    if isinstance(child, BoundPredicate):
        return child.negate()
    raise ValueError(f"cannot rewrite NOT over unbound {child}; bind the expression first")


def referenced_field_ids(expr: Expression) -> set[int]:
    """Field ids a bound expression reads (to know which columns' metrics matter)."""
    if isinstance(expr, BoundPredicate):
        return {expr.field_id}
    if isinstance(expr, (And, Or)):
        return referenced_field_ids(expr.left) | referenced_field_ids(expr.right)
    if isinstance(expr, Not):
        return referenced_field_ids(expr.child)
    return set()


def visit(expr: Expression, leaf: Callable[[BoundPredicate], bool]) -> bool:
    """Evaluate a NOT-free bound tree, with `leaf` deciding each predicate (short-circuiting)."""
    if isinstance(expr, AlwaysTrue):
        return True
    if isinstance(expr, AlwaysFalse):
        return False
    if isinstance(expr, And):
        return visit(expr.left, leaf) and visit(expr.right, leaf)
    if isinstance(expr, Or):
        return visit(expr.left, leaf) or visit(expr.right, leaf)
    if isinstance(expr, BoundPredicate):
        return leaf(expr)
    raise ValueError(f"cannot evaluate {expr!r}: bind it and rewrite NOT first")


def is_nan_value(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def matches_value(op: Op, values: tuple[Any, ...], v: Any) -> bool:
    """Whether one value satisfies a predicate, under the module's two-valued semantics."""
    if op == Op.IS_NULL:
        return v is None
    if op == Op.NOT_NULL:
        return v is not None
    if op == Op.IS_NAN:
        return is_nan_value(v)
    if op == Op.NOT_NAN:
        return not is_nan_value(v)
    if v is None or is_nan_value(v):
        return op in _TRUE_FOR_MISSING
    lit = values[0] if values else None
    if op == Op.LT:
        return bool(v < lit)
    if op == Op.LT_EQ:
        return bool(v <= lit)
    if op == Op.GT:
        return bool(v > lit)
    if op == Op.GT_EQ:
        return bool(v >= lit)
    if op == Op.EQ:
        return bool(v == lit)
    if op == Op.NOT_EQ:
        return bool(v != lit)
    if op == Op.IN:
        return v in values
    if op == Op.NOT_IN:
        return v not in values
    if op == Op.STARTS_WITH:
        return bool(v.startswith(lit))
    return not v.startswith(lit)


def evaluate_row(expr: Expression, row: dict[int, Any]) -> bool:
    """Evaluate a bound expression on one row keyed by field id (absent ids read as null)."""
    return visit(rewrite_not(expr), lambda p: matches_value(p.op, p.values, row.get(p.field_id)))
