#!/usr/bin/env python
"""Iceberg Java (1.10.2, Spark 3.5) as a REST catalog client: run SQL against catalog `rest`.

    python tests/rest/java_rest.py URI [--keep-going] SQL...

The session is the reference engine's (shared/iceberg-reference/iceberg_ref.py) with Spark's
SparkCatalog `rest` (type=rest, uri=URI, cache off) and the REST client jars of
shared/iceberg-rest-server added. One JSON line per statement, as the reference engine prints:
{"sql", "rows"} or {"sql", "error"}; without --keep-going the first error ends the run.
"""
import json
import os
import sys
from pathlib import Path

SHARED = Path(os.environ.get("PYICE_SHARED", Path(__file__).resolve().parents[3] / "shared"))
sys.path[:0] = [str(SHARED / "iceberg-reference"), str(SHARED / "iceberg-rest-server")]

import iceberg_ref  # noqa: E402
import rest_server  # noqa: E402


def session(uri: str):
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


def main(argv: list[str]) -> int:
    uri, *statements = argv
    keep_going = "--keep-going" in statements
    statements = [s for s in statements if s != "--keep-going"]
    spark = session(uri)
    spark.sparkContext.setLogLevel("ERROR")
    failed = 0
    for q in statements:
        try:
            rows = [iceberg_ref.plain(list(x)) for x in spark.sql(q).collect()]
            print(json.dumps({"sql": q, "rows": rows}), flush=True)
        except Exception as e:  # the engine's own message, first line (Java's exception for a py4j error)
            text = str(getattr(e, "java_exception", None) or e).strip()
            print(json.dumps({"sql": q, "error": text.splitlines()[0][:2000]}), flush=True)
            failed = 1
            if not keep_going:
                return 1
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
