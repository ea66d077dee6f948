#!/usr/bin/env python
"""pyice_sql vs Apache Iceberg Java on the shared row-level workload, side by side in ONE Spark session.

  TZ=UTC python tests/benchmarks/bench_workload.py --rows 2000000 \
      --modes merge-on-read,copy-on-write --shapes uniform,clustered --repeat 1

The workload is /work/shared/bench/iceberg_java_workload.py (its `build()` makes the base and source
DataFrames): insert, merge, update, delete, three 3-row statements (merge3, update3, delete3: the
small-statement case), scan on a 5-column table, uniform (8 files) or clustered (100 files sorted by
id), format v2 or v3 (`--format-versions 2,3`: v3 merge-on-read writes deletion vectors on both
engines), at one or more row counts (`--rows 1000000,10000000`). Per (rows, mode, format, shape,
repeat) both engines get their own fresh table — the reference in catalog `ref` (Iceberg 1.10.2
through spark.sql), pyice_sql in catalog `local` (ice.sql / ice.append) — and run each op in turn;
which engine goes first alternates per op, per case and per round (each engine goes first on every
op of a case over two rounds), to spread noise (JIT warm-up, page cache, GC). After the scan both
results (count, sum, distinct) must agree, else the script exits 1.

Output: one JSON line per measurement ({"sys", "mode", "shape", "rows", "op", "s", ...}; pyice's DML
lines add the target scan's driver planning time and files kept/total from `ice.last_plan`, and both
engines' lines the new snapshot's file counts and the driver's CPU time (`driver_jvm_cpu_ms`: the JVM
thread that analyses, optimizes and plans the statement; `python_cpu_ms`), then a table of seconds
and pyice/java ratios (medians over the rounds) and one of driver CPU per statement; with several
row counts, each op's growth: its time at the largest count over its time at the smallest, per
engine. --jobs adds the Spark jobs each op ran (duration, tasks, call site; per stage that ran, its
tasks' durations and its run and GC time) and a table of the wall time outside them (before the
first, between, after the last: the driver's share of the critical path); --profile FILE dumps
cProfile stats of pyice's ops; --warmup-rows N first runs every case once at N rows, uncounted, so
that round 0 is not also the session's cold start (class loading, JIT) for whichever engine goes
first. Not a pytest module (not collected: no test_ prefix).
"""
from __future__ import annotations

import argparse
import cProfile
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TZ", "UTC")
time.tzset()

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.environ.get("PYICE_SHARED", os.path.join(HERE, "..", "..", "..", "shared"))
sys.path.insert(0, os.path.join(SHARED, "bench"))
sys.path.insert(0, os.path.join(SHARED, "iceberg-reference"))

import iceberg_ref  # noqa: E402
from iceberg_java_workload import build  # noqa: E402

# merge3 / update3 / delete3: 3-row statements on the warm session (the small-statement target)
OPS = ("insert", "merge", "update", "delete", "merge3", "update3", "delete3", "scan")
SMALL_SOURCE = ("SELECT * FROM VALUES (11, 'c1', 5.0, TIMESTAMP '2024-01-01 00:00:00', 'small'), "
                "(12, 'c2', 6.0, TIMESTAMP '2024-01-01 00:00:00', 'small'), "
                "(-1, 'c3', 7.0, TIMESTAMP '2024-01-01 00:00:00', 'small') AS v(id, category, amount, ts, payload)")
COLUMNS = "id bigint, category string, amount double, ts timestamp, payload string"
SCAN = "SELECT count(*), sum(amount), count(distinct category) FROM {t}"
_MERGE = ("MERGE INTO {{t}} t USING {source} s ON t.id = s.id "
          "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
# every op but insert, as SQL on table {t} (the workload's source is the temp view `src`)
STATEMENTS = {
    "merge": _MERGE.format(source="src"),
    "update": "UPDATE {t} SET amount = amount * 2 WHERE id % 100 = 3",
    "delete": "DELETE FROM {t} WHERE id % 100 = 7",
    "merge3": _MERGE.format(source=f"({SMALL_SOURCE})"),
    "update3": "UPDATE {t} SET amount = amount + 1 WHERE id IN (21, 22, 23)",
    "delete3": "DELETE FROM {t} WHERE id IN (31, 32, 33)",
    "scan": SCAN,
}


def session(warehouse: str, master: str, spark_defaults: bool):
    """One SparkSession carrying both engines: Iceberg's runtime + extensions, and pyice's shim."""
    from pyspark.sql import SparkSession

    from pyice_sql.spark.jvm.bridge import spark_jars_conf
    from pyice_sql.spark.runtime import SPARK_SETTINGS

    # deletion vectors are decoded in a Python UDF: Spark's workers must run this interpreter
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    b = (SparkSession.builder.master(master).appName("pyice-bench")
         .config("spark.jars", spark_jars_conf(",".join(iceberg_ref.jars())))
         .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
         .config("spark.sql.catalog.ref", "org.apache.iceberg.spark.SparkCatalog")
         .config("spark.sql.catalog.ref.type", "hadoop")
         .config("spark.sql.catalog.ref.warehouse", os.path.join(warehouse, "ref"))
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         # Iceberg Java 1.10's vectorized reads of _row_id / _last_updated_sequence_number (every
         # v3 row-level scan) leak a direct buffer per batch (apache/iceberg#17241, fixed in
         # 1.11): at the default limit (the 1g heap) a 2M-row v3 run died in its second round,
         # and near the limit each direct allocation, ours too, waits for a full GC
         .config("spark.driver.extraJavaOptions", "-XX:MaxDirectMemorySize=16g"))
    if not spark_defaults:  # the shared workload's setting; --spark-defaults keeps Spark's 200
        b = b.config("spark.sql.shuffle.partitions", "8")
    for k, v in SPARK_SETTINGS.items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class Jobs:
    """Spark jobs run under a job group, read back from the status store (works with the UI off)."""

    def __init__(self, spark) -> None:
        self.sc = spark.sparkContext
        self.n = 0

    def group(self) -> str:
        self.n += 1
        gid = f"bench-{self.n}"
        self.sc.setJobGroup(gid, gid)
        return gid

    def summary(self, gid: str) -> list[dict]:
        store = self.sc._jsc.sc().statusStore()
        out = []
        for jid in sorted(self.sc.statusTracker().getJobIdsForGroup(gid)):
            try:
                j = store.job(jid)
            except Exception:  # noqa: BLE001 - evicted from the store
                continue
            t0, t1 = j.submissionTime(), j.completionTime()
            ms = (t1.get().getTime() - t0.get().getTime()) if t0.isDefined() and t1.isDefined() else None
            out.append({"job": jid, "ms": ms, "tasks": j.numTasks(), "stages": j.stageIds().size(),
                        "name": str(j.name())[:80], "ran": self._stages(store, j.stageIds()),
                        **({"start": t0.get().getTime(), "end": t1.get().getTime()} if ms is not None else {})})
        return out

    @staticmethod
    def _stages(store, ids) -> list[dict]:
        """The job's stages that ran (not skipped): each task's duration, summed task run time and GC
        time (ms): a slow job's tasks tell a cold start or a skewed split from per-row cost."""
        ran = []
        for sid in (ids.apply(i) for i in range(ids.size())):
            try:
                sd = store.lastStageAttempt(sid)
            except Exception:  # noqa: BLE001 - evicted from the store
                continue
            if str(sd.status()) == "SKIPPED":
                continue
            tasks = store.taskList(sid, sd.attemptId(), 1000)
            ms = sorted(int(tasks.apply(i).duration().get()) for i in range(tasks.size())
                        if tasks.apply(i).duration().isDefined())
            ran.append({"stage": sid, "task_ms": ms, "run_ms": sd.executorRunTime(), "gc_ms": sd.jvmGcTime()})
        return ran


def outside_jobs_ms(start: float, end: float, jobs: list[dict]) -> dict:
    """A statement's wall time (epoch ms `start`..`end`) outside its Spark jobs: before the first,
    between them (jobs that overlap count once) and after the last. The driver's work on the
    critical path: building and planning the statement, adaptive execution between stages, the
    commit."""
    spans = sorted((j["start"], j["end"]) for j in jobs if "start" in j)
    if not spans:
        return {"before": round(end - start), "between": 0, "after": 0}
    between, reached = 0.0, spans[0][1]
    for a, b in spans[1:]:
        between += max(0.0, a - reached)
        reached = max(reached, b)
    return {"before": round(spans[0][0] - start), "between": round(between), "after": round(end - reached)}


def driver_cpu_ms(spark) -> tuple[float, float]:
    """CPU time so far (ms) of the driver's JVM thread serving this Python thread (pyspark pins one
    per Python thread: both engines' statements are analysed, optimized and planned on it) and of
    this Python process. Per statement, the difference tells driver work from waiting for jobs."""
    bean = spark._jvm.java.lang.management.ManagementFactory.getThreadMXBean()
    return bean.getCurrentThreadCpuTime() / 1e6, time.process_time() * 1e3


def last_summary(run_sql, table: str) -> dict:
    """File counts of the table's newest snapshot, from the engine's own `snapshots` metadata table."""
    path = run_sql(f"SELECT summary FROM {table}.snapshots ORDER BY committed_at DESC LIMIT 1").collect()
    s = path[0][0] if path else {}
    keys = ("added-data-files", "deleted-data-files", "added-delete-files", "added-position-deletes",
            "total-data-files", "total-delete-files")
    return {k: int(s[k]) for k in keys if s and k in s}


def run_case(spark, ice, jobs, a, rows: int, mode: str, fv: int, shape: str, rep: int, case_no: int, prof,
             results: list, warmup: bool = False) -> None:
    """One case: both engines' fresh tables, every op in turn. A `warmup` case (rep 0) is printed
    with "warmup": true, and its records are not the caller's to count."""
    name = f"t_{mode.replace('-', '_')}_v{fv}_{shape}_{rows}_{'warmup' if warmup else rep}"
    ref_t, ice_t = f"ref.db.{name}", f"local.db.{name}"
    props = (f"'format-version'='{fv}', 'write.merge.mode'='{mode}', 'write.delete.mode'='{mode}', "
             f"'write.update.mode'='{mode}'")
    spark.sql(f"CREATE TABLE {ref_t} ({COLUMNS}) USING iceberg TBLPROPERTIES ({props})")
    ice.sql(f"CREATE TABLE {ice_t} ({COLUMNS}) USING iceberg TBLPROPERTIES ({props})")
    base, src = build(spark, rows, shape)
    src = src.cache()
    src.count()
    src.createOrReplaceTempView("src")

    def both(sql):
        return lambda: spark.sql(sql.format(t=ref_t)).collect(), lambda: ice.sql(sql.format(t=ice_t)).collect()

    steps = {op: both(sql) for op, sql in STATEMENTS.items()}
    steps["insert"] = (lambda: base.writeTo(ref_t).append(), lambda: ice.append(ice_t, base))
    scans = {}
    for i, op in enumerate(OPS):
        order = ("iceberg-java", "pyice") if (i + case_no) % 2 == 0 else ("pyice", "iceberg-java")
        for sys_name in order:
            fn = steps[op][0] if sys_name == "iceberg-java" else steps[op][1]
            ice.last_plan = None
            gid = jobs.group()
            p = prof if (sys_name == "pyice" and prof is not None) else None
            cpu_before = driver_cpu_ms(spark)
            started = time.time() * 1000
            t = time.perf_counter()
            if p is not None:
                p.enable()
            try:
                out = fn()
            finally:
                if p is not None:
                    p.disable()
            dt = time.perf_counter() - t
            ended = time.time() * 1000
            jvm_ms, python_ms = (round(after - before, 1)
                                 for before, after in zip(cpu_before, driver_cpu_ms(spark)))
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
            rec = {"sys": sys_name, "mode": mode, "format_version": fv, "shape": shape, "rows": rows, "op": op, "rep": rep,
                   "s": round(dt, 3), "driver_jvm_cpu_ms": jvm_ms, "python_cpu_ms": python_ms,
                   "first": sys_name == order[0], **({"warmup": True} if warmup else {})}
            if sys_name == "pyice" and op != "insert" and ice.last_plan is not None:
                m = ice.last_plan.metrics
                rec["plan_s"] = round(getattr(m, "planning_s", float("nan")), 4)
                rec["files_kept"] = m.data_files_total - m.skipped_by_partition - m.skipped_by_metrics
                rec["files_total"] = m.data_files_total
                rec["delete_files_read"] = m.delete_files
            if sys_name == "pyice" and op not in ("insert", "scan") and out:
                rec["result"] = {k: v for k, v in out[0].asDict().items() if k != "snapshot_id"}
            if op != "scan":
                rec["snapshot"] = (last_summary(spark.sql, ref_t) if sys_name == "iceberg-java"
                                  else last_summary(ice.sql, ice_t))
            if a.jobs:
                js = jobs.summary(gid)
                rec["spark_jobs"] = len(js)
                rec["spark_job_ms"] = sum(j["ms"] or 0 for j in js)
                rec["jobs"] = js
                rec["outside_jobs_ms"] = outside_jobs_ms(started, ended, js)
            if op == "scan":
                scans[sys_name] = list(out[0])
            print(json.dumps(rec), flush=True)
            results.append(rec)
    src.unpersist()
    j, p = scans["iceberg-java"], scans["pyice"]
    ok = j[0] == p[0] and j[2] == p[2] and math.isclose(j[1], p[1], rel_tol=1e-9)
    print(json.dumps({"check": "scan", "mode": mode, "format_version": fv, "shape": shape, "rep": rep,
                      **({"warmup": True} if warmup else {}), "iceberg-java": j, "pyice": p,
                      "sum_rounded": [round(j[1], 2), round(p[1], 2)], "ok": ok}), flush=True)
    if not ok:
        raise SystemExit(f"SCAN MISMATCH {mode}/v{fv}/{shape}: iceberg-java {j} != pyice {p}")
    if not a.keep:
        spark.sql(f"DROP TABLE {ref_t} PURGE")
        ice.sql(f"DROP TABLE {ice_t} PURGE")


def print_table(results: list) -> None:
    rows, cpu = {}, {}
    for r in results:
        key = (f"{r['mode']} v{r['format_version']}", r["shape"], r["rows"], r["op"])
        rows.setdefault(key, {}).setdefault(r["sys"], []).append(r["s"])
        cpu.setdefault(key, {}).setdefault(r["sys"], []).append(r["driver_jvm_cpu_ms"] + r["python_cpu_ms"])
    median = {k: {s: statistics.median(v) for s, v in by.items()} for k, by in rows.items()}
    print(f"\n{'mode':<17} {'shape':<10} {'rows':>9} {'op':<7} {'java s':>8} {'pyice s':>8} {'ratio':>6}")
    for (mode, shape, n, op), by in median.items():
        j, p = by["iceberg-java"], by["pyice"]
        print(f"{mode:<17} {shape:<10} {n:>9} {op:<7} {j:>8.2f} {p:>8.2f} {p / j if j else float('nan'):>6.2f}")
    for case in sorted({k[:3] for k in median}):
        tj = sum(median[(*case, op)]["iceberg-java"] for op in OPS)
        tp = sum(median[(*case, op)]["pyice"] for op in OPS)
        print(f"{case[0]:<17} {case[1]:<10} {case[2]:>9} {'TOTAL':<7} {tj:>8.2f} {tp:>8.2f} {tp / tj:>6.2f}")
    print(f"\ndriver CPU per statement, ms (JVM thread + Python; medians)\n"
          f"{'mode':<17} {'shape':<10} {'rows':>9} {'op':<7} {'java':>8} {'pyice':>8}")
    for (mode, shape, n, op), by in cpu.items():
        print(f"{mode:<17} {shape:<10} {n:>9} {op:<7} {statistics.median(by['iceberg-java']):>8.0f} "
              f"{statistics.median(by['pyice']):>8.0f}")
    outside = {}
    for r in results:
        if "outside_jobs_ms" in r:
            key = (f"{r['mode']} v{r['format_version']}", r["shape"], r["rows"], r["op"])
            outside.setdefault(key, {}).setdefault(r["sys"], []).append(r["outside_jobs_ms"])
    if outside:
        print("\nwall time outside Spark jobs per statement, ms (medians): before the first job / between "
              f"jobs / after the last\n{'mode':<17} {'shape':<10} {'rows':>9} {'op':<7} {'java':>17} {'pyice':>17}")
        for (mode, shape, n, op), by in outside.items():
            cells = ["/".join(str(round(statistics.median(o[part] for o in by[s])))
                              for part in ("before", "between", "after")) for s in ("iceberg-java", "pyice")]
            print(f"{mode:<17} {shape:<10} {n:>9} {op:<7} {cells[0]:>17} {cells[1]:>17}")
    sizes = sorted({k[2] for k in median})
    if len(sizes) < 2:
        return
    # growth: each op's median time at the largest row count over its time at the smallest
    small, large = sizes[0], sizes[-1]
    print(f"\ngrowth: time at {large} rows / time at {small} rows ({large / small:g}x the rows)")
    print(f"{'mode':<17} {'shape':<10} {'op':<7} {'java':>6} {'pyice':>6}")
    for mode, shape in sorted({k[:2] for k in median}):
        for op in OPS:
            lo, hi = median.get((mode, shape, small, op)), median.get((mode, shape, large, op))
            if lo and hi:
                j, p = (hi[s] / lo[s] for s in ("iceberg-java", "pyice"))
                print(f"{mode:<17} {shape:<10} {op:<7} {j:>6.2f} {p:>6.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", default="2000000",
                    help="row counts, e.g. 1000000,10000000: adds each op's growth from the smallest to the largest")
    ap.add_argument("--modes", default="merge-on-read,copy-on-write")
    ap.add_argument("--shapes", default="uniform,clustered")
    ap.add_argument("--format-versions", default="2",
                    help="table format versions, e.g. 2,3 (v3: merge-on-read writes deletion vectors)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--master", default=os.environ.get("ICEBERG_REF_MASTER", "local[2]"),
                    help="e.g. local-cluster[2,1,1024]: two executor JVMs from the pip wheel alone")
    ap.add_argument("--spark-defaults", action="store_true",
                    help="keep Spark's default settings (200 shuffle partitions) instead of the workload's 8")
    ap.add_argument("--warmup-rows", type=int, default=0,
                    help="first run every case once at this many rows, not counted: both engines' code paths "
                         "are then loaded and compiled by the JIT before the measured rounds (the session's "
                         "cold start otherwise lands in round 0 of whichever ops run first)")
    ap.add_argument("--warehouse", help="default: a fresh temp dir, removed at the end")
    ap.add_argument("--jobs", action="store_true", help="record the Spark jobs of every op")
    ap.add_argument("--profile", metavar="FILE", help="cProfile pyice's ops into FILE (pstats)")
    ap.add_argument("--keep", action="store_true", help="keep the tables")
    a = ap.parse_args()
    import pyice_sql

    wh = a.warehouse or tempfile.mkdtemp(prefix="pyice-bench-")
    spark = session(wh, a.master, a.spark_defaults)
    ice = pyice_sql.connect(spark, warehouse=os.path.join(wh, "pyice"))
    spark.sql("CREATE NAMESPACE IF NOT EXISTS ref.db")
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    jobs = Jobs(spark)
    prof = cProfile.Profile() if a.profile else None
    results: list = []
    try:
        cases = [(mode.strip(), int(fv), shape.strip()) for mode in a.modes.split(",")
                 for fv in a.format_versions.split(",") for shape in a.shapes.split(",")]
        if a.warmup_rows:
            for mode, fv, shape in cases:
                run_case(spark, ice, jobs, a, a.warmup_rows, mode, fv, shape, 0, 0, None, [], warmup=True)
        for rep in range(a.repeat):
            # the case's number within the round plus the round's: which engine goes first on an op
            # flips from round to round, however many cases a round holds (a running case number
            # kept one engine first on an op in every round when a round held an even number)
            case_no = rep
            counts = [int(n) for n in a.rows.split(",")]
            for rows in counts if rep % 2 == 0 else counts[::-1]:  # the session's cold start moves too
                for mode, fv, shape in cases:
                    run_case(spark, ice, jobs, a, rows, mode, fv, shape, rep, case_no, prof, results)
                    case_no += 1
    finally:
        if prof is not None:
            prof.dump_stats(a.profile)
        if not a.warehouse:
            shutil.rmtree(wh, ignore_errors=True)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
