"""Differential proof, against Iceberg Java 1.10.2 on Spark 3.5, of three classes of row-level statements:

1. What the reference rejects at analysis is rejected, with Spark's error class, in both write
   modes, leaving our table without a new snapshot: non-deterministic UPDATE / DELETE WHERE and
   MERGE conditions, subqueries and aggregates in MERGE ON and WHEN conditions (NOT MATCHED ones
   too), the values Iceberg computes in its MergeRows / Expand operators (non-deterministic,
   IN / EXISTS, correlated scalar subqueries) and a non-deterministic source where copy-on-write
   reads it twice — while the variants it accepts give its rows.
2. Scalar subqueries over Iceberg tables (the target included) in UPDATE SET, MERGE SET and
   INSERT VALUES give the reference's rows.
3. Conditions on struct, list and map columns and on nested fields (UPDATE / DELETE WHERE,
   MERGE ON / WHEN conditions, SELECT WHERE) give the reference's rows: pruning may skip what it
   cannot use, never fail.

The machinery (Scenario, Step, the reference batch, per-step comparison) is the one of
test_dml_differential.py.
"""
from __future__ import annotations

import pytest

from pyice_sql.core.errors import ExpressionNotAllowedError, SqlPosition
from tests.interop.engines import assert_same_rows, ice_rows, sort_rows
from tests.interop.ref_batch import ReferenceBatch
from tests.interop.test_dml_differential import (  # noqa: F401 - _small_shuffles: autouse fixture
    COW, ERRORS, MODES, MOR, SHORT, Batch, S, Step, _small_shuffles, check_unit, names, snapshots,
)

pytestmark = pytest.mark.interop

EC = "UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY."
REJECTIONS = {
    **ERRORS,
    "nondeterministic": ((ExpressionNotAllowedError,), ("INVALID_NON_DETERMINISTIC_EXPRESSIONS",)),
    "merge_nondeterministic": ((ExpressionNotAllowedError,), ("UNSUPPORTED_MERGE_CONDITION.NON_DETERMINISTIC",)),
    "merge_subquery": ((ExpressionNotAllowedError,), ("UNSUPPORTED_MERGE_CONDITION.SUBQUERY",)),
    "merge_aggregate": ((ExpressionNotAllowedError,), ("UNSUPPORTED_MERGE_CONDITION.AGGREGATE",)),
    "in_exists": ((ExpressionNotAllowedError,), (EC + "UNSUPPORTED_IN_EXISTS_SUBQUERY",)),
    "correlated": ((ExpressionNotAllowedError,), (EC + "UNSUPPORTED_CORRELATED_SCALAR_SUBQUERY",)),
}

BASE = "id int, v string, n int"
SETUP = [
    "INSERT INTO {t} VALUES (1,'a',1),(2,'b',2),(3,'c',3)",
    "INSERT INTO {t} VALUES (4,'d',4),(6,'f',6),(NULL,'z',0)",
    "CREATE TABLE {src} (id int, v string, n int) USING iceberg",
    "INSERT INTO {src} VALUES (1,'s1',10),(3,'s3',30),(5,'s5',50),(7,'s7',70)",
]
M = "MERGE INTO {t} t USING {src} s ON t.id = s.id "
INS = "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES "


def update_set_subqueries(mode: str):
    """UPDATE SET values with subqueries: merge-on-read computes them in Spark's Expand, which
    takes no IN / EXISTS and no correlated scalar subquery; copy-on-write projects them."""
    def mor_only(kind: str) -> str | None:
        return kind if mode == MOR else None
    return S(f"update_set_subqueries_{SHORT[mode]}", BASE, None, SETUP, [
        Step("UPDATE {t} SET v = CASE WHEN id IN (SELECT id FROM {src}) THEN 'in' ELSE 'out' END",
             error=mor_only("in_exists")),
        Step("UPDATE {t} a SET v = CASE WHEN EXISTS (SELECT 1 FROM {src} x WHERE x.id = a.id) THEN 'ex' "
             "ELSE 'nex' END WHERE id < 4", error=mor_only("in_exists")),
        Step("UPDATE {t} a SET n = (SELECT max(n) FROM {src} x WHERE x.id = a.id) WHERE id < 3",
             error=mor_only("correlated")),
        Step("UPDATE {t} a SET n = (SELECT count(*) FROM {t} x WHERE x.id <= a.id) + 10",
             error=mor_only("correlated")),
        # accepted in both modes: uncorrelated scalar subqueries over another table and the target
        "UPDATE {t} SET n = (SELECT max(n) FROM {src}) WHERE id = 1",
        "UPDATE {t} SET n = (SELECT count(*) FROM {t}) + n, v = (SELECT min(v) FROM {src} WHERE n > 20) "
        "WHERE id = 2",
        # `id` inside the subquery is its own table's column (Spark resolves inner names first)
        "UPDATE {t} a SET n = (SELECT max(n) FROM {src} x WHERE x.id = id) WHERE id < 4",
    ])


def merge_source_determinism(mode: str):
    """A non-deterministic MERGE source: Iceberg's copy-on-write reads it twice (once to find the
    files to rewrite) unless there is a NOT MATCHED BY SOURCE clause or only NOT MATCHED ones."""
    rand_source = "MERGE INTO {t} t USING (SELECT id, v, n, rand() AS r FROM {src}) s ON t.id = s.id "
    cow_only = "nondeterministic" if mode == COW else None
    return S(f"merge_source_{SHORT[mode]}", BASE, None, SETUP, [
        Step(rand_source + "WHEN MATCHED THEN UPDATE SET v = 'm' " + INS + "(s.id, s.v, s.n)", error=cow_only),
        Step(rand_source + "WHEN MATCHED AND s.n > 20 THEN DELETE", error=cow_only),
        Step(M + "WHEN MATCHED AND max(s.n) > 1 THEN DELETE", error="merge_aggregate"),
        rand_source + "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id + 100, s.v, s.n)",
        "MERGE INTO {t} t USING (SELECT id, uuid() AS u FROM {src}) s ON t.id = s.id "
        "WHEN NOT MATCHED BY SOURCE AND t.id < 3 THEN UPDATE SET v = 'nmbs'",
    ])


STRUCT = "id int, v string, n int, c struct<x:int, y:string, z:struct<w:int>>, a array<int>, m map<string,int>"
STRUCT_SETUP = [
    "INSERT INTO {t} VALUES (1,'a',1,named_struct('x',1,'y','a','z',named_struct('w',10)),array(1,2),map('k',1)),"
    "(2,'b',2,NULL,NULL,NULL)",
    "INSERT INTO {t} VALUES (3,'c',3,named_struct('x',3,'y','b','z',NULL),array(3),map('k',3)),"
    "(4,'d',4,named_struct('x',NULL,'y','b','z',named_struct('w',40)),array(),map())",
    "INSERT INTO {t} VALUES (5,'e',5,named_struct('x',5,'y','c','z',named_struct('w',50)),array(5,5),map('j',5)),"
    "(6,'f',6,named_struct('x',6,'y',NULL,'z',named_struct('w',NULL)),NULL,map('k',6))",
    "INSERT INTO {t} VALUES (7,'g',7,named_struct('x',7,'y','g','z',named_struct('w',70)),array(7),map('k',7)),"
    "(8,'h',8,named_struct('x',8,'y','h','z',named_struct('w',80)),array(8),map('k',8))",
    "CREATE TABLE {src} (id int, v string, n int) USING iceberg",
    "INSERT INTO {src} VALUES (1,'s1',10),(3,'s3',30),(5,'s5',50),(9,'s9',90)",
]

SCENARIOS = [
    S("nondeterministic_where", BASE, None, SETUP, [
        Step("UPDATE {t} SET v = 'x' WHERE rand() < 2", error="nondeterministic"),
        Step("DELETE FROM {t} WHERE uuid() = 'x'", error="nondeterministic"),
        Step("DELETE FROM {t} WHERE size(shuffle(array(id))) > 5", error="nondeterministic"),
        Step("DELETE FROM {t} WHERE id IN (SELECT id FROM {src} WHERE rand() > 2)", error="nondeterministic"),
        Step("UPDATE {t} SET v = 'x' WHERE n > (SELECT max(n) - 100 FROM {src} WHERE random() < 2)",
             error="nondeterministic"),
        # non-deterministic SET values are accepted (rand() * 0 keeps the outcome comparable)
        "UPDATE {t} SET n = CAST(rand() * 0 AS INT) + n * 2, v = CAST(uuid() IS NOT NULL AS STRING) "
        "WHERE id IN (SELECT id FROM {src})",
    ]),
    S("merge_conditions", BASE, None, SETUP, [
        Step("MERGE INTO {t} t USING {src} s ON t.id = s.id AND rand() < 2 WHEN MATCHED THEN UPDATE SET v = 'm'",
             error="merge_nondeterministic"),
        Step(M + "WHEN MATCHED AND rand() < 2 THEN UPDATE SET v = 'm'", error="merge_nondeterministic"),
        Step(M + "WHEN MATCHED AND uuid() = 'x' THEN DELETE", error="merge_nondeterministic"),
        Step(M + "WHEN NOT MATCHED AND randn() < 100 THEN INSERT (id, v, n) VALUES (s.id, s.v, s.n)",
             error="merge_nondeterministic"),
        Step(M + "WHEN NOT MATCHED BY SOURCE AND rand() > 2 THEN DELETE", error="merge_nondeterministic"),
        Step("MERGE INTO {t} t USING {src} s ON t.id = s.id AND t.id IN (SELECT id FROM {src}) "
             "WHEN MATCHED THEN UPDATE SET v = 'm'", error="merge_subquery"),
        Step("MERGE INTO {t} t USING {src} s ON t.id = s.id AND t.n < (SELECT max(n) FROM {src}) "
             "WHEN MATCHED THEN UPDATE SET v = 'm'", error="merge_subquery"),
        Step("MERGE INTO {t} t USING {src} s ON t.id = s.id AND EXISTS (SELECT 1 FROM {src} x WHERE x.id = t.id) "
             "WHEN MATCHED THEN UPDATE SET v = 'm'", error="merge_subquery"),
        Step(M + "WHEN MATCHED AND t.id IN (SELECT id FROM {src}) THEN UPDATE SET v = 'm'", error="merge_subquery"),
        Step(M + "WHEN MATCHED AND t.n < (SELECT max(n) FROM {src}) THEN UPDATE SET v = 'm'",
             error="merge_subquery"),
        Step(M + "WHEN MATCHED AND EXISTS (SELECT 1 FROM {src} x WHERE x.id = t.id) THEN DELETE",
             error="merge_subquery"),
        Step(M + "WHEN NOT MATCHED AND s.n <= (SELECT max(n) FROM {t}) THEN INSERT (id, v, n) VALUES (s.id, s.v, 0)",
             error="merge_subquery"),
        Step(M + "WHEN NOT MATCHED AND EXISTS (SELECT 1 FROM {t} x WHERE x.n = s.n) THEN INSERT *",
             error="merge_subquery"),
        Step(M + "WHEN NOT MATCHED BY SOURCE AND t.id IN (SELECT id FROM {src}) THEN DELETE",
             error="merge_subquery"),
        Step(M + "WHEN NOT MATCHED BY SOURCE AND t.n > (SELECT min(n) FROM {src}) THEN UPDATE SET v = 'x'",
             error="merge_subquery"),
        Step(M + "WHEN MATCHED AND any(s.n > 1) THEN DELETE", error="merge_aggregate"),  # not `= ANY (SELECT ...)`
        M + "WHEN MATCHED AND s.n > 15 THEN UPDATE SET v = s.v " + INS + "(s.id, s.v, s.n)",
    ]),
    S("merge_values", BASE, None, SETUP, [
        Step(M + "WHEN MATCHED THEN UPDATE SET n = CAST(rand() * 0 AS INT)", error="nondeterministic"),
        Step(M + "WHEN MATCHED THEN UPDATE SET v = uuid()", error="nondeterministic"),
        Step(M + "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET n = CAST(rand() * 0 AS INT)", error="nondeterministic"),
        Step(M + "WHEN MATCHED THEN UPDATE SET v = 'm' " + INS + "(s.id, s.v, CAST(rand() * 0 AS INT))",
             error="nondeterministic"),
        Step(M + "WHEN MATCHED THEN DELETE " + INS + "(s.id, s.v, CAST(rand() * 0 AS INT))",
             error="nondeterministic"),
        Step(M + "WHEN NOT MATCHED AND s.n > 40 THEN INSERT (id, v, n) VALUES (s.id, s.v, CAST(rand() * 0 AS INT)) "
             "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 'x')", error="nondeterministic"),
        Step(M + "WHEN MATCHED THEN UPDATE SET v = CASE WHEN s.id IN (SELECT id FROM {src} WHERE n > 15) "
             "THEN 'in' ELSE 'out' END", error="in_exists"),
        Step(M + "WHEN MATCHED THEN UPDATE SET v = CASE WHEN EXISTS (SELECT 1 FROM {src} x WHERE x.n > 40) "
             "THEN 'ex' ELSE 'nex' END", error="in_exists"),
        Step(M + "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = CAST(t.id IN (SELECT id FROM {src}) AS STRING)",
             error="in_exists"),
        Step(M + "WHEN MATCHED THEN UPDATE SET v = 'm' "
             + INS + "(s.id, CASE WHEN s.id IN (SELECT id FROM {t}) THEN 'in' ELSE 'out' END, s.n)",
             error="in_exists"),
        Step(M + "WHEN MATCHED THEN UPDATE SET n = (SELECT max(n) FROM {src} x WHERE x.id = t.id)",
             error="correlated"),
        Step(M + "WHEN MATCHED THEN UPDATE SET n = (SELECT max(x.n) FROM {src} x WHERE x.id = s.id)",
             error="correlated"),
        Step(M + "WHEN MATCHED THEN DELETE " + INS + "(s.id, s.v, (SELECT max(x.n) FROM {src} x WHERE x.id < s.id))",
             error="correlated"),
        # accepted: a single NOT MATCHED clause is a plain projection in Iceberg ...
        "MERGE INTO {t} t USING (SELECT * FROM {src} WHERE id = 5) s ON t.id = s.id "
        + INS + "(s.id, s.v, CAST(rand() * 0 AS INT))",
        "MERGE INTO {t} t USING (SELECT id + 10 AS id, v, n FROM {src}) s ON t.id = s.id "
        + INS + "(s.id, CASE WHEN s.id - 10 IN (SELECT id FROM {t}) THEN 'in' ELSE 'out' END, s.n)",
        "MERGE INTO {t} t USING (SELECT id + 20 AS id, v, n FROM {src}) s ON t.id = s.id "
        + INS + "(s.id, s.v, (SELECT max(x.n) FROM {src} x WHERE x.id + 20 < s.id))",
        # ... and uncorrelated scalar subqueries over Iceberg tables, the target included, anywhere
        M + "WHEN MATCHED THEN UPDATE SET n = (SELECT max(n) FROM {src})",
        M + "WHEN MATCHED AND t.id = 1 THEN UPDATE SET n = (SELECT count(*) FROM {t}) "
        "WHEN NOT MATCHED BY SOURCE AND t.id = 2 THEN UPDATE SET v = (SELECT max(v) FROM {src}), n = "
        "(SELECT sum(n) FROM {t})",
        "MERGE INTO {t} t USING (SELECT 100 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE "
        + INS + "(s.id, (SELECT min(v) FROM {t}), (SELECT max(n) FROM {t}))",
    ]),
    update_set_subqueries(COW),
    update_set_subqueries(MOR),
    merge_source_determinism(COW),
    merge_source_determinism(MOR),
    S("struct_predicates", STRUCT, None, STRUCT_SETUP, [
        # every row the last INSERT wrote has c.x >= 7: its file is dropped in metadata (strict
        # metrics on a nested field), so merge-on-read writes no delete file
        Step("DELETE FROM {t} WHERE c.x >= 7", metrics={"num_deleted_rows": 2, "num_added_delete_files": 0}),
        "UPDATE {t} SET v = concat(v, '_c') WHERE c IS NOT NULL",
        "UPDATE {t} AS t SET n = n + 100 WHERE t.c.x > 2 AND t.c.x < 7",
        "UPDATE {t} SET v = concat(v, '_xnull') WHERE c.x IS NULL",
        "UPDATE {t} SET v = concat(v, '_eq') WHERE c = named_struct('x', 1, 'y', 'a', 'z', named_struct('w', 10))",
        "DELETE FROM {t} WHERE c.z.w = 50",
        "UPDATE {t} SET n = -n WHERE (a IS NOT NULL AND size(a) > 1) OR m['k'] = 3",
        M + "AND t.c IS NOT NULL WHEN MATCHED THEN UPDATE SET v = 'on' " + INS + "(s.id, s.v, s.n)",
        M + "WHEN MATCHED AND t.c.y = 'b' THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE AND (t.c.y = 'b' OR t.c IS NULL) THEN UPDATE SET v = 'nmbs'",
        # higher-order `exists` is a function, not an EXISTS subquery (sqlglot gives both one node)
        "UPDATE {t} SET n = CASE WHEN exists(a, x -> x > 4) THEN n + 1000 ELSE n END "
        "WHERE NOT exists(a, x -> x IS NULL)",
        M + "WHEN MATCHED AND exists(map_values(t.m), x -> x > 2) THEN UPDATE SET v = CASE WHEN "
        "exists(t.a, y -> y = 3) THEN 'hx' ELSE 'hn' END WHEN NOT MATCHED AND exists(array(s.n), x -> x > 60) "
        "THEN INSERT (id, v, n) VALUES (s.id, 'hof', s.n)",
        "DELETE FROM {t} WHERE c IS NULL AND m IS NULL",
    ]),
    S("required_nested", "id int, v string, r struct<q:int NOT NULL, y:string>", None, [
        "INSERT INTO {t} VALUES (1,'a',named_struct('q',1,'y','a')),(2,'b',NULL)",
        "INSERT INTO {t} VALUES (3,'c',named_struct('q',3,'y',NULL)),(4,'d',named_struct('q',4,'y','d'))",
    ], [
        "UPDATE {t} SET v = 'q_is_null' WHERE r.q IS NULL",  # r IS NULL makes r.q NULL, required or not
        "DELETE FROM {t} WHERE r.q IS NOT NULL AND r.q > 3",
    ]),
    S("struct_select", STRUCT, None, STRUCT_SETUP, []),
]
UNITS = [(sc, mode) for sc in SCENARIOS for mode in MODES if not sc.name.endswith(("_cow", "_mor"))
         or sc.name.endswith(SHORT[mode])]
SELECTS = [
    "SELECT id FROM {t} WHERE c IS NULL",
    "SELECT id FROM {t} t WHERE t.c.x >= 3 OR c IS NULL",
    "SELECT id, c.y FROM {t} WHERE c.z.w = 40 OR c.y <> 'b'",
    "SELECT id FROM {t} WHERE m['k'] = 1 OR size(a) = 0 OR c = named_struct('x', 5, 'y', 'c', 'z', "
    "named_struct('w', 50))",
    "SELECT count(*) FROM {t} WHERE c.x IS NULL",
]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Iceberg Java running every scenario (and the SELECTs), in one background JVM."""
    batch = Batch()
    for sc, mode in UNITS:
        batch.add_unit(sc, mode)
    select_table = names(SCENARIOS[-1], COW, "ref")["t"]
    selects = [batch.add(q.format(t=select_table)) for q in SELECTS]
    work = tmp_path_factory.mktemp("reference")
    runner = ReferenceBatch(work / "warehouse", batch.statements, work)
    runner.batch, runner.selects = batch, selects
    yield runner
    runner.close()


@pytest.mark.parametrize("sc,mode", UNITS, ids=[f"{sc.name}-{SHORT[m]}" for sc, m in UNITS])
def test_differential(ice, reference, sc, mode: str):
    check_unit(ice, reference, sc, mode, REJECTIONS)
    if sc.name == "struct_select":
        table = names(sc, mode, "local")["t"]
        for query, i in zip(SELECTS, reference.selects):
            java = reference.result(i)
            assert "error" not in java, f"reference failed on {query}: {java['error'][:300]}"
            assert_same_rows(sort_rows(java["rows"]), ice_rows(ice.sql(query.format(t=table))),
                             f"{query} ({mode})")


@pytest.mark.parametrize("sql,token", [
    ("UPDATE {t}\nSET v = 'x'\nWHERE id > 1 AND rand() < 2", "rand()"),
    ("MERGE INTO {t} t\nUSING (SELECT 1 AS id) s\nON t.id = s.id\n"
     "WHEN MATCHED AND t.id IN (SELECT 1) THEN DELETE", "t.id IN"),
    ("MERGE INTO {t} t USING (SELECT 1 AS id) s ON t.id = s.id\n"
     # sqlglot keeps no position for EXISTS or SELECT: the error points at the subquery's first token that has one
     "WHEN MATCHED THEN UPDATE SET\n  v = CAST(EXISTS (SELECT 2) AS STRING)", "2) AS"),
])
def test_rejections_name_the_place_and_commit_nothing(ice, sql: str, token: str):
    ice.sql("CREATE NAMESPACE IF NOT EXISTS local.db")
    ice.sql("CREATE TABLE local.db.placed (id int, v string) USING iceberg")
    ice.sql("INSERT INTO local.db.placed VALUES (1, 'a'), (2, 'b')")
    before = snapshots(ice, "local.db.placed")
    text = sql.format(t="local.db.placed")
    with pytest.raises(ExpressionNotAllowedError) as caught:
        ice.sql(text)
    assert caught.value.position == SqlPosition.of_offset(text, text.index(token)), str(caught.value)
    assert snapshots(ice, "local.db.placed") == before
