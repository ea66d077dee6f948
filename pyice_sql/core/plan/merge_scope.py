"""Which side of a MERGE's join each clause's column names see (Spark's resolution rules).

WHEN MATCHED conditions and values see the target and the source (a name on both sides is
ambiguous, as in Spark); WHEN NOT MATCHED ones see only the source, WHEN NOT MATCHED BY SOURCE
ones only the target. The generated query joins both sides, so here a bare name is qualified
with the visible side's alias, `x.f` where `x` is a struct column of the visible side becomes
that column's field, and a name qualified with the other side's alias is an unresolved column.
Names inside subqueries belong to those subqueries and are left to Spark.
"""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from pyice_sql.core.errors import AnalysisError
from pyice_sql.core.plan.nodes import NOT_MATCHED, NOT_MATCHED_BY_SOURCE, Instruction, RowLevelPlan
from pyice_sql.core.sql.dialect import DIALECT
from pyice_sql.core.sql.statements import position_of

_SEES = {NOT_MATCHED: "the source", NOT_MATCHED_BY_SOURCE: "the target"}
_CLAUSE = {NOT_MATCHED: "WHEN NOT MATCHED", NOT_MATCHED_BY_SOURCE: "WHEN NOT MATCHED BY SOURCE"}


def scoped_merge(plan: RowLevelPlan, target_columns: list[str], source_columns: list[str]) -> RowLevelPlan:
    """The plan with NOT MATCHED [BY SOURCE] clauses' names bound to their only visible side."""
    sides = {NOT_MATCHED: (plan.source_alias, plan.target_alias, source_columns),
             NOT_MATCHED_BY_SOURCE: (plan.target_alias, plan.source_alias, target_columns)}
    out = []
    for ins in plan.instructions:
        if ins.kind not in sides:
            out.append(ins)
            continue
        visible, hidden, columns = sides[ins.kind]
        scope = _Scope(visible, hidden, {c.lower() for c in columns}, ins)
        out.append(replace(ins, condition=scope.bind(ins.condition),
                           values={k: scope.bind(v) for k, v in ins.values.items()}))
    return plan.with_(instructions=tuple(out))


class _Scope:
    def __init__(self, visible: str, hidden: str, columns: set[str], ins: Instruction) -> None:
        self.visible, self.hidden, self.columns, self.ins = visible, hidden.lower(), columns, ins

    def bind(self, e: exp.Expression | None) -> exp.Expression | None:
        if e is None:
            return None
        holder = exp.Paren(this=e.copy())  # keeps the result when the whole value is one column
        for column in list(holder.find_all(exp.Column)):
            if column.find_ancestor(exp.Query) is None:
                self.bind_column(column)
        return holder.this

    def bind_column(self, column: exp.Column) -> None:
        if column.args.get("db") is not None:
            return  # three or more parts: a nested field path, left to Spark
        qualifier = column.args.get("table")
        alias = exp.to_identifier(self.visible, quoted=True)
        if qualifier is None:
            column.set("table", alias)
        elif qualifier.name.lower() == self.visible.lower():
            return
        elif qualifier.name.lower() in self.columns:  # `x.f`: field f of the visible side's column x
            column.replace(exp.Dot(this=exp.Column(this=qualifier.copy(), table=alias), expression=column.this.copy()))
        elif qualifier.name.lower() == self.hidden:
            raise AnalysisError(f"[UNRESOLVED_COLUMN] {column.sql(dialect=DIALECT)} cannot be resolved: a "
                                f"{_CLAUSE[self.ins.kind]} clause sees only {_SEES[self.ins.kind]} "
                                f"({self.visible})", position=position_of(column) or self.ins.position)
