"""DataFrame projections in a fixed number of py4j round trips, whatever the column count.

Each pyspark Column a classic session builds is two or three round trips to the JVM (`F.col`
alone: find `functions`, call `col`), plus one more when Python lets it go; a row-level
statement builds hundreds, ~0.3 ms each, before Spark runs anything, and a wide table
multiplies them. A projection written as SQL text crosses once: the expressions travel as one
string (`bridge.java_string_list`) and Spark parses them in the JVM. On Spark Connect, where a
plan is built on the client, the same text goes through `selectExpr`.
"""
from __future__ import annotations

from typing import Sequence

from pyspark.sql import DataFrame

from pyice_sql.spark.connect_backend import is_connect


def select_sql(df: DataFrame, exprs: Sequence[str]) -> DataFrame:
    """`df.selectExpr(*exprs)`: Spark SQL expressions, names quoted with backticks."""
    spark = df.sparkSession
    if is_connect(spark) or not exprs:
        return df.selectExpr(*exprs)
    from pyice_sql.spark.jvm.bridge import java_string_list

    jvm = spark._jvm
    return type(df)(df._jdf.selectExpr(jvm.PythonUtils.toSeq(java_string_list(jvm, exprs))), spark)
