"""Racing writers through a REST catalog: pyice_sql processes and an Iceberg Java writer, one table.

The workload and its serial replay are the reliability suite's (tests/reliability/concurrency.py);
K pyice workers run as there (children.py, with the catalog `local` of type rest on the fixture
server), and Iceberg Java (Spark SparkCatalog type=rest) runs MERGEs and UPDATEs on shared keys
at the same time. Checked afterwards:
  - every pyice statement landed (after 409s, refreshed, re-validated and retried) or failed
    with a conflict error; every Java statement landed or failed with Java's conflict errors;
  - the snapshots form one chain: the setup plus one per landed statement of either engine;
  - replaying the landed statements in snapshot order gives exactly the table's rows, as pyice,
    Iceberg Java and PyIceberg read them;
  - failed pyice commits left no data, delete or manifest files behind.
Scale: PYICE_REST_RACE_SCALE="KxN" (K pyice workers × N statements; Java runs N too).
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.interop.engines import REF_PYTHON
from tests.reliability import concurrency as race
from tests.reliability.tablefiles import kind, leftovers
from tests.rest.java_rest import CONFLICTS as JAVA_CONFLICT
from tests.rest.support import JAVA_REST, java_rest_sql, pyiceberg_rows, rest_server, sort_rows

pytestmark = [pytest.mark.rest, pytest.mark.interop, pytest.mark.reliability]

REPO = Path(__file__).resolve().parents[2]
K, N = (int(x) for x in os.environ.get("PYICE_REST_RACE_SCALE", "2x6").lower().split("x"))
PROPS = ("'write.merge.mode' = 'merge-on-read', 'write.delete.mode' = 'merge-on-read', "
         "'write.update.mode' = 'copy-on-write', 'commit.retry.num-retries' = '20', "
         "'commit.retry.min-wait-ms' = '50'")
JAVA_TABLE = "rest.db.race"
JAVA_RETRIES = 5


def java_plan(w: int, n: int, seed: int) -> list[tuple[str, dict]]:
    """Java's statements: overlapping MERGEs and order-sensitive UPDATEs on the shared keys."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(("merge_shared", {"w": w, "ids": sorted(rng.sample(range(race.SHARED_ALL), 3))}))
        else:
            out.append(("update_shared", {"w": w, "lo": rng.randrange(race.SHARED_EXISTING - 4)}))
    return out


@pytest.fixture(scope="module")
def raced(spark, tmp_path_factory):
    import pyice_sql

    root = tmp_path_factory.mktemp("rest-race")
    warehouse = str(root / "warehouse")
    with rest_server(warehouse, log=root / "server.log") as uri:
        ice = pyice_sql.connect(spark, catalog="local", catalog_type="rest", uri=uri)
        for sql in race.setup_sql(PROPS):
            ice.sql(sql)
        logs = [root / f"worker-{w}.jsonl" for w in range(K)]
        env = {**os.environ, "TZ": "UTC", "PYSPARK_SUBMIT_ARGS":
               f"--driver-memory 512m --conf spark.pyice.catalog.local.uri={uri} pyspark-shell"}
        plan = java_plan(K, N, 4242)
        started = time.monotonic()
        java = subprocess.Popen(  # Iceberg Java's Spark 3.5 runtime, whatever Spark the tests run on
            [REF_PYTHON, str(JAVA_REST), uri, "--keep-going", f"--conflict-retries={JAVA_RETRIES}",
             *(race.statement(op, params).replace(race.TABLE, JAVA_TABLE) for op, params in plan)],
            env={**env, "ICEBERG_REF_MASTER": "local[1]"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs = [subprocess.Popen(
            [sys.executable, "-m", "tests.reliability.children", "worker", warehouse, "rest",
             json.dumps({"w": w, "commits": N, "seed": 1000 + w, "compact_every": 4 if w == 0 else 0}), str(logs[w])],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in range(K)]
        outs = [p.communicate(timeout=3600) for p in procs]
        java_out, java_err = java.communicate(timeout=3600)
        wall = time.monotonic() - started
        for p, (_, err) in zip(procs, outs):
            assert p.returncode == 0, f"worker exited {p.returncode}:\n{err[-3000:]}"
        java_results = [json.loads(line) for line in java_out.splitlines() if line.startswith("{")]
        assert len(java_results) == len(plan), f"Iceberg Java did not run every statement:\n{java_err[-3000:]}"
        records = [json.loads(line) for path in logs for line in path.read_text().splitlines()]
        table = ice.load("local", race_ident())
        yield {"ice": ice, "uri": uri, "records": records, "java": list(zip(plan, java_results)),
               "table": table, "wall": wall}


def race_ident():
    from pyice_sql.core.catalog.base import TableIdentifier

    return TableIdentifier(("db",), "race")


def chain(metadata) -> list:
    out, sid = [], metadata.current_snapshot_id
    while sid is not None:
        snap = metadata.snapshot_by_id(sid)
        out.append(snap)
        sid = snap.parent_snapshot_id
    return out[::-1]


def test_racing_pyice_and_java_writers_through_rest(raced):
    records, java, table = raced["records"], raced["java"], raced["table"]
    java_landed = [(op, params) for (op, params), result in java if "rows" in result]
    java_failed = [result["error"] for _, result in java if "error" in result]
    outcomes = Counter(r["status"] for r in records)
    print(f"\nREST racing writers: {json.dumps({'pyice_workers': K, 'statements_each': N, **outcomes, 'java_landed': len(java_landed), 'java_conflicts': len(java_failed), 'java_attempts': sum(r.get('attempts', 1) for _, r in java), 'pyice_retries': sum(r['retries'] for r in records), 'wall_s': round(raced['wall'], 1)})}")

    bad = [r for r in records if r["status"] not in ("landed", "conflict")]
    assert not bad, f"pyice statements that failed other than by a conflict: {bad[:5]}"
    assert all(any(c in e for c in JAVA_CONFLICT) for e in java_failed), f"Java failures: {java_failed[:3]}"
    assert outcomes["landed"] >= K * N // 2 and java_landed, "too few statements landed"

    snaps = chain(table.metadata)
    assert {s.snapshot_id for s in snaps} == {s.snapshot_id for s in table.metadata.snapshots}, \
        "snapshots outside the main chain (a fork in the lineage)"
    ours = {r["snapshot_id"]: r for r in records if r["status"] == "landed" and r["snapshot_id"]}
    theirs = [s for s in snaps[1:] if s.snapshot_id not in ours]
    assert all(s.summary.get("engine-name") != "pyice_sql" for s in theirs), "a pyice commit nobody logged"
    assert len(theirs) == len(java_landed), "Java's landed statements and Java's snapshots differ"
    assert sorted(ours) == sorted(s.snapshot_id for s in snaps[1:] if s.snapshot_id in ours)

    model = {k: (0, -1) for k in range(race.SHARED_EXISTING)}
    java_iter = iter(java_landed)
    for snap in snaps[1:]:
        op, params = (ours[snap.snapshot_id]["op"], ours[snap.snapshot_id]["params"]) if snap.snapshot_id in ours \
            else next(java_iter)
        race.replay(model, op, params)
    expected = sort_rows([k, v, w] for k, (v, w) in model.items())

    assert sort_rows(raced["ice"].sql(f"SELECT * FROM {race.TABLE}").collect()) == expected, \
        "pyice: the table differs from the serial replay of the landed statements"
    assert java_rest_sql(raced["uri"], f"SELECT * FROM {JAVA_TABLE}")[0] == expected, "Iceberg Java differs"
    assert pyiceberg_rows(raced["uri"], "db.race", ("id", "v", "w")) == expected, "PyIceberg differs"
    left = {p for p in leftovers(table) if kind(p) in ("data", "deletes", "manifest", "manifest-list")}
    assert not left, f"files left by failed commits: {sorted(left)[:5]}"
