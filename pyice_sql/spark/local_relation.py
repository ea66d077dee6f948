"""Small driver-built tables as JVM-side Spark relations, never Python `createDataFrame`.

`spark.createDataFrame(list)` ships pickled rows that a Python worker decodes in a Spark stage of
its own (0.1-1 s each on a busy machine), every time the frame is used. Up to `VALUES_LIMIT` rows
become an SQL VALUES table: a local relation in the JVM, broadcast or collected without any job
(strings as hex literals, so nothing needs escaping). Larger tables (a scan of many thousands of
files) travel as one JSON string literal the JVM parses once (`inline(from_json(...))` over a
one-row range): one small job instead of parsing a huge statement. Both work on Spark Connect.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from pyspark.sql import DataFrame, SparkSession, functions as F, types as T

VALUES_LIMIT = 1000
_SQL_TYPES = {"bigint": T.LongType(), "int": T.IntegerType(), "string": T.StringType()}


def local_rows(spark: SparkSession, rows: Sequence[Sequence[Any]], schema: T.StructType) -> DataFrame:
    """`rows` (tuples in `schema`'s field order) as a DataFrame of `schema`; values must be JSON-typed
    (str, int, float, bool, None)."""
    names = [f.name for f in schema.fields]
    if 0 < len(rows) <= VALUES_LIMIT:
        types = [f.dataType.simpleString() for f in schema.fields]
        body = ", ".join("(" + ", ".join(sql_literal(v, t) for v, t in zip(r, types)) + ")" for r in rows)
        columns = ", ".join("`" + n.replace("`", "``") + "`" for n in names)
        return spark.sql(f"SELECT * FROM VALUES {body} AS t({columns})")
    text = json.dumps([dict(zip(names, r)) for r in rows], ensure_ascii=False)
    parsed = F.from_json(F.lit(text), T.ArrayType(schema), {"mode": "FAILFAST"})
    return spark.range(1).select(F.inline(parsed))


def values(spark: SparkSession, columns: dict[str, str], rows: list[tuple]) -> DataFrame:
    """A frame of `rows` with `columns` (name -> SQL type: `bigint`, `int`, `string`)."""
    return local_rows(spark, rows, T.StructType([T.StructField(n, _SQL_TYPES[t]) for n, t in columns.items()]))


def sql_literal(v: Any, sql_type: str) -> str:
    if v is None:
        return f"CAST(NULL AS {sql_type})"
    if isinstance(v, str):
        return f"CAST(X'{v.encode('utf-8').hex()}' AS {sql_type})"
    if isinstance(v, bool):
        return f"CAST({str(v).upper()} AS {sql_type})"
    return f"CAST({float(v)!r} AS {sql_type})" if isinstance(v, float) else f"CAST({int(v)} AS {sql_type})"
