"""DataFrame projections in a fixed number of py4j round trips, whatever the column count.

Each pyspark Column a classic session builds is two or three round trips to the JVM (`F.col`
alone: find `functions`, call `col`), plus one more when Python lets it go; a row-level
statement builds hundreds, ~0.3 ms each, before Spark runs anything, and a wide table
multiplies them. A projection written as SQL text crosses once: the expressions travel as one
string (`bridge.java_string_list`) and Spark parses them in the JVM. On Spark Connect, where a
plan is built on the client, the same text goes through `selectExpr`.
"""
from __future__ import annotations

from typing import Any, Sequence

from pyspark.sql import Column, DataFrame, SparkSession, functions as F

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
    from pyice_sql.spark.jvm.bridge import java_list, java_string_list, load_shim, seq_of

    jvm = spark._jvm
    jexprs = java_string_list(jvm, exprs)
    if not extra:
        return type(df)(df._jdf.selectExpr(seq_of(jvm, jexprs)), spark)
    return type(df)(load_shim(spark).select_with(df._jdf, jexprs, java_list(jvm, [c._jc for c in extra])), spark)


def function(spark: SparkSession, name: str, *args: Any) -> Column:
    """`F.<name>(*args)` (a function of Spark's `functions` whose arguments py4j converts: names,
    literals), in one round trip on a classic session (pyspark's finds `functions` and then the
    function on each call, and pyspark 4 records the call site: 3-10)."""
    if is_connect(spark):
        return getattr(F, name)(*args)
    from pyice_sql.spark.jvm.bridge import java_static

    return jvm_column(java_static(spark._jvm, "org.apache.spark.sql.functions", name)(*args))


def column(spark: SparkSession, name: str) -> Column:
    """`F.col(name)` (see `function`)."""
    return function(spark, "col", name)


def aliased(col: Column, name: str) -> Column:
    """`col.alias(name)`, in one round trip on a classic session (pyspark 4 wraps each Column method
    to record its call site: ~10 round trips)."""
    jcol = getattr(col, "_jc", None)
    return col.alias(name) if jcol is None else jvm_column(jcol.alias(name))


def repartitioned(df: DataFrame, names: Sequence[str], partitions: int | None = None) -> DataFrame:
    """`df.repartition([partitions,] *names)`, in 3 + 2 * len(names) round trips on a classic session
    (pyspark's takes ~5 per name and 5 more)."""
    spark = df.sparkSession
    if is_connect(spark):
        return df.repartition(*([partitions] if partitions is not None else []), *names)
    from pyice_sql.spark.jvm.bridge import scala_seq

    by = scala_seq(spark._jvm, [column(spark, n)._jc for n in names])
    return type(df)(df._jdf.repartition(by) if partitions is None else df._jdf.repartition(partitions, by), spark)


def sorted_within_partitions(df: DataFrame, names: Sequence[str]) -> DataFrame:
    """`df.sortWithinPartitions(*names)` (ascending), in 3 + len(names) round trips on a classic session."""
    spark = df.sparkSession
    if is_connect(spark):
        return df.sortWithinPartitions(*names)
    from pyice_sql.spark.jvm.bridge import scala_seq

    return type(df)(df._jdf.sortWithinPartitions(names[0], scala_seq(spark._jvm, names[1:])), spark)


def with_columns(df: DataFrame, columns: dict[str, Column]) -> DataFrame:
    """`df.withColumns(columns)`: one analysis, and on a classic session one round trip per column
    and two more (pyspark's sends each name and column list one element at a time, and looks the
    list class and `toSeq` up each time: ~16 round trips for two columns)."""
    spark = df.sparkSession
    if is_connect(spark):
        return df.withColumns(columns)
    from pyice_sql.spark.jvm.bridge import java_map

    return type(df)(df._jdf.withColumns(java_map(spark._jvm, {n: c._jc for n, c in columns.items()})), spark)


def jvm_column(jcol: object) -> Column:
    """A pyspark Column of a JVM Column (a shim function's) in a classic session."""
    try:  # Spark 4 moved the py4j-backed Column class
        from pyspark.sql.classic.column import Column as ClassicColumn
    except ImportError:
        ClassicColumn = Column
    return ClassicColumn(jcol)
