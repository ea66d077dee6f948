"""Small driver-built tables as Spark local relations (SQL VALUES), not Python `createDataFrame`.

A Python-created frame ships its rows through a Python worker stage each time it is used; an
inline VALUES table is a local relation in the JVM: collected or broadcast without any job.
Strings go in as hex binary literals cast to string, so no text needs SQL escaping.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession


def values(spark: SparkSession, columns: dict[str, str], rows: list[tuple]) -> DataFrame:
    """A frame of `rows` (at least one) with `columns` (name -> SQL type: `bigint`, `int`, `string`)."""
    names = list(columns)
    body = ", ".join("(" + ", ".join(_literal(v, columns[n]) for n, v in zip(names, row)) + ")" for row in rows)
    return spark.sql(f"SELECT * FROM VALUES {body} AS t({', '.join(f'`{n}`' for n in names)})")


def _literal(v, sql_type: str) -> str:
    if v is None:
        return f"CAST(NULL AS {sql_type})"
    if sql_type == "string":
        return f"CAST(X'{str(v).encode('utf-8').hex()}' AS STRING)"
    return f"CAST({int(v)} AS {sql_type})"
