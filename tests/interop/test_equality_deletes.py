"""Equality deletes written by Iceberg Java, read and then rewritten by pyice_sql, in both write modes.

No Spark statement writes equality deletes, but Flink and other streaming writers do, and their
tables reach Spark users. Iceberg Java builds two tables, `eq_mor` and `eq_cow` (format v2,
partitioned by `p`; merge-on-read and copy-on-write), the same way (java_api.py):
  - 30 rows `(id, 'r<id>', id % 3)` in two INSERT files per partition;
  - an equality delete on `id` in partition p=0 of ids 0, 3, 4, 99 (4 lives in p=1 and 99
    nowhere: neither goes), then `(3, 'again', 0)` inserted after it (a newer data sequence number:
    the delete does not reach it);
  - an equality delete on `data` in partition p=1 of 'r7' and 'r8' ('r8' lives in p=2: it stays);
  - `DELETE ... WHERE id = 10` (position deletes, or a rewrite, beside the equality deletes).
pyice_sql reads exactly Java's rows, which match the rows computed by hand; then its UPDATE,
DELETE and MERGE over files with equality deletes neither bring a deleted row back nor lose a
live one (hand-computed), report the hand-computed counts, and Java reads exactly our rows after.
"""
from __future__ import annotations

import json

import pytest

import pyice_sql
from tests.interop.engines import assert_same_rows, ice_rows, java_api, java_sql, prefetch, scratch_dir, sort_rows

pytestmark = pytest.mark.interop

ROWS = 30
TABLES = {"eq_mor": "merge-on-read", "eq_cow": "copy-on-write"}


def _java_statements(table: str, mode: str) -> list[str]:
    modes = ", ".join(f"'write.{kind}.mode'='{mode}'" for kind in ("delete", "update", "merge"))
    return [
        f"CREATE TABLE ref.db.{table} (id int, data string, p int) USING iceberg PARTITIONED BY (p) "
        f"TBLPROPERTIES ('format-version'='2', {modes})",
        f"INSERT INTO ref.db.{table} SELECT /*+ REPARTITION(2) */ int(id), concat('r', id), int(id % 3) "
        f"FROM range(0, {ROWS})",
        json.dumps({"equality_delete": f"db.{table}", "columns": ["id"], "partition": {"p": 0},
                    "rows": [[0], [3], [4], [99]]}),
        f"INSERT INTO ref.db.{table} VALUES (3, 'again', 0)",
        json.dumps({"equality_delete": f"db.{table}", "columns": ["data"], "partition": {"p": 1},
                    "rows": [["r7"], ["r8"]]}),
        f"DELETE FROM ref.db.{table} WHERE id = 10",
        f"SELECT * FROM ref.db.{table}",
    ]


def _counts(ice, statement: str) -> list[int]:
    """A pyice_sql statement's affected, updated, deleted and inserted row counts."""
    row = ice.sql(statement).collect()[0]
    return [row.num_affected_rows, row.num_updated_rows, row.num_deleted_rows, row.num_inserted_rows]


def _expected() -> dict[int, list]:
    """The tables' rows after Java's statements, by hand, keyed by id."""
    rows = {i: [i, f"r{i}", i % 3] for i in range(ROWS) if i not in (0, 3, 7, 10)}
    rows[3] = [3, "again", 0]
    return rows


def prefetch_java():
    def run():
        warehouse = scratch_dir("equality-deletes")
        return warehouse, java_api(warehouse, [s for t, m in TABLES.items() for s in _java_statements(t, m)])
    return prefetch("equality_deletes", run)


@pytest.fixture(scope="module")
def world(spark):
    warehouse, results = prefetch_java().result()
    failed = [r for r in results if isinstance(r, str)]
    assert not failed, f"Iceberg Java failed building the tables: {failed}"
    per_table = len(results) // len(TABLES)
    java = {t: results[(i + 1) * per_table - 1] for i, t in enumerate(TABLES)}
    return warehouse, java, pyice_sql.connect(spark, warehouse=warehouse)


def test_java_wrote_equality_delete_files(world):
    warehouse, _, _ = world
    for table in TABLES:
        files = java_sql(warehouse, f"SELECT content, equality_ids FROM ref.db.{table}.delete_files")[0]
        assert [f for f in files if f[0] == 2] == [[2, [1]], [2, [2]]], files


@pytest.mark.parametrize("table", list(TABLES))
def test_reads_java_equality_deletes(world, table):
    _, java, ice = world
    expected = sort_rows(_expected().values())
    assert java[table] == expected  # the reference and the hand agree on what the deletes remove
    assert ice_rows(ice.sql(f"SELECT * FROM local.db.{table}")) == expected
    assert ice_rows(ice.sql(f"SELECT id FROM local.db.{table} WHERE p = 0")) == sort_rows(
        [r[0]] for r in _expected().values() if r[2] == 0)


@pytest.mark.parametrize("table", list(TABLES))
def test_dml_over_equality_deletes_then_java_reads_it(world, table):
    warehouse, _, ice = world
    rows = _expected()
    live_p0 = [i for i, r in rows.items() if r[2] == 0]
    assert _counts(ice, f"UPDATE local.db.{table} SET data = 'u' WHERE p = 0") == [len(live_p0), len(live_p0), 0, 0]
    for i in live_p0:
        rows[i][1] = "u"
    assert _counts(ice, f"DELETE FROM local.db.{table} WHERE id IN (4, 5, 7, 8)") == [3, 0, 3, 0]  # 7: gone already
    for i in (4, 5, 8):
        del rows[i]
    # 0 was deleted by equality: not matched, so inserted; 6 is live and matched
    assert _counts(ice, f"MERGE INTO local.db.{table} t USING (SELECT 0 AS id, 'm0' AS data, 0 AS p UNION ALL "
                        f"SELECT 6, 'm6', 0) s ON t.id = s.id "
                        f"WHEN MATCHED THEN UPDATE SET data = s.data WHEN NOT MATCHED THEN INSERT *") == [2, 1, 0, 1]
    rows[0], rows[6] = [0, "m0", 0], [6, "m6", 0]
    ours = ice_rows(ice.sql(f"SELECT * FROM local.db.{table}"))
    assert ours == sort_rows(rows.values())
    assert_same_rows(ours, java_sql(warehouse, f"SELECT * FROM ref.db.{table}")[0],
                     f"Iceberg Java reading pyice_sql's writes over its equality deletes ({TABLES[table]})")
