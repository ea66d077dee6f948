#!/usr/bin/env python
"""pyice_sql vs Apache Iceberg Java on a table of many small files, side by side in ONE Spark session.

  TZ=UTC python tests/benchmarks/bench_many_files.py --files 10000 --repeat 2

The scale the speed issue asks to think at: a table of `--files` data files (an identity partition
`p` with that many values, `--rows-per-file` rows each, written by one INSERT) and row-level
statements that each change rows in 1 % of its files:
- merge: a source of files/100 keys, one per touched file, half of them matching a row (updated)
  and half new (inserted);
- update, delete: one row in each of those files (each round's delete other rows than the round
  before: `--repeat` is at most `--rows-per-file`);
- scan: `SELECT count(*), count(DISTINCT v)`, after the statements: both engines' answers must
  agree, else the script exits 1.
None of them prunes a file: the keys and the predicate spread over every file, so each statement
reads the whole table and its cost is per file (planning, opening, task scheduling), not per row.
Each engine has its own table per write mode, in catalogs `ref` (Iceberg 1.10.2 through spark.sql)
and `local` (pyice_sql); on every round of an op the engine that goes first alternates. Both tables
set `write.distribution-mode=hash` and Java's `write.spark.fanout.enabled=false`: with its default
(fanout) writer, Java's INSERT keeps a Parquet writer open per partition in a task and ran out of a
1 GB heap at 1,000 files already.

Output: one JSON line per measurement ({"sys", "mode", "op", "s", "spark_jobs", "tasks"}), then per
mode and op the median seconds of each engine and the ratio pyice/java. Not a pytest module (no
test_ prefix).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_workload import Jobs, session  # noqa: E402

OPS = ("insert", "merge", "update", "delete", "scan")
SCAN = "SELECT count(*), count(DISTINCT v) FROM {t}"


def statements(files: int, rows_per_file: int) -> dict[str, str]:
    """The row-level statements over `{t}` in round `{r}`, each changing rows of 1 % of the files:
    the files `p = i * step`, whose rows are `p + k * files` (k < rows_per_file). The merge updates
    row k=0 of every other one and inserts a row into each of the others; the update changes their
    rows k=1, and round r's delete their rows k=r."""
    touched = max(1, files // 100)
    step = files // touched
    source = (f"SELECT CASE WHEN id % 2 = 0 THEN id * {step} ELSE id * {step} + {files * rows_per_file} END "
              f"AS id, CAST(id * {step} AS int) AS p, 'new' AS v FROM range(0, {touched})")
    in_touched = f"id % {files} % {step} = 0"
    return {
        "merge": (f"MERGE INTO {{t}} t USING ({source}) s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"),
        "update": f"UPDATE {{t}} SET v = 'u' WHERE {in_touched} AND id div {files} = 1",
        "delete": f"DELETE FROM {{t}} WHERE {in_touched} AND id div {files} = {{r}}",
        "scan": SCAN,
    }


def run_mode(spark, ice, jobs: Jobs, a, mode: str, results: list) -> None:
    props = (f"'format-version'='2', 'write.merge.mode'='{mode}', 'write.delete.mode'='{mode}', "
             f"'write.update.mode'='{mode}', 'write.distribution-mode'='hash', "
             "'write.spark.fanout.enabled'='false'")
    name = f"many_{mode.replace('-', '_')}"
    tables = {"iceberg-java": f"ref.db.{name}", "pyice": f"local.db.{name}"}
    ddl = f"(id bigint, p int, v string) USING iceberg PARTITIONED BY (p) TBLPROPERTIES ({props})"
    spark.sql(f"CREATE TABLE {tables['iceberg-java']} {ddl}")
    ice.sql(f"CREATE TABLE {tables['pyice']} {ddl}")
    base = spark.range(0, a.files * a.rows_per_file).selectExpr(
        "id", f"CAST(id % {a.files} AS int) AS p", "CAST(id AS string) AS v")
    steps = {"insert": {"iceberg-java": lambda _: base.writeTo(tables["iceberg-java"]).append(),
                        "pyice": lambda _: ice.append(tables["pyice"], base)}}
    for op, sql in statements(a.files, a.rows_per_file).items():
        steps[op] = {"iceberg-java": lambda r, sql=sql: spark.sql(sql.format(t=tables["iceberg-java"], r=r)).collect(),
                     "pyice": lambda r, sql=sql: ice.sql(sql.format(t=tables["pyice"], r=r)).collect()}
    scans = {}
    for op in OPS:
        for rnd in range(1 if op == "insert" else a.repeat):
            order = ("iceberg-java", "pyice") if rnd % 2 == 0 else ("pyice", "iceberg-java")
            for who in order:
                gid = jobs.group()
                t = time.perf_counter()
                out = steps[op][who](rnd)
                dt = time.perf_counter() - t
                spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
                js = jobs.summary(gid)
                rec = {"sys": who, "mode": mode, "files": a.files, "op": op, "round": rnd, "s": round(dt, 3),
                       "spark_jobs": len(js), "tasks": sum(j["tasks"] for j in js)}
                print(json.dumps(rec), flush=True)
                results.append(rec)
                if op == "scan":
                    scans[who] = list(out[0])
    if scans["iceberg-java"] != scans["pyice"]:
        raise SystemExit(f"SCAN MISMATCH {mode}: iceberg-java {scans['iceberg-java']} != pyice {scans['pyice']}")
    print(json.dumps({"check": "scan", "mode": mode, **scans, "ok": True}), flush=True)
    spark.sql(f"DROP TABLE {tables['iceberg-java']} PURGE")
    ice.sql(f"DROP TABLE {tables['pyice']} PURGE")


def print_table(results: list) -> None:
    by: dict = {}
    for r in results:
        by.setdefault((r["mode"], r["op"]), {}).setdefault(r["sys"], []).append(r)
    print(f"\n{'mode':<15} {'op':<7} {'java s':>8} {'pyice s':>8} {'ratio':>6} {'jobs j/p':>9} {'tasks j/p':>12}")
    for (mode, op), recs in by.items():
        j, p = (statistics.median(x["s"] for x in recs[s]) for s in ("iceberg-java", "pyice"))
        jobs_, tasks = ("/".join(str(round(statistics.median(x[k] for x in recs[s])))
                                 for s in ("iceberg-java", "pyice")) for k in ("spark_jobs", "tasks"))
        print(f"{mode:<15} {op:<7} {j:>8.2f} {p:>8.2f} {p / j:>6.2f} {jobs_:>9} {tasks:>12}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--rows-per-file", type=int, default=3)
    ap.add_argument("--modes", default="merge-on-read,copy-on-write")
    ap.add_argument("--repeat", type=int, default=2, help="rounds of each row-level op (the insert runs once)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--spark-defaults", action="store_true",
                    help="keep Spark's default settings (200 shuffle partitions) instead of the workload's 8")
    a = ap.parse_args()
    if not 2 <= a.rows_per_file or a.repeat > a.rows_per_file:
        ap.error("--rows-per-file must be at least 2 and at least --repeat (each round deletes other rows)")
    import pyice_sql

    wh = tempfile.mkdtemp(prefix="pyice-bench-many-")
    spark = session(wh, a.master, a.spark_defaults)
    ice = pyice_sql.connect(spark, warehouse=os.path.join(wh, "pyice"))
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ref.db")
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    jobs, results = Jobs(spark), []
    try:
        for mode in a.modes.split(","):
            run_mode(spark, ice, jobs, a, mode.strip(), results)
    finally:
        shutil.rmtree(wh, ignore_errors=True)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
