"""Project a row filter onto a partition spec's fields, inclusively or strictly.

Files are grouped by partition, so a filter on source columns must become a filter on
partition values before manifests and partition tuples can be pruned. Each spec (including
old, evolved specs with void fields) projects differently, so callers project once per spec id.

* inclusive: true for every partition that may hold a matching row (used to skip files);
* strict: true only for partitions whose every row matches (used to drop whole files on
  DELETE without rewriting them).
"""
from __future__ import annotations

from pyice_sql.core.expr.predicates import (
    AlwaysFalse, AlwaysTrue, And, BoundPredicate, Expression, Op, Or, bind, rewrite_not,
)
from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.schema import Schema


def _project_predicate(spec: PartitionSpec, pred: BoundPredicate, strict: bool) -> Expression:
    """Combine the projections through every partition field fed by the predicate's column.

    Each inclusive projection is implied by the predicate, so their AND is too; any one strict
    projection implies the predicate, so their OR does.
    """
    result: Expression = AlwaysFalse() if strict else AlwaysTrue()
    for field in spec.fields:
        if field.source_id != pred.field_id:
            continue
        project = field.transform.project_strict if strict else field.transform.project_inclusive
        projected = project(pred.op.value, pred.values, pred.type)
        if projected is None:
            continue
        op, values = projected
        part = BoundPredicate(Op(op), field.field_id, field.transform.result_type(pred.type), field.name,
                              tuple(values))
        result = Or(result, part) if strict else And(result, part)
    return result


def _project(spec: PartitionSpec, expr: Expression, strict: bool) -> Expression:
    if isinstance(expr, And):
        return And(_project(spec, expr.left, strict), _project(spec, expr.right, strict))
    if isinstance(expr, Or):
        return Or(_project(spec, expr.left, strict), _project(spec, expr.right, strict))
    if isinstance(expr, BoundPredicate):
        return _project_predicate(spec, expr, strict)
    if isinstance(expr, (AlwaysTrue, AlwaysFalse)):
        return expr
    raise ValueError(f"cannot project {expr!r}: bind the expression first")


def inclusive_projection(spec: PartitionSpec, schema: Schema, bound_expr: Expression) -> Expression:
    """A filter on `spec`'s partition field ids, true for every partition that may hold a match.

    Unbound parts of `bound_expr` are bound to `schema` first (case-insensitively).
    """
    return _project(spec, rewrite_not(bind(bound_expr, schema)), strict=False)


def strict_projection(spec: PartitionSpec, schema: Schema, bound_expr: Expression) -> Expression:
    """A filter on `spec`'s partition field ids, true only where every row of the partition matches."""
    return _project(spec, rewrite_not(bind(bound_expr, schema)), strict=True)
