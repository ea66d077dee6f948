"""Rule: which target rows must be read, as an Iceberg filter for scan planning.

The target scan must return every row a clause could act on, and every row whose presence
decides that a source row is NOT MATCHED. So, from the semantics:
  - UPDATE / DELETE: the WHERE clause.
  - MERGE: rows that may satisfy ON (its target-only parts; plus, at run time, the ranges of
    the source's join keys — see `source_key_columns`);
  - WHEN MATCHED conditions never narrow it: a target row no clause acts on still counts for
    the cardinality check (two source rows matching it are an error, as in Spark and Iceberg
    Java), and with a NOT MATCHED clause a pruned row would make its source row look unmatched;
  - NOT MATCHED BY SOURCE clauses widen it: their conditions are OR-ed in, and an
    unconditional one turns pruning off (peers lost data by pruning these rows away).
Parts of a condition that cannot be translated into an Iceberg predicate count as "may
match", so pruning is always conservative.
"""
from __future__ import annotations

import datetime as dt
from typing import Callable

from sqlglot import exp

from pyice_sql.core.expr.from_sql import TargetColumn, split_conjuncts, to_predicate
from pyice_sql.core.expr.predicates import AlwaysTrue, Expression, Or
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.zones import UTC
from pyice_sql.core.plan.nodes import NOT_MATCHED_BY_SOURCE, PruningFilter, RowLevelPlan


def _condition_filter(conditions: list[exp.Expression | None], is_target: TargetColumn, schema: Schema,
                      zone: dt.tzinfo | None) -> Expression:
    """OR of the clauses' conditions; an unconditional clause makes it always true."""
    out: Expression | None = None
    for cond in conditions:
        part = AlwaysTrue() if cond is None else to_predicate(cond, is_target, schema, "inclusive", zone=zone)
        out = part if out is None else Or(out, part)
    return out if out is not None else AlwaysTrue()


def equality_keys(on: exp.Expression, is_target: TargetColumn, is_source: Callable[[exp.Column], str | None]
                  ) -> tuple[tuple[str, str], ...]:
    """(target column, source column) for each `t.a = s.b` conjunct of ON."""
    keys = []
    for conj in split_conjuncts(on):
        if isinstance(conj, exp.EQ) and isinstance(conj.this, exp.Column) and isinstance(conj.expression, exp.Column):
            left, right = conj.this, conj.expression
            for t_side, s_side in ((left, right), (right, left)):
                t, s = is_target(t_side), is_source(s_side)
                if t is not None and s is not None and "." not in t:  # a top-level column: keys are read by name
                    keys.append((t, s))
                    break
    return tuple(keys)


def prune_target(plan: RowLevelPlan, schema: Schema, is_target: TargetColumn,
                 is_source: Callable[[exp.Column], str | None], zone: dt.tzinfo | None = UTC) -> RowLevelPlan:
    """`zone`: the session's time zone, in which the statement's timestamps without an offset are read."""
    if plan.command in ("UPDATE", "DELETE"):
        if plan.where is None:
            return plan.with_(scan_filter=AlwaysTrue(), filters=())
        f = to_predicate(plan.where, is_target, schema, "inclusive", zone=zone)
        return plan.with_(scan_filter=f, filters=(PruningFilter(f, "WHERE clause"),))
    on_filter = to_predicate(plan.on, is_target, schema, "inclusive", zone=zone)
    filters = [PruningFilter(on_filter, "ON clause, target-only conjuncts")]
    scan = on_filter
    by_source = [i.condition for i in plan.instructions if i.kind == NOT_MATCHED_BY_SOURCE]
    keys = equality_keys(plan.on, is_target, is_source)
    if by_source:
        widen = _condition_filter(by_source, is_target, schema, zone)
        filters.append(PruningFilter(widen, "OR-ed in: NOT MATCHED BY SOURCE conditions (rows those clauses act on)"))
        scan = Or(scan, widen)
        return plan.with_(scan_filter=scan, filters=tuple(filters), source_key_columns=keys,
                          prune_by_source_keys=False)
    return plan.with_(scan_filter=scan, filters=tuple(filters), source_key_columns=keys,
                      prune_by_source_keys=bool(keys))
