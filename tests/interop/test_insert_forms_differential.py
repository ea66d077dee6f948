"""INSERT INTO ... BY NAME and INSERT INTO ... REPLACE WHERE, differentially against Iceberg Java.

Spark 3.5 (the reference engine's) parses both forms, so each script runs statement by statement
on pyice_sql (catalog `local`) and on Iceberg Java (catalog `ref`): after every statement the two
tables must hold the same rows, and a statement Java rejects must be rejected by pyice_sql too,
leaving its rows and snapshots unchanged. Covered: BY NAME reordering and case-insensitive names,
implicit widening, a query reading the target, unknown / missing / repeated names (errors);
REPLACE WHERE on identity, days and truncate partitions, replacing nothing, rows outside the
condition (Iceberg does not check them), the whole table, and a condition splitting a data file
(an error in Iceberg: it replaces whole files only). Our final tables are read by the peers.
"""
from __future__ import annotations

import pytest

from pyice_sql.core.catalog.base import TableIdentifier
from pyice_sql.core.errors import PyIceError
from tests.interop.engines import EngineError, assert_peers_read, ice_rows, java_sql_each, prefetch, scratch_dir

pytestmark = pytest.mark.interop

# (statement, None) must succeed on both; (statement, marker) must be rejected by both, Java's
# message holding `marker`. The reference tool reports an exception thrown inside Iceberg's
# commit (not a Spark AnalysisException) only as the failed py4j call:
JAVA_SIDE_ERROR = "An error occurred while calling"
SCRIPTS: dict[str, list[tuple[str, str | None]]] = {
    "n_byname": [
        ("CREATE TABLE {c}.db.n_byname (id bigint, p string, v int) USING iceberg PARTITIONED BY (p)", None),
        ("INSERT INTO {c}.db.n_byname VALUES (1, 'a', 10), (2, 'b', 20)", None),
        ("INSERT INTO {c}.db.n_byname BY NAME SELECT 'c' AS p, 7 AS V, 3 AS ID", None),
        ("INSERT INTO TABLE {c}.db.n_byname BY NAME SELECT CAST(4 AS int) AS id, CAST(40 AS smallint) AS v, "
         "'a' AS p", None),
        ("INSERT INTO {c}.db.n_byname BY NAME SELECT v + 1 AS v, p, id + 100 AS id FROM {c}.db.n_byname "
         "WHERE p = 'a'", None),
        ("INSERT INTO {c}.db.n_byname BY NAME SELECT 5 AS id, 'a' AS p, 1 AS v, 2 AS extra", "extra"),
        ("INSERT INTO {c}.db.n_byname BY NAME SELECT 5 AS id, 'a' AS p", "CANNOT_FIND_DATA"),
        ("INSERT INTO {c}.db.n_byname (id, ID, p) VALUES (6, 7, 'a')", "COLUMN_ALREADY_EXISTS"),
    ],
    "n_replace": [
        ("CREATE TABLE {c}.db.n_replace (id bigint, ts timestamp, cat string, v int) USING iceberg "
         "PARTITIONED BY (days(ts), truncate(2, cat))", None),
        ("INSERT INTO {c}.db.n_replace VALUES (1, TIMESTAMP'2024-01-01 10:00:00', 'abc', 1), "
         "(2, TIMESTAMP'2024-01-01 11:00:00', 'xyz', 2), (3, TIMESTAMP'2024-01-02 10:00:00', 'abd', 3), "
         "(4, TIMESTAMP'2024-01-02 12:00:00', 'abz', 300), (5, TIMESTAMP'2024-01-03 00:00:00', 'q', 5)", None),
        ("INSERT INTO {c}.db.n_replace REPLACE WHERE ts >= TIMESTAMP'2024-01-02 00:00:00' AND "
         "ts < TIMESTAMP'2024-01-03 00:00:00' SELECT 30, TIMESTAMP'2024-01-02 05:00:00', 'new', 30", None),
        ("INSERT INTO {c}.db.n_replace REPLACE WHERE cat LIKE 'ab%' SELECT id + 10, ts, 'ab', v FROM "
         "{c}.db.n_replace WHERE cat = 'xyz'", None),
        ("INSERT INTO {c}.db.n_replace REPLACE WHERE cat = 'none' SELECT 40, NULL, 'outside', 40", None),
        ("INSERT INTO {c}.db.n_replace REPLACE WHERE id > 1000 SELECT 50, NULL, NULL, 50", None),
    ],
    "n_split": [
        ("CREATE TABLE {c}.db.n_split (id bigint, p string, v int) USING iceberg PARTITIONED BY (p)", None),
        ("INSERT INTO {c}.db.n_split VALUES (1, 'a', 1), (2, 'a', 200), (3, 'b', 3)", None),
        ("INSERT INTO {c}.db.n_split REPLACE WHERE v > 100 SELECT 9, 'a', 900", JAVA_SIDE_ERROR),
        ("INSERT INTO {c}.db.n_split REPLACE WHERE p = 'b' AND v < 10 SELECT 4, 'b', 4", None),
        ("INSERT INTO {c}.db.n_split REPLACE WHERE true SELECT id * 10, p, v FROM {c}.db.n_split", None),
    ],
}


def java_statements() -> list[str]:
    out = ["CREATE DATABASE ref.db"]
    for table, steps in SCRIPTS.items():
        for sql, _ in steps:
            out += [sql.format(c="ref"), f"SELECT * FROM ref.db.{table}"]
    return out


def prefetch_java():
    # one task per write, so a partition's rows of one INSERT share one file in both engines
    return prefetch("insert_forms_differential",
                    lambda: java_sql_each(scratch_dir("insert-forms-java"), java_statements(), master="local[1]"))


def _snapshots(ice, table: str) -> list[int]:
    return [s.snapshot_id for s in ice.catalogs["local"].load_table(TableIdentifier(("db",), table)).metadata.snapshots]


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    """Per table: [(statement, expected marker, our outcome, Java's rows-or-error, Java's rows after)]."""
    import pyice_sql

    ours_wh = str(tmp_path_factory.mktemp("insert_forms") / "pyice")
    ice = pyice_sql.connect(spark, warehouse=ours_wh)
    ice.sql("CREATE DATABASE local.db")
    java_run = prefetch_java()
    ours: dict[str, list] = {}
    for table, steps in SCRIPTS.items():
        ours[table] = []
        for sql, _ in steps:
            before = _snapshots(ice, table) if ours[table] else None
            try:
                ice.sql(sql.format(c="local"))
                error = None
            except PyIceError as e:
                error = e
            rows = ice_rows(ice.sql(f"SELECT * FROM local.db.{table}"))
            ours[table].append((error, rows, before, _snapshots(ice, table)))
    java = iter(java_run.result())
    next(java)  # CREATE DATABASE
    out = {}
    for table, steps in SCRIPTS.items():
        out[table] = [(sql.format(c="<catalog>"), marker, mine, next(java), next(java))
                      for (sql, marker), mine in zip(steps, ours[table])]
    return out, ours_wh


@pytest.mark.parametrize("table", list(SCRIPTS))
def test_insert_forms_match_iceberg_java(runs, table):
    out, ours_wh = runs
    previous = None
    for sql, marker, (error, rows, snaps_before, snaps_after), java_result, java_rows in out[table]:
        if marker is None:
            assert not isinstance(java_result, EngineError), f"Iceberg Java rejected `{sql}`: {java_result}"
            if error is not None:
                raise AssertionError(f"pyice_sql failed on `{sql}`: {error}") from error
        else:
            assert isinstance(java_result, EngineError) and marker in str(java_result), \
                f"Iceberg Java should reject `{sql}` with {marker!r}: {java_result}"
            assert error is not None, f"pyice_sql accepted `{sql}`, which Iceberg Java rejects: {java_result}"
            assert error.position is not None, f"the error of `{sql}` names no place: {error}"
            assert snaps_after == snaps_before and rows == previous, f"the rejected `{sql}` changed the table"
        assert not isinstance(java_rows, EngineError), java_rows
        assert rows == java_rows, f"after `{sql}` the rows differ\n  pyice: {rows}\n  Iceberg Java: {java_rows}"
        previous = rows
    assert_peers_read(f"{ours_wh}/db/{table}", previous)
