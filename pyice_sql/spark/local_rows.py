"""Small driver-side tables as JVM-side Spark relations, without a Python worker.

`spark.createDataFrame(list)` ships pickled rows that a Python worker decodes in a Spark stage of
its own (0.1–1 s each on a busy machine). Per-file tables of a scan (a few rows per data file)
instead travel as one JSON string literal that the JVM parses once: `inline(from_json(...))` over
a one-row range.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

from pyspark.sql import DataFrame, SparkSession, functions as F, types as T


def local_rows(spark: SparkSession, rows: Sequence[Sequence[Any]], schema: T.StructType) -> DataFrame:
    """`rows` (tuples in `schema`'s field order) as a DataFrame of `schema`; values must be JSON-typed
    (str, int, float, bool, None)."""
    names = [f.name for f in schema.fields]
    text = json.dumps([dict(zip(names, r)) for r in rows], ensure_ascii=False)
    parsed = F.from_json(F.lit(text), T.ArrayType(schema), {"mode": "FAILFAST"})
    return spark.range(1).select(F.inline(parsed))
