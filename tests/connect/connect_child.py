"""Runs SQL through pyice_sql on a local Spark Connect session; one JSON line per statement.

A child process because a Spark Connect local server and the test run's classic SparkContext
cannot share one Python process.
  python -m tests.connect.connect_child WAREHOUSE SQL...
"""
from __future__ import annotations

import json
import os
import sys


def main(warehouse: str, statements: list[str]) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the server's Python workers import pyice_sql
    from pyspark.sql import SparkSession

    import pyice_sql

    spark = SparkSession.builder.remote("local[2]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
    ice = pyice_sql.connect(spark, warehouse=warehouse)
    for sql in statements:
        try:
            rows = [[_plain(v) for v in r] for r in ice.sql(sql).collect()]
            print(json.dumps({"sql": sql, "rows": rows}), flush=True)
        except Exception as e:  # noqa: BLE001 - reported to the test, which decides
            print(json.dumps({"sql": sql, "error": f"{type(e).__name__}: {e}"[:2000]}), flush=True)
    spark.stop()


def _plain(v):
    return v if v is None or isinstance(v, (int, float, str, bool)) else str(v)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
