"""Differential proof of the value side of INSERT / UPDATE / MERGE against Iceberg Java (issue 10).

Scenarios run on the reference engine and on pyice_sql in copy-on-write and merge-on-read with
the machinery of test_dml_differential (rows compared after every step; a rejected statement
must be rejected by both and leave our table without a new snapshot), then Iceberg Java reads
the table pyice_sql wrote and must see the same rows:
  - NOT NULL fields inside structs, list elements and map values (any depth) are enforced;
  - struct values are stored by name in UPDATE / MERGE and by position in INSERT, missing and
    extra fields are errors, never a positional copy; a NOT NULL struct column left out of an
    INSERT column list is an error;
  - unqualified names in NOT MATCHED clauses mean the source, in NOT MATCHED BY SOURCE the target;
  - a backquoted column name with dots is one top-level column;
  - DEFAULT in SET and VALUES (NULL for a nullable column, an error for a NOT NULL one).
"""
from __future__ import annotations

import os

import pytest

from tests.interop import test_dml_differential as dd
from tests.interop.engines import assert_same_rows, ice_rows, sort_rows
from tests.interop.ref_batch import ReferenceBatch
from tests.interop.test_dml_differential import _small_shuffles  # noqa: F401 - autouse fixture

pytestmark = pytest.mark.interop
S, Step = dd.S, dd.Step

NESTED = "id int, s struct<a: int not null, b: string>, l array<struct<x: int not null, y: string>>, " \
         "m map<string, struct<q: int not null>>"

SCENARIOS = [
    # --- item 1: NULL into a required nested field fails, wherever the field sits
    S("nested_not_null", NESTED, None, [
        "INSERT INTO {t} VALUES (1, named_struct('a', 1, 'b', 'x'), array(named_struct('x', 1, 'y', 'a')), "
        "map('k', named_struct('q', 1))), (2, NULL, NULL, NULL)",
        "CREATE TABLE {src} (id int, a int) USING iceberg",
        "INSERT INTO {src} VALUES (1, 1), (2, NULL), (5, NULL)",
    ], [
        Step("UPDATE {t} SET s.a = NULL WHERE id = 1", error="not_null"),
        Step("UPDATE {t} SET s = named_struct('a', CAST(NULL AS INT), 'b', 'y') WHERE id = 1", error="not_null"),
        Step("UPDATE {t} SET l = array(named_struct('x', CAST(NULL AS INT), 'y', 'q')) WHERE id = 1",
             error="not_null", note="a required field of a list element"),
        Step("UPDATE {t} SET m = map('z', named_struct('q', CAST(NULL AS INT))) WHERE id = 1",
             error="not_null", note="a required field of a map value"),
        Step("MERGE INTO {t} t USING {src} s ON t.id = s.id WHEN NOT MATCHED THEN "
             "INSERT (id, s, l, m) VALUES (s.id, named_struct('a', s.a, 'b', 'z'), NULL, NULL)", error="not_null"),
        Step("MERGE INTO {t} t USING {src} s ON t.id = s.id WHEN MATCHED THEN UPDATE SET t.s.a = s.a",
             error="not_null"),
        Step("MERGE INTO {t} t USING {src} s ON t.id = s.id WHEN MATCHED THEN "
             "UPDATE SET l = array(named_struct('x', s.a, 'y', 'q'))", error="not_null"),
        Step("INSERT INTO {t} SELECT id, named_struct('a', a, 'b', 'i'), NULL, NULL FROM {src}", error="not_null"),
        Step("UPDATE {t} SET s = named_struct('a', 7, 'b', NULL) WHERE id = 2", note="b is nullable"),
        Step("UPDATE {t} SET s = NULL WHERE id = 1", note="a NULL struct holds no required field"),
        "INSERT INTO {t} SELECT id + 10, named_struct('a', coalesce(a, -1), 'b', 'i'), "
        "array(named_struct('x', id, 'y', CAST(NULL AS STRING))), map('k', named_struct('q', id)) FROM {src}",
    ]),
    # --- item 2: struct values by name (UPDATE / MERGE) or by position (INSERT), never silently
    S("struct_values", "id int, s struct<a: int, b: string>, l array<struct<x: int, y: string>>", None, [
        "INSERT INTO {t} VALUES (1, named_struct('a', 1, 'b', 'x'), array(named_struct('x', 1, 'y', 'a'))), "
        "(2, named_struct('a', 2, 'b', 'y'), NULL)",
    ], [
        Step("UPDATE {t} SET s = named_struct('b', 'u', 'a', 10) WHERE id = 1", note="by name"),
        Step("UPDATE {t} SET s = named_struct('a', 3) WHERE id = 1", error="analysis", note="missing field"),
        Step("UPDATE {t} SET s = named_struct('a', 3, 'b', 'z', 'c', 1) WHERE id = 1", error="analysis",
             note="extra field"),
        Step("UPDATE {t} SET s = named_struct('x', 3, 'y', 'z') WHERE id = 1", error="analysis"),
        Step("UPDATE {t} SET s = struct(5, 'v') WHERE id = 1", error="analysis"),
        Step("UPDATE {t} SET s = named_struct('b', 6, 'a', 'u') WHERE id = 1", error="analysis",
             note="by name, 'u' does not fit an int"),
        Step("UPDATE {t} SET s = named_struct('A', 4, 'B', 'w') WHERE id = 2", note="names case-insensitive"),
        Step("UPDATE {t} SET l = array(named_struct('y', 'b', 'x', 2)) WHERE id = 1", note="list elements by name"),
        Step("UPDATE {t} SET l = array(named_struct('x', 2)) WHERE id = 1", error="analysis"),
        "MERGE INTO {t} t USING (SELECT 1 AS id, named_struct('b', 'm', 'a', 7) AS s) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET s = s.s",
        "MERGE INTO {t} t USING (SELECT 3 AS id, named_struct('b', 'm', 'a', 8) AS s) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, s) VALUES (s.id, s.s)",
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (2, named_struct('b', 'p', 'a', 20), "
        "array(named_struct('y', 'f', 'x', 5))), (4, named_struct('b', 'q', 'a', 9), "
        "array(named_struct('y', 'e', 'x', 4))) AS s(id, s, l)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
        Step("MERGE INTO {t} t USING (SELECT 9 AS id, named_struct('x', 1, 'y', 'm') AS s, "
             "CAST(NULL AS array<struct<x: int, y: string>>) AS l) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *",
             error="analysis"),
        Step("INSERT INTO {t} VALUES (6, named_struct('x', 12, 'y', 'j'), NULL)", note="INSERT: by position"),
        Step("INSERT INTO {t} VALUES (5, named_struct('b', 'i', 'a', 11), NULL)", error="analysis"),
        Step("INSERT INTO {t} VALUES (7, named_struct('a', 13), NULL)", error="analysis"),
    ]),
    # --- item 2: a NOT NULL struct column left out of an INSERT column list
    S("struct_not_null_column", "id int, s struct<a: int, b: string> NOT NULL, v string", None, [
        "INSERT INTO {t} VALUES (1, named_struct('a', 1, 'b', 'x'), 'x')",
    ], [
        Step("INSERT INTO {t} (id, v) VALUES (2, 'x')", error="missing_required"),
        Step("MERGE INTO {t} t USING (SELECT 2 AS id) s ON t.id = s.id "
             "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 'q')", error="missing_required"),
        Step("MERGE INTO {t} t USING (SELECT 2 AS id WHERE false) s ON t.id = s.id "
             "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 'q')", error="missing_required",
             note="an analysis error, even when no row is inserted"),
        "MERGE INTO {t} t USING (SELECT 2 AS id) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, s) VALUES (s.id, named_struct('b', 'n', 'a', 2))",
        Step("UPDATE {t} SET s = NULL WHERE id = 1", error="not_null"),
    ]),
    # --- item 6: which side a clause's unqualified names see
    S("merge_scope", "id int, v string, n int", None, [
        "INSERT INTO {t} VALUES (1, 'a', 1), (2, 'b', 2)",
    ], [
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (2, 'B', 20), (3, 'C', 30), (4, 'D', 40) AS s(id, v, n)) s "
             "ON t.id = s.id WHEN NOT MATCHED AND n > 30 THEN INSERT (id, v, n) VALUES (id, v, n)",
             note="NOT MATCHED: the source's columns"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (2, 'B', 20), (6, 'F', 60) AS s(id, v, n)) s "
             "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'x' "
             "WHEN NOT MATCHED BY SOURCE AND n < 2 THEN UPDATE SET v = concat(v, '_nmbs'), n = n + 100",
             note="NOT MATCHED BY SOURCE: the target's columns"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (2, 'Q', 7) AS s(k, w, m)) s ON t.id = s.k "
             "WHEN MATCHED AND n > 1 THEN UPDATE SET v = w, n = m", note="MATCHED: a name on one side only"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (2, 'B', 20) AS s(id, v, n)) s ON t.id = s.id "
             "WHEN MATCHED THEN UPDATE SET v = v", error="analysis", note="MATCHED: on both sides, ambiguous"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (8, 'B') AS s(id, x)) s ON t.id = s.id "
             "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (id, x, n)", error="analysis"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (3, 'B') AS s(id, x)) s ON t.id = s.id "
             "WHEN NOT MATCHED AND t.n IS NULL THEN INSERT (id, v) VALUES (id, x)", error="analysis"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (2, 'B') AS s(id, x)) s ON t.id = s.id "
             "WHEN NOT MATCHED BY SOURCE AND x = 'B' THEN DELETE", error="analysis"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (2, 'B') AS s(id, x)) s ON t.id = s.id "
             "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = s.x", error="analysis"),
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (7, 'B', 20) AS s(id, x, y)) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (id, x, y)",
    ]),
    # --- item 9: `a.b` (backquoted) is a top-level column; c.d (bare) a nested field
    S("dotted_names", "id int, `a.b` string, c struct<d: string>", None, [
        "INSERT INTO {t} VALUES (1, 'top', named_struct('d', 'nested'))",
        "INSERT INTO {t} (id, `a.b`, c) VALUES (2, 'only', NULL)",
    ], [
        "UPDATE {t} SET `a.b` = 'top2' WHERE id = 1",
        "UPDATE {t} SET c.d = 'nested2' WHERE `a.b` = 'top2'",
        "MERGE INTO {t} t USING (SELECT 1 AS id, 'm' AS `a.b`) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET t.`a.b` = s.`a.b`, t.c.d = 'mn' "
        "WHEN NOT MATCHED THEN INSERT (id, `a.b`, c) VALUES (s.id, s.`a.b`, NULL)",
        "MERGE INTO {t} t USING (SELECT 3 AS id, 'm3' AS `a.b`, named_struct('d', 'n3') AS c) s ON t.id = s.id "
        "WHEN NOT MATCHED THEN INSERT *",
        "MERGE INTO {t} t USING (SELECT 3 AS id, 'm4' AS `a.b`, named_struct('d', 'n4') AS c) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET *",
        "DELETE FROM {t} WHERE `a.b` = 'only'",
        Step("UPDATE {t} SET a.b = 'x'", error="analysis"),
        Step("UPDATE {t} SET `c.d` = 'x'", error="analysis"),
    ]),
    # --- item 10: DEFAULT
    S("defaults", "id int NOT NULL, v string, s struct<a: int>", None, [
        "INSERT INTO {t} VALUES (1, DEFAULT, DEFAULT), (2, 'b', named_struct('a', 2)), (3, 'c', NULL)",
    ], [
        "UPDATE {t} SET v = DEFAULT WHERE id = 2",
        "UPDATE {t} SET s = DEFAULT, v = 'set' WHERE id = 2",
        Step("UPDATE {t} SET id = DEFAULT WHERE id = 2", error="analysis"),
        Step("UPDATE {t} SET v = concat(DEFAULT, 'x') WHERE id = 2", error="analysis"),
        "UPDATE {t} SET s = named_struct('a', id), v = 'all'",
        "MERGE INTO {t} t USING (SELECT 2 AS id UNION ALL SELECT 4) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = DEFAULT, s = DEFAULT "
        "WHEN NOT MATCHED THEN INSERT (id, v, s) VALUES (s.id, DEFAULT, DEFAULT)",
        "MERGE INTO {t} t USING (SELECT 5 AS id) s ON t.id = s.id "
        "WHEN NOT MATCHED BY SOURCE AND t.id = 1 THEN UPDATE SET v = DEFAULT",
        Step("MERGE INTO {t} t USING (SELECT 6 AS id) s ON t.id = s.id "
             "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (DEFAULT, 'x')", error="analysis"),
        Step("INSERT INTO {t} VALUES (DEFAULT, 'x', NULL)", error="analysis"),
        "INSERT INTO {t} VALUES (5, DEFAULT, named_struct('a', 5)), (6, 'f', DEFAULT)",
    ]),
]

UNITS = [(sc, mode) for sc in SCENARIOS for mode in dd.MODES]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Iceberg Java running every scenario (both modes) in one background JVM."""
    batch = dd.Batch()
    for sc, mode in UNITS:
        batch.add_unit(sc, mode)
    work = tmp_path_factory.mktemp("reference")
    runner = ReferenceBatch(work / "warehouse", batch.statements, work)
    runner.batch = batch
    yield runner
    runner.close()


def java_reads_ours(reference, warehouse: str, sc, mode: str, ours: list) -> None:
    """Iceberg Java opens the table pyice_sql wrote (its Hadoop catalog reaches our warehouse
    through a namespace folder linked there) and must read the same rows."""
    namespace = f"ours_{sc.name}_{dd.SHORT[mode]}"
    link = os.path.join(reference.warehouse, namespace)
    if not os.path.exists(link):
        os.symlink(os.path.join(warehouse, "db"), link)
    read = reference.run_more([f"SELECT * FROM ref.{namespace}.{dd.names(sc, mode, 'ref')['name']}"])[0]
    assert "error" not in read, f"Iceberg Java could not read our {sc.name}/{mode}: {read['error'][:500]}"
    assert_same_rows(sort_rows(read["rows"]), ours, f"{sc.name}/{mode}: Iceberg Java reading pyice's table")


@pytest.mark.parametrize("sc,mode", UNITS, ids=[f"{sc.name}-{dd.SHORT[m]}" for sc, m in UNITS])
def test_assignment_differential(ice, warehouse, reference, sc, mode: str):
    dd.test_differential(ice, reference, sc, mode)
    if not reference.cached:  # the developer cache (PYICE_REF_CACHE) has no running engine to read with
        java_reads_ours(reference, warehouse, sc, mode, ice_rows(ice.sql(dd.unit_statements(sc, mode, "local")[2])))
