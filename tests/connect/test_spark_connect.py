"""pyice_sql on Spark Connect (no py4j: the DataFrame-only backend stands in for the JVM shim).

All statements run in one child process on one local Spark Connect server (starting one costs
tens of seconds); their results are checked against hand-computed rows, and Iceberg Java reads
the tables they wrote. Runs in the Spark 4 pass (tests/run.sh installs pyspark's connect extras).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.interop.engines import java_sql, sort_rows

pytestmark = pytest.mark.connect

REPO = Path(__file__).resolve().parents[2]
MODES = ("merge-on-read", "copy-on-write")
EXPECTED = [[2, "B", "2024-02-05"], [3, "m", "2024-01-06"], [4, "{x}", None], [9, "n", None]]


def _dml(table: str, mode: str) -> list[str]:
    props = f"'write.delete.mode'='{mode}', 'write.update.mode'='{mode}', 'write.merge.mode'='{mode}'"
    return [
        f"CREATE TABLE {table} (id bigint, s string, d date) USING iceberg "
        f"PARTITIONED BY (bucket(4, id), months(d)) TBLPROPERTIES ({props})",
        f"INSERT INTO {table} VALUES (1, 'a', DATE '2024-01-05'), (2, 'b', DATE '2024-02-05'), "
        "(3, 'c', DATE '2024-01-06'), (4, '{x}', NULL)",
        f"DELETE FROM {table} WHERE id = 1",
        f"UPDATE {table} SET s = upper(s) WHERE d >= DATE '2024-02-01'",
        f"MERGE INTO {table} t USING (SELECT 3 AS id, 'm' AS s UNION ALL SELECT 9, 'n') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET t.s = s.s WHEN NOT MATCHED THEN INSERT (id, s, d) VALUES (s.id, s.s, NULL)",
        f"SELECT id, s, CAST(d AS STRING) FROM {table}",
        f"SELECT count(*) FROM {table}.snapshots",
        f"SELECT id FROM {table} WHERE id = 3",
    ]


BAD = [
    "CREATE TABLE local.db.nn (id bigint NOT NULL, s string) USING iceberg",
    "INSERT INTO local.db.nn VALUES (1, 'a')",
    "UPDATE local.db.nn SET id = NULL WHERE id = 1",
    "UPDATE local.db.nn SET nope = 1",
    "SELECT * FROM local.db.nn",
    "SELECT count(*) FROM local.db.nn.snapshots",
]


MAINTENANCE = [  # after the merge-on-read table's DML: compaction folds its deletes, expiry drops history
    "CALL local.system.rewrite_data_files(table => 'db.t_mer', options => map('rewrite-all', 'true'))",
    "CALL local.system.expire_snapshots(table => 'db.t_mer', older_than => TIMESTAMP '2999-01-01 00:00:00', "
    "retain_last => 1)",
    "SELECT id, s, CAST(d AS STRING) AS d FROM local.db.t_mer",
    "SELECT count(*) AS snapshots FROM local.db.t_mer.snapshots",
    "SELECT count(*) AS deletes FROM local.db.t_mer.delete_files",
]


@pytest.fixture(scope="module")
def connect_run(tmp_path_factory):
    warehouse = str(tmp_path_factory.mktemp("connect") / "warehouse")
    statements = ["CREATE DATABASE local.db", *[s for m in MODES for s in _dml(f"local.db.t_{m[:3]}", m)], *MAINTENANCE,
                  *BAD]
    done = subprocess.run([sys.executable, "-m", "tests.connect.connect_child", warehouse, *statements],
                          cwd=REPO, capture_output=True, text=True, timeout=1800)
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith('{"sql"')]
    assert len(results) == len(statements), f"the Connect child stopped (exit {done.returncode}):\n{done.stderr[-4000:]}"
    by_sql = dict(zip(statements, results))
    assert len(by_sql) == len(statements), "statements must differ in text: results are looked up by it"
    return warehouse, by_sql


def _rows(result: dict) -> list:
    assert "error" not in result, result
    return sort_rows(result["rows"])


@pytest.mark.parametrize("mode", MODES)
def test_dml_on_spark_connect_gives_the_hand_computed_rows_and_java_reads_them(connect_run, mode):
    warehouse, by_sql = connect_run
    steps = [by_sql[s] for s in _dml(f"local.db.t_{mode[:3]}", mode)]
    assert [_rows(r)[0][0] for r in steps[2:5]] == [1, 1, 2]  # num_affected_rows of DELETE, UPDATE, MERGE
    assert _rows(steps[5]) == EXPECTED
    assert _rows(steps[6]) == [[4]]
    assert _rows(steps[7]) == [[3]]
    java = java_sql(warehouse, f"SELECT id, s, CAST(d AS STRING) FROM ref.db.t_{mode[:3]}",
                    f"SELECT id FROM ref.db.t_{mode[:3]} WHERE id = 3")
    assert java == [EXPECTED, [[3]]]  # the bucket(4, id) partition values we computed prune right in Java


def test_maintenance_procedures_on_spark_connect(connect_run):
    _, by_sql = connect_run
    results = [by_sql[s] for s in MAINTENANCE]
    assert all("error" not in r for r in results), results
    assert _rows(results[2]) == EXPECTED
    assert _rows(results[3]) == [[1]]
    assert _rows(results[4]) == [[0]]


def test_a_bad_statement_on_spark_connect_names_the_problem_and_commits_nothing(connect_run):
    _, by_sql = connect_run
    results = [by_sql[s] for s in BAD]
    assert "error" in results[2] and "id" in results[2]["error"]
    assert "error" in results[3] and "nope" in results[3]["error"]
    assert _rows(results[4]) == [[1, "a"]]
    assert _rows(results[5]) == [[1]]
