#!/usr/bin/env python
"""Iceberg Java (1.10.2, Spark 3.5) as a REST catalog client: run SQL against catalog `rest`.

    python tests/rest/java_rest.py URI [--keep-going] [--conflict-retries=N] SQL...

The session is the reference engine's (shared/iceberg-reference/iceberg_ref.py) with Spark's
SparkCatalog `rest` (type=rest, uri=URI, cache off) and the REST client jars of
shared/iceberg-rest-server added. One JSON line per statement, as the reference engine prints:
{"sql", "rows"} or {"sql", "error"}; without --keep-going the first error ends the run.
With --conflict-retries=N a statement that fails with one of Java's commit conflicts (CONFLICTS) is
run again, up to N more times, as a user would re-run it; its line then carries "attempts".
"""
import json
import os
import sys
from pathlib import Path

SHARED = Path(os.environ.get("PYICE_SHARED", Path(__file__).resolve().parents[3] / "shared"))
# Java's commit conflicts. "concurrently modified": a copy-on-write UPDATE whose runtime file filter
# reloads the table (REST, no catalog caching) and finds a newer snapshot fails before it writes.
CONFLICTS = ("ValidationException", "CommitFailedException", "Found conflicting", "Cannot commit",
             "the table has been concurrently modified")


def session(uri: str):
    sys.path[:0] = [str(SHARED / "iceberg-reference"), str(SHARED / "iceberg-rest-server")]
    import iceberg_ref
    import rest_server
    from pyspark.sql import SparkSession

    jars = list(dict.fromkeys(iceberg_ref.jars() + rest_server.client_jars(sys.executable)))
    return (SparkSession.builder.master(os.environ.get("ICEBERG_REF_MASTER", "local[2]"))
            .appName("iceberg-java-rest-client")
            .config("spark.jars", ",".join(jars))
            .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
            .config("spark.sql.catalog.rest", "org.apache.iceberg.spark.SparkCatalog")
            .config("spark.sql.catalog.rest.type", "rest")
            .config("spark.sql.catalog.rest.uri", uri)
            .config("spark.sql.catalog.rest.cache-enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "4")
            .getOrCreate())


def run(spark, q: str) -> dict:
    """One statement's JSON line: its rows, or the engine's own message, first line (Java's
    exception for a py4j error)."""
    import iceberg_ref

    try:
        return {"sql": q, "rows": [iceberg_ref.plain(list(x)) for x in spark.sql(q).collect()]}
    except Exception as e:
        text = str(getattr(e, "java_exception", None) or e).strip()
        return {"sql": q, "error": text.splitlines()[0][:2000]}


def main(argv: list[str]) -> int:
    uri, *statements = argv
    keep_going = "--keep-going" in statements
    retries = max([int(s.split("=", 1)[1]) for s in statements if s.startswith("--conflict-retries=")] or [0])
    statements = [s for s in statements if s != "--keep-going" and not s.startswith("--conflict-retries=")]
    spark = session(uri)
    spark.sparkContext.setLogLevel("ERROR")
    failed = 0
    for q in statements:
        result, attempts = run(spark, q), 1
        while "error" in result and attempts <= retries and any(c in result["error"] for c in CONFLICTS):
            result, attempts = run(spark, q), attempts + 1
        print(json.dumps({**result, **({"attempts": attempts} if retries else {})}), flush=True)
        if "error" in result:
            failed = 1
            if not keep_going:
                return 1
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
