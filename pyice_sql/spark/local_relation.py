"""Small driver-built tables as JVM-side Spark relations, never Python `createDataFrame`.

`spark.createDataFrame(list)` ships pickled rows that a Python worker decodes in a Spark stage of
its own (0.1-1 s each on a busy machine), every time the frame is used. Here the rows travel as
one JSON string literal the JVM parses once (`inline(from_json(...))` over a one-row range): no
Python worker, no SQL escaping, and it works the same on Spark Connect.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from pyspark.sql import DataFrame, SparkSession, functions as F, types as T

_SQL_TYPES = {"bigint": T.LongType(), "int": T.IntegerType(), "string": T.StringType()}


def local_rows(spark: SparkSession, rows: Sequence[Sequence[Any]], schema: T.StructType) -> DataFrame:
    """`rows` (tuples in `schema`'s field order) as a DataFrame of `schema`; values must be JSON-typed
    (str, int, float, bool, None)."""
    names = [f.name for f in schema.fields]
    text = json.dumps([dict(zip(names, r)) for r in rows], ensure_ascii=False)
    parsed = F.from_json(F.lit(text), T.ArrayType(schema), {"mode": "FAILFAST"})
    return spark.range(1).select(F.inline(parsed))


def values(spark: SparkSession, columns: dict[str, str], rows: list[tuple]) -> DataFrame:
    """A frame of `rows` with `columns` (name -> SQL type: `bigint`, `int`, `string`)."""
    return local_rows(spark, rows, T.StructType([T.StructField(n, _SQL_TYPES[t]) for n, t in columns.items()]))
