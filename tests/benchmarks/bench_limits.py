#!/usr/bin/env python
"""Limits: wide tables, deep structs and a MERGE whose source outgrows its target.

  TZ=UTC python tests/benchmarks/bench_limits.py [--rows 20000] [--source-factor 5] [--java]

Each scenario runs through `ice.sql` on a fresh warehouse and checks its result (row counts and
a few hand-computed values), printing one JSON line of timings:
  * wide: 500 columns (bigint/string/double/date/decimal in turn): CREATE, INSERT, a MoR MERGE
    updating two columns (string, bigint) of 1% of the rows, a CoW UPDATE, a projected SELECT;
  * nested: a 5-level struct (s1.s2.s3.s4.s5.leaf): INSERT, UPDATE of the innermost leaf
    through named_struct, DELETE filtering on the leaf, SELECT of the leaf;
  * big source: MERGE of a source `--source-factor` times the target (10% of it matching)
    into the target, both write modes; driver peak RSS reported (ru_maxrss, whole process).
The 10,000-file planning limit is tests/benchmarks/bench_planning.py. `--java` also reads each
final table with Iceberg Java and compares row counts. Not a pytest module (not collected).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time

os.environ.setdefault("TZ", "UTC")
time.tzset()
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

WIDE_TYPES = ("bigint", "string", "double", "date", "decimal(12,2)")


def timed(fn):
    started = time.perf_counter()
    out = fn()
    return out, round(time.perf_counter() - started, 2)


def wide_value(i: int, ty: str, row: str) -> str:
    return {"bigint": f"{row} * {i}", "string": f"concat('c{i}_', {row})", "double": f"{row} / {i + 1}.0",
            "date": f"date_add(DATE'2024-01-01', CAST({row} % 365 AS int))",
            "decimal(12,2)": f"CAST({row} / 7 AS decimal(12,2))"}[ty]


def wide(ice, rows: int, columns: int = 500) -> dict:
    cols = [(f"c{i}", WIDE_TYPES[i % len(WIDE_TYPES)]) for i in range(1, columns)]
    ddl = ", ".join(["id bigint"] + [f"{n} {t}" for n, t in cols])
    _, t_create = timed(lambda: ice.sql(f"CREATE TABLE local.db.wide ({ddl}) USING iceberg "
                                        "TBLPROPERTIES ('write.merge.mode' = 'merge-on-read')"))
    select = ", ".join(["id"] + [f"{wide_value(i, t, 'id')} AS c{i}" for i, (_, t) in enumerate(cols, 1)])
    _, t_insert = timed(lambda: ice.sql(f"INSERT INTO local.db.wide SELECT {select} FROM range({rows})"))
    merge = ("MERGE INTO local.db.wide t USING (SELECT id, 'merged' AS s FROM range(0, {n}, 100)) u ON t.id = u.id "
             "WHEN MATCHED THEN UPDATE SET c1 = u.s, c5 = -t.c5").format(n=rows)
    (m,), t_merge = timed(lambda: ice.sql(merge).collect())
    (u,), t_update = timed(lambda: ice.sql("UPDATE local.db.wide SET c6 = 'upd' WHERE id < 10").collect())
    (chk,), t_select = timed(lambda: ice.sql(
        "SELECT count(*) n, sum(CASE WHEN c1 = 'merged' THEN 1 ELSE 0 END) merged, "
        "sum(CASE WHEN c6 = 'upd' THEN 1 ELSE 0 END) upd, max(c499) FROM local.db.wide").collect())
    assert m.num_updated_rows == len(range(0, rows, 100)) and u.num_updated_rows == 10
    assert chk.n == rows and chk.merged == len(range(0, rows, 100)) and chk.upd == 10, chk
    return {"scenario": f"wide {columns} columns x {rows} rows", "create_s": t_create, "insert_s": t_insert,
            "merge_mor_s": t_merge, "update_cow_s": t_update, "select_s": t_select}


def nested(ice, rows: int) -> dict:
    ty = "int"
    for level in range(5, 0, -1):
        ty = f"struct<s{level}_id: int, {'leaf' if level == 5 else f's{level + 1}'}: {ty}>"
    _, t_create = timed(lambda: ice.sql(f"CREATE TABLE local.db.deep (id bigint, s1 {ty}) USING iceberg"))

    def build(level: int, leaf: str) -> str:
        inner = leaf if level == 5 else build(level + 1, leaf)
        name = "leaf" if level == 5 else f"s{level + 1}"
        return f"named_struct('s{level}_id', {level}, '{name}', {inner})"
    _, t_insert = timed(lambda: ice.sql(
        f"INSERT INTO local.db.deep SELECT id, {build(1, 'CAST(id AS int)')} FROM range({rows})"))
    leaf = "s1.s2.s3.s4.s5.leaf"
    (u,), t_update = timed(lambda: ice.sql(
        f"UPDATE local.db.deep SET s1 = {build(1, '-1')} WHERE {leaf} % 10 = 0").collect())
    (d,), t_delete = timed(lambda: ice.sql(f"DELETE FROM local.db.deep WHERE {leaf} BETWEEN 1 AND 99").collect())
    (chk,), t_select = timed(lambda: ice.sql(
        f"SELECT count(*) n, sum(CASE WHEN {leaf} = -1 THEN 1 ELSE 0 END) neg FROM local.db.deep").collect())
    tenth = len(range(0, rows, 10))
    assert u.num_updated_rows == tenth and d.num_deleted_rows == 99 - 9, (u, d)
    assert chk.n == rows - 90 and chk.neg == tenth, chk
    return {"scenario": f"5-level struct x {rows} rows", "create_s": t_create, "insert_s": t_insert,
            "update_s": t_update, "delete_s": t_delete, "select_s": t_select}


def big_source(ice, rows: int, factor: int, mode: str) -> dict:
    name = f"local.db.big_{mode.replace('-', '_')}"
    ice.sql(f"CREATE TABLE {name} (id bigint, v bigint, s string) USING iceberg PARTITIONED BY (bucket(8, id)) "
            f"TBLPROPERTIES ('write.merge.mode' = '{mode}')")
    ice.sql(f"INSERT INTO {name} SELECT id * 10, id, 'target' FROM range({rows})")
    n_source = rows * factor
    # source ids: every 10th target id is matched (ids 0, 100, 200, ...), the rest are new keys
    src = (f"SELECT CASE WHEN id % 10 = 0 THEN id * 10 ELSE id * 10 + 1 END AS id, id AS v "
           f"FROM range({n_source}) WHERE id < {rows} OR id % 10 <> 0")
    (m,), t_merge = timed(lambda: ice.sql(
        f"MERGE INTO {name} t USING ({src}) u ON t.id = u.id WHEN MATCHED THEN UPDATE SET v = -u.v, s = 'upd' "
        f"WHEN NOT MATCHED THEN INSERT (id, v, s) VALUES (u.id, u.v, 'new')").collect())
    matched = len(range(0, rows, 10))
    inserted = sum(1 for i in range(n_source) if i % 10 != 0)
    (chk,), t_select = timed(lambda: ice.sql(f"SELECT count(*) n, sum(CASE WHEN s = 'upd' THEN 1 ELSE 0 END) u "
                                             f"FROM {name}").collect())
    assert (m.num_updated_rows, m.num_inserted_rows) == (matched, inserted), m
    assert chk.n == rows + inserted and chk.u == matched, chk
    return {"scenario": f"MERGE source {n_source} rows into target {rows} rows ({mode})", "merge_s": t_merge,
            "updated": matched, "inserted": inserted, "select_s": t_select,
            "driver_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--source-factor", type=int, default=5)
    ap.add_argument("--java", action="store_true")
    args = ap.parse_args()
    import pyice_sql

    warehouse = tempfile.mkdtemp(prefix="pyice-limits-")
    try:
        ice = pyice_sql.connect(warehouse=warehouse, quiet=True)
        ice.sql("CREATE DATABASE local.db")
        results = [wide(ice, args.rows), nested(ice, args.rows)]
        results += [big_source(ice, args.rows * 5, args.source_factor, m) for m in ("merge-on-read", "copy-on-write")]
        for r in results:
            print(json.dumps(r))
        if args.java:
            from tests.interop.engines import java_sql

            tables = ["wide", "deep", "big_merge_on_read", "big_copy_on_write"]
            counts = java_sql(warehouse, *[f"SELECT count(*) FROM ref.db.{t}" for t in tables])
            ours = [ice.sql(f"SELECT count(*) FROM local.db.{t}").collect()[0][0] for t in tables]
            print(json.dumps({"java_counts": [c[0][0] for c in counts], "pyice_counts": ours}))
            assert [c[0][0] for c in counts] == ours
    finally:
        shutil.rmtree(warehouse, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
