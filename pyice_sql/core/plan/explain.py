"""EXPLAIN for row-level statements: the plan, the chosen write mode and why, the join, every
pruning filter with its origin, and what the target scan would read."""
from __future__ import annotations

from pyice_sql.core.plan.nodes import RowLevelPlan
from pyice_sql.core.scan.planner import ScanMetrics
from pyice_sql.core.sql.dialect import DIALECT

_OPS = {1: "DELETE", 2: "UPDATE", 3: "INSERT"}


def explain_text(plan: RowLevelPlan, table_name: str, metrics: ScanMetrics) -> str:
    lines = [f"== pyice_sql row-level plan: {plan.command} {table_name} ==",
             f"WriteMode: {plan.mode} ({plan.mode_reason})"]
    if plan.command == "MERGE":
        lines.append(f"MergeJoin: {plan.join_type} join ({plan.join_reason}) ON {plan.on.sql(dialect=DIALECT)}")
        source = (plan.source.expression.sql(dialect=DIALECT) if hasattr(plan.source, "expression")
                  else ".".join(p for p in (plan.source.catalog, *plan.source.namespace, plan.source.name) if p))
        lines.append(f"  Source: {source} AS {plan.source_alias} (read once, persisted)")
    lines.append("MergeRows (first matching clause wins; __row_operation 1=delete 2=update 3=insert):")
    for i, ins in enumerate(plan.instructions, 1):
        cond = f" AND {ins.condition.sql(dialect=DIALECT)}" if ins.condition is not None else ""
        values = ", ".join(f"{k} = {v.sql(dialect=DIALECT)}" for k, v in ins.values.items())
        lines.append(f"  {i}. WHEN {ins.kind.replace('_', ' ').upper()}{cond} THEN {_OPS[ins.operation]}"
                     + (f" [{values}]" if values else ""))
    if plan.where is not None:
        lines.append(f"  WHERE {plan.where.sql(dialect=DIALECT)}")
    lines.append(f"TargetScan: {table_name} with _file, _pos; filter {plan.scan_filter}")
    for f in plan.filters:
        lines.append(f"  pruning: {f.predicate}   <- {f.origin}")
    if plan.prune_by_source_keys:
        keys = ", ".join(f"{t} = source.{s}" for t, s in plan.source_key_columns)
        lines.append(f"  pruning at run time: target {keys} narrowed to the source's key values/range "
                     "(its files when their key bounds or partitions can tell them apart; its rows before "
                     "the join)")
    lines.append(f"  planned: {metrics}")
    return "\n".join(lines)
