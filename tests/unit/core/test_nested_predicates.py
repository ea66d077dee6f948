"""Pruning predicates from SQL on tables with struct, list and map columns.

A condition that cannot become a bindable Iceberg predicate (a struct/list/map column, a map
lookup, a function) must prune nothing — never fail the statement — while fields nested in
structs are bound by their dotted path and do prune, with SQL's NULL rules (a field of a NULL
struct is NULL, even when the field itself is required).
"""
from __future__ import annotations

import pytest
import sqlglot

from pyice_sql.core.expr.evaluators import InclusiveMetricsEvaluator, StrictMetricsEvaluator
from pyice_sql.core.expr.from_sql import target_columns, to_predicate
from pyice_sql.core.expr.predicates import AlwaysFalse, AlwaysTrue, BoundPredicate, Op, bind
from pyice_sql.core.model.conversions import to_bytes
from pyice_sql.core.model.manifest import DataFile
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.types import INT, LONG, STRING, ListType, MapType, NestedField, StructType

SCHEMA = Schema((
    NestedField(1, "id", INT, required=True),
    NestedField(2, "c", StructType((
        NestedField(3, "x", INT),
        NestedField(4, "y", STRING),
        NestedField(5, "z", StructType((NestedField(6, "w", LONG),))),
    ))),
    NestedField(7, "l", ListType(8, INT)),
    NestedField(9, "m", MapType(10, 11, STRING, INT)),
    NestedField(12, "r", StructType((NestedField(13, "q", INT, required=True),))),  # optional struct
    NestedField(14, "k", StructType((NestedField(15, "q", INT, required=True),)), required=True),
))
# MERGE-like resolution: target alias t (full name local.db.tbl), source alias s having column `id` too.
RESOLVE = target_columns(SCHEMA, [("t",), ("local", "db", "tbl"), ("db", "tbl"), ("tbl",)], {"s"}, {"id"})


def where(sql: str) -> sqlglot.exp.Expression:
    return sqlglot.parse_one(f"SELECT * FROM x WHERE {sql}", dialect="spark").args["where"].this


def column(sql: str) -> sqlglot.exp.Expression:
    return sqlglot.parse_one(f"SELECT {sql}", dialect="spark").expressions[0]


def bound(sql: str, mode: str = "inclusive"):
    return bind(to_predicate(where(sql), RESOLVE, SCHEMA, mode), SCHEMA)  # type: ignore[arg-type]


@pytest.mark.parametrize("sql", [
    "c IS NOT NULL", "t.c IS NULL", "c = named_struct('x', 1, 'y', 'a', 'z', NULL)", "c.z IS NULL",
    "l IS NOT NULL", "size(l) > 1", "m['k'] = 1", "NOT (t.c IS NULL)", "r IS NULL", "c.z <=> NULL",
    "c IN (named_struct('x', 1))", "array_contains(l, 3)",
])
def test_unbindable_conditions_prune_nothing_instead_of_failing(sql: str) -> None:
    assert bound(sql) == AlwaysTrue()  # inclusive: every file may match
    assert bound(sql, "strict") == AlwaysFalse()  # strict: no file is known to match entirely


def test_unbindable_conjunct_leaves_the_others_to_prune() -> None:
    pred = bound("c IS NOT NULL AND t.id = 7 AND m['k'] = 1")
    assert isinstance(pred, BoundPredicate) and (pred.field_id, pred.op, pred.values) == (1, Op.EQ, (7,))


@pytest.mark.parametrize("sql,path", [
    ("c.x", "c.x"), ("t.c.x", "c.x"), ("T.C.X", "c.x"), ("tbl.c.y", "c.y"), ("db.tbl.c.z.w", "c.z.w"),
    ("local.db.tbl.c.z.w", "c.z.w"), ("t.c.z.w", "c.z.w"), ("t.id", "id"), ("c", "c"),
    ("id", None),  # unqualified and also a source column: not safely the target's
    ("s.x", None), ("s.c.x", None), ("t.nope", None), ("c.nope", None), ("`c.x`", None), ("c.`x.y`", None),
])
def test_column_references_resolve_as_spark_does(sql: str, path: str | None) -> None:
    assert RESOLVE(column(sql)) == path


def file_with(record_count: int, **stats: dict[int, object]) -> DataFile:
    types = {3: INT, 6: LONG, 13: INT}
    bounds = {k: {fid: to_bytes(types[fid], v) for fid, v in stats.pop(k, {}).items()}
              for k in ("lower_bounds", "upper_bounds")}
    return DataFile(file_path="f.parquet", record_count=record_count, file_size_in_bytes=1, **bounds, **stats)


def test_nested_primitive_fields_bind_and_prune() -> None:
    pred = bound("t.c.x > 5 AND c.z.w = 3")
    low = file_with(10, value_counts={3: 10, 6: 10}, null_value_counts={3: 0, 6: 0},
                    lower_bounds={3: 0, 6: 0}, upper_bounds={3: 4, 6: 9})
    high = file_with(10, value_counts={3: 10, 6: 10}, null_value_counts={3: 0, 6: 0},
                     lower_bounds={3: 6, 6: 3}, upper_bounds={3: 9, 6: 3})
    assert not InclusiveMetricsEvaluator(SCHEMA, pred).eval(low)
    assert InclusiveMetricsEvaluator(SCHEMA, pred).eval(high)
    assert StrictMetricsEvaluator(SCHEMA, bound("c.x > 5", "strict")).eval(high)
    # a NULL struct makes its fields NULL: Parquet counts those rows as nulls of c.x
    with_null_structs = file_with(10, value_counts={3: 10}, null_value_counts={3: 4},
                                  lower_bounds={3: 6}, upper_bounds={3: 9})
    assert not StrictMetricsEvaluator(SCHEMA, bound("c.x > 5", "strict")).eval(with_null_structs)


def test_required_field_of_optional_struct_can_be_null() -> None:
    """`r.q IS NULL` holds where r is NULL: binding it to false would prune those rows away."""
    pred = bound("r.q IS NULL")
    assert isinstance(pred, BoundPredicate) and (pred.field_id, pred.op) == (13, Op.IS_NULL)
    nulls = file_with(10, value_counts={13: 10}, null_value_counts={13: 3})
    assert InclusiveMetricsEvaluator(SCHEMA, pred).eval(nulls)
    assert bound("k.q IS NULL") == AlwaysFalse()  # required all the way down: never NULL
    assert bound("k.q IS NOT NULL") == AlwaysTrue()
    assert bound("t.id IS NULL OR tbl.id IS NULL") == AlwaysFalse()
