#!/usr/bin/env python
"""Driver-side scan planning on a table of many tiny data files (default 10,000).

  TZ=UTC python tests/benchmarks/bench_planning.py --files 10000

Builds the table with real files through pyice_sql's own write path: one Spark write
(`ice.append`) of a small range with an identity partition column holding `--files` distinct
values, so each partition folder gets one tiny Parquet file (--appends N splits it into N
appends, i.e. N manifests). Then times `plan_files` — manifest list + manifests read and
pruned on the driver, no Spark job — for
  * a point lookup on the partition column (pruned by partition values),
  * a point lookup on a data column (every entry's partition passes; pruned by column bounds),
  * a full scan (no filter),
reporting the best and median of --repeat runs, cold (every manifest decoded) and warm (decoded
manifests cached, as for a session's next statement: core/format/manifest_cache.py), the files
kept, that no Spark job ran, and the driver memory (tracemalloc peak, and what the manifest cache
then holds, measured in a separate run since tracing slows Python).
The target for a point lookup on 10k files is < 1 s. Not a pytest module (not collected).
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
import tracemalloc

os.environ.setdefault("TZ", "UTC")
time.tzset()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--rows-per-file", type=int, default=3)
    ap.add_argument("--appends", type=int, default=1, help="split the load into this many appends (manifests)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warehouse", help="default: a fresh temp dir, removed at the end; given, the table is "
                                        "kept and reused by the next run")
    ap.add_argument("--profile", action="store_true", help="cProfile one point-lookup planning (to stderr)")
    a = ap.parse_args()

    import pyice_sql
    from pyspark.sql import functions as F
    from pyice_sql.core.expr.predicates import AlwaysTrue, eq
    from pyice_sql.spark.runtime import local_session
    from pyice_sql.core.format.manifest_cache import MANIFESTS
    from pyice_sql.core.scan.planner import plan_files

    wh = a.warehouse or tempfile.mkdtemp(prefix="pyice-plan-bench-")
    spark = local_session("pyice-plan-bench")
    ice = pyice_sql.connect(spark, warehouse=wh)
    try:
        ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
        reuse = bool(ice.sql("SHOW TABLES IN local.db LIKE 'many'").collect())  # kept with --warehouse
        if not reuse:
            ice.sql("CREATE TABLE local.db.many (id bigint, part int, data string) USING iceberg "
                    "PARTITIONED BY (part)")
        rows = a.files * a.rows_per_file
        per_append = -(-a.files // a.appends)
        t = time.perf_counter()
        for i in range(0 if reuse else a.appends):
            lo, hi = i * per_append, min(a.files, (i + 1) * per_append)
            if lo >= hi:
                break
            df = (spark.range(lo * a.rows_per_file, hi * a.rows_per_file)
                  .select(F.col("id"), (F.col("id") / a.rows_per_file).cast("int").alias("part"),
                          F.concat(F.lit("v"), F.col("id").cast("string")).alias("data")))
            ice.append("local.db.many", df)
        load_s = time.perf_counter() - t
        table = ice.load("local", ice._resolve_name("local.db.many")[1])
        md = table.metadata
        snap = md.current_snapshot()
        print(json.dumps({"load_s": round(load_s, 2), "rows": rows, "appends": a.appends,
                          "data_files": int(snap.summary.get("total-data-files", 0)),
                          "manifest_list": snap.manifest_list}), flush=True)

        mid = a.files // 2
        cases = {"point_on_partition": eq("part", mid), "point_on_column": eq("id", mid * a.rows_per_file + 1),
                 "full_scan": AlwaysTrue()}
        sc = spark.sparkContext
        sc.setJobGroup("planning", "planning")
        results = {}
        for name, flt in cases.items():
            cold, warm, plan = [], [], None
            for _ in range(a.repeat):  # cold: every manifest decoded; warm: as the cache holds them
                MANIFESTS.clear()
                t = time.perf_counter()
                plan_files(md, table.io, snap, flt)
                cold.append(time.perf_counter() - t)
                t = time.perf_counter()
                plan = plan_files(md, table.io, snap, flt)
                warm.append(time.perf_counter() - t)
            MANIFESTS.clear()
            tracemalloc.start()
            plan_files(md, table.io, snap, flt)
            held, peak = tracemalloc.get_traced_memory()  # held: the plan gone, what the cache keeps
            tracemalloc.stop()
            m = plan.metrics
            results[name] = {"best_s": round(min(cold), 4), "median_s": round(statistics.median(cold), 4),
                             "warm_best_s": round(min(warm), 4), "warm_median_s": round(statistics.median(warm), 4),
                             "files_kept": len(plan.tasks), "files_total": m.data_files_total,
                             "pruned_by_partition": m.skipped_by_partition, "pruned_by_metrics": m.skipped_by_metrics,
                             "manifests": m.manifests_total, "peak_mb": round(peak / 2**20, 1),
                             "cache_mb": round(held / 2**20, 1)}
            print(json.dumps({"case": name, **results[name]}), flush=True)
        jobs = sc.statusTracker().getJobIdsForGroup("planning")
        if a.profile:
            import cProfile
            import pstats
            prof = cProfile.Profile()
            prof.runcall(plan_files, md, table.io, snap, cases["point_on_column"])
            pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(15)
        # Beyond planning: building the Spark DataFrame over the planned files (Spark lists/stats every
        # path on the driver, or in a listing job when there are more than
        # spark.sql.sources.parallelPartitionDiscovery.threshold of them) and reading the point lookup.
        from pyice_sql.spark.read.reader import read_tasks
        schema = md.schema()
        for name in ("point_on_column", "full_scan"):
            sc.setJobGroup("frame-" + name, name)
            plan = plan_files(md, table.io, snap, cases[name])
            t = time.perf_counter()
            df = read_tasks(spark, schema, plan.tasks)
            frame_s = time.perf_counter() - t
            listing_jobs = len(sc.statusTracker().getJobIdsForGroup("frame-" + name))
            t = time.perf_counter()
            n = df.count()
            count_s = time.perf_counter() - t
            print(json.dumps({"dataframe": name, "files": len(plan.tasks), "build_s": round(frame_s, 3),
                              "listing_jobs": listing_jobs, "count_s": round(count_s, 3), "rows": n}), flush=True)
        t = time.perf_counter()
        n = ice.sql(f"SELECT count(*) FROM local.db.many WHERE id = {mid * a.rows_per_file + 1}").collect()[0][0]
        print(json.dumps({"sql_point_lookup_s": round(time.perf_counter() - t, 3), "rows": n}), flush=True)
        point = results["point_on_column"]["best_s"]
        print(json.dumps({"spark_jobs_during_planning": len(jobs), "point_lookup_s": point,
                          "target_s": 1.0, "ok": point < 1.0 and not jobs}), flush=True)
    finally:
        if not a.warehouse:
            shutil.rmtree(wh, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
