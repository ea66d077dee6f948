"""Differential proof of pyice_sql's MERGE / UPDATE / DELETE against real Iceberg Java.

1. Differential scenarios: every scenario creates its table (and source tables) with the same
   statements on the reference engine (Iceberg 1.10.2 + its Spark extensions, catalog `ref`)
   and on pyice_sql (catalog `local`), in copy-on-write AND merge-on-read, then runs its steps on
   both; after EVERY step (and after the setup) the two tables must hold the same rows, a step
   the reference rejects must be rejected by pyice_sql with the matching error (and leave our
   table without a new snapshot), and pyice's metrics row must agree with the rows it changed.
   Iceberg Java runs every scenario of both modes in one background JVM (see ref_batch.py)
   while pyice runs its side; each test waits only for its own statements' results.
2. Cross-engine: Java, PyIceberg and DuckDB read our merge-on-read MERGE; we run MERGE / UPDATE
   / DELETE on a table Java wrote (with its position delete files) and compare with Java doing
   the same on a twin; Java then MERGEs into our table and we read its delete files.
3. Peer regression traps (in the `traps` scenarios): NOT MATCHED BY SOURCE vs pruning, a MERGE
   whose conditions are all false commits nothing, insert-only duplicate source rows, whole
   partition DELETE in metadata only, and places where we hold SQL semantics and the
   reference does not (reported as warnings): `p <> 'a'` keeps rows whose p IS NULL (Java
   deletes them), a target row matched twice by a MERGE with only NOT MATCHED BY SOURCE
   clauses stays once (Java's copy-on-write writes it twice), and (`stats_traps`) NaN is above
   every number and `n <> 5` leaves a file of NULL n (Java decides both by file statistics).
4. Two writers racing on one table: disjoint MERGEs both land; conflicting UPDATEs lose nothing.
"""
from __future__ import annotations

import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

import pyice_sql
from pyice_sql.core.catalog.base import TableIdentifier
from pyice_sql.core.errors import (
    AnalysisError, CardinalityError, CommitConflictError, NotNullViolationError, ValidationError,
)
from tests.interop.engines import assert_peers_read, assert_same_rows, ice_rows, peer_rows, sort_rows
from tests.interop.ref_batch import ReferenceBatch

pytestmark = pytest.mark.interop

COW, MOR = "copy-on-write", "merge-on-read"
MODES = (COW, MOR)
SHORT = {COW: "cow", MOR: "mor"}


# =============================================================================== scenarios

@dataclass(frozen=True)
class Step:
    """One statement run on both engines, then both tables compared.

    error:   both engines must reject it: 'cardinality', 'analysis' or 'not_null'.
    metrics: num_* values pyice must report exactly (subset of the metrics row).
    sql_semantics: for a statement the reference engine is known to get wrong: which of the rows
             before the step must remain (a predicate over plain rows); ours must equal that,
             Java's outcome is reported as a warning.
    """

    sql: str
    error: str | None = None
    metrics: dict[str, int] = field(default_factory=dict)
    sql_semantics: Callable[[list[Any]], bool] | None = None
    note: str = ""
    java_sql: str | None = None  # "OLD=NEW": what the reference runs instead (syntax Spark 3.5 lacks)

    def text(self, engine: str) -> str:
        if engine == "ref" and self.java_sql:
            old, new = self.java_sql.split("=")
            return self.sql.replace(old, new)
        return self.sql


@dataclass(frozen=True)
class Scenario:
    name: str
    columns: str
    partitioned_by: str | None
    setup: tuple[str, ...]
    steps: tuple[Step | str, ...]

    def step(self, i: int) -> Step:
        s = self.steps[i]
        return s if isinstance(s, Step) else Step(s)


def S(name, columns, partitioned_by, setup, steps) -> Scenario:
    return Scenario(name, columns, partitioned_by, tuple(setup), tuple(steps))


BASE = "id int, v string, n int, p string"
ZERO = dict(num_affected_rows=0, num_updated_rows=0, num_deleted_rows=0, num_inserted_rows=0,
            num_added_data_files=0, num_removed_data_files=0, num_added_delete_files=0)

SCHEMA_NAMES_COLUMNS = "id int, a int, b int, s struct<u: int, w: int>, x double"
SCHEMA_NAMES_SETUP = [
    "INSERT INTO {t} VALUES (1, 10, NULL, named_struct('u', 1, 'w', 5), 1.5), "
    "(2, 20, NULL, named_struct('u', NULL, 'w', 6), 2.5)",
    "INSERT INTO {t} VALUES (3, NULL, 30, named_struct('u', 3, 'w', NULL), NULL), "
    "(4, 40, 40, named_struct('u', 4, 'w', 8), 4.5)",
    "ALTER TABLE {t} RENAME COLUMN a TO tmp", "ALTER TABLE {t} RENAME COLUMN b TO a",
    "ALTER TABLE {t} RENAME COLUMN tmp TO b",
    "ALTER TABLE {t} DROP COLUMN x", "ALTER TABLE {t} ADD COLUMN x double",
    "ALTER TABLE {t} DROP COLUMN s.w", "ALTER TABLE {t} ADD COLUMN s.w int",
    "INSERT INTO {t} VALUES (5, 50, NULL, named_struct('u', 5, 'w', NULL), NULL), "
    "(6, NULL, 60, named_struct('u', NULL, 'w', 9), 6.5)",
]
SCHEMA_NAMES_STEPS = [
    Step("UPDATE {t} SET id = id + 100 WHERE a IS NULL", metrics=dict(num_updated_rows=3)),
    Step("DELETE FROM {t} WHERE s.w IS NULL AND b = 40", metrics=dict(num_deleted_rows=1)),
    Step("UPDATE {t} SET x = -1.0 WHERE x IS NULL AND b IS NOT NULL", metrics=dict(num_updated_rows=3)),
    Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (3, 7), (6, 8), (9, 9) AS s(id, w)) s ON t.id = s.id "
         "WHEN MATCHED AND t.s.w IS NULL THEN UPDATE SET a = s.w WHEN MATCHED THEN DELETE "
         "WHEN NOT MATCHED THEN INSERT (id, b, a) VALUES (s.id, s.w, s.w)",
         metrics=dict(num_updated_rows=1, num_deleted_rows=1, num_inserted_rows=1)),
]

SCENARIOS = [
    # --- every clause kind, first match wins per row AND per column; temp view source; rows
    #     moving across partitions; NOT MATCHED BY TARGET (Spark 3.5 lacks the words: Java runs
    #     the equivalent NOT MATCHED)
    S("merge_clauses", BASE, "p", [
        "INSERT INTO {t} VALUES (1,'a',1,'a'),(2,'b',2,'a'),(3,'c',3,'b'),(4,'d',4,'b'),(5,'e',5,NULL),"
        "(NULL,'z',0,'a')",
        "INSERT INTO {t} VALUES (6,'f',6,'c'),(7,'g',7,'c')",
        "CREATE OR REPLACE TEMPORARY VIEW mc_src AS SELECT * FROM VALUES (1,'A',10,'b','u'),(2,'B',20,'a','d'),"
        "(3,'C',30,'x','u'),(6,'F',60,'c','d'),(8,'H',80,'a','i'),(9,'I',90,'b','skip'),(NULL,'N',0,'a','i') "
        "AS s(id, v, n, p, op)",
    ], [
        "MERGE INTO {t} t USING mc_src s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'd' THEN DELETE "
        "WHEN MATCHED AND s.n > 25 THEN UPDATE SET t.v = concat(t.v, s.v), t.n = t.n + s.n "
        "WHEN MATCHED THEN UPDATE SET * "
        "WHEN NOT MATCHED AND s.op <> 'skip' THEN INSERT *",
        Step("MERGE INTO {t} t USING (SELECT id, v FROM mc_src WHERE op = 'i' OR id = 3) s ON t.id = s.id "
             "WHEN MATCHED THEN UPDATE SET v = 'm' "
             "WHEN NOT MATCHED BY TARGET THEN INSERT (id, v, p) VALUES (s.id + 100, s.v, 'new') "
             "WHEN NOT MATCHED BY SOURCE AND t.p = 'c' THEN UPDATE SET v = 'nmbs', n = -1 "
             "WHEN NOT MATCHED BY SOURCE AND t.n < 3 THEN DELETE",
             java_sql="NOT MATCHED BY TARGET=NOT MATCHED"),
        "MERGE INTO {t} t USING (SELECT 4 AS id, 'b' AS p) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET p = 'moved', n = t.n * 100 "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET n = coalesce(t.n, 0) + 1000",
    ]),
    # --- source shapes: a subquery with CTEs over another Iceberg table and VALUES; WITH before
    #     MERGE; bare VALUES; the target itself (read by name, like any Iceberg table)
    S("merge_sources", "id int, v string, n int", None, [
        "INSERT INTO {t} VALUES (1,'a',1),(2,'b',2),(3,'c',3),(4,'d',4),(5,'e',5),(NULL,'z',9)",
        "CREATE TABLE {src} (id int, v string, n int) USING iceberg",
        "INSERT INTO {src} VALUES (2,'x2',20),(4,'x4',40),(6,'x6',60),(7,'x7',170),(NULL,'xn',0)",
    ], [
        "MERGE INTO {t} t USING (WITH w AS (SELECT id, v FROM {src} WHERE n > 20), "
        "x AS (SELECT * FROM VALUES (4, '_a'), (6, '_b'), (7, '_c') AS x(k, sfx)) "
        "SELECT w.id, concat(w.v, x.sfx) AS v FROM w JOIN x ON w.id = x.k) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, -1)",
        "WITH w AS (SELECT id, n FROM {src} WHERE id < 5) MERGE INTO {t} t USING w s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET n = t.n + s.n",
        "MERGE INTO {t} t USING (VALUES (1, 'v1'), (8, 'v8')) s ON t.id = s.col1 "
        "WHEN MATCHED THEN UPDATE SET v = s.col2 WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.col1, s.col2, 0)",
        "MERGE INTO {t} t USING {t} s ON t.id = s.id + 1 WHEN MATCHED AND s.n > 2 THEN UPDATE SET v = concat(t.v, s.v) "
        "WHEN NOT MATCHED BY SOURCE AND t.id IS NULL THEN DELETE",
    ]),
    # --- UPDATE with IN / NOT IN / EXISTS subqueries, with and without alias
    S("update_subqueries", BASE, "p", [
        "INSERT INTO {t} VALUES (1,'a',1,'a'),(2,'b',2,'a'),(3,'c',3,'b'),(4,'d',4,'b'),(5,'e',5,'c'),"
        "(NULL,'z',0,'c')",
        "CREATE TABLE {src} (id int, v string, n int) USING iceberg",
        "INSERT INTO {src} VALUES (1,'x',10),(3,'y',30),(4,'x',40)",
    ], [
        "UPDATE {t} AS a SET n = n + 100, v = upper(a.v) WHERE a.id IN (SELECT id FROM {src} WHERE n > 10)",
        "UPDATE {t} SET v = 'notin' WHERE {t}.id NOT IN (SELECT id FROM {src})",
        Step("UPDATE {t} SET v = 'never' WHERE id NOT IN (SELECT k FROM VALUES (1), (CAST(NULL AS INT)) AS x(k))",
             metrics=ZERO, note="NOT IN a list holding NULL is never true"),
        "UPDATE {t} a SET n = -n, p = 'moved' WHERE EXISTS (SELECT 1 FROM {src} s WHERE s.id = a.id AND s.v = 'x')",
    ]),
    # --- DELETE with subqueries; a correlated reference by the table's own name
    S("delete_subqueries", BASE, "p", [
        "INSERT INTO {t} VALUES (1,'a',1,'a'),(2,'b',2,'a'),(3,'c',3,'b'),(4,'d',4,'b'),(5,'e',5,'c'),"
        "(6,'f',6,'c'),(NULL,'z',0,'c')",
        "CREATE TABLE {src} (id int, v string, n int) USING iceberg",
        "INSERT INTO {src} VALUES (1,'xa',10),(3,'xb',30),(6,'y',2),(7,'y',0)",
    ], [
        "DELETE FROM {t} AS a WHERE a.id IN (SELECT id FROM {src} WHERE v LIKE 'x%') AND a.p = 'a'",
        "DELETE FROM {t} WHERE EXISTS (SELECT 1 FROM {src} s WHERE s.n = {name}.n)",
        "DELETE FROM {t} a WHERE a.id NOT IN (SELECT id + 2 FROM {src}) "
        "AND NOT EXISTS (SELECT 1 FROM {src} s WHERE s.id = a.id - 1)",
    ]),
    # --- a sequence on one bucketed table: delete files stack up in merge-on-read; rows move
    #     between buckets
    S("sequence_bucket", BASE, "bucket(4, id)", [
        "INSERT INTO {t} SELECT id, concat('v', id), id % 7, CAST(id % 3 AS STRING) FROM range(1, 41) AS r(id)",
    ], [
        "MERGE INTO {t} t USING (SELECT id, id * 10 AS n FROM range(5, 50, 5) AS r(id)) s ON t.id = s.id "
        "WHEN MATCHED AND s.id % 2 = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET n = s.n "
        "WHEN NOT MATCHED THEN INSERT (id, v, n, p) VALUES (s.id, 'new', s.n, 'm')",
        "UPDATE {t} SET id = id + 1000, v = concat(v, '_u') WHERE p = '2' OR id % 3 = 0",
        "DELETE FROM {t} WHERE id % 4 = 1 OR v = 'new'",
        "MERGE INTO {t} t USING (SELECT id FROM range(1000, 1050) AS r(id)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET n = -1 WHEN NOT MATCHED BY SOURCE AND t.n > 5 THEN DELETE",
    ]),
    # --- days(ts) and truncate(2, s): updates move rows across both; DELETE over whole days and
    #     part of one
    S("days_truncate", "id int, ts timestamp, s string", "days(ts), truncate(2, s)", [
        "INSERT INTO {t} VALUES (1, TIMESTAMP'2024-01-01 01:00:00', 'apple'), "
        "(2, TIMESTAMP'2024-01-01 23:59:59', 'apricot'),"
        "(3, TIMESTAMP'2024-01-02 12:00:00', 'banana'), (4, TIMESTAMP'2024-01-03 00:00:00', 'blueberry'),"
        "(5, TIMESTAMP'2024-01-05 08:30:00', 'cherry'), (6, NULL, NULL), (7, TIMESTAMP'2024-01-02 00:00:00', 'b')",
    ], [
        "UPDATE {t} SET ts = ts + INTERVAL 2 DAYS, s = concat('zz', s) WHERE id IN (1, 3)",
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (2, TIMESTAMP'2024-02-01 00:00:00', 'ap'), "
        "(6, TIMESTAMP'2024-01-01 06:00:00', 'x'), (8, TIMESTAMP'2023-12-31 23:00:00', 'date') AS s(id, ts, s)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET ts = s.ts, s = concat(t.s, s.s) "
        "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE AND t.s LIKE 'zz%' THEN UPDATE SET s = 'was_zz'",
        "DELETE FROM {t} WHERE ts < TIMESTAMP'2024-01-03 12:00:00'",
    ]),
    # --- NULL keys never match with `=`; `<=>` matches them
    S("null_keys", "k1 int, k2 string, v string", None, [
        "INSERT INTO {t} VALUES (1,'a','t1'),(1,NULL,'t2'),(NULL,'a','t3'),(NULL,NULL,'t4'),(2,'b','t5')",
    ], [
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (1,'a','s1'),(1,NULL,'s2'),(NULL,NULL,'s4'),(3,'c','s6') "
        "AS s(k1, k2, v)) s ON t.k1 = s.k1 AND t.k2 = s.k2 "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT * "
        "WHEN NOT MATCHED BY SOURCE AND t.k1 IS NULL THEN UPDATE SET v = concat(t.v, '_nmbs')",
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (NULL,'a','x'),(2,'b','y') AS s(k1, k2, v)) s "
        "ON t.k1 <=> s.k1 AND t.k2 <=> s.k2 WHEN MATCHED AND t.k1 IS NULL THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = s.v",
    ]),
    # --- nested struct fields: SET t.s.a = ..., deeper fields, NULL structs, whole-struct values
    S("nested_struct", "id int, s struct<a: int, b: string, c: struct<x: double, y: string>>, v string", None, [
        "INSERT INTO {t} VALUES (1, named_struct('a', 1, 'b', 'one', 'c', named_struct('x', 1.5, 'y', 'p')), 'a'),"
        "(2, named_struct('a', 2, 'b', 'two', 'c', CAST(NULL AS struct<x: double, y: string>)), 'b'),"
        "(3, named_struct('a', 3, 'b', NULL, 'c', named_struct('x', 3.5, 'y', NULL)), 'c'),"
        "(5, NULL, 'e')",
    ], [
        "UPDATE {t} t SET t.s.a = t.s.a + 10, t.s.c.y = 'u' WHERE id <= 2 OR id = 5",
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 9.25), (3, 7.0), (4, 0.5) AS s(id, x)) s ON t.id = s.id "
        "WHEN MATCHED AND t.id = 3 THEN UPDATE SET s = named_struct('a', -1, 'b', 'whole', "
        "'c', named_struct('x', s.x, 'y', 'w')) "
        "WHEN MATCHED THEN UPDATE SET t.s.c.x = s.x, t.v = 'm' "
        "WHEN NOT MATCHED THEN INSERT (id, s, v) VALUES (s.id, named_struct('a', 0, 'b', 'new', 'c', "
        "named_struct('x', s.x, 'y', CAST(NULL AS STRING))), 'i')",
    ]),
    # --- errors both engines raise (our table must stay as it was: no new snapshot), and the
    #     duplicate-match cases Spark accepts
    S("errors", "id int NOT NULL, v string, n int", None, [
        "INSERT INTO {t} VALUES (1,'a',1),(2,'b',2),(3,'c',3)",
    ], [
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (1,'x'),(1,'y'),(3,'z') AS s(id, v)) s ON t.id = s.id "
             "WHEN MATCHED THEN UPDATE SET v = s.v", error="cardinality"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (2,'x'),(2,'y') AS s(id, v)) s ON t.id = s.id "
             "WHEN MATCHED AND s.v = 'never' THEN DELETE WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)",
             error="cardinality", note="checked on every matched pair, whatever the clause conditions"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (2,'x'),(2,'y') AS s(id, v)) s ON t.id = s.id "
             "WHEN MATCHED AND t.v = 'never' THEN DELETE",
             error="cardinality", note="a target-only MATCHED condition must not prune the row away"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (3), (3) AS s(id)) s ON t.id = s.id "
             "WHEN MATCHED THEN DELETE",
             metrics=dict(num_deleted_rows=1), note="a lone unconditional DELETE is unambiguous: no cardinality check"),
        Step("UPDATE {t} SET nope = 1 WHERE id = 1", error="analysis"),
        Step("UPDATE {t} SET v = nope WHERE id = 1", error="analysis"),
        Step("MERGE INTO {t} t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.nope",
             error="analysis"),
        Step("UPDATE {t} SET id = NULL WHERE id = 2", error="not_null"),
        Step("MERGE INTO {t} t USING (SELECT CAST(NULL AS INT) AS id, 'x' AS v) s ON t.id = s.id "
             "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)", error="not_null"),
        "UPDATE {t} SET n = n + 1 WHERE id = 1",
    ]),
    # --- peer regression traps
    S("traps", "id int, v string, p string", "p", [
        "INSERT INTO {t} VALUES (1,'a','a'),(2,'b','a'),(3,'c','b'),(4,'d','b'),(5,'e','c'),(6,'f','c')",
        "INSERT INTO {t} VALUES (7,'g','a'),(8,'h','b'),(9,'i',NULL),(10,'j',NULL),(11,'k','d'),(12,'l','d')",
    ], [
        Step("DELETE FROM {t} WHERE p = 'c'",
             metrics=dict(num_deleted_rows=2, num_added_data_files=0, num_added_delete_files=0,
                          num_removed_data_files=1), note="whole partition: metadata only"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (4,'x'),(5,'y') AS s(id, v)) s ON t.id = s.id "
             "WHEN MATCHED AND s.v = 'never' THEN UPDATE SET v = s.v WHEN NOT MATCHED AND s.id < 0 THEN INSERT (id, v) "
             "VALUES (s.id, s.v)", metrics=ZERO, note="all conditions false: nothing rewritten, no snapshot"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (3,'x') AS s(id, v)) s ON t.id = s.id "
             "WHEN MATCHED AND 1 = 0 THEN DELETE", metrics=ZERO, note="constant false condition"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (100,'d','a'),(100,'d','a'),(101,'e','z') AS s(id, v, p)) s "
             "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
             metrics=dict(num_inserted_rows=3, num_updated_rows=0, num_deleted_rows=0),
             note="duplicate source rows that only insert are no cardinality error"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (3,'S3'),(4,'S4') AS s(id, v)) s ON t.id = s.id "
             "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED BY SOURCE AND t.id > 10 THEN DELETE "
             "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = concat('nmbs_', t.v)",
             note="NOT MATCHED BY SOURCE reaches rows outside the source key range"),
        Step("DELETE FROM {t} WHERE p <> 'a'", sql_semantics=lambda r: not (r[2] is not None and r[2] != "a"),
             note="NULL <> 'a' is not true: rows with p IS NULL stay"),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (2,'x'),(2,'y') AS s(id, v)) s ON t.id = s.id "
             "WHEN NOT MATCHED BY SOURCE AND t.p IS NOT NULL THEN DELETE",
             sql_semantics=lambda r: r[0] == 2 or r[2] is None,
             note="a target row matched twice with no WHEN MATCHED clause stays once"),
    ]),
    # --- where Iceberg Java's file statistics decide a row SQL decides otherwise: Spark orders NaN
    #     above every number (Java's bounds leave NaN out, so it keeps the NaN rows of `x > 1.5`), and
    #     `n <> 5` is not true where n IS NULL (Java's strict metrics take a file of NULLs as all
    #     matching and, when every file left matches so, deletes them in metadata). Files: A (n NULL,
    #     x 1.0 and NaN), B (n 6 and 7), C (n 8, only NaN in x).
    S("stats_traps", "id int, n int, x double", None, [
        "INSERT INTO {t} VALUES (1, NULL, 1.0), (2, NULL, double('NaN'))",
        "INSERT INTO {t} VALUES (3, 6, 0.0), (4, 7, 2.0)",
        "INSERT INTO {t} VALUES (5, 8, double('NaN'))",
    ], [
        Step("DELETE FROM {t} WHERE x > 1.5", sql_semantics=lambda r: r[2] is None or (r[2] != "NaN" and r[2] <= 1.5),
             note="NaN > 1.5 is true in Spark"),
        Step("DELETE FROM {t} WHERE n <> 5", sql_semantics=lambda r: r[1] is None or r[1] == 5,
             note="NULL <> 5 is not true: rows with n IS NULL stay"),
    ]),
    # --- ON with target-only and source-only conjuncts (pruning from ON), MATCHED conditions
    S("on_filters", BASE, "p", [
        "INSERT INTO {t} VALUES (1,'a',1,'a'),(2,'b',2,'a'),(3,'c',3,'b'),(4,'d',4,'b'),(5,'e',5,NULL)",
    ], [
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (1,'x',1,'a',true),(3,'y',3,'b',true),(4,'z',4,'b',false) "
        "AS s(id, v, n, p, ok)) s ON t.id = s.id AND t.p = 'a' AND s.ok "
        "WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v, n, p) VALUES (s.id, s.v, s.n, 'ins')",
        "MERGE INTO {t} t USING (SELECT * FROM VALUES (3), (4), (5) AS s(id)) s ON t.id = s.id "
        "WHEN MATCHED AND t.p = 'b' AND t.n > 3 THEN DELETE "
        "WHEN MATCHED AND t.p IS NULL THEN UPDATE SET p = 'was_null'",
    ]),
    # --- files older than the schema: columns whose names were swapped (a <-> b), a column and a
    #     nested field dropped and added again (a new id under an old name). Spark pushes filters
    #     into the Parquet reader by name, so a name that meant another column when the file was
    #     written must not reach it (`a IS NULL` once skipped the files whose old `a` had no NULL)
    S("schema_names", SCHEMA_NAMES_COLUMNS, None, SCHEMA_NAMES_SETUP, SCHEMA_NAMES_STEPS),
    # --- the same once the snapshots that wrote the older files have expired: which names those
    #     files hold is unknown then, so the names other columns had are not pushed down to them
    S("schema_names_expired", SCHEMA_NAMES_COLUMNS, None, [
        *SCHEMA_NAMES_SETUP,
        "CALL {c}.system.expire_snapshots(table => 'db.{name}', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00+00:00', retain_last => 1)",
    ], SCHEMA_NAMES_STEPS),
    # --- columns widened (int -> bigint, float -> double, decimal(5,2) -> decimal(12,2)), then the
    #     snapshots that wrote the narrow files expired: their types come from their footers (Spark
    #     3.5 cannot read an INT32 column as bigint; the table could not be read at all)
    S("schema_widened_expired", "id int, v float, d decimal(5,2), n int", None, [
        "INSERT INTO {t} VALUES (1, 1.5, 1.25, 10), (2, 2.5, 2.50, NULL)",
        "ALTER TABLE {t} ALTER COLUMN id TYPE bigint", "ALTER TABLE {t} ALTER COLUMN v TYPE double",
        "ALTER TABLE {t} ALTER COLUMN d TYPE decimal(12,2)",
        "INSERT INTO {t} VALUES (3000000000, 3.5, 12345678.25, 30)",
        "CALL {c}.system.expire_snapshots(table => 'db.{name}', "
        "older_than => TIMESTAMP '2999-01-01 00:00:00+00:00', retain_last => 1)",
    ], [
        Step("UPDATE {t} SET v = v * 2 WHERE id > 1 AND d < 100", metrics=dict(num_updated_rows=1)),
        Step("DELETE FROM {t} WHERE v > 4.0", metrics=dict(num_deleted_rows=1)),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 9.5), (3000000000, 0.5), (7, 1.0) AS s(id, v)) s "
             "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
             "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)",
             metrics=dict(num_updated_rows=2, num_inserted_rows=1)),
    ]),
    # --- the same on a table with a map, which Spark reads by column name (no field ids): a renamed
    #     column read NULL from the files written before the rename
    S("schema_names_map", "id int, m map<string, int>, x double, k int", None, [
        "INSERT INTO {t} VALUES (1, map('k', 1), 1.5, 10), (2, map('k', 2), 2.5, NULL)",
        "INSERT INTO {t} VALUES (3, map('k', 3), NULL, 30), (4, NULL, 4.5, 40)",
        "ALTER TABLE {t} RENAME COLUMN id TO rid",
        "ALTER TABLE {t} DROP COLUMN x", "ALTER TABLE {t} ADD COLUMN x double",
        "ALTER TABLE {t} RENAME COLUMN k TO kk",
        "INSERT INTO {t} VALUES (5, map('k', 5), 50, 5.5)",
    ], [
        Step("UPDATE {t} SET rid = rid + 100 WHERE x IS NULL AND rid > 1", metrics=dict(num_updated_rows=3)),
        Step("DELETE FROM {t} WHERE kk = 30", metrics=dict(num_deleted_rows=1)),
        Step("MERGE INTO {t} t USING (SELECT * FROM VALUES (1, 0.5), (104, 0.25) AS s(rid, x)) s ON t.rid = s.rid "
             "WHEN MATCHED THEN UPDATE SET x = s.x", metrics=dict(num_updated_rows=2)),
    ]),
]


def names(sc: Scenario, mode: str, catalog: str) -> dict[str, str]:
    base = f"{sc.name}_{SHORT[mode]}"
    return {"t": f"{catalog}.db.{base}", "src": f"{catalog}.db.{base}_src", "name": base, "c": catalog}


def create_sql(sc: Scenario, mode: str, catalog: str) -> str:
    part = f" PARTITIONED BY ({sc.partitioned_by})" if sc.partitioned_by else ""
    props = ", ".join(f"'write.{c}.mode'='{mode}'" for c in ("delete", "update", "merge"))
    return (f"CREATE TABLE {names(sc, mode, catalog)['t']} ({sc.columns}) USING iceberg{part} "
            f"TBLPROPERTIES ('format-version'='2', {props})")


def unit_statements(sc: Scenario, mode: str, catalog: str) -> tuple[list[str], list[str], list[str]]:
    """(setup statements, step statements, the row query) for one scenario in one mode."""
    n = names(sc, mode, catalog)
    setup = [f"CREATE NAMESPACE IF NOT EXISTS {catalog}.db", create_sql(sc, mode, catalog)]
    setup += [s.format(**n) for s in sc.setup]
    steps = [sc.step(i).text(catalog).format(**n) for i in range(len(sc.steps))]
    return setup, steps, f"SELECT * FROM {n['t']}"


# --- Java-written tables for the cross-engine test: twins `a` (we change it) and `b` (Java does)
JW_SETUP = [
    "CREATE NAMESPACE IF NOT EXISTS {c}.jw",
    "CREATE TABLE {c}.jw.{x} (id int, v string, p string) USING iceberg PARTITIONED BY (p) TBLPROPERTIES "
    "('format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
    "'write.merge.mode'='merge-on-read')",
    "INSERT INTO {c}.jw.{x} VALUES (1,'a','a'),(2,'b','a'),(3,'c','a'),(4,'d','b'),(5,'e','b'),(6,'f','b')",
    "INSERT INTO {c}.jw.{x} VALUES (7,'g','a'),(8,'h','b'),(9,'i',NULL)",
    "DELETE FROM {c}.jw.{x} WHERE id IN (2, 8)",
    "UPDATE {c}.jw.{x} SET v = 'java' WHERE id IN (3, 4, 9)",
]
JW_STEPS = [
    "MERGE INTO {c}.jw.{x} t USING (SELECT * FROM VALUES (1,'m1'),(3,'m3'),(5,'m5'),(20,'m20') AS s(id, v)) s "
    "ON t.id = s.id WHEN MATCHED AND t.id = 5 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
    "WHEN NOT MATCHED THEN INSERT (id, v, p) VALUES (s.id, s.v, 'b')",
    "UPDATE {c}.jw.{x} SET v = concat(v, '_u') WHERE p = 'b' OR id = 7",
    "ALTER TABLE {c}.jw.{x} SET TBLPROPERTIES ('write.delete.mode'='copy-on-write', "
    "'write.merge.mode'='copy-on-write')",
    "DELETE FROM {c}.jw.{x} WHERE id IN (1, 6)",
    "MERGE INTO {c}.jw.{x} t USING (SELECT 4 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'cow' "
    "WHEN NOT MATCHED BY SOURCE AND t.p IS NULL THEN DELETE",
]


# =============================================================================== reference batch

@dataclass
class Unit:
    """Where one scenario-mode's statements sit in the batch."""

    setup: list[int]
    setup_rows: int
    steps: list[tuple[int, int]]  # (statement, row query after it)


class Batch:
    def __init__(self) -> None:
        self.statements: list[str] = ["SET spark.sql.shuffle.partitions=2"]
        self.units: dict[tuple[str, str], Unit] = {}
        self.jw: dict[str, Any] = {}

    def add(self, sql: str) -> int:
        self.statements.append(sql)
        return len(self.statements) - 1

    def add_unit(self, sc: Scenario, mode: str) -> None:
        setup, steps, rows = unit_statements(sc, mode, "ref")
        setup_idx = [self.add(s) for s in setup]
        setup_rows = self.add(rows)
        step_idx = [(self.add(s), self.add(rows)) for s in steps]
        self.units[(sc.name, mode)] = Unit(setup_idx, setup_rows, step_idx)

    def add_java_written(self) -> None:
        for x in ("a", "b"):
            self.jw[f"setup_{x}"] = [self.add(s.format(c="ref", x=x)) for s in JW_SETUP]
        self.jw["rows_b0"] = self.add("SELECT * FROM ref.jw.b")
        self.jw["steps_b"] = [(self.add(s.format(c="ref", x="b")), self.add("SELECT * FROM ref.jw.b"))
                              for s in JW_STEPS]


UNITS = [(sc, mode) for sc in SCENARIOS for mode in MODES]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Iceberg Java running every scenario (both modes) plus the Java-written tables, in one JVM."""
    batch = Batch()
    for sc, mode in UNITS:
        batch.add_unit(sc, mode)
    batch.add_java_written()
    work = tmp_path_factory.mktemp("reference")
    runner = ReferenceBatch(work / "warehouse", batch.statements, work)
    runner.batch = batch
    yield runner
    runner.close()


@pytest.fixture(scope="module", autouse=True)
def _reference_starts_first(reference):
    """The JVM boots (and runs ahead) while the first tests run pyice."""


@pytest.fixture(scope="module", autouse=True)
def _small_shuffles(spark):
    """The data is tiny: two shuffle partitions keep each Spark job short."""
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    yield
    spark.conf.set("spark.sql.shuffle.partitions", old)


# =============================================================================== helpers

def snapshots(ice, table: str) -> list[int]:
    catalog, *ns, name = table.split(".")
    md = ice.catalogs[catalog].load_table(TableIdentifier(tuple(ns), name)).metadata
    return [s.snapshot_id for s in md.snapshots]


ERRORS = {
    "cardinality": ((CardinalityError,), ("MERGE_CARDINALITY_VIOLATION", "matched a single row from the target")),
    "analysis": ((AnalysisError, "AnalysisException"), ("UNRESOLVED_COLUMN", "cannot be resolved",
                                                        "AnalysisException")),
    "not_null": ((NotNullViolationError,), ("Null value appeared in non-nullable field",
                                            "Cannot write nullable values to non-null column")),
    # a NOT NULL column an INSERT column list leaves out: Spark rejects it at analysis
    "missing_required": ((NotNullViolationError,), ("CANNOT_FIND_DATA", "No assignment for")),
}


def _is_expected(e: BaseException, kinds) -> bool:
    for k in kinds:
        if isinstance(k, str):
            if any(c.__name__ == k for c in type(e).__mro__):
                return True
        elif isinstance(e, k):
            return True
    return False


def run_ours(ice, sql: str) -> tuple[dict | None, BaseException | None]:
    try:
        rows = ice.sql(sql).collect()
    except Exception as e:  # noqa: BLE001 - compared with the reference's outcome
        return None, e
    return (rows[0].asDict() if rows else {}), None


def check_metrics(step: Step, m: dict, before: list, after: list, snaps_before: list, snaps_after: list,
                  mode: str, what: str) -> None:
    """pyice's metrics row must agree with the rows it changed and the snapshot it made."""
    if not m:  # an INSERT has no metrics row: its rows are compared, and it adds one snapshot
        assert snaps_after[:-1] == snaps_before and len(snaps_after) == len(snaps_before) + 1, \
            f"{what}: expected exactly one new snapshot"
        return
    assert m["num_affected_rows"] == m["num_updated_rows"] + m["num_deleted_rows"] + m["num_inserted_rows"], \
        f"{what}: {m}"
    assert len(after) == len(before) - m["num_deleted_rows"] + m["num_inserted_rows"], \
        f"{what}: {len(before)} rows -> {len(after)} rows, but metrics say {m}"
    if m["num_affected_rows"] == 0:
        assert snaps_after == snaps_before and m["snapshot_id"] is None, \
            f"{what}: changed nothing but committed a snapshot ({m})"
        assert (m["num_added_data_files"], m["num_removed_data_files"], m["num_added_delete_files"]) == (0, 0, 0), \
            f"{what}: changed nothing but reports files: {m}"
    else:
        assert snaps_after[:-1] == snaps_before and len(snaps_after) == len(snaps_before) + 1, \
            f"{what}: expected exactly one new snapshot"
        assert m["snapshot_id"] == snaps_after[-1], f"{what}: metrics snapshot_id is not the new snapshot"
    if mode == COW:
        assert m["num_added_delete_files"] == 0, f"{what}: copy-on-write wrote delete files ({m})"
    for k, v in step.metrics.items():
        assert m[k] == v, f"{what}: {k} = {m[k]}, expected {v} ({m})"


# =============================================================================== 4: concurrent writers
# (defined first: they run while the reference JVM starts)

class CommitBarrier:
    """Holds every row-level commit until `parties` statements are ready to commit: all of them
    planned and wrote against the same snapshot, so they race for real."""

    def __init__(self, monkeypatch, parties: int) -> None:
        import pyice_sql.spark.rowlevel.dml as dml

        self.barrier = threading.Barrier(parties, timeout=120)
        original = dml.commit_or_clean

        def gated(table, update, written):
            try:
                self.barrier.wait()
            except threading.BrokenBarrierError:
                pass
            return original(table, update, written)

        monkeypatch.setattr(dml, "commit_or_clean", gated)


def race(sessions_and_sql: list[tuple[Any, str]]) -> list[tuple[dict | None, BaseException | None]]:
    with ThreadPoolExecutor(max_workers=len(sessions_and_sql)) as pool:
        futures = [pool.submit(run_ours, s, sql) for s, sql in sessions_and_sql]
        return [f.result(timeout=300) for f in futures]


def _race_table(ice, name: str, mode: str) -> str:
    t = f"local.db.{name}"
    ice.sql("CREATE NAMESPACE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE {t} (id int, v string, n int) USING iceberg TBLPROPERTIES ('format-version'='2', "
            f"'write.merge.mode'='{mode}', 'write.update.mode'='{mode}', 'write.delete.mode'='{mode}')")
    ice.sql(f"INSERT INTO {t} SELECT id, concat('v', id), 0 FROM range(1, 11) AS r(id)")
    ice.sql(f"INSERT INTO {t} SELECT id, concat('v', id), 0 FROM range(101, 111) AS r(id)")
    return t


@pytest.mark.parametrize("mode", MODES, ids=[SHORT[m] for m in MODES])
def test_race_disjoint_merges_both_land(spark, warehouse, monkeypatch, mode):
    ice_a = pyice_sql.connect(spark, warehouse=warehouse)
    ice_b = pyice_sql.connect(spark, warehouse=warehouse)
    t = _race_table(ice_a, "race_merge", mode)
    start = ice_rows(ice_a.sql(f"SELECT * FROM {t}"))
    CommitBarrier(monkeypatch, 2)
    merge = ("MERGE INTO {t} t USING (SELECT * FROM VALUES {rows} AS s(id, v)) s ON t.id = s.id "
             "WHEN MATCHED THEN UPDATE SET v = s.v, n = t.n + 1 "
             "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, 1)")
    a = merge.format(t=t, rows="(1,'A1'),(2,'A2'),(11,'A11')")
    b = merge.format(t=t, rows="(101,'B101'),(105,'B105'),(111,'B111')")
    results = race([(ice_a, a), (ice_b, b)])
    for m, err in results:
        assert err is None, f"a MERGE on a disjoint key range failed: {type(err).__name__}: {err}"
        assert m["num_affected_rows"] == 3
    changed = {1: "A1", 2: "A2", 101: "B101", 105: "B105"}
    expected = [[r[0], changed[r[0]], 1] if r[0] in changed else r for r in start]
    expected = sort_rows(expected + [[11, "A11", 1], [111, "B111", 1]])
    assert_same_rows(expected, ice_rows(ice_a.sql(f"SELECT * FROM {t}")), "both MERGEs applied")
    assert len(snapshots(ice_a, t)) == 4


@pytest.mark.parametrize("mode", MODES, ids=[SHORT[m] for m in MODES])
def test_race_conflicting_updates_lose_nothing(spark, warehouse, monkeypatch, mode):
    ice_a = pyice_sql.connect(spark, warehouse=warehouse)
    ice_b = pyice_sql.connect(spark, warehouse=warehouse)
    t = _race_table(ice_a, "race_update", mode)
    start = ice_rows(ice_a.sql(f"SELECT * FROM {t}"))
    CommitBarrier(monkeypatch, 2)
    results = race([(ice_a, f"UPDATE {t} SET n = n + 1, v = 'A' WHERE id IN (5, 6)"),
                    (ice_b, f"UPDATE {t} SET n = n + 10, v = 'B' WHERE id IN (6, 7)")])
    final = ice_rows(ice_a.sql(f"SELECT * FROM {t}"))
    ok = [i for i, (_, err) in enumerate(results) if err is None]
    for _, err in results:
        if err is not None:
            assert isinstance(err, (ValidationError, CommitConflictError)), \
                f"the losing UPDATE failed with {type(err).__name__}: {err}"
    assert ok, "both UPDATEs failed: one of them must win"

    def applied(rows, ids, n, v):
        return sort_rows([[r[0], v, r[2] + n] if r[0] in ids else r for r in rows])

    if len(ok) == 2:  # both committed: only acceptable if neither change was lost
        both = applied(applied(start, {5, 6}, 1, "A"), {6, 7}, 10, "B")
        alt = applied(applied(start, {6, 7}, 10, "B"), {5, 6}, 1, "A")
        assert final in (both, alt), f"both UPDATEs committed but a change was lost: {final}"
    else:
        winner = applied(start, {5, 6}, 1, "A") if ok == [0] else applied(start, {6, 7}, 10, "B")
        assert_same_rows(winner, final, "the table holds exactly the winner's UPDATE")
        assert len(snapshots(ice_a, t)) == 3


# =============================================================================== 1 + 3: differential

@pytest.mark.parametrize("sc,mode", UNITS, ids=[f"{sc.name}-{SHORT[m]}" for sc, m in UNITS])
def test_differential(ice, reference, sc: Scenario, mode: str):
    check_unit(ice, reference, sc, mode)


def check_unit(ice, reference, sc: Scenario, mode: str, errors: dict = ERRORS) -> None:
    """Run one scenario in one mode on pyice and compare every step with the reference's batch.

    `errors` maps a Step's `error` to (pyice error types, reference message markers); a pyice
    error that names Spark's error class (`error_class`) must name one of the markers.
    """
    batch: Batch = reference.batch
    unit = batch.units[(sc.name, mode)]
    setup, steps, row_query = unit_statements(sc, mode, "local")
    table = names(sc, mode, "local")["t"]
    # pyice's whole run first (the reference JVM works meanwhile), then the comparisons.
    for sql in setup:
        ice.sql(sql)
    ours = ice_rows(ice.sql(row_query))
    runs = []
    for sql in steps:
        snaps_before = snapshots(ice, table)
        metrics, err = run_ours(ice, sql)
        runs.append((sql, metrics, err, snaps_before, ice_rows(ice.sql(row_query)), snapshots(ice, table)))

    for i in unit.setup:
        r = reference.result(i)
        assert "error" not in r, f"reference rejected setup {batch.statements[i]}: {r['error']}"
    assert_same_rows(sort_rows(reference.result(unit.setup_rows)["rows"]), ours, f"{sc.name}/{mode}: after setup")
    java_diverged = False
    java_before = ours
    for k, (run, (j_stmt, j_rows)) in enumerate(zip(runs, unit.steps)):
        sql, metrics, err, snaps_before, after, snaps_after = run
        step = sc.step(k)
        what = f"{sc.name}/{mode} step {k + 1}: {sql}"
        before, ours = ours, after
        java_stmt, java_rows = reference.result(j_stmt), reference.result(j_rows)
        assert "error" not in java_rows, f"{what}: reference could not read back: {java_rows['error']}"
        java = sort_rows(java_rows["rows"])
        if step.error is not None:
            kinds, java_markers = errors[step.error]
            assert "error" in java_stmt, f"{what}: the reference accepted it, expected a {step.error} error"
            assert any(mk in java_stmt["error"] for mk in java_markers), \
                f"{what}: the reference failed differently: {java_stmt['error'][:500]}"
            assert err is not None, f"{what}: pyice accepted it ({metrics}); the reference failed: " \
                                    f"{java_stmt['error'][:300]}"
            assert _is_expected(err, kinds), f"{what}: pyice raised {type(err).__name__}: {err}, expected {step.error}"
            assert getattr(err, "error_class", java_markers[0]) in java_markers, \
                f"{what}: pyice names error class {err.error_class}, the reference one of {java_markers}"
            assert snaps_after == snaps_before, f"{what}: a failed statement committed a snapshot"
            assert ours == before, f"{what}: a failed statement changed the rows"
        else:
            if err is not None:
                raise AssertionError(f"{what}: pyice failed: {type(err).__name__}: {err}") from err
            assert "error" not in java_stmt, \
                f"{what}: pyice accepted it but the reference failed: {java_stmt['error'][:500]}"
            check_metrics(step, metrics, before, ours, snaps_before, snaps_after, mode, what)
        if step.sql_semantics is not None:
            expected = [r for r in before if step.sql_semantics(r)]
            assert_same_rows(expected, ours, f"{what}: SQL semantics")
            java_expected = [r for r in java_before if step.sql_semantics(r)]
            if java != java_expected:
                java_diverged = True
                warnings.warn(f"Iceberg Java breaks SQL semantics ({step.note}) on `{sql}` ({mode}): "
                              f"it left {java} where SQL leaves {java_expected}", stacklevel=1)
            java_before = java
            continue
        assert not java_diverged, "an earlier step left the reference engine's table different"
        assert_same_rows(java, ours, f"{what}: pyice vs Iceberg Java")
        java_before = java


# =============================================================================== 2: cross-engine

OURS_SETUP = [
    "CREATE NAMESPACE IF NOT EXISTS local.xe",
    "CREATE TABLE local.xe.{x} (id bigint, v string, d date, amount decimal(10,2)) USING iceberg "
    "PARTITIONED BY (bucket(2, id)) TBLPROPERTIES ('format-version'='2', 'write.merge.mode'='merge-on-read', "
    "'write.update.mode'='merge-on-read', 'write.delete.mode'='merge-on-read')",
    "INSERT INTO local.xe.{x} SELECT id, concat('r', id), date_add(DATE'2024-01-01', CAST(id AS INT)), "
    "CAST(id * 1.5 AS decimal(10,2)) FROM range(0, 30) AS r(id)",
    "INSERT INTO local.xe.{x} VALUES (100, 'late', NULL, NULL)",
    "MERGE INTO local.xe.{x} t USING (SELECT id, id % 4 AS op FROM range(0, 40, 3) AS r(id)) s ON t.id = s.id "
    "WHEN MATCHED AND s.op = 0 THEN DELETE WHEN MATCHED THEN UPDATE SET v = concat(t.v, '_m'), amount = t.amount * 2 "
    "WHEN NOT MATCHED THEN INSERT (id, v, d, amount) VALUES (s.id, 'new', NULL, 0)",
]
JAVA_MERGE_ON_OURS = (
    "MERGE INTO {c}.xe.{x} t USING (SELECT id FROM range(1, 45, 4) AS r(id)) s ON t.id = s.id "
    "WHEN MATCHED AND t.v LIKE '%_m' THEN DELETE WHEN MATCHED THEN UPDATE SET v = 'java' "
    "WHEN NOT MATCHED THEN INSERT (id, v, d, amount) VALUES (s.id, 'java_new', DATE'2025-01-01', 1.25)")
# (REFRESH: the reference JVM cached jw.a when it wrote it; we changed it since)
JAVA_ON_OURS = ["REFRESH TABLE ref.jw.a", "SELECT * FROM ref.xe.ours", "SELECT * FROM ref.jw.a",
                JAVA_MERGE_ON_OURS.format(c="ref", x="ours"), "SELECT * FROM ref.xe.ours"]
AFTER_JAVA = "UPDATE {c}.xe.{x} SET amount = coalesce(amount, 0) + 1 WHERE id % 2 = 1 OR v = 'java'"


def test_cross_engine(spark, reference):
    if reference.cached:
        pytest.skip("PYICE_REF_CACHE gave the reference results: its tables are not on disk")
    reference.wait()
    batch: Batch = reference.batch
    wh = reference.warehouse
    for i in batch.jw["setup_a"] + batch.jw["setup_b"]:
        assert "error" not in reference.result(i), f"reference failed on {batch.statements[i]}"
    ice = pyice_sql.connect(spark, warehouse=wh)
    assert any(r.content == 1 for r in ice.sql("SELECT content FROM local.jw.a.files").collect()), \
        "Iceberg Java should have left position delete files in jw.a"

    # We change a table Iceberg Java wrote (its position deletes in place), step by step like Java.
    ours = ice_rows(ice.sql("SELECT * FROM local.jw.a"))
    assert_same_rows(sort_rows(reference.result(batch.jw["rows_b0"])["rows"]), ours, "Java-written table")
    for sql, (j_stmt, j_rows) in zip(JW_STEPS, batch.jw["steps_b"]):
        ice.sql(sql.format(c="local", x="a"))
        assert "error" not in reference.result(j_stmt), reference.result(j_stmt)
        assert_same_rows(sort_rows(reference.result(j_rows)["rows"]), ice_rows(ice.sql("SELECT * FROM local.jw.a")),
                         f"our `{sql[:60]}...` on a Java-written table vs Java on its twin")
    jw_ours = ice_rows(ice.sql("SELECT * FROM local.jw.a"))

    # Our merge-on-read MERGE on our own table (and a twin for what comes after).
    for x in ("ours", "twin"):
        for sql in OURS_SETUP:
            ice.sql(sql.format(x=x))
    after_merge = ice_rows(ice.sql("SELECT * FROM local.xe.ours"))
    files = ice.sql("SELECT content FROM local.xe.ours.files").collect()
    assert any(r.content == 1 for r in files), "the MERGE should have written position delete files"

    with ThreadPoolExecutor(max_workers=1) as pool:
        peers_jw = pool.submit(peer_rows, f"{wh}/jw/a")
        # the peers read the newest metadata: they must be done with xe.ours before Java MERGEs into it
        for reader, rows in peer_rows(f"{wh}/xe/ours").items():
            assert_same_rows(after_merge, rows, f"{reader} reading our merge-on-read MERGE")
        java = []
        for sql, r in zip(JAVA_ON_OURS, reference.run_more(JAVA_ON_OURS)):
            assert "error" not in r, f"Iceberg Java failed on {sql}: {r['error'][:1000]}"
            java.append(sort_rows(r["rows"]))
        for reader, rows in peers_jw.result().items():
            assert_same_rows(jw_ours, rows, f"{reader} reading the Java-written table we changed")
    assert_same_rows(after_merge, java[1], "Iceberg Java reading our merge-on-read MERGE")
    assert_same_rows(jw_ours, java[2], "Iceberg Java reading the Java-written table we changed")

    # Java MERGEd into our table: we read its delete files, and go on writing on top of them.
    ice.sql(JAVA_MERGE_ON_OURS.format(c="local", x="twin"))
    twin = ice_rows(ice.sql("SELECT * FROM local.xe.twin"))
    assert_same_rows(java[4], twin, "pyice running Java's MERGE vs Java's result")
    assert_same_rows(twin, ice_rows(ice.sql("SELECT * FROM local.xe.ours")), "pyice reading Java's MERGE on ours")
    for x in ("ours", "twin"):
        ice.sql(AFTER_JAVA.format(c="local", x=x))
    final = ice_rows(ice.sql("SELECT * FROM local.xe.ours"))
    assert_same_rows(ice_rows(ice.sql("SELECT * FROM local.xe.twin")), final, "UPDATE on top of Java's deletes")
    assert_peers_read(f"{wh}/xe/ours", final)
