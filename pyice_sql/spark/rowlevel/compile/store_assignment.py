"""Spark's ANSI store-assignment rules for the values INSERT, MERGE and UPDATE write into columns.

Checked at plan time against the analysed type of each value, and turned into the Spark SQL
that stores it: conversions Spark refuses (string → number, number → date, boolean ↔ number,
...) are AnalysisErrors naming the column and clause; numeric conversions that can overflow
are allowed and checked at run time. Structs are rebuilt field by field, never CAST (Spark's
CAST pairs struct fields by position): UPDATE and MERGE match a struct value's fields to the
column's by name, INSERT by position (as Spark 3.5 does), and a missing or extra field is an
error. NULLs in NOT NULL fields are the writer's check (`data_writer.enforce_not_null`).
"""
from __future__ import annotations

import itertools

from pyspark.sql import DataFrame, functions as F, types as T
from sqlglot import exp

from pyice_sql.core.errors import AnalysisError, SqlPosition
from pyice_sql.core.plan.nodes import RowLevelPlan
from pyice_sql.core.sql.dialect import DIALECT, quote_identifier as _q
from pyice_sql.spark.schema import frame_schema

_INTEGRAL_RANK = {T.ByteType: 1, T.ShortType: 2, T.IntegerType: 3, T.LongType: 4}
_lambda_ids = itertools.count()


def _can_assign(src: T.DataType, dst: T.DataType) -> bool:
    """Primitive store assignment (Spark's ANSI policy)."""
    if isinstance(src, T.NullType) or src == dst:
        return True
    if isinstance(dst, (T.StringType, T.VarcharType, T.CharType)):
        return isinstance(src, T.AtomicType)
    if isinstance(src, T.NumericType) and isinstance(dst, T.NumericType):
        return True
    if isinstance(src, (T.DateType, T.TimestampType, T.TimestampNTZType)) and \
            isinstance(dst, (T.DateType, T.TimestampType, T.TimestampNTZType)):
        return True
    return isinstance(src, T.BinaryType) and isinstance(dst, T.BinaryType)


def _narrows(src: T.DataType, dst: T.DataType) -> bool:
    if not (isinstance(src, T.NumericType) and isinstance(dst, T.NumericType)) or src == dst:
        return False
    if type(dst) in _INTEGRAL_RANK:
        return type(src) not in _INTEGRAL_RANK or _INTEGRAL_RANK[type(src)] > _INTEGRAL_RANK[type(dst)]
    if isinstance(dst, T.DecimalType):
        if isinstance(src, T.DecimalType):
            return (src.precision - src.scale) > (dst.precision - dst.scale)
        return True
    return isinstance(dst, T.FloatType) and isinstance(src, (T.DoubleType, T.DecimalType))


def _shown(path: tuple[str, ...]) -> str:
    return ".".join(_q(p) for p in path)


def _string_literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _same(src: T.DataType, dst: T.DataType) -> bool:
    """Equal types once nullability is set aside: the value is stored as it is."""
    if isinstance(src, T.StructType) and isinstance(dst, T.StructType):
        return len(src.fields) == len(dst.fields) and all(
            a.name == b.name and _same(a.dataType, b.dataType) for a, b in zip(src.fields, dst.fields))
    if isinstance(src, T.ArrayType) and isinstance(dst, T.ArrayType):
        return _same(src.elementType, dst.elementType)
    if isinstance(src, T.MapType) and isinstance(dst, T.MapType):
        return _same(src.keyType, dst.keyType) and _same(src.valueType, dst.valueType)
    return src == dst


class _Store:
    """Builds the stored value of one assignment; errors name the column path and the statement."""

    def __init__(self, by_name: bool, what: str, position: SqlPosition | None) -> None:
        self.by_name, self.what, self.position = by_name, what, position

    def error(self, message: str) -> AnalysisError:
        return AnalysisError(f"{message} ({self.what})", position=self.position)

    def sql(self, value: str, src: T.DataType, dst: T.DataType, path: tuple[str, ...]) -> str:
        if isinstance(src, T.NullType) or _same(src, dst):
            return f"CAST({value} AS {dst.simpleString()})"
        if isinstance(dst, T.StructType) and isinstance(src, T.StructType):
            return self.struct(value, src, dst, path)
        if isinstance(dst, T.ArrayType) and isinstance(src, T.ArrayType):
            x = f"__e{next(_lambda_ids)}"
            return f"transform({value}, {x} -> {self.sql(x, src.elementType, dst.elementType, path + ('element',))})"
        if isinstance(dst, T.MapType) and isinstance(src, T.MapType):
            k, v = f"__k{next(_lambda_ids)}", f"__v{next(_lambda_ids)}"
            keys = self.sql(k, src.keyType, dst.keyType, path + ("key",))
            values = self.sql(v, src.valueType, dst.valueType, path + ("value",))
            return f"transform_values(transform_keys({value}, ({k}, {v}) -> {keys}), ({k}, {v}) -> {values})"
        if isinstance(src, (T.StructType, T.ArrayType, T.MapType)) or not _can_assign(src, dst):
            raise self.error(f"cannot safely cast {'.'.join(path)!r}: {src.simpleString()} to {dst.simpleString()}")
        return store_sql(value, dst.simpleString(), _narrows(src, dst), ".".join(path))

    def struct(self, value: str, src: T.StructType, dst: T.StructType, path: tuple[str, ...]) -> str:
        pairs = self.by_name_pairs(src, dst, path) if self.by_name else self.by_position_pairs(src, dst, path)
        fields = ", ".join(_string_literal(d.name) + ", "
                           + self.sql(f"({value}).{_q(s.name)}", s.dataType, d.dataType, path + (d.name,))
                           for s, d in pairs)
        return f"CASE WHEN ({value}) IS NULL THEN NULL ELSE named_struct({fields}) END"

    def by_name_pairs(self, src: T.StructType, dst: T.StructType, path: tuple[str, ...]):
        given = {f.name.lower(): f for f in src.fields}
        pairs = []
        for d in dst.fields:
            if d.name.lower() not in given:
                raise self.error(f"[INCOMPATIBLE_DATA_FOR_TABLE.CANNOT_FIND_DATA] cannot find data for the output "
                                 f"column {_shown(path + (d.name,))}")
            pairs.append((given[d.name.lower()], d))
        wanted = {d.name.lower() for d in dst.fields}
        extra = [f.name for f in src.fields if f.name.lower() not in wanted]
        if extra:
            raise self.error(f"[INCOMPATIBLE_DATA_FOR_TABLE.EXTRA_STRUCT_FIELDS] cannot write extra fields "
                             f"{', '.join(_q(e) for e in extra)} to the struct {_shown(path)}")
        return pairs

    def by_position_pairs(self, src: T.StructType, dst: T.StructType, path: tuple[str, ...]):
        if len(src.fields) < len(dst.fields):
            missing = ", ".join(_q(d.name) for d in dst.fields[len(src.fields):])
            raise self.error(f"[INCOMPATIBLE_DATA_FOR_TABLE.STRUCT_MISSING_FIELDS] struct {_shown(path)} "
                             f"missing fields: {missing}")
        if len(src.fields) > len(dst.fields):
            extra = ", ".join(_q(s.name) for s in src.fields[len(dst.fields):])
            raise self.error(f"[INCOMPATIBLE_DATA_FOR_TABLE.EXTRA_STRUCT_FIELDS] cannot write extra fields "
                             f"{extra} to the struct {_shown(path)}")
        return list(zip(src.fields, dst.fields))


def store_sql(value_sql: str, spark_type: str, checked: bool, column: str) -> str:
    """A primitive's store assignment: a cast, with an overflow check where the cast narrows (ANSI)."""
    cast = f"CAST({value_sql} AS {spark_type})"
    if not checked:
        return cast
    message = f"'value out of range for column {column} ({spark_type}) in store assignment'"
    return (f"CASE WHEN ({value_sql}) IS NOT NULL AND try_cast({value_sql} AS {spark_type}) IS NULL "
            f"THEN raise_error({message}) ELSE {cast} END")


def stored_value_sql(value_sql: str, src: T.DataType, dst: T.DataType, column: str, by_name: bool, what: str,
                     position: SqlPosition | None = None) -> str:
    """Spark SQL storing `value_sql` (of type `src`) into `column` (of type `dst`); AnalysisError if illegal."""
    return _Store(by_name, what, position).sql(value_sql, src, dst, (column,))


def known_value_types(plan: RowLevelPlan, relations: dict[str, T.StructType], name_of) -> dict[str, T.DataType]:
    """The type Spark's analysis would give each assigned value that is a literal, a plain column
    of a relation (`relations`: alias -> schema, as Spark analysed it; an unqualified column is the
    target's where the statement reads no source) or `+`, `-`, `*` over int, bigint and double
    values of those, by `name_of(clause, column)`, without that analysis: a MERGE's `SET *` and
    `INSERT *` are all such values, and so is `SET amount = amount * 2`. A column matched only by
    case, or by two columns, is left to Spark, whose resolution depends on its settings."""
    out = {}
    for k, ins in enumerate(plan.instructions):
        for column, value in ins.values.items():
            known = _value_type(plan, relations, value)
            if known is not None:
                out[name_of(k, column)] = known
    return out


# Spark widens both sides of `+`, `-`, `*` to the later of these (with or without ANSI mode); the
# narrower integers, float and decimal have rules of their own (literal narrowing, precision) left
# to its analysis
_WIDENING = (T.IntegerType, T.LongType, T.DoubleType)


def _value_type(plan: RowLevelPlan, relations: dict[str, T.StructType], value: exp.Expression) -> T.DataType | None:
    if isinstance(value, exp.Paren):
        return _value_type(plan, relations, value.this)
    if isinstance(value, (exp.Add, exp.Sub, exp.Mul)):
        sides = [_value_type(plan, relations, v) for v in (value.left, value.right)]
        ranks = [next((i for i, t in enumerate(_WIDENING) if type(side) is t), None) for side in sides]
        return None if None in ranks else _WIDENING[max(ranks)]()
    known = _literal_type(value)
    if known is None and isinstance(value, exp.Column) and not value.args.get("db"):
        schema = relations.get(value.table or (plan.target_alias if plan.source is None else ""))
        same = [f for f in schema.fields if f.name.lower() == value.name.lower()] if schema else []
        known = same[0].dataType if len(same) == 1 and same[0].name == value.name else None
    return known


def _literal_type(value: exp.Expression) -> T.DataType | None:
    """Spark's type of a string, boolean, NULL or integer literal (None: another expression)."""
    if isinstance(value, exp.Null):
        return T.NullType()
    if isinstance(value, exp.Boolean):
        return T.BooleanType()
    if not isinstance(value, exp.Literal):
        return None
    if value.is_string:
        return T.StringType()
    digits = value.this
    if not digits.isdigit():
        return None
    return T.IntegerType() if int(digits) < 2 ** 31 else T.LongType() if int(digits) < 2 ** 63 else None


def check_values(plan: RowLevelPlan, value_types: dict[str, T.DataType], target: T.StructType,
                 name_of) -> dict[tuple[int, str], str]:
    """UPDATE / MERGE: the stored SQL of every (clause, column) value; raise on an illegal one.

    Struct fields are matched by name, as Spark's row-level commands do.
    """
    targets = {f.name: f.dataType for f in target.fields}
    out = {}
    for k, ins in enumerate(plan.instructions):
        for column, value in ins.values.items():
            out[(k, column)] = stored_value_sql(value.sql(dialect=DIALECT), value_types[name_of(k, column)],
                                                targets[column], column, True, f"{plan.command} assignment",
                                                ins.position)
    return out


def assign_frame(df: DataFrame, target: T.StructType, what: str, position: SqlPosition | None = None,
                 schema: T.StructType | None = None) -> DataFrame:
    """INSERT's store assignment: `df` has the target's columns in order (struct fields too: by
    position, as Spark's INSERT); refuse illegal conversions, check overflows at run time. `df`
    itself where its columns are the target's already, named and typed so: no projection to analyse.
    `schema`: `df`'s, where the caller has it (each fetch is a call into the JVM)."""
    fields = (schema or frame_schema(df)).fields
    if len(fields) == len(target.fields) and all(
            src.name == dst.name and _same(src.dataType, dst.dataType) for src, dst in zip(fields, target.fields)):
        return df
    cols = []
    for src, dst in zip(fields, target.fields):
        if _same(src.dataType, dst.dataType):
            cols.append(F.col(_q(src.name)))
            continue
        sql = stored_value_sql(_q(src.name), src.dataType, dst.dataType, dst.name, False, what, position)
        cols.append(F.expr(sql).alias(src.name))
    return df.select(*cols)
