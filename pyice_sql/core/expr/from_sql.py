"""Translate a Spark SQL condition (a sqlglot tree) into a pruning predicate on target columns.

SQL keeps a row only when its condition is TRUE; NULL and FALSE both drop it. The predicate
language is two-valued (see `predicates`), so each SQL node is translated twice over: into
"this is TRUE" and "this is FALSE", and NOT swaps the two. For example `p <> 'a'` is TRUE only
for non-null p, giving `p IS NOT NULL AND p != 'a'`, so a strict projection never claims a
partition with null p matches.

What cannot be translated (other tables' columns, functions, subqueries, literals that do not
convert exactly to the column type, struct/list/map columns, anything that would not bind to
the schema) is approximated in the mode's safe direction: AlwaysTrue for `inclusive` (may keep
too much), AlwaysFalse for `strict` (may claim too little). The approximation is applied to
the TRUE/FALSE form, never negated, so it stays sound under NOT. So pruning never turns a
valid statement into an error: what it cannot use is left to Spark.

Fields nested in structs (`t.addr.city`) are translated as Iceberg binds them, by their dotted
path (`addr.city`); `target_columns` resolves a column reference to that path as Spark does.

A timestamp without an offset names the wall clock of the session's time zone (`zone`, Spark's
`spark.sql.session.timeZone`), as Spark reads it: a TIMESTAMP literal, a string or DATE compared
with a `timestamptz` column. Compared with a `timestamp` (without zone) column, whose values
Spark then reads in that zone too, it keeps its wall clock where the zone has one offset, and is
left to Spark where daylight saving time makes that comparison differ around the changes.
"""
from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Literal

from sqlglot import exp

from pyice_sql.core.expr.predicates import (
    AlwaysFalse, AlwaysTrue, And, Expression, Or, Predicate, Op, Ref, bind,
)
from pyice_sql.core.model.conversions import (
    conversion, decimal_unscaled, exact_float32, sql_date, sql_timestamp, type_kind, zoned_instant,
)
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.types import IcebergType, NestedField, PrimitiveType, is_floating
from pyice_sql.core.model.zones import UTC, is_fixed_offset
from pyice_sql.core.sql.dialect import DIALECT

Mode = Literal["inclusive", "strict"]
TargetColumn = Callable[[exp.Expression], "str | None"]


class _Untranslatable(Exception):
    """Raised inside the translator for a node with no exact predicate form."""


_INTEGER = re.compile(r"^\s*[+-]?\d+\s*$")
_DECIMAL = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)\s*$")
_LIKE_SPECIAL = re.compile(r"[%_\\]")
_INT_CAST_BITS = {exp.DataType.Type.TINYINT: 8, exp.DataType.Type.SMALLINT: 16, exp.DataType.Type.INT: 32,
                  exp.DataType.Type.BIGINT: 64}

# SQL comparison node -> (operator when the column is on the left, operator after swapping sides)
_COMPARISONS: dict[type, tuple[Op, Op]] = {
    exp.EQ: (Op.EQ, Op.EQ), exp.NEQ: (Op.NOT_EQ, Op.NOT_EQ), exp.LT: (Op.LT, Op.GT),
    exp.LTE: (Op.LT_EQ, Op.GT_EQ), exp.GT: (Op.GT, Op.LT), exp.GTE: (Op.GT_EQ, Op.LT_EQ),
}
# On non-null operands SQL comparisons form a total order, so "x op c is FALSE" is "x op' c is TRUE".
_SQL_NEGATION = {Op.EQ: Op.NOT_EQ, Op.NOT_EQ: Op.EQ, Op.LT: Op.GT_EQ, Op.GT_EQ: Op.LT,
                 Op.LT_EQ: Op.GT, Op.GT: Op.LT_EQ}


def split_conjuncts(cond: exp.Expression) -> list[exp.Expression]:
    """The AND-ed parts of a condition (parentheses looked through), in order."""
    while isinstance(cond, exp.Paren):
        cond = cond.this
    if isinstance(cond, exp.And):
        return split_conjuncts(cond.this) + split_conjuncts(cond.expression)
    return [cond]


def column_path(node: exp.Expression) -> tuple[str, ...] | None:
    """The name parts of a column reference (`cat.db.t.c.x`, however sqlglot split it), or None."""
    names: list[str] = []
    while isinstance(node, exp.Dot):
        if not isinstance(node.expression, exp.Identifier):
            return None
        names.insert(0, node.expression.name)
        node = node.this
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        return None
    return tuple(p.name for p in node.parts) + tuple(names)


def target_columns(schema: Schema, qualifiers: list[tuple[str, ...]], other_qualifiers: set[str] = frozenset(),
                   shadowed: set[str] = frozenset()) -> TargetColumn:
    """Resolve column references to the target's field paths (`c` or `c.x`), with Spark's rules.

    `qualifiers`: the name parts that may qualify the target's columns (its alias, or its name
    with any prefix of `catalog.db`), lowercase. A reference whose leading parts are a qualifier
    is that table's column (then nested fields); otherwise its first part is a column of the
    target, unless it names another table (`other_qualifiers`) or a column the other side has
    too (`shadowed`: not safely the target's). Names holding a dot are not resolved (the dotted
    path would misread them).
    """
    ordered = sorted({tuple(q) for q in qualifiers}, key=len, reverse=True)

    def resolve(node: exp.Expression) -> str | None:
        parts = column_path(node)
        if parts is None or any("." in p for p in parts):
            return None
        lowered = tuple(p.lower() for p in parts)
        rest = next((parts[len(q):] for q in ordered if len(q) < len(parts) and lowered[:len(q)] == q), None)
        if rest is None:
            if (lowered[0] in other_qualifiers and len(parts) > 1) or lowered[0] in shadowed:
                return None
            rest = parts
        field = schema.find_field(".".join(rest))
        if field is None:
            return None
        path, struct = [], schema.struct
        for name in rest:
            child = struct.field_by_name(name)
            path.append(child.name)
            struct = child.type
        return ".".join(path)
    return resolve


def to_predicate(cond: exp.Expression, is_target_column: TargetColumn, schema: Schema,
                 mode: Mode = "inclusive", case_sensitive: bool = False, zone: dt.tzinfo | None = UTC) -> Expression:
    """An unbound predicate over target columns implied by (inclusive) or implying (strict) `cond`.

    `is_target_column` names the target column a sqlglot column refers to, or returns None for
    columns of other tables; `schema` (the target's) gives the column types literals convert to;
    `zone` is the session's time zone (`zones.session_zone`; None, unknown: timestamps without an
    offset are left to Spark).
    """
    if mode not in ("inclusive", "strict"):
        raise ValueError(f"mode must be 'inclusive' or 'strict', not {mode!r}")
    return _Translator(is_target_column, schema, mode, case_sensitive, zone).when(cond, True)


class _Translator:
    def __init__(self, is_target_column: TargetColumn, schema: Schema, mode: Mode, case_sensitive: bool,
                 zone: dt.tzinfo | None) -> None:
        self.is_target_column = is_target_column
        self.schema = schema
        self.unknown: Expression = AlwaysTrue() if mode == "inclusive" else AlwaysFalse()
        self.case_sensitive = case_sensitive
        self.zone = zone

    def when(self, node: exp.Expression, truth: bool) -> Expression:
        """Rows where `node` evaluates to `truth` (TRUE or FALSE, never NULL)."""
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, exp.And):
            parts = self.when(node.this, truth), self.when(node.expression, truth)
            return And(*parts) if truth else Or(*parts)
        if isinstance(node, exp.Or):
            parts = self.when(node.this, truth), self.when(node.expression, truth)
            return Or(*parts) if truth else And(*parts)
        if isinstance(node, exp.Not):
            return self.when(node.this, not truth)
        if isinstance(node, exp.Boolean):
            return AlwaysTrue() if node.this == truth else AlwaysFalse()
        if isinstance(node, exp.Null):
            return AlwaysFalse()
        try:
            leaf = self._leaf(node, truth)
            bind(leaf, self.schema, self.case_sensitive)  # what would not bind cannot prune
        except (_Untranslatable, ValueError):
            return self.unknown
        return leaf

    # --- leaves ----------------------------------------------------------------------------------

    def _leaf(self, node: exp.Expression, truth: bool) -> Expression:
        if node.args.get("negate"):
            truth = not truth
        if isinstance(node, exp.Between):
            if node.args.get("symmetric"):
                raise _Untranslatable
            col = node.this
            return self.when(exp.and_(exp.GTE(this=col.copy(), expression=node.args["low"].copy()),
                                      exp.LTE(this=col.copy(), expression=node.args["high"].copy())), truth)
        if isinstance(node, exp.Is):
            name, _ = self._column(node.this)
            if not isinstance(node.expression, exp.Null):
                raise _Untranslatable
            return Predicate(Op.IS_NULL if truth else Op.NOT_NULL, Ref(name))
        if isinstance(node, tuple(_COMPARISONS)):
            return self._comparison(node, truth)
        if isinstance(node, (exp.NullSafeEQ, exp.NullSafeNEQ)):
            return self._null_safe(node, truth)
        if isinstance(node, exp.In):
            return self._in(node, truth)
        if isinstance(node, exp.Like):
            return self._like(node, truth)
        if isinstance(node, (exp.Column, exp.Dot)):
            name, field = self._column(node)
            if field.type != PrimitiveType("boolean"):
                raise _Untranslatable
            return Predicate(Op.EQ, Ref(name), (truth,))
        raise _Untranslatable

    def _column(self, node: exp.Expression) -> tuple[str, NestedField]:
        """The target field a column reference names; only primitive fields have pruning metrics."""
        while isinstance(node, exp.Paren):
            node = node.this
        if not isinstance(node, (exp.Column, exp.Dot)):
            raise _Untranslatable
        name = self.is_target_column(node)
        if name is None:
            raise _Untranslatable
        field = self.schema.find_field(name, self.case_sensitive)
        if field is None or not field.type.is_primitive:
            raise _Untranslatable
        return name, field

    def _sides(self, node: exp.Expression) -> tuple[str, NestedField, exp.Expression, bool]:
        """(column name, field, literal side, swapped) of a binary node with one target column."""
        try:
            return (*self._column(node.this), node.expression, False)
        except _Untranslatable:
            return (*self._column(node.expression), node.this, True)

    def _comparison(self, node: exp.Expression, truth: bool) -> Expression:
        name, field, lit_node, swapped = self._sides(node)
        plain, flipped = _COMPARISONS[type(node)]
        op = flipped if swapped else plain
        value = _literal(lit_node, self.zone)
        if value is None:
            return AlwaysFalse()  # comparing with NULL is never TRUE nor FALSE
        return self._compare(name, field, op if truth else _SQL_NEGATION[op], value)

    def _compare(self, name: str, field: NestedField, op: Op, value: Any) -> Expression:
        """`name op value` is TRUE, with Spark's ordering: NaN equals NaN and exceeds every number."""
        lit = _convert(field.type, value, self.zone)
        ref = Ref(name)
        pred = Predicate(op, ref, (lit,))
        if op == Op.NOT_EQ:
            return And(Predicate(Op.NOT_NULL, ref), pred)
        if op in (Op.GT, Op.GT_EQ) and is_floating(field.type):
            return Or(pred, Predicate(Op.IS_NAN, ref))
        return pred

    def _null_safe(self, node: exp.Expression, truth: bool) -> Expression:
        """`<=>` is never NULL: equal values or both null."""
        name, field, lit_node, _ = self._sides(node)
        if isinstance(node, exp.NullSafeNEQ):
            truth = not truth
        value = _literal(lit_node, self.zone)
        ref = Ref(name)
        if value is None:
            return Predicate(Op.IS_NULL if truth else Op.NOT_NULL, ref)
        lit = _convert(field.type, value, self.zone)
        return Predicate(Op.EQ if truth else Op.NOT_EQ, ref, (lit,))

    def _in(self, node: exp.In, truth: bool) -> Expression:
        if node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            raise _Untranslatable
        name, field = self._column(node.this)
        raw = [_literal(e, self.zone) for e in node.expressions]
        values = [_convert(field.type, v, self.zone) for v in raw if v is not None]
        ref = Ref(name)
        if truth:
            return Predicate(Op.IN, ref, tuple(values))
        if len(values) < len(raw):
            return AlwaysFalse()  # x NOT IN (..., NULL) is never TRUE
        return And(Predicate(Op.NOT_NULL, ref), Predicate(Op.NOT_IN, ref, tuple(values)))

    def _like(self, node: exp.Like, truth: bool) -> Expression:
        """`LIKE 'abc%'` is a prefix test; a pattern without wildcards is equality."""
        if node.args.get("escape") is not None:
            raise _Untranslatable
        name, field = self._column(node.this)
        pattern = _literal(node.expression, self.zone)
        if field.type != PrimitiveType("string") or not isinstance(pattern, str):
            raise _Untranslatable
        prefix = pattern.rstrip("%")
        if _LIKE_SPECIAL.search(prefix):
            raise _Untranslatable
        ref = Ref(name)
        if prefix == pattern:
            return self._compare(name, field, Op.EQ if truth else Op.NOT_EQ, pattern)
        if not prefix:
            return Predicate(Op.NOT_NULL, ref) if truth else AlwaysFalse()
        if truth:
            return Predicate(Op.STARTS_WITH, ref, (prefix,))
        return And(Predicate(Op.NOT_NULL, ref), Predicate(Op.NOT_STARTS_WITH, ref, (prefix,)))


# --- literals ------------------------------------------------------------------------------------


def _number(text: str) -> int | Decimal | float:
    """Spark's literal typing: integers, exact decimals (1.5), doubles only with an exponent (1e3)."""
    if _INTEGER.match(text):
        return int(text)
    if _DECIMAL.match(text):
        return Decimal(text.strip())
    try:
        return float(text)
    except ValueError:
        raise _Untranslatable from None


def _literal(node: exp.Expression, zone: dt.tzinfo | None) -> Any:
    """The Python value of a constant SQL expression (None for NULL); raises if not a constant.
    A TIMESTAMP is the instant it names (UTC-aware: `zone`, the session's, reads one without an
    offset), a TIMESTAMP_NTZ its naive wall clock."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else _number(node.this)
    if isinstance(node, exp.Neg):
        inner = _literal(node.this, zone)
        if isinstance(inner, bool) or not isinstance(inner, (int, float, Decimal)):
            raise _Untranslatable
        return -inner
    if isinstance(node, exp.Cast):  # also TryCast; Spark's CAST and typed literals
        return _cast(_literal(node.this, zone), node.to, zone)
    raise _Untranslatable


def _cast(value: Any, to: exp.DataType, zone: dt.tzinfo | None) -> Any:
    """A constant CAST, only where the result is unambiguous (else untranslatable)."""
    if value is None:
        return None
    kind = to.this
    T = exp.DataType.Type
    if kind == T.DATE:
        if isinstance(value, str):
            return _exact(sql_date, value)
    elif kind in (T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMPLTZ, T.TIMESTAMPNTZ):
        if isinstance(value, str):
            return _exact(sql_timestamp, value, kind == T.TIMESTAMPNTZ, zone)
    elif kind in _INT_CAST_BITS:
        if isinstance(value, str) and _INTEGER.match(value):
            value = int(value)
        limit = 2 ** (_INT_CAST_BITS[kind] - 1)
        if isinstance(value, int) and not isinstance(value, bool) and -limit <= value < limit:
            return value  # out of range, Spark wraps or yields NULL: untranslatable
    elif kind in (T.FLOAT, T.DOUBLE):
        if isinstance(value, (int, Decimal, float)) and not isinstance(value, bool):
            return float(value) if kind == T.DOUBLE else _float32_or_fail(float(value))
    elif kind == T.DECIMAL:
        return _decimal_cast(value, to)
    elif kind in (T.VARCHAR, T.CHAR, T.TEXT) and isinstance(value, str):
        return value
    raise _Untranslatable


def _exact(parse: Callable[..., Any], *args: Any) -> Any:
    try:
        return parse(*args)
    except ValueError:
        raise _Untranslatable from None


def _decimal_cast(value: Any, to: exp.DataType) -> Decimal:
    """CAST to DECIMAL(p, s); only values already at most `s` digits after the point (no rounding)."""
    if isinstance(value, bool):
        raise _Untranslatable
    try:
        d = Decimal(value.strip()) if isinstance(value, str) else Decimal(value)
    except (InvalidOperation, TypeError):
        raise _Untranslatable from None
    params = [int(p.this.this) for p in to.expressions]
    precision, scale = (params + [10, 0][len(params):])[:2]  # Spark's DECIMAL is DECIMAL(10,0)
    try:
        unscaled = decimal_unscaled(d, scale)
    except ValueError:
        raise _Untranslatable from None  # Spark would round
    if len(str(abs(unscaled))) > precision:
        raise _Untranslatable  # Spark yields NULL on overflow
    return d


def _float32_or_fail(v: float) -> float:
    try:
        return exact_float32(v)
    except ValueError:
        raise _Untranslatable from None


def _convert(t: IcebergType, value: Any, zone: dt.tzinfo | None, stored: bool = False) -> Any:
    """`value` as an internal value of the column type, when Spark would compare it exactly so
    (`stored`: store it so, as a column's value). Against a `timestamptz` column a zone-less value
    (a string, a TIMESTAMP_NTZ, a DATE: its midnight) is the instant its wall clock names in
    `zone`; in a `timestamp` column an instant is its wall clock there, and is compared so only
    in a zone of one offset: Spark compares by reading the column's values in the zone, and
    daylight saving changes map two wall clocks to one instant."""
    kind = type_kind(t)
    try:
        if kind == "timestamptz" and isinstance(value, (str, dt.date)):
            value = zoned_instant(value, zone)
        elif kind == "timestamp" and isinstance(value, dt.datetime) and value.tzinfo is not None:
            if zone is None or not (stored or is_fixed_offset(zone)):
                raise _Untranslatable
            value = value.astimezone(zone).replace(tzinfo=None)
        return conversion(t).from_sql(t, value)
    except (ValueError, TypeError, ArithmeticError):
        raise _Untranslatable from None


def constant_value(node: exp.Expression, t: IcebergType, zone: dt.tzinfo | None = UTC) -> Any:
    """The internal value of type `t` a constant SQL expression stands for (None for NULL), by the
    same exact rules as predicate literals (e.g. a column DEFAULT; `zone`: the session's time zone).

    Raises:
        ValueError: `node` is not a constant, or Spark would not store it in `t` unchanged.
    """
    try:
        value = _literal(node, zone)
        return None if value is None else _convert(t, value, zone, stored=True)
    except _Untranslatable:
        raise ValueError(f"{node.sql(dialect=DIALECT)} is not a constant of type {t}") from None
