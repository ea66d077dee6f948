"""Tables Iceberg Java writes are read by pyice_sql with exactly Java's rows.

One reference-engine run, in a warehouse of its own (started when collection ends, see
conftest.py, so it overlaps other modules' pyice work):
  - builds `j_mor` (identity + bucket partitioned, merge-on-read DELETE, UPDATE and MERGE, so
    there are position delete files, then a column rename and add with more rows and deletes),
    and `j_cow` (the same on copy-on-write, with a column rename and drop), tagging the first
    snapshot of each; records the current rows, the rows as of the tag, WHERE answers, and the
    snapshots;
Then pyice reads each table (and time travels: VERSION AS OF the first snapshot id, the tag,
TIMESTAMP AS OF its commit time) and must see Java's rows, also for WHERE queries it prunes.
(Java writing into a table pyice created is in test_written_by_pyice.py.)
"""
from __future__ import annotations

import pytest

from tests.interop.engines import (
    EngineError, assert_same_rows, ice_answers, ice_rows, java_sql_each, prefetch, scratch_dir,
)

pytestmark = pytest.mark.interop

MOR = ("'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")
COW = ("'format-version'='2', 'write.delete.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
       "'write.merge.mode'='copy-on-write'")


def _rows(first: int, last: int) -> str:
    cats = ["a", "b", "c", None]
    out = []
    for i in range(first, last + 1):
        cat = cats[i % 4]
        out.append(f"({i}, 'name{i}', {'NULL' if cat is None else repr(cat)}, {i * 1.25:.2f}, "
                   f"TIMESTAMP'2024-0{1 + i % 3}-{1 + i % 27:02d} {i % 24:02d}:00:00')")
    return ", ".join(out)


def java_table_script(table: str, props: str, evolve: list[str], wheres: list[str]) -> dict[str, list[str]]:
    t = f"ref.db.{table}"
    return {
        "setup": [
            f"CREATE TABLE {t} (id bigint, name string, cat string, amount decimal(10,2), ts timestamp) "
            f"USING iceberg PARTITIONED BY (cat, bucket(4, id)) TBLPROPERTIES ({props})",
            f"INSERT INTO {t} VALUES {_rows(1, 12)}",
            f"ALTER TABLE {t} CREATE TAG first",
            f"INSERT INTO {t} VALUES {_rows(13, 24)}",
            f"DELETE FROM {t} WHERE id IN (3, 14)",
            f"UPDATE {t} SET amount = amount * 2, name = upper(name) WHERE cat = 'b' OR id = 7",
            f"MERGE INTO {t} AS t USING (SELECT * FROM VALUES (1, 'd'), (2, 'u'), (16, 'u'), (100, 'i') AS s(id, op)) "
            "AS s ON t.id = s.id WHEN MATCHED AND s.op = 'd' THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET t.name = 'merged', t.amount = t.amount + 1 "
            "WHEN NOT MATCHED THEN INSERT (id, name, cat, amount, ts) "
            "VALUES (s.id, 'new', 'c', 1.00, TIMESTAMP'2024-05-05 00:00:00')",
            *[f"ALTER TABLE {t} {e}" for e in evolve],
        ],
        "after": [f"DELETE FROM {t} WHERE id = 25"],
        "record": [
            f"SELECT * FROM {t}",
            f"SELECT * FROM {t} VERSION AS OF 'first'",
            f"SELECT snapshot_id, committed_at FROM {t}.refs JOIN {t}.snapshots USING (snapshot_id) "
            "WHERE name = 'first'",
            f"SELECT content, count(*) FROM {t}.delete_files GROUP BY content",
            *[f"SELECT * FROM {t} WHERE {w}" for w in wheres],
        ],
    }


J_MOR_WHERES = ["cat = 'b'", "id = 16", "cat IS NULL", "full_name = 'merged'", "extra IS NOT NULL",
                "amount > 20", "ts < TIMESTAMP'2024-02-01'"]
J_COW_WHERES = ["cat = 'a'", "id IN (2, 7, 100)", "label LIKE 'NAME%'", "ts >= TIMESTAMP'2024-03-01'"]
J_MOR = java_table_script("j_mor", MOR, ["RENAME COLUMN name TO full_name", "ADD COLUMN extra int"], J_MOR_WHERES)
J_MOR["setup"].append("INSERT INTO ref.db.j_mor VALUES " + ", ".join(
    f"({i}, 'late{i}', 'a', 0.50, TIMESTAMP'2024-06-0{i - 20} 00:00:00', {i})" for i in (25, 26, 27)))
J_COW = java_table_script("j_cow", COW, ["RENAME COLUMN name TO label", "DROP COLUMN amount"], J_COW_WHERES)
J_COW["setup"].append("INSERT INTO ref.db.j_cow VALUES " + ", ".join(
    f"({i}, 'late{i}', 'b', TIMESTAMP'2024-06-0{i - 20} 00:00:00')" for i in (25, 26, 27)))

J_V1 = [  # format v1: v1 manifests, copy-on-write DELETE, a dropped partition field kept as void
    "CREATE TABLE ref.db.j_v1 (id bigint, cat string, ts timestamp) USING iceberg PARTITIONED BY (cat, days(ts)) "
    "TBLPROPERTIES ('format-version'='1')",
    "INSERT INTO ref.db.j_v1 SELECT id, cat, ts FROM ref.db.j_cow VERSION AS OF 'first'",
    "ALTER TABLE ref.db.j_v1 DROP PARTITION FIELD cat",
    "INSERT INTO ref.db.j_v1 VALUES (50, 'a', TIMESTAMP'2024-01-05 00:00:00'), (51, NULL, NULL)",
    "DELETE FROM ref.db.j_v1 WHERE id IN (2, 51)",
]
J_V1_WHERES = ["cat = 'a'", "ts < TIMESTAMP'2024-02-01'", "id = 50", "cat IS NULL"]
J_V1_RECORD = ["SELECT * FROM ref.db.j_v1", *[f"SELECT * FROM ref.db.j_v1 WHERE {w}" for w in J_V1_WHERES]]

JAVA_STATEMENTS = ["CREATE DATABASE IF NOT EXISTS ref.db"] + [
    q for script in (J_MOR, J_COW) for q in script["setup"] + script["after"] + script["record"]] + J_V1 + J_V1_RECORD


def prefetch_java():
    """Java builds its tables in a warehouse of its own: nothing here waits for pyice."""
    def run():
        warehouse = scratch_dir("written-by-java")
        return warehouse, java_sql_each(warehouse, JAVA_STATEMENTS)
    return prefetch("written_by_java", run)


@pytest.fixture(scope="module")
def world(spark):
    import pyice_sql

    warehouse, results = prefetch_java().result()
    ice = pyice_sql.connect(spark, warehouse=warehouse)
    return ice, dict(zip(JAVA_STATEMENTS, results))


def _java(by_sql: dict, sql: str):
    result = by_sql[sql]
    if isinstance(result, EngineError):
        pytest.fail(f"the reference engine failed while building the table: {result}")
    return result


def _check_java_table(world, table: str, script: dict[str, list[str]], wheres: list[str]) -> dict[int, int]:
    ice, by_sql = world
    for sql in script["setup"] + script["after"]:
        _java(by_sql, sql)
    current, first, (tag,), deletes, *answers = [_java(by_sql, q) for q in script["record"]]
    first_id, first_time = tag
    assert_same_rows(current, ice_rows(ice.sql(f"SELECT * FROM local.db.{table}")), f"pyice reading Java's {table}")
    pruned = ice_answers(ice, [f"SELECT * FROM local.db.{table} WHERE {w}" for w in wheres])
    for w, expected, got in zip(wheres, answers, pruned):
        assert expected, f"WHERE {w} matches nothing on Java: not a useful check"
        assert_same_rows(expected, got, f"pyice's pruned answer to WHERE {w} on Java's {table}")
    travel = {f"VERSION AS OF the first snapshot ({first_id})": f"VERSION AS OF {first_id}",
              "VERSION AS OF tag 'first'": "VERSION AS OF 'first'",
              f"TIMESTAMP AS OF the first commit ({first_time})": f"TIMESTAMP AS OF '{first_time}'"}
    answers = ice_answers(ice, [f"SELECT * FROM local.db.{table} {clause}" for clause in travel.values()])
    for what, got in zip(travel, answers):
        assert_same_rows(first, got, f"pyice reading {table} {what}")
    return dict((content, n) for content, n in deletes)


def test_read_java_merge_on_read_table(world):
    deletes = _check_java_table(world, "j_mor", J_MOR, J_MOR_WHERES)
    assert deletes.get(1, 0) >= 3, f"Java wrote no position delete files to read: {deletes}"


def test_read_java_copy_on_write_table(world):
    deletes = _check_java_table(world, "j_cow", J_COW, J_COW_WHERES)
    assert not deletes, f"copy-on-write should leave no delete files: {deletes}"


def test_read_java_format_v1_table(world):
    ice, by_sql = world
    for sql in J_V1:
        _java(by_sql, sql)
    current, *answers = [_java(by_sql, q) for q in J_V1_RECORD]
    assert_same_rows(current, ice_rows(ice.sql("SELECT * FROM local.db.j_v1")), "pyice reading Java's v1 table")
    pruned = ice_answers(ice, [f"SELECT * FROM local.db.j_v1 WHERE {w}" for w in J_V1_WHERES])
    for w, expected, got in zip(J_V1_WHERES, answers, pruned):
        assert expected, f"WHERE {w} matches nothing on Java: not a useful check"
        assert_same_rows(expected, got, f"pyice's pruned answer to WHERE {w} on Java's v1 table")
