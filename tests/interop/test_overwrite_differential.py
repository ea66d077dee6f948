"""INSERT OVERWRITE, differentially: the same statements on pyice_sql and on Iceberg Java's own copy.

Each script runs statement by statement on pyice (catalog `local`, its own warehouse) and on the
reference engine (catalog `ref`, another warehouse); after every write both engines' rows are
compared, so the first statement whose effect differs is named. Covered: static whole-table
overwrite (also with an empty query, which empties the table), static PARTITION (p='x') with
VALUES and with a query reading the table itself, dynamic overwrite
(spark.sql.sources.partitionOverwriteMode=dynamic) on identity, hidden (days + bucket) and no
partitioning, NULL partitions, an empty dynamic overwrite (a no-op, also when its PARTITION clause
fixes every partition column), and a partial static PARTITION (p='a', q) clause in both modes. Our final tables are also read by PyIceberg and DuckDB.
"""
from __future__ import annotations

import pytest

from tests.interop.engines import EngineError, assert_peers_read, ice_rows, java_sql_each, prefetch, scratch_dir

pytestmark = pytest.mark.interop

MODE = "spark.sql.sources.partitionOverwriteMode"

SCRIPTS = {
    "o_identity": [
        "CREATE TABLE {c}.db.o_identity (id bigint, p string, v int) USING iceberg PARTITIONED BY (p)",
        "INSERT INTO {c}.db.o_identity VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3), (4, 'a', 4), (5, NULL, 5)",
        "INSERT OVERWRITE {c}.db.o_identity PARTITION (p = 'a') VALUES (10, 100)",
        "INSERT OVERWRITE {c}.db.o_identity PARTITION (p = 'b') SELECT id + 100, v FROM {c}.db.o_identity WHERE p = 'c'",
        f"SET {MODE}=dynamic",
        "INSERT OVERWRITE {c}.db.o_identity VALUES (20, 'b', 200), (21, 'd', 210)",
        "INSERT OVERWRITE {c}.db.o_identity SELECT * FROM {c}.db.o_identity WHERE id < 0",
        "INSERT OVERWRITE {c}.db.o_identity VALUES (30, NULL, 300)",
        "INSERT OVERWRITE {c}.db.o_identity PARTITION (p = 'c') VALUES (31, 310)",
        # every partition column fixed, no rows: dynamic still, so nothing is replaced (static empties p = 'c')
        "INSERT OVERWRITE {c}.db.o_identity PARTITION (p = 'c') SELECT id, v FROM {c}.db.o_identity WHERE id < 0",
        f"SET {MODE}=static",
        "INSERT OVERWRITE {c}.db.o_identity VALUES (40, 'x', 400), (41, 'y', 410)",
        "INSERT OVERWRITE {c}.db.o_identity SELECT * FROM {c}.db.o_identity WHERE id < 0",
        "INSERT INTO {c}.db.o_identity VALUES (50, 'a', 500)",
    ],
    "o_hidden": [
        "CREATE TABLE {c}.db.o_hidden (id bigint, ts timestamp, v string) USING iceberg "
        "PARTITIONED BY (days(ts), bucket(2, id))",
        "INSERT INTO {c}.db.o_hidden VALUES (1, TIMESTAMP'2024-01-01 10:00:00', 'a'), "
        "(2, TIMESTAMP'2024-01-01 11:00:00', 'b'), (3, TIMESTAMP'2024-01-02 10:00:00', 'c'), "
        "(4, TIMESTAMP'2024-01-02 12:00:00', 'd'), (5, TIMESTAMP'2024-01-03 00:00:00', 'e'), (6, NULL, 'f')",
        f"SET {MODE}=dynamic",
        "INSERT OVERWRITE {c}.db.o_hidden VALUES (7, TIMESTAMP'2024-01-02 23:00:00', 'g')",
        "INSERT OVERWRITE {c}.db.o_hidden SELECT id + 10, ts, upper(v) FROM {c}.db.o_hidden WHERE ts IS NULL",
        f"SET {MODE}=static",
        "INSERT OVERWRITE {c}.db.o_hidden SELECT id, ts, v FROM {c}.db.o_hidden WHERE id > 4",
    ],
    "o_unpartitioned": [
        "CREATE TABLE {c}.db.o_unpartitioned (id bigint, v string) USING iceberg",
        "INSERT INTO {c}.db.o_unpartitioned VALUES (1, 'a'), (2, 'b')",
        f"SET {MODE}=dynamic",
        "INSERT OVERWRITE {c}.db.o_unpartitioned VALUES (3, 'c')",
        "INSERT OVERWRITE {c}.db.o_unpartitioned SELECT * FROM {c}.db.o_unpartitioned WHERE id < 0",
        f"SET {MODE}=static",
        "INSERT INTO {c}.db.o_unpartitioned VALUES (4, 'd')",
        "INSERT OVERWRITE {c}.db.o_unpartitioned VALUES (5, 'e')",
    ],
    "o_mixed": [
        "CREATE TABLE {c}.db.o_mixed (id bigint, p string, q int) USING iceberg PARTITIONED BY (p, q)",
        "INSERT INTO {c}.db.o_mixed VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 1), (4, 'a', 3)",
        f"SET {MODE}=dynamic",
        "INSERT OVERWRITE {c}.db.o_mixed PARTITION (p = 'a', q) VALUES (10, 1), (11, 4)",
        f"SET {MODE}=static",
        "INSERT OVERWRITE {c}.db.o_mixed PARTITION (p = 'b', q) VALUES (20, 5)",
        "INSERT OVERWRITE {c}.db.o_mixed PARTITION (p = 'a', q = 2) VALUES (21)",
    ],
}


def _steps(table: str) -> list[tuple[str, bool]]:
    """(statement template, compare rows after it) for a script."""
    return [(s, not s.startswith("SET ")) for s in SCRIPTS[table]]


def java_statements() -> list[str]:
    out = ["CREATE DATABASE ref.db"]
    for table in SCRIPTS:
        for template, compare in _steps(table):
            out.append(template.format(c="ref"))
            if compare:
                out.append(f"SELECT * FROM ref.db.{table}")
    return out


def prefetch_java():
    return prefetch("overwrite_differential",
                    lambda: java_sql_each(scratch_dir("overwrite-java"), java_statements()))


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    """Per table: [(statement, our rows or error, Java's rows or error)] after each compared step."""
    import pyice_sql

    root = tmp_path_factory.mktemp("overwrite")
    ours_wh = str(root / "pyice")
    ice = pyice_sql.connect(spark, warehouse=ours_wh)
    ice.sql("CREATE DATABASE local.db")
    java_run = prefetch_java()  # Java works on its own copy: usually done or running already
    ours: dict[str, list] = {}
    try:
        for table in SCRIPTS:
            ours[table] = []
            failed = False
            for template, compare in _steps(table):
                if failed:
                    if compare:
                        ours[table].append(None)
                    continue
                try:
                    ice.sql(template.format(c="local"))
                    if compare:
                        ours[table].append(ice_rows(ice.sql(f"SELECT * FROM local.db.{table}")))
                except Exception as e:
                    failed = True
                    if compare:
                        ours[table].append(e)
            spark.conf.unset(MODE)
    finally:
        spark.conf.unset(MODE)
    java = iter(java_run.result())
    next(java)  # CREATE DATABASE
    out = {}
    for table in SCRIPTS:
        theirs = []
        for template, compare in _steps(table):
            result = next(java)
            if compare:
                after = next(java)
                theirs.append((template, result if isinstance(result, EngineError) else after))
        out[table] = [(stmt, mine, java_rows) for (stmt, java_rows), mine in zip(theirs, ours[table])]
    return out, ours_wh


@pytest.mark.parametrize("table", list(SCRIPTS))
def test_insert_overwrite_matches_iceberg_java(runs, table):
    out, ours_wh = runs
    for stmt, mine, theirs in out[table]:
        stmt = stmt.format(c="<catalog>")
        if isinstance(theirs, EngineError):
            pytest.fail(f"Iceberg Java rejected a statement of the script: {stmt}\n{theirs}")
        if mine is None:
            continue  # an earlier statement already failed on pyice (reported below)
        if isinstance(mine, BaseException):
            raise AssertionError(f"pyice_sql failed on: {stmt}: {mine!r}") from mine
        assert mine == theirs, (f"after `{stmt}` the rows differ\n  pyice: {mine}\n  Iceberg Java: {theirs}")
    final = out[table][-1][1]
    assert_peers_read(f"{ours_wh}/db/{table}", final)
