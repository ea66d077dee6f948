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

from pyspark.sql import Column, DataFrame, functions as F

from pyice_sql.spark.connect_backend import is_connect


def select_sql(df: DataFrame, exprs: Sequence[str], extra: Sequence[Column] = ()) -> DataFrame:
    """`df.selectExpr(*exprs)`: Spark SQL expressions, names quoted with backticks; then the columns
    `extra` (built as Columns: a shim function's, say), in the same projection: one analysis of the
    plan, not two."""
    spark = df.sparkSession
    if is_connect(spark):
        return df.select(*map(F.expr, exprs), *extra) if extra else df.selectExpr(*exprs)
    if not exprs and not extra:
        return df.selectExpr()
    from pyice_sql.spark.jvm.bridge import java_string_list, load_shim

    jvm = spark._jvm
    jexprs = java_string_list(jvm, exprs)
    if not extra:
        return type(df)(df._jdf.selectExpr(jvm.PythonUtils.toSeq(jexprs)), spark)
    from py4j.java_collections import ListConverter

    jextra = ListConverter().convert([c._jc for c in extra], jvm._gateway_client)
    return type(df)(load_shim(spark).select_with(df._jdf, jexprs, jextra), spark)


def jvm_column(jcol: object) -> Column:
    """A pyspark Column of a JVM Column (a shim function's) in a classic session."""
    try:  # Spark 4 moved the py4j-backed Column class
        from pyspark.sql.classic.column import Column as ClassicColumn
    except ImportError:
        ClassicColumn = Column
    return ClassicColumn(jcol)
