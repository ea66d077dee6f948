"""The target rows a MERGE's source keys can pair with, as a Spark SQL condition on the target scan.

An ON clause `t.k = s.k` pairs a target row only if its key is one of the source's keys. Where no
clause acts on unmatched target rows (no NOT MATCHED BY SOURCE: the plan's `prune_by_source_keys`),
the other target rows are needed only by a write that copies them, and copy-on-write reads the
files it rewrites again for that, whole (MergeRows again, or the changed rows' anti-join). So the
scan MergeRows tags keeps only the rows whose key is among the source's values (or within their
range, for many), before the join: a 3-row MERGE into 2M rows then shuffles or broadcasts 3 target
rows, not 2M. File pruning by the same keys (`RowLevelExecutor._narrowed`) skips the files; this
skips the rows of the files it keeps.

The condition must keep every row the join can pair, so it is written only where it compares as
the join does: both key columns integral (Spark widens the narrower side, exactly), or both plain
strings (no CHAR / VARCHAR padding, no collation). Keys of other types get no condition.
The values are an array literal (`array_contains`), not an IN list: Spark writes an IN list's
values into the scan's generated code, so every statement's keys would compile that code again.
For the same reason an integral range is tested by the shim's `key_range` function where it
loads (`shim_key_range`: bounds held by the function object), `BETWEEN` elsewhere: a copy-on-write
MERGE whose range differed from the last one's compiled five classes again (~40 ms).

Where the keys are not at hand (a source Spark computes, over files they cannot prune) and the
plan says `semi_join_source_keys`, `pairing_rows` does the same with Spark's own join: the target
rows left-semi-joined with the source's key columns, broadcast, by the ON clause's equalities, so
it compares as the join does for any type.
"""
from __future__ import annotations

from typing import Callable, Sequence

from pyspark.sql import DataFrame, SparkSession, functions as F, types as T

from pyice_sql.core.model import types as it
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.sql.dialect import quote_identifier as quote
from pyice_sql.spark.local_relation import sql_literal

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_CHAR_VARCHAR = "__CHAR_VARCHAR_TYPE_STRING"  # Spark's field metadata for a CHAR(n) / VARCHAR(n) column
# (quoted integral column, lo, hi) -> a condition true for the column's values within [lo, hi], or None
IntegralRange = Callable[[str, int, int], str | None]


def key_row_filter(key_columns: Sequence[tuple[str, str]], schema: Schema, source: T.StructType,
                   keys: dict[str, list], ranges: dict[str, tuple],
                   integral_range: IntegralRange | None = None) -> str | None:
    """The condition on target columns, or None when no key column compares as the join does.
    `key_columns`: the ON clause's (target column, source column) equalities (the plan's
    `source_key_columns`); `keys`: each target key column's distinct non-null source values;
    `ranges`: (min, max) for the columns with too many values to list (they take precedence);
    `integral_range`: how an integral range is tested, if not by `BETWEEN` (`shim_key_range`)."""
    parts = []
    for t_col, s_col in key_columns:
        field = schema.find_field(t_col)
        s_field = _field(source, s_col)
        if field is None or s_field is None or not _compares_as_join(field.type, s_field):
            continue
        sql_type = s_field.dataType.simpleString()
        column = quote(field.name)
        if t_col in ranges:
            lo, hi = ranges[t_col]
            held = integral_range(column, lo, hi) if integral_range and field.type in (it.INT, it.LONG) else None
            parts.append(held or f"{column} BETWEEN {sql_literal(lo, sql_type)} AND {sql_literal(hi, sql_type)}")
        elif t_col in keys:
            values = keys[t_col]
            if not values:  # no non-null source key: `=` pairs nothing
                return "FALSE"
            parts.append(f"array_contains(array({', '.join(sql_literal(v, sql_type) for v in values)}), {column})")
    return " AND ".join(parts) or None


def shim_key_range(spark: SparkSession) -> IntegralRange | None:
    """`key_row_filter`'s `integral_range` by the shim's `key_range` function (KeyRange.java); None on
    Spark Connect, where the shim does not load."""
    from pyice_sql.spark.connect_backend import is_connect

    if is_connect(spark):
        return None
    from pyice_sql.spark.jvm.bridge import load_shim

    shim = load_shim(spark)

    def held(column: str, lo: int, hi: int) -> str | None:
        name = shim.key_range(int(lo), int(hi))
        return None if name is None else f"{name}({column})"
    return held


def pairing_rows(target: DataFrame, source: DataFrame, key_columns: Sequence[tuple[str, str]],
                 schema: Schema) -> DataFrame:
    """The rows of `target` whose key columns equal some `source` row's (`key_columns` as in
    `key_row_filter`), by a left semi join with the source's key columns, broadcast."""
    names = [f"__pyice_key{i}" for i in range(len(key_columns))]
    keys = source.select(*[F.col(quote(s)).alias(n) for (_, s), n in zip(key_columns, names)])
    pairs = [F.col(quote(schema.find_field(t).name)) == F.col(n) for (t, _), n in zip(key_columns, names)]
    condition = pairs[0]
    for p in pairs[1:]:
        condition = condition & p
    return target.join(F.broadcast(keys), condition, "left_semi")


def _field(source: T.StructType, name: str) -> T.StructField | None:
    """The source's column `name` (Spark resolves it case-insensitively); None if ambiguous."""
    found = [f for f in source.fields if f.name.lower() == name.lower()]
    return found[0] if len(found) == 1 else None


def _compares_as_join(target: it.IcebergType, source: T.StructField) -> bool:
    dt = source.dataType
    if target in (it.INT, it.LONG):
        return isinstance(dt, _INTEGRAL)
    if target == it.STRING:
        plain = type(dt) is T.StringType and getattr(dt, "collation", "UTF8_BINARY") == "UTF8_BINARY"
        return plain and _CHAR_VARCHAR not in (source.metadata or {})
    return False
