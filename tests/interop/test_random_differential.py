"""Random DML on random tables, pyice_sql against SQL's own answer and Iceberg Java's.

The hand-written scenarios (test_dml_differential.py) cover what we thought of; this covers
combinations nobody wrote down: seeded random tables (partitioned by identity, bucket, truncate
or a time transform; format v2 or v3; each row-level statement kind in its own write mode; rows
full of NULLs, signed zeros, microsecond timestamps) and random statements on them: DELETE,
UPDATE, INSERT, MERGE with every clause kind, IN-subqueries over the target, partition evolution
and write-mode switches between statements.

Truth for each statement, independent of pyice:
- DELETE and UPDATE: Spark itself, evaluating the statement's condition and values over our rows
  before it (the rows `WHERE NOT coalesce(cond, false)`, and for an UPDATE the others with its
  values cast to the column types), and the count of rows the condition holds for against the
  statement's num_deleted_rows / num_updated_rows. Iceberg Java is not the truth there: where its file statistics decide (a
  file of NULLs under `n <> 5`, a NULL partition under `p < 'c'`; README "How it works") it
  deletes rows SQL keeps. Such a divergence is reported as a warning, and that table's Java twin
  is not compared again.
- INSERT, MERGE and the DDL: Iceberg Java running the same statements on its own twin table.
NaN is left out of the data: Spark and Java order it differently (test_dml_differential.py's
`stats_traps`), which would make every comparison on a double column Java-dependent.

A failure names the seed, the table and the statement; `RANDOM_DML_SEEDS=7,8` runs other seeds.
"""
from __future__ import annotations

import json
import os
import random
import warnings
from dataclasses import dataclass

import pytest

from tests.interop.engines import assert_same_rows, sort_rows
from tests.interop.ref_batch import ReferenceBatch

pytestmark = pytest.mark.interop

SEEDS = [int(s) for s in os.environ.get("RANDOM_DML_SEEDS", "1,2").split(",")]
TABLES_PER_SEED, STEPS = 5, 7
COLUMNS = (("id", "int"), ("v", "string"), ("n", "int"), ("p", "string"), ("d", "date"), ("ts", "timestamp"),
           ("x", "double"))
NAMES = [c for c, _ in COLUMNS]
TYPES = dict(COLUMNS)
PARTITIONINGS = [None, "p", "bucket(3, id)", "truncate(1, v)", "days(ts)", "years(d)", "p, bucket(2, n)",
                 "identity(n)", "months(ts)"]
MODES = ("copy-on-write", "merge-on-read")
LITERALS = {
    "id": ["NULL"] + [str(i) for i in range(12)],
    "v": ["NULL", "'a'", "'b'", "'ab'", "'B'", "''", "'a%'", "'zz'"],
    "n": ["NULL", "-1", "0", "1", "2", "3", "5"],
    "p": ["NULL", "'a'", "'b'", "'c'"],
    "d": ["NULL", "DATE '2024-01-01'", "DATE '2024-01-02'", "DATE '2023-12-31'", "DATE '2025-06-01'"],
    "ts": ["NULL", "TIMESTAMP '2024-01-01 00:00:00'", "TIMESTAMP '2024-01-01 23:59:59.999999'",
           "TIMESTAMP '2024-01-02 12:00:00'", "TIMESTAMP '2023-12-31 23:00:00'", "TIMESTAMP '2024-02-01 00:00:00'"],
    "x": ["NULL", "0.0", "-0.0", "1.5", "-2.5", "1e10"],
}


@dataclass(frozen=True)
class Statement:
    """One random statement: `sql` with {t} for the table; for DELETE / UPDATE also what Spark
    needs to compute SQL's answer (`cond`, and the UPDATE's `assignments` column -> value)."""

    sql: str
    kind: str  # delete | update | other
    cond: str = "true"
    assignments: tuple[tuple[str, str], ...] = ()


class Generator:
    """Seeded random tables and statements (the same seed gives the same SQL on every machine)."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def literal(self, column: str, non_null: bool = False) -> str:
        choices = [v for v in LITERALS[column] if v != "NULL"] if non_null else LITERALS[column]
        return self.r.choice(choices)

    def row(self) -> str:
        return "(" + ", ".join(self.literal(c) for c in NAMES) + ")"

    def values(self, lo: int, hi: int) -> str:
        return ", ".join(self.row() for _ in range(self.r.randint(lo, hi)))

    def atom(self, q: str) -> str:
        r, c = self.r, self.r.choice(NAMES)
        col, k = f"{q}{c}", r.randrange(12)
        if k < 4:
            op = r.choice(["=", "<>", "<", "<=", ">", ">=", "<=>"])
            return f"{col} {op} {self.literal(c, non_null=r.random() < .9)}"
        if k == 4:
            return f"{col} IS {r.choice(['', 'NOT '])}NULL"
        if k == 5:
            items = ", ".join(self.literal(c) for _ in range(r.randint(1, 3)))
            return f"{col} {r.choice(['', 'NOT '])}IN ({items})"
        if k == 6:
            return f"{col} BETWEEN {self.literal(c, True)} AND {self.literal(c, True)}"
        return r.choice({
            7: [f"{q}v LIKE 'a%'", f"length({q}v) > 1", f"upper({q}v) = 'B'", f"startswith({q}v, 'a')"],
            8: [f"{q}n % 2 = 0", f"{q}id + {q}n > 5", f"coalesce({q}p, 'z') = 'z'", f"abs({q}n) = 1"],
            9: [f"year({q}d) = 2024", f"{q}ts < {q}d", f"to_date({q}ts) = DATE '2024-01-01'", f"hour({q}ts) = 23",
                f"date_trunc('DAY', {q}ts) = TIMESTAMP '2024-01-01 00:00:00'"],
            10: [f"{q}x > 1.0", f"{q}x = 0.0", f"{q}x <> {q}x"],
            11: ["true", "false", f"{q}id IS NOT NULL AND {q}n IS NULL"],
        }[k])

    def cond(self, q: str = "", depth: int = 0) -> str:
        k = self.r.randrange(6) if depth < 2 else 0
        if k <= 2:
            return self.atom(q)
        if k == 5:
            return f"NOT ({self.cond(q, depth + 1)})"
        return f"({self.cond(q, depth + 1)} {'AND' if k == 3 else 'OR'} {self.cond(q, depth + 1)})"

    def assignments(self, q: str = "", src: str | None = None) -> tuple[tuple[str, str], ...]:
        options = [("n", f"{q}n + 1"), ("v", f"concat({q}v, 'x')"), ("p", self.literal("p")),
                   ("ts", f"{q}ts + INTERVAL 1 DAY"), ("x", f"{q}x * 2"), ("id", f"{q}id + 100"),
                   ("d", f"date_add({q}d, 40)"), ("n", f"CASE WHEN {q}n > 1 THEN NULL ELSE 7 END")]
        if src:
            options += [(c, f"{src}{c}") for c in ("v", "n", "p", "ts", "x")]
        picked: dict[str, str] = {}
        for column, value in self.r.sample(options, self.r.randint(1, 3)):
            picked.setdefault(column, value)
        return tuple(picked.items())

    def table(self) -> tuple[str, list[str]]:
        """(CREATE TABLE with {t}, the INSERTs that fill it)."""
        r = self.r
        part = r.choice(PARTITIONINGS)
        props = ", ".join(f"'write.{k}.mode'='{r.choice(MODES)}'" for k in ("delete", "update", "merge"))
        columns = ", ".join(f"{c} {t}" for c, t in COLUMNS)
        create = (f"CREATE TABLE {{t}} ({columns}) USING iceberg" + (f" PARTITIONED BY ({part})" if part else "")
                  + f" TBLPROPERTIES ('format-version'='{r.choice([2, 2, 3])}', {props})")
        return create, [f"INSERT INTO {{t}} VALUES {self.values(3, 8)}" for _ in range(r.randint(1, 3))]

    def statement(self) -> Statement:
        r = self.r
        if r.random() < .12:
            k = r.randrange(4)
            if k == 0:
                field = r.choice(["bucket(2, id)", "p", "truncate(1, v)", "days(ts)", "n"])
                return Statement(f"ALTER TABLE {{t}} ADD PARTITION FIELD {field}", "other")
            if k == 1:
                kind, mode = r.choice(["delete", "update", "merge"]), r.choice(MODES)
                return Statement(f"ALTER TABLE {{t}} SET TBLPROPERTIES ('write.{kind}.mode'='{mode}')", "other")
            if k == 2:
                sets, cond = self.assignments(), f"id IN (SELECT id FROM {{t}} WHERE {self.cond()})"
                return Statement(f"UPDATE {{t}} SET {_sets(sets)} WHERE {cond}", "update", cond, sets)
            cond = f"n IN (SELECT n FROM {{t}} WHERE {self.cond()})"
            return Statement(f"DELETE FROM {{t}} WHERE {cond}", "delete", cond)
        k = r.randrange(10)
        if k < 3:
            cond = "true" if r.random() < .05 else self.cond()
            return Statement(f"DELETE FROM {{t}} WHERE {cond}", "delete", cond)
        if k < 6:
            cond, sets = ("true" if r.random() < .05 else self.cond()), self.assignments()
            return Statement(f"UPDATE {{t}} SET {_sets(sets)} WHERE {cond}", "update", cond, sets)
        if k == 6:
            return Statement(f"INSERT INTO {{t}} VALUES {self.values(1, 3)}", "other")
        return Statement(self.merge(), "other")

    def merge(self) -> str:
        r = self.r
        if r.random() < .7:
            source = f"(SELECT * FROM VALUES {self.values(1, 5)} AS s({', '.join(NAMES)}))"
        else:
            source = f"(SELECT {', '.join(NAMES)} FROM {{t}} WHERE {self.cond()})"
        on = r.choice(["t.id = s.id", "t.id = s.id", "t.id = s.id AND t.p = s.p", "t.id = s.id AND s.n > 0",
                       "t.id <=> s.id"])
        clauses = []
        for _ in range(r.randint(1, 3)):
            kind = r.choice(["matched", "matched", "not matched", "not matched", "by source"])
            side = {"matched": r.choice(["t.", "s."]), "not matched": "s.", "by source": "t."}[kind]
            cond = f" AND {self.cond(side)}" if r.random() < .5 else ""
            if kind == "matched":
                action = r.choice(["DELETE", f"UPDATE SET {_sets(self.assignments('t.', 's.'))}",
                                   "UPDATE SET *"])
                clauses.append(f"WHEN MATCHED{cond} THEN {action}")
            elif kind == "not matched":
                action = r.choice(["INSERT *", "INSERT (id, v, p) VALUES (s.id, s.v, 'ins')"])
                clauses.append(f"WHEN NOT MATCHED{cond} THEN {action}")
            else:
                action = r.choice(["DELETE", f"UPDATE SET {_sets(self.assignments('t.'))}"])
                clauses.append(f"WHEN NOT MATCHED BY SOURCE{cond} THEN {action}")
        return f"MERGE INTO {{t}} t USING {source} s ON {on} " + " ".join(clauses)


def _sets(assignments) -> str:
    return ", ".join(f"{column} = {value}" for column, value in assignments)


@dataclass
class Table:
    name: str
    create: str
    inserts: list[str]
    steps: list[Statement]
    java_setup: list[int]
    java_steps: list[tuple[int, int]]  # (statement, rows after it)


def _tables() -> list[Table]:
    tables = []
    for seed in SEEDS:
        gen = Generator(seed)
        for k in range(TABLES_PER_SEED):
            create, inserts = gen.table()
            tables.append(Table(f"rnd{seed}_{k}", create, inserts, [gen.statement() for _ in range(STEPS)], [], []))
    return tables


TABLES = _tables()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Iceberg Java running every table's statements (its twin `ref.db.<name>`), in one JVM."""
    statements = ["SET spark.sql.shuffle.partitions=2", "CREATE NAMESPACE IF NOT EXISTS ref.db"]

    def add(sql: str) -> int:
        statements.append(sql)
        return len(statements) - 1

    for tb in TABLES:
        t = f"ref.db.{tb.name}"
        tb.java_setup = [add(s.format(t=t)) for s in [tb.create, *tb.inserts]] + [add(f"SELECT * FROM {t}")]
        tb.java_steps = [(add(s.sql.format(t=t)), add(f"SELECT * FROM {t}")) for s in tb.steps]
    work = tmp_path_factory.mktemp("random_reference")
    runner = ReferenceBatch(work / "warehouse", statements, work)
    yield runner
    runner.close()


def _sql_answer(ice, before, schema, st: Statement) -> tuple[list, int]:
    """SQL's rows after a DELETE or UPDATE, and how many rows it changes, computed by Spark over
    the rows before it (the condition in filters only: Spark takes IN-subqueries nowhere else)."""
    view = "random_dml_before"
    ice.spark.createDataFrame(before, schema).createOrReplaceTempView(view)
    holds = f"coalesce({st.cond.replace('{t}', view)}, false)"
    try:
        changed = ice.spark.sql(f"SELECT count(*) FROM {view} WHERE {holds}").collect()[0][0]
        kept = f"SELECT * FROM {view} WHERE NOT {holds}"
        if st.kind == "delete":
            return sort_rows(list(r) for r in ice.spark.sql(kept).collect()), changed
        values = dict(st.assignments)
        columns = [f"CAST({values[c]} AS {TYPES[c]}) AS {c}" if c in values else c for c in NAMES]
        updated = f"SELECT {', '.join(columns)} FROM {view} WHERE {holds}"
        return sort_rows(list(r) for r in ice.spark.sql(f"{updated} UNION ALL {kept}").collect()), changed
    finally:
        ice.spark.catalog.dropTempView(view)


@pytest.mark.parametrize("tb", TABLES, ids=[tb.name for tb in TABLES])
def test_random_dml(ice, reference, tb: Table):
    t = f"local.db.{tb.name}"
    ice.sql("CREATE NAMESPACE IF NOT EXISTS local.db")
    for sql in [tb.create, *tb.inserts]:
        ice.sql(sql.format(t=t))
    *setup, rows_i = tb.java_setup
    for i in setup:
        assert "error" not in reference.result(i), f"{tb.name}: the reference rejected {reference.statements[i]}"
    frame = ice.sql(f"SELECT * FROM {t}")
    schema, before = frame.schema, frame.collect()
    assert_same_rows(sort_rows(reference.result(rows_i)["rows"]), sort_rows(list(r) for r in before),
                     f"{tb.name}: after setup")
    java_twin_agrees = True
    for k, (st, (j_stmt, j_rows)) in enumerate(zip(tb.steps, tb.java_steps)):
        sql = st.sql.format(t=t)
        what = f"{tb.name} (seeds {SEEDS}) step {k + 1}: {sql}\n  table: {tb.create.format(t=t)}"
        error, result = None, []
        try:
            result = ice.sql(sql).collect()
        except Exception as e:  # noqa: BLE001 - compared with the truth's outcome below
            error = e
        after = ice.sql(f"SELECT * FROM {t}").collect()
        ours, java_stmt = sort_rows(list(r) for r in after), reference.result(j_stmt)
        java = sort_rows(reference.result(j_rows)["rows"])
        if st.kind in ("delete", "update"):
            try:
                truth, changed = _sql_answer(ice, before, schema, st)
            except Exception as e:  # noqa: BLE001 - SQL itself rejects the statement's values
                assert error is not None, f"{what}: pyice accepted it, Spark's own evaluation failed: {e}"
                truth, changed = sort_rows(list(r) for r in before), 0
            else:
                assert error is None, f"{what}: pyice failed: {type(error).__name__}: {error}"
                metric = "num_deleted_rows" if st.kind == "delete" else "num_updated_rows"
                assert result[0][metric] == changed, f"{what}: {metric} {result[0][metric]}, SQL changes {changed}"
            assert_same_rows(truth, ours, f"{what}: pyice vs SQL's answer")
            if java_twin_agrees and java != truth:
                java_twin_agrees = False
                warnings.warn(f"Iceberg Java's answer differs from SQL's on `{sql}` ({tb.name}): it left "
                              f"{json.dumps(java)[:400]}", stacklevel=1)
        elif java_twin_agrees:
            assert (error is None) == ("error" not in java_stmt), \
                f"{what}: pyice {'failed: ' + str(error)[:300] if error else 'accepted it'}; the reference " \
                f"{'failed: ' + java_stmt['error'][:300] if 'error' in java_stmt else 'accepted it'}"
            assert_same_rows(java, ours, f"{what}: pyice vs Iceberg Java")
        before = after
