"""Check: expressions that Spark with Iceberg's extensions rejects where they stand in a row-level plan.

Iceberg rewrites MERGE / UPDATE / DELETE into Spark operators that do not accept every
expression, and Spark's analysis then rejects the statement (so it commits nothing). We run the
statement as one plain SELECT that would accept them, so the same rules are checked here, on
the plan, before anything runs (recorded from Iceberg 1.10.2 on Spark 3.5, both write modes):

  - UPDATE / DELETE WHERE: nothing non-deterministic, also inside its subqueries
    (INVALID_NON_DETERMINISTIC_EXPRESSIONS: the condition becomes part of the write operator).
  - MERGE ON and every WHEN condition: nothing non-deterministic, no subquery, no aggregate
    (UNSUPPORTED_MERGE_CONDITION.NON_DETERMINISTIC / .SUBQUERY / .AGGREGATE).
  - copy-on-write MERGE with WHEN MATCHED and no NOT MATCHED BY SOURCE clause: a deterministic
    source (Iceberg reads it twice, once to find the files to rewrite).
  - MERGE values (UPDATE SET, INSERT VALUES) are computed in Iceberg's MergeRows operator, unless
    the MERGE is a single WHEN NOT MATCHED clause (then a plain projection): there nothing
    non-deterministic, no IN / EXISTS subquery, no correlated scalar subquery.
  - UPDATE SET values in merge-on-read are computed in an Expand operator: no IN / EXISTS
    subquery and no correlated scalar subquery (copy-on-write projects them and accepts both);
    non-deterministic values are accepted in both modes.

Otherwise the source of a MERGE is an ordinary query: non-deterministic expressions are fine.
"""
from __future__ import annotations

from typing import Iterator

from sqlglot import exp

from pyice_sql.core.errors import ExpressionNotAllowedError
from pyice_sql.core.plan.nodes import DELETE, INSERT, NOT_MATCHED, RowLevelPlan
from pyice_sql.core.sql.dialect import DIALECT
from pyice_sql.core.sql.statements import TableRef, position_of

# Spark's Nondeterministic expressions, by SQL function name (sqlglot spells some as their own nodes).
NONDETERMINISTIC = frozenset({
    "rand", "random", "randn", "uuid", "shuffle", "monotonically_increasing_id", "spark_partition_id",
    "input_file_name", "input_file_block_start", "input_file_block_length", "reflect", "java_method",
    "try_reflect",
})
_PREDICATE_SUBQUERIES = (exp.Exists, exp.Any, exp.All)


def check_placement(plan: RowLevelPlan, source_deterministic: bool = True) -> None:
    """Raise ExpressionNotAllowedError for the first expression the reference would reject.

    `source_deterministic`: whether Spark's analysis finds the MERGE source deterministic.
    """
    outer = {plan.target_alias.lower(), plan.target.name.lower(), (plan.source_alias or plan.target_alias).lower()}
    if plan.command in ("UPDATE", "DELETE"):
        if plan.where is not None:
            _deterministic(plan.where, "INVALID_NON_DETERMINISTIC_EXPRESSIONS",
                           f"the WHERE condition of {plan.command} must be deterministic")
        if plan.command == "UPDATE" and plan.mode == "merge-on-read":
            for value in plan.instructions[0].values.values():
                _no_unsupported_subquery(value, "UPDATE SET value (merge-on-read)", outer)
        return
    _merge_condition(plan.on, "SEARCH")
    for ins in plan.instructions:
        if ins.condition is not None:
            _merge_condition(ins.condition, _clause_action(ins.operation))
    if plan.mode == "copy-on-write" and not source_deterministic and plan.has_matched_actions \
            and not plan.has_not_matched_by_source:
        raise ExpressionNotAllowedError(
            "INVALID_NON_DETERMINISTIC_EXPRESSIONS", "a copy-on-write MERGE with WHEN MATCHED clauses (and no WHEN "
            "NOT MATCHED BY SOURCE) needs a deterministic source",
            position=plan.source.position if isinstance(plan.source, TableRef) else position_of(plan.source.expression))
    if len(plan.instructions) == 1 and plan.instructions[0].kind == NOT_MATCHED:
        return  # a single INSERT clause: its values are a plain projection
    for ins in plan.instructions:
        what = "INSERT VALUES" if ins.operation == INSERT else "UPDATE SET value"
        for value in ins.values.values():
            _deterministic(value, "INVALID_NON_DETERMINISTIC_EXPRESSIONS",
                           f"a MERGE {what} must be deterministic (unless the MERGE is a single "
                           "WHEN NOT MATCHED clause)")
            _no_unsupported_subquery(value, f"MERGE {what}", outer)


def _clause_action(operation: int) -> str:
    return {DELETE: "DELETE", INSERT: "INSERT"}.get(operation, "UPDATE")


def _merge_condition(cond: exp.Expression, action: str) -> None:
    _deterministic(cond, "UNSUPPORTED_MERGE_CONDITION.NON_DETERMINISTIC",
                   f"MERGE {action} condition: non-deterministic expressions are not allowed")
    for sub in _subqueries(cond):
        _reject("UNSUPPORTED_MERGE_CONDITION.SUBQUERY", f"MERGE {action} condition: subqueries are not allowed", sub)
    for agg in cond.find_all(exp.AggFunc, exp.Any):
        if _is_predicate_subquery(agg):
            continue
        _reject("UNSUPPORTED_MERGE_CONDITION.AGGREGATE", f"MERGE {action} condition: aggregates are not allowed: "
                f"{agg.sql(dialect=DIALECT)}", agg)


def _deterministic(e: exp.Expression, error_class: str, message: str) -> None:
    for node in e.walk():
        if isinstance(node, exp.Func) and _function_name(node) in NONDETERMINISTIC:
            _reject(error_class, f"{message}: {node.sql(dialect=DIALECT)}", node)


def _no_unsupported_subquery(value: exp.Expression, where: str, outer: set[str]) -> None:
    for sub in _subqueries(value):
        if _is_predicate_subquery(sub):
            _reject("UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.UNSUPPORTED_IN_EXISTS_SUBQUERY",
                    f"IN / EXISTS subqueries are not supported in a {where}", sub)
        if _is_correlated(sub, outer):
            _reject("UNSUPPORTED_SUBQUERY_EXPRESSION_CATEGORY.UNSUPPORTED_CORRELATED_SCALAR_SUBQUERY",
                    f"correlated scalar subqueries are not supported in a {where}", sub)


def _reject(error_class: str, message: str, node: exp.Expression) -> None:
    raise ExpressionNotAllowedError(error_class, message, position=position_of(node))


def _function_name(node: exp.Func) -> str:
    return (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()


def _subqueries(e: exp.Expression) -> Iterator[exp.Expression]:
    """The outermost subqueries of `e`: IN (SELECT ...) / EXISTS / ANY / ALL nodes, scalar subqueries."""
    for node in e.walk():
        if (_is_predicate_subquery(node) or isinstance(node, exp.Subquery)) and not _inside_subquery(node, e):
            yield node


def _is_predicate_subquery(node: exp.Expression) -> bool:
    """IN (SELECT ...), EXISTS (SELECT ...), = ANY (SELECT ...): sqlglot parses Spark's
    higher-order `exists(array, x -> ...)` and aggregate `any(cond)` into the same nodes, over
    an expression instead of a query."""
    if isinstance(node, exp.In):
        return node.args.get("query") is not None
    return isinstance(node, _PREDICATE_SUBQUERIES) and isinstance(node.this, exp.Query)


def _inside_subquery(node: exp.Expression, root: exp.Expression) -> bool:
    parent = node.parent
    while parent is not None and parent is not root:
        if isinstance(parent, exp.Query) or _is_predicate_subquery(parent):
            return True
        parent = parent.parent
    return False


def _is_correlated(sub: exp.Expression, outer: set[str]) -> bool:
    """A subquery referring to a column of the statement's tables (`outer`: their aliases and
    names) by a qualifier that none of its own tables takes. An unqualified name, or one whose
    first part is not an outer table (`c.x`: a struct field), is the subquery's own, as Spark
    resolves inner names first: only qualified outer references are seen."""
    own = {t.alias_or_name.lower() for t in sub.find_all(exp.Table)}
    own |= {s.alias.lower() for s in sub.find_all(exp.Subquery) if s.alias}
    own |= {c.alias.lower() for c in sub.find_all(exp.CTE)}
    for column in sub.find_all(exp.Column):
        first = column.parts[0].name.lower()
        if len(column.parts) > 1 and first in outer and first not in own:
            return True
    return False

