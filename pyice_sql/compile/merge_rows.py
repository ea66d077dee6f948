"""MergeRows compiled to Spark SQL: one SELECT that joins and tags every row.

The generated query reads the target scan view (with `_file`, `_pos` and a presence marker)
and, for MERGE, the source view (with its own marker), joined as the plan says. Per row it
computes `__row_operation` with one CASE chain over the clauses in order — the first clause
whose kind (matched / not matched / not matched by source) and condition hold wins — and the
new value of every target column with the same chain, so Spark evaluates each value only in
the branch that fires (no spurious errors from clauses that do not apply). It is plain SQL
over views: user expressions resolve against the user's aliases with Spark's own rules.
"""
from __future__ import annotations

from sqlglot import exp

from pyice_sql.model.schema import Schema
from pyice_sql.plan.nodes import MATCHED, NOT_MATCHED, RowLevelPlan
from pyice_sql.spark_schema import to_spark_type

TARGET_MARK, SOURCE_MARK = "__pyice_t", "__pyice_s"
OP, FILE, POS, KEY_PREFIX = "__row_operation", "__file", "__pos", "__key_"
KEEP = 0


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _sql(e: exp.Expression) -> str:
    return e.sql(dialect="spark")


def _kind_test(plan: RowLevelPlan, kind: str) -> str:
    if plan.source is None:
        return "TRUE"
    t, s = f"{_q(plan.target_alias)}.{TARGET_MARK}", f"{_q(plan.source_alias)}.{SOURCE_MARK}"
    if kind == MATCHED:
        return f"({t} IS NOT NULL AND {s} IS NOT NULL)"
    if kind == NOT_MATCHED:
        return f"({t} IS NULL)"
    return f"({s} IS NULL)"


def _branches(plan: RowLevelPlan) -> list[str]:
    out = []
    for ins in plan.instructions:
        test = _kind_test(plan, ins.kind)
        if ins.condition is not None:
            test = f"{test} AND ({_sql(ins.condition)})"
        out.append(test)
    return out


def tagged_select(plan: RowLevelPlan, schema: Schema, target_view: str, source_view: str | None) -> str:
    """The MergeRows query text: `__file`, `__pos`, `__row_operation`, key columns, new values."""
    t = _q(plan.target_alias)
    tests = _branches(plan)
    op = "CASE " + " ".join(f"WHEN {test} THEN {ins.operation}" for test, ins in zip(tests, plan.instructions))
    op += f" ELSE {KEEP} END"
    cols = [f"{t}.`_file` AS {FILE}", f"{t}.`_pos` AS {POS}", f"{op} AS {OP}"]
    for i, (target_col, _) in enumerate(plan.source_key_columns):
        cols.append(f"{t}.{_q(target_col)} AS {KEY_PREFIX}{i}")
    for f in schema.fields:
        current = f"{t}.{_q(f.name)}"
        spark_type = to_spark_type(f.type, with_ids=False).simpleString()
        whens = [f"WHEN {test} THEN CAST({_sql(ins.values[f.name])} AS {spark_type})"
                 for test, ins in zip(tests, plan.instructions) if f.name in ins.values]
        value = f"CASE {' '.join(whens)} ELSE {current} END" if whens else current
        cols.append(f"{value} AS {_q(f.name)}")
    if plan.source is None:
        where = f" WHERE {_sql(plan.where)}" if plan.where is not None else ""
        return f"SELECT {', '.join(cols)} FROM {_q(target_view)} AS {t}{where}"
    join = plan.join_type.upper()
    return (f"SELECT {', '.join(cols)} FROM {_q(target_view)} AS {t} {join} JOIN {_q(source_view)} AS "
            f"{_q(plan.source_alias)} ON {_sql(plan.on)}")
