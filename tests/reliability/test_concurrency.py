"""Racing writers: K processes commit MERGE/UPDATE/DELETE/INSERT (and compaction) to one table.

Each worker (children.py → concurrency.py) has its own interpreter and SparkSession (local[1]),
as separate jobs on one table do. Checked afterwards, for the filesystem and the SQLite catalog:
  - every statement landed (possibly after lost compare-and-swaps, retried) or failed with our
    conflict errors (CommitConflictError / ValidationError) — nothing else;
  - the snapshots form one chain, and they are exactly the setup plus one per landed statement;
  - replaying the landed statements' intents in snapshot order gives exactly the table's rows
    (so no lost update, no duplicate or lost row), which Iceberg Java reads too;
  - failed commits left no files behind.
Scale: PYICE_RELIABILITY_SCALE="KxN" (K workers × N statements); CI runs the default, 3x6.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.interop.engines import java_sql, sort_rows
from tests.reliability import concurrency as race
from tests.reliability.tablefiles import leftovers

pytestmark = [pytest.mark.reliability, pytest.mark.interop]

REPO = Path(__file__).resolve().parents[2]
CATALOGS = ("hadoop", "sql")
K, N = (int(x) for x in os.environ.get("PYICE_RELIABILITY_SCALE", "3x6").lower().split("x"))
PROPS = ("'write.merge.mode' = 'merge-on-read', 'write.delete.mode' = 'merge-on-read', "
         "'write.update.mode' = 'copy-on-write', 'commit.retry.num-retries' = '20', "
         "'commit.retry.min-wait-ms' = '50'")


def _has_compaction() -> bool:
    import pyice_sql.spark.procedures  # noqa: F401  (registers the procedures)
    from pyice_sql.spark.procedures.registry import PROCEDURES

    return "rewrite_data_files" in PROCEDURES


def _race(spark, warehouse: str, catalog_type: str) -> dict:
    import pyice_sql

    ice = pyice_sql.connect(spark, warehouse=warehouse, catalog_type=catalog_type)
    for sql in race.setup_sql(PROPS):
        ice.sql(sql)
    logs = [f"{warehouse}/../worker-{w}.jsonl" for w in range(K)]
    compact_every = 5 if _has_compaction() else 0
    started = time.monotonic()
    procs = [subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.children", "worker", warehouse, catalog_type,
         json.dumps({"w": w, "commits": N, "seed": 1000 + w, "compact_every": compact_every if w == 0 else 0}),
         logs[w]], cwd=REPO, env={**os.environ, "TZ": "UTC"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True) for w in range(K)]
    outs = [p.communicate(timeout=3600) for p in procs]
    wall = time.monotonic() - started
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, f"worker exited {p.returncode}:\n{err[-3000:]}"
    records = [json.loads(line) for path in logs for line in Path(path).read_text().splitlines()]
    return {"ice": ice, "warehouse": warehouse, "records": records, "wall": wall}


@pytest.fixture(scope="module")
def races(spark, tmp_path_factory):
    return {c: _race(spark, str(tmp_path_factory.mktemp(f"race-{c}") / "warehouse"), c) for c in CATALOGS}


def _chain(metadata) -> list:
    """The main branch's snapshots, oldest first."""
    out, sid = [], metadata.current_snapshot().snapshot_id
    while sid is not None:
        snap = metadata.snapshot_by_id(sid)
        out.append(snap)
        sid = snap.parent_snapshot_id
    return out[::-1]


def _expected_rows(result: dict) -> list:
    from pyice_sql.core.catalog.base import TableIdentifier

    table = result["ice"].load("local", TableIdentifier(("db",), "race"))
    chain = _chain(table.metadata)
    by_snapshot = {r["snapshot_id"]: r for r in result["records"] if r["status"] == "landed" and r["snapshot_id"]}
    model = {k: (0, -1) for k in range(race.SHARED_EXISTING)}
    for snap in chain[1:]:
        r = by_snapshot[snap.snapshot_id]
        race.replay(model, r["op"], r["params"])
    return sort_rows([k, v, w] for k, (v, w) in model.items())


@pytest.mark.parametrize("catalog_type", CATALOGS)
def test_racing_writers(races, catalog_type):
    from pyice_sql.core.catalog.base import TableIdentifier

    result = races[catalog_type]
    ice, records = result["ice"], result["records"]
    outcomes = Counter(r["status"] for r in records)
    figures = {"catalog": catalog_type, "workers": K, "statements": len(records), **outcomes,
               "retries": sum(r["retries"] for r in records), "wall_s": round(result["wall"], 1),
               "by_op": dict(Counter(f"{r['op']}:{r['status']}" for r in records))}
    print(f"\nracing writers: {json.dumps(figures)}")
    if os.environ.get("PYICE_RELIABILITY_REPORT"):
        with open(os.environ["PYICE_RELIABILITY_REPORT"], "a") as f:
            f.write(json.dumps(figures) + "\n")

    assert len(records) == K * N
    bad = [r for r in records if r["status"] not in ("landed", "conflict")]
    assert not bad, f"statements that failed other than by a conflict: {bad[:5]}"
    landed = [r for r in records if r["status"] == "landed"]
    assert outcomes["landed"] >= K * N // 2, f"too few statements landed: {figures}"
    no_snapshot = [r for r in landed if r["snapshot_id"] is None and r["op"] != "compact"]
    assert not no_snapshot, f"statements that changed rows but committed nothing: {no_snapshot[:5]}"

    table = ice.load("local", TableIdentifier(("db",), "race"))
    chain = _chain(table.metadata)
    assert {s.snapshot_id for s in chain} == {s.snapshot_id for s in table.metadata.snapshots}, \
        "snapshots outside the main chain (a fork in the lineage)"
    assert [s.sequence_number for s in chain] == sorted({s.sequence_number for s in chain})
    committed = [r["snapshot_id"] for r in landed if r["snapshot_id"]]
    assert len(committed) == len(set(committed))
    assert sorted(committed) == sorted(s.snapshot_id for s in chain[1:]), \
        "the chain is not exactly the setup snapshot plus one per landed statement"

    rows = sort_rows(ice.sql("SELECT * FROM local.db.race").collect())
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)), "duplicated keys"
    expected = _expected_rows(result)
    assert rows == expected, "table differs from the serial replay of the landed statements"
    assert leftovers(table) == set(), "files left by failed commits"


def test_java_reads_race_results(races):
    """Java (Hadoop catalog) reads both results; the SQL-catalog table via a Hadoop-layout copy
    of its current metadata file."""
    from pyice_sql.core.catalog.base import TableIdentifier

    warehouse = races["hadoop"]["warehouse"]
    sql_table = races["sql"]["ice"].load("local", TableIdentifier(("db",), "race"))
    copy = Path(warehouse) / "db_sqlcopy" / "race" / "metadata"
    copy.mkdir(parents=True, exist_ok=True)
    shutil.copy(sql_table.metadata_location.removeprefix("file:"), copy / "v1.metadata.json")
    (copy / "version-hint.text").write_text("1")
    got = java_sql(warehouse, "SELECT * FROM ref.db.race", "SELECT * FROM ref.db_sqlcopy.race")
    assert got == [_expected_rows(races["hadoop"]), _expected_rows(races["sql"])]
