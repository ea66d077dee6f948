"""Spark's ANSI store-assignment rules for the values INSERT, MERGE and UPDATE write into columns.

Checked at plan time against the analysed type of each value: conversions Spark refuses
(string → number, number → date, boolean ↔ number, ...) are AnalysisErrors naming the column
and clause; numeric conversions that can overflow are allowed and marked for a run-time check.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, functions as F, types as T

from pyice_sql.compile.merge_rows import store_sql
from pyice_sql.errors import AnalysisError, SqlPosition
from pyice_sql.plan.nodes import RowLevelPlan

_INTEGRAL_RANK = {T.ByteType: 1, T.ShortType: 2, T.IntegerType: 3, T.LongType: 4}


def _can_assign(src: T.DataType, dst: T.DataType) -> bool:
    if isinstance(src, T.NullType) or src == dst:
        return True
    if isinstance(dst, (T.StringType, T.VarcharType, T.CharType)):
        return isinstance(src, T.AtomicType)
    if isinstance(src, T.NumericType) and isinstance(dst, T.NumericType):
        return True
    if isinstance(src, (T.DateType, T.TimestampType, T.TimestampNTZType)) and \
            isinstance(dst, (T.DateType, T.TimestampType, T.TimestampNTZType)):
        return True
    if isinstance(src, T.StructType) and isinstance(dst, T.StructType):
        return len(src.fields) == len(dst.fields) and all(
            _can_assign(a.dataType, b.dataType) for a, b in zip(src.fields, dst.fields))
    if isinstance(src, T.ArrayType) and isinstance(dst, T.ArrayType):
        return _can_assign(src.elementType, dst.elementType)
    if isinstance(src, T.MapType) and isinstance(dst, T.MapType):
        return _can_assign(src.keyType, dst.keyType) and _can_assign(src.valueType, dst.valueType)
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


def check_values(plan: RowLevelPlan, value_types: dict[str, T.DataType], target: T.StructType,
                 name_of) -> frozenset[tuple[int, str]]:
    """Raise on an illegal assignment; return the (clause, column) pairs needing an overflow check."""
    targets = {f.name: f.dataType for f in target.fields}
    checked = set()
    for k, ins in enumerate(plan.instructions):
        for column in ins.values:
            src, dst = value_types[name_of(k, column)], targets[column]
            if not _can_assign(src, dst):
                raise AnalysisError(f"cannot safely cast {column!r}: {src.simpleString()} to {dst.simpleString()} "
                                    f"({plan.command} assignment)", position=ins.position)
            if _narrows(src, dst):
                checked.add((k, column))
    return frozenset(checked)


def assign_frame(df: DataFrame, target: T.StructType, what: str, position: SqlPosition | None = None) -> DataFrame:
    """INSERT's store assignment: `df` has the target's columns in order; refuse illegal
    conversions, and check at run time the numbers that may overflow (Spark: ANSI policy)."""
    cols = []
    for src, dst in zip(df.schema.fields, target.fields):
        name = "`" + src.name.replace("`", "``") + "`"
        if not _can_assign(src.dataType, dst.dataType):
            raise AnalysisError(f"cannot safely cast {dst.name!r}: {src.dataType.simpleString()} to "
                                f"{dst.dataType.simpleString()} ({what})", position=position)
        checked = _narrows(src.dataType, dst.dataType)
        cols.append(F.expr(store_sql(name, dst.dataType.simpleString(), True, dst.name)).alias(src.name)
                    if checked else F.col(name))
    return df.select(*cols)
