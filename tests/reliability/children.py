"""Child processes for the reliability tests: each runs in its own interpreter and SparkSession.

    python -m tests.reliability.children run WAREHOUSE CATALOG_TYPE SQL...
        run statements (PYICE_FAULT may kill it part-way: the crash tests)
    python -m tests.reliability.children worker WAREHOUSE CATALOG_TYPE SPEC_JSON LOG
        one racing writer of the concurrency harness (see concurrency.py)
"""
from __future__ import annotations

import os
import sys

os.environ.setdefault("TZ", "UTC")
os.environ.setdefault("PYICE_SPARK_MASTER", "local[1]")
os.environ.setdefault("PYICE_SHUFFLE_PARTITIONS", "2")
os.environ.setdefault("PYSPARK_SUBMIT_ARGS", "--driver-memory 512m pyspark-shell")


def session(warehouse: str, catalog_type: str):
    import pyice_sql

    return pyice_sql.connect(warehouse=warehouse, catalog_type=catalog_type)


def main(argv: list[str]) -> int:
    command, warehouse, catalog_type, *rest = argv
    if command == "run":
        ice = session(warehouse, catalog_type)
        for sql in rest:
            ice.sql(sql).collect()
        return 0
    if command == "worker":
        from tests.reliability.concurrency import run_worker

        return run_worker(session(warehouse, catalog_type), *rest)
    raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
