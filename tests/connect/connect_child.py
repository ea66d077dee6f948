"""Runs SQL through pyice_sql on a local Spark Connect session; one JSON line per statement.

A child process because a Spark Connect local server and the test run's classic SparkContext
cannot share one Python process.
  python -m tests.connect.connect_child WAREHOUSE STEP...
pyice_sql is installed on the session (`install(spark)`). A STEP is SQL text, run by the
IceSession, or a JSON object run through the session's own `spark.sql`:
  {"sql": text, "args": dict|list, "frames": {name: Spark SQL}, "kwargs": {name: value},
   "from": i}
`frames` become DataFrames passed as `{name}` keyword arguments, `kwargs` plain values, and
`from` formats `{0}`, `{1}`, ... in the text with the first row of step i's result.
"""
from __future__ import annotations

import json
import os
import sys


def main(warehouse: str, steps: list[str]) -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the server's Python workers import pyice_sql
    from pyspark.sql import SparkSession

    import pyice_sql

    spark = SparkSession.builder.remote("local[2]").config("spark.sql.session.timeZone", "UTC").getOrCreate()
    ice = pyice_sql.install(spark, warehouse=warehouse)
    results: list[list] = []
    for step in steps:
        sql = step
        try:
            if step.startswith("{"):
                spec = json.loads(step)
                sql = spec["sql"]
                if "from" in spec:
                    sql = sql.format(*results[spec["from"]][0])
                kwargs = {**spec.get("kwargs", {}), **{k: spark.sql(v) for k, v in spec.get("frames", {}).items()}}
                df = spark.sql(sql, spec.get("args"), **kwargs)
            else:
                df = ice.sql(sql)
            rows = [[_plain(v) for v in r] for r in df.collect()]
            print(json.dumps({"sql": step, "rows": rows}), flush=True)
        except Exception as e:  # noqa: BLE001 - reported to the test, which decides
            rows = []
            print(json.dumps({"sql": step, "error": f"{type(e).__name__}: {e}"[:2000]}), flush=True)
        results.append(rows)
    spark.stop()


def _plain(v):
    return v if v is None or isinstance(v, (int, float, str, bool)) else str(v)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
