"""The row-level plan rules, applied in one fixed order from `RULES`.

Each rule takes the plan and what it may consult (`RuleContext`) and returns the plan with its
decision recorded (join type, scan filter, write mode) or raises for a statement the reference
engine rejects. The order matters: pruning reads the join decision's clauses as built, and the
placement check depends on the write mode.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Callable, Mapping

from sqlglot import exp

from pyice_sql.core.expr.from_sql import TargetColumn
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.zones import UTC
from pyice_sql.core.plan.nodes import RowLevelPlan
from pyice_sql.core.plan.rules.expression_placement import check_placement
from pyice_sql.core.plan.rules.join_type import choose_join
from pyice_sql.core.plan.rules.prune_target import prune_target
from pyice_sql.core.plan.rules.write_mode import choose_write_mode


@dataclass(frozen=True)
class RuleContext:
    """What the rules may consult besides the plan: the target's schema and properties, how a
    column reference resolves, and (asked only when needed) whether the MERGE source is
    deterministic and whether Spark would broadcast it (its estimated size is within
    `spark.sql.autoBroadcastJoinThreshold`); `zone`, the session's time zone, reads the
    statement's timestamps written without an offset (None: unknown, left to Spark)."""

    schema: Schema
    properties: Mapping[str, str]
    is_target: TargetColumn
    is_source: Callable[[exp.Column], str | None]
    source_deterministic: Callable[[], bool] = lambda: True
    source_within_broadcast_threshold: Callable[[], bool] = lambda: False
    zone: dt.tzinfo | None = UTC


Rule = Callable[[RowLevelPlan, RuleContext], RowLevelPlan]


def _placement(plan: RowLevelPlan, ctx: RuleContext) -> RowLevelPlan:
    check_placement(plan, ctx.source_deterministic())
    return plan


RULES: tuple[Rule, ...] = (
    lambda plan, ctx: choose_join(plan, ctx.source_within_broadcast_threshold, ctx.source_deterministic),
    lambda plan, ctx: prune_target(plan, ctx.schema, ctx.is_target, ctx.is_source, ctx.zone),
    lambda plan, ctx: choose_write_mode(plan, dict(ctx.properties)),
    _placement,
)


def apply_rules(plan: RowLevelPlan, ctx: RuleContext) -> RowLevelPlan:
    """`plan` after every rule of `RULES`, in order."""
    for rule in RULES:
        plan = rule(plan, ctx)
    return plan
