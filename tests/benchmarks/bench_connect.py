#!/usr/bin/env python
"""pyice_sql over Spark Connect vs a classic session, on Spark 4, with the shared workload.

  PYTHONPATH=$PWD PYICE_SHARED=../shared .venv-spark4/bin/python tests/benchmarks/bench_connect.py \
      --rows 500000 --rounds 3 --mode merge-on-read --shape uniform

Iceberg Java's reference jars are built for Spark 3.5, so here pyice_sql is compared with itself:
the same ops as bench_workload.py (insert, merge, update, delete, merge3, update3, delete3, scan)
run in a fresh child process per round, once on a classic local[2] session (the JVM shim) and
once through a local Spark Connect server (no jar on the server: the DataFrame-only backend),
the two alternating which goes first. Prints one JSON line per measurement, then per op the
median seconds of each session kind and the ratio connect/classic. The scan results of the two
must agree, else the script exits 1. Not a pytest module (no test_ prefix).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_workload import COLUMNS, OPS, STATEMENTS, build  # noqa: E402

KINDS = ("classic", "connect")


def child(kind: str, rows: int, mode: str, shape: str, warehouse: str) -> None:
    """Run the workload once on a `kind` session; one JSON line per op on stdout."""
    import pyice_sql

    if kind == "connect":
        from pyspark.sql import SparkSession

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the server's Python workers import pyice_sql
        spark = (SparkSession.builder.remote("local[2]").config("spark.sql.shuffle.partitions", "8")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    else:
        from pyice_sql.spark.runtime import local_session

        spark = local_session("bench-connect", quiet=True)
    ice = pyice_sql.connect(spark, warehouse=warehouse)
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    t = "local.db.t"
    ice.sql(f"CREATE TABLE {t} ({COLUMNS}) USING iceberg TBLPROPERTIES ('write.merge.mode'='{mode}', "
            f"'write.delete.mode'='{mode}', 'write.update.mode'='{mode}')")
    base, src = build(spark, rows, shape)
    src = src.cache()
    src.count()
    src.createOrReplaceTempView("src")
    for op in OPS:
        started = time.perf_counter()
        out = ice.append(t, base) if op == "insert" else ice.sql(STATEMENTS[op].format(t=t)).collect()
        rec = {"sys": kind, "op": op, "s": round(time.perf_counter() - started, 3)}
        if op == "scan":
            rec["result"] = list(out[0])
        print(json.dumps(rec), flush=True)
    spark.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=500_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mode", default="merge-on-read", choices=["merge-on-read", "copy-on-write"])
    ap.add_argument("--shape", default="uniform", choices=["uniform", "clustered"])
    ap.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    ap.add_argument("--warehouse", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child, a.rows, a.mode, a.shape, a.warehouse)
        return 0
    times: dict[tuple[str, str], list[float]] = {}
    scans: dict[str, list] = {}
    for r in range(a.rounds):
        for kind in (KINDS if r % 2 == 0 else KINDS[::-1]):
            with tempfile.TemporaryDirectory(prefix="pyice-bench-connect-") as wh:
                proc = subprocess.run([sys.executable, __file__, "--child", kind, "--rows", str(a.rows), "--mode",
                                       a.mode, "--shape", a.shape, "--warehouse", wh],
                                      capture_output=True, text=True, env={**os.environ, "TZ": "UTC"})
            if proc.returncode != 0:
                raise SystemExit(f"{kind} round {r} failed:\n{proc.stderr[-3000:]}")
            for line in proc.stdout.splitlines():
                if line.startswith("{"):
                    rec = json.loads(line)
                    print(line, flush=True)
                    times.setdefault((rec["op"], kind), []).append(rec["s"])
                    if "result" in rec:
                        scans.setdefault(kind, rec["result"])
    c, k = scans["classic"], scans["connect"]
    if c[0] != k[0] or c[2] != k[2] or not math.isclose(c[1], k[1], rel_tol=1e-9):
        print(f"SCAN MISMATCH: classic {scans['classic']} != connect {scans['connect']}")
        return 1
    print(f"\n{'op':<8} {'classic s':>9} {'connect s':>9} {'ratio':>6}   ({a.rows} rows, {a.mode}, {a.shape}, "
          f"median of {a.rounds})")
    for op in OPS:
        c, k = statistics.median(times[(op, "classic")]), statistics.median(times[(op, "connect")])
        print(f"{op:<8} {c:>9.2f} {k:>9.2f} {k / c if c else float('nan'):>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
