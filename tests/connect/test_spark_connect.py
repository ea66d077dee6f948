"""pyice_sql on Spark Connect (no py4j: the DataFrame-only backend stands in for the JVM shim).

All statements run in one child process on one local Spark Connect server (starting one costs
tens of seconds), with pyice_sql installed on the session (`install(spark)`); their results are
checked against hand-computed rows, and Iceberg Java reads the tables they wrote (one JVM for
all of its queries). Covered: MoR and CoW DELETE / UPDATE / MERGE (and MoR on format v3, with
deletion vectors) on tables partitioned by
bucket / months and by bucket / days / truncate (Java answering partition-pruned queries on our
partition values), CALL procedures, errors, time travel (VERSION / TIMESTAMP AS OF, tags,
branches), metadata tables, `spark.sql` routed by install() with `args` and `{name}` arguments,
and the Spark 4 DML forms (MERGE WITH SCHEMA EVOLUTION, INSERT BY NAME / REPLACE WHERE).
Runs in the Spark 4 pass (tests/run.sh installs pyspark's connect extras).
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
# format v3 merge-on-read writes and reads deletion vectors through the Python UDF twins of the shim's codec
# (table, write mode, format version, partitioned): the unpartitioned copy-on-write table takes the
# writes that cluster rows by the file they were read from and by the MERGE's join
DML_TABLES = ([(f"t_{m[:3]}", m, 2, True) for m in MODES] + [("t_v3", "merge-on-read", 3, True)]
              + [("t_cow_unpartitioned", "copy-on-write", 2, False)])
EXPECTED = [[2, "B", "2024-02-05"], [3, "m", "2024-01-06"], [4, "{x}", None], [9, "n", None]]


def _mode_props(mode: str) -> str:
    return f"'write.delete.mode'='{mode}', 'write.update.mode'='{mode}', 'write.merge.mode'='{mode}'"


def _dml(table: str, mode: str, version: int = 2, partitioned: bool = True) -> list[str]:
    props = f"{_mode_props(mode)}, 'format-version'='{version}'"
    spec = "PARTITIONED BY (bucket(4, id), months(d)) " if partitioned else ""
    return [
        f"CREATE TABLE {table} (id bigint, s string, d date) USING iceberg {spec}TBLPROPERTIES ({props})",
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


def _partitioned(table: str, mode: str) -> list[str]:
    props = _mode_props(mode)
    return [
        f"CREATE TABLE {table} (id bigint, ts timestamp, cat string, v int) USING iceberg "
        f"PARTITIONED BY (bucket(4, id), days(ts), truncate(2, cat)) TBLPROPERTIES ({props})",
        f"INSERT INTO {table} VALUES (1, TIMESTAMP'2024-03-01 10:00:00', 'abc', 1), "
        "(2, TIMESTAMP'2024-03-01 20:00:00', 'abd', 2), (3, TIMESTAMP'2024-03-02 08:00:00', 'xyz', 3), "
        "(4, TIMESTAMP'2024-03-03 00:00:00', 'abc', 4), (5, NULL, NULL, 5)",
        f"UPDATE {table} SET v = v * 10 WHERE cat LIKE 'ab%'",
        f"DELETE FROM {table} WHERE ts >= TIMESTAMP'2024-03-02 00:00:00' AND ts < TIMESTAMP'2024-03-03 00:00:00'",
        f"MERGE INTO {table} t USING (SELECT 2 AS id, 'xyq' AS cat UNION ALL SELECT 6, 'abe') s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET cat = s.cat "
        "WHEN NOT MATCHED THEN INSERT (id, ts, cat, v) VALUES (s.id, TIMESTAMP'2024-03-01 12:00:00', s.cat, 6)",
        *_pruned(table),
    ]


def _pruned(table: str) -> list[str]:
    """Queries each partition transform prunes: truncate + days, and bucket."""
    return [f"SELECT id FROM {table} WHERE cat LIKE 'ab%' AND ts >= TIMESTAMP'2024-03-01 00:00:00' "
            "AND ts < TIMESTAMP'2024-03-02 00:00:00'",
            f"SELECT id, CAST(ts AS STRING), cat, v FROM {table} WHERE id = 4",
            f"SELECT id, CAST(ts AS STRING), cat, v FROM {table}"]


PARTITIONED_ROWS = [[1, "2024-03-01 10:00:00", "abc", 10], [2, "2024-03-01 20:00:00", "xyq", 20],
                    [4, "2024-03-03 00:00:00", "abc", 40], [5, None, None, 5], [6, "2024-03-01 12:00:00", "abe", 6]]
PRUNED_ANSWERS = [sort_rows(rows) for rows in ([[1], [6]], [PARTITIONED_ROWS[2]], PARTITIONED_ROWS)]


def _via_spark(sql: str, **spec) -> str:
    """A step run through the installed `spark.sql` (see connect_child)."""
    return json.dumps({"sql": sql, **spec})


TIME_TRAVEL = [
    "CREATE TABLE local.db.tt (id bigint, v string) USING iceberg",
    "INSERT INTO local.db.tt VALUES (1, 'a'), (2, 'b')",
    "ALTER TABLE local.db.tt CREATE TAG t1",
    "ALTER TABLE local.db.tt CREATE BRANCH b1",
    "INSERT INTO local.db.tt VALUES (3, 'c')",
    "INSERT INTO local.db.tt.branch_b1 VALUES (9, 'z')",
    "SELECT CAST(snapshot_id AS STRING), CAST(committed_at AS STRING) FROM local.db.tt.snapshots "
    "ORDER BY committed_at LIMIT 1",
    # (filled in by `_time_travel`: the first snapshot's id and commit time)
    "SELECT * FROM local.db.tt VERSION AS OF 't1'",
    "SELECT * FROM local.db.tt VERSION AS OF 'b1'",
    "SELECT * FROM local.db.tt.branch_b1",
    "SELECT * FROM local.db.tt",
]
TT_FIRST = [[1, "a"], [2, "b"]]
TT_ANSWERS = [TT_FIRST, TT_FIRST, TT_FIRST, [*TT_FIRST, [9, "z"]], [*TT_FIRST, [9, "z"]], [*TT_FIRST, [3, "c"]]]

ROUTED = [  # through spark.sql once install() routes it, after TIME_TRAVEL
    _via_spark("SELECT count(*) FROM local.db.tt WHERE id > :lo", args={"lo": 1}),
    _via_spark("SELECT count(*) FROM local.db.tt WHERE id >= ?", args=[1]),
    _via_spark("MERGE INTO local.db.tt t USING {src} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
               "WHEN NOT MATCHED THEN INSERT *", frames={"src": "SELECT CAST(2 AS BIGINT) AS id, 'B' AS v "
                                                                "UNION ALL SELECT 4, 'd'"}),
    _via_spark("SELECT {n} + 1 AS x, {s} AS y", kwargs={"n": 1, "s": "o'k"}),
    _via_spark("SELECT id, v FROM local.db.tt WHERE v = {s}", kwargs={"s": "B"}),
    _via_spark("UPDATE local.db.tt SET nope = 1"),
    _via_spark("SELECT id, v FROM local.db.tt"),
]
ROUTED_ANSWERS = [[[2]], [[3]], None, [[2, "o'k"]], [[2, "B"]], None, [[1, "a"], [2, "B"], [3, "c"], [4, "d"]]]

METADATA = [  # after ROUTED: Java answers the same
    "SELECT name, type FROM local.db.tt.refs",
    "SELECT count(*) FROM local.db.tt.snapshots",
    "SELECT count(*) FROM local.db.tt.history",
    "SELECT count(*) FROM local.db.tt.files",
    "SELECT operation FROM local.db.tt.snapshots",
]

SPARK4_FORMS = [
    "CREATE TABLE local.db.ev (id bigint, v string) USING iceberg PARTITIONED BY (v)",
    "INSERT INTO local.db.ev BY NAME SELECT 'a' AS v, 1 AS id",
    "MERGE WITH SCHEMA EVOLUTION INTO local.db.ev t USING (SELECT CAST(1 AS BIGINT) AS id, 'A' AS v, true AS flag "
    "UNION ALL SELECT 2, 'b', false) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "INSERT INTO local.db.ev REPLACE WHERE v = 'b' SELECT 2, 'bb', NULL",
    "SELECT * FROM local.db.ev",
]
EV_ROWS = [[1, "A", True], [2, "bb", None]]


def _time_travel(start: int) -> list[str]:
    """TIME_TRAVEL with the VERSION / TIMESTAMP AS OF steps that read step `start + 6`'s answer."""
    first = start + 6
    return [*TIME_TRAVEL[:7],
            _via_spark("SELECT * FROM local.db.tt VERSION AS OF {0}", **{"from": first}),
            _via_spark("SELECT * FROM local.db.tt TIMESTAMP AS OF '{1}'", **{"from": first}),
            *TIME_TRAVEL[7:]]


def _head() -> list[str]:
    return ["CREATE DATABASE local.db", *[s for t, m, v, p in DML_TABLES for s in _dml(f"local.db.{t}", m, v, p)],
            *MAINTENANCE,
            *BAD, *[s for m in MODES for s in _partitioned(f"local.db.p_{m[:3]}", m)]]


def _statements() -> list[str]:
    return [*_head(), *_time_travel(len(_head())), *ROUTED, *METADATA, *SPARK4_FORMS]


@pytest.fixture(scope="module")
def connect_run(tmp_path_factory):
    warehouse = str(tmp_path_factory.mktemp("connect") / "warehouse")
    statements = _statements()
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


@pytest.mark.parametrize("table,mode,version,partitioned", DML_TABLES)
def test_dml_on_spark_connect_gives_the_hand_computed_rows_and_java_reads_them(connect_run, table, mode, version,
                                                                             partitioned):
    warehouse, by_sql = connect_run
    steps = [by_sql[s] for s in _dml(f"local.db.{table}", mode, version, partitioned)]
    assert [_rows(r)[0][0] for r in steps[2:5]] == [1, 1, 2]  # num_affected_rows of DELETE, UPDATE, MERGE
    assert _rows(steps[5]) == EXPECTED
    assert _rows(steps[6]) == [[4]]
    assert _rows(steps[7]) == [[3]]
    java = java_sql(warehouse, f"SELECT id, s, CAST(d AS STRING) FROM ref.db.{table}",
                    f"SELECT id FROM ref.db.{table} WHERE id = 3")
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


@pytest.fixture(scope="module")
def java_answers(connect_run):
    """Iceberg Java's answers on the tables the Connect run wrote, in one JVM."""
    warehouse, _ = connect_run
    queries = [q.replace("local.", "ref.") for m in MODES for q in _pruned(f"local.db.p_{m[:3]}")]
    queries += [q.replace("local.", "ref.") for q in METADATA] + ["SELECT * FROM ref.db.ev"]
    return dict(zip(queries, java_sql(warehouse, *queries)))


@pytest.mark.parametrize("mode", MODES)
def test_partitioned_dml_on_spark_connect_and_java_prunes_our_partitions(connect_run, java_answers, mode):
    _, by_sql = connect_run
    steps = [by_sql[s] for s in _partitioned(f"local.db.p_{mode[:3]}", mode)]
    assert [_rows(r)[0][:4] for r in steps[2:5]] == [[3, 3, 0, 0], [1, 0, 1, 0], [2, 1, 0, 1]]
    pruned = _pruned(f"local.db.p_{mode[:3]}")
    assert [_rows(r) for r in steps[5:]] == PRUNED_ANSWERS
    assert [java_answers[q.replace("local.", "ref.")] for q in pruned] == PRUNED_ANSWERS


def test_time_travel_tags_and_branches_on_spark_connect(connect_run):
    _, by_sql = connect_run
    steps = _time_travel(len(_head()))
    assert all("error" not in by_sql[s] for s in steps[:7]), [by_sql[s] for s in steps[:7]]
    assert [_rows(by_sql[s]) for s in steps[7:]] == TT_ANSWERS


def test_install_routes_spark_sql_with_args_and_named_arguments_on_spark_connect(connect_run):
    _, by_sql = connect_run
    results = [by_sql[s] for s in ROUTED]
    for result, expected in zip(results, ROUTED_ANSWERS):
        if expected is not None:
            assert _rows(result) == expected, result
    assert _rows(results[2])[0][:4] == [2, 1, 0, 1]  # the MERGE's metrics row: 1 updated, 1 inserted
    assert "error" in results[5] and "nope" in results[5]["error"]


def test_metadata_tables_on_spark_connect_answer_as_java(connect_run, java_answers):
    _, by_sql = connect_run
    ours = [_rows(by_sql[q]) for q in METADATA]
    assert ours[0] == [["b1", "BRANCH"], ["main", "BRANCH"], ["t1", "TAG"]]
    assert ours[1:3] == [[[4]], [[3]]]  # main's 3 commits plus the branch's; history is main's
    assert ours == [java_answers[q.replace("local.", "ref.")] for q in METADATA]


def test_spark4_dml_forms_on_spark_connect(connect_run, java_answers):
    _, by_sql = connect_run
    assert all("error" not in by_sql[s] for s in SPARK4_FORMS[:-1]), [by_sql[s] for s in SPARK4_FORMS]
    assert _rows(by_sql[SPARK4_FORMS[-1]]) == EV_ROWS
    assert java_answers["SELECT * FROM ref.db.ev"] == EV_ROWS
