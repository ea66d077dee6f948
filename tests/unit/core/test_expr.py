"""Tests for pyice_sql.core.expr: predicates, projection, evaluators and SQL translation.

Besides hand-written cases, several tests compare the evaluators with brute force over the
rows a file/partition/manifest was built from: an inclusive evaluator must never say False
when some row matches, and a strict one must never say True when some row does not.
"""
from __future__ import annotations

import math
import random
import uuid
from decimal import Decimal
from typing import Any

import duckdb
import pytest
import sqlglot

from pyice_sql.core.expr.evaluators import (
    InclusiveMetricsEvaluator, ManifestEvaluator, PartitionEvaluator, StrictMetricsEvaluator,
)
from pyice_sql.core.expr.from_sql import split_conjuncts, to_predicate
from pyice_sql.core.expr.predicates import (
    AlwaysFalse, AlwaysTrue, And, BoundPredicate, Expression, Not, Op, Or, Predicate, Ref, bind, eq, evaluate_row,
    gt, gt_eq, in_, is_nan, is_null, lt, lt_eq, not_eq, not_in, not_nan, not_null, not_starts_with,
    referenced_field_ids, rewrite_not, starts_with,
)
from pyice_sql.core.expr.projection import inclusive_projection, strict_projection
from pyice_sql.core.model.bounds import normalize_float_bounds, truncate_lower_bound, truncate_upper_bound
from pyice_sql.core.model.conversions import to_bytes, to_internal, to_python
from pyice_sql.core.model.manifest import DataFile, FieldSummary, ManifestFile
from pyice_sql.core.model.partitioning import PartitionField, PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.transforms import parse_transform
from pyice_sql.core.model.types import (
    BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIMESTAMPTZ, UUID, DecimalType, IcebergType, NestedField,
)

DEC = DecimalType(6, 2)
SCHEMA = Schema((
    NestedField(1, "id", LONG, required=True),
    NestedField(2, "s", STRING),
    NestedField(3, "f", DOUBLE),
    NestedField(4, "d", DATE),
    NestedField(5, "ts", TIMESTAMPTZ),
    NestedField(6, "dec", DEC),
    NestedField(7, "fl", FLOAT),
    NestedField(8, "i", LONG),
    NestedField(9, "flag", BOOLEAN),
    NestedField(10, "u", UUID),
))
TYPES = {f.field_id: f.type for f in SCHEMA.fields}
NAMES = {f.field_id: f.name for f in SCHEMA.fields}
HOUR_US = 3_600_000_000
T0 = to_internal(TIMESTAMPTZ, "2024-01-01T00:00:00")


def spec_of(*fields: tuple[str, str], spec_id: int = 0) -> PartitionSpec:
    """A spec from (source column, transform) pairs, ids from 1000."""
    out = []
    for i, (col, transform) in enumerate(fields):
        f = SCHEMA.find_field(col)
        assert f is not None
        out.append(PartitionField(f.field_id, 1000 + i, parse_transform(transform), f"{col}_{i}"))
    return PartitionSpec(spec_id, tuple(out))


def partition_of(spec: PartitionSpec, row: dict[int, Any]) -> tuple[Any, ...]:
    return tuple(pf.transform.apply(row.get(pf.source_id), TYPES.get(pf.source_id)) for pf in spec.fields)


def b(expr: Expression) -> Expression:
    return bind(expr, SCHEMA)


# --- random data -------------------------------------------------------------------------------

S_ALPHABET = ["a", "b", "é", "z", "\U0010FFFF", "ab"]
FLOATS = [-2.5, -0.0, 0.0, 0.5, 1.5, 3.25, float("nan"), float("inf")]


def rand_value(rng: random.Random, fid: int) -> Any:
    """A value of column `fid`, sometimes null (never for the required id)."""
    if fid != 1 and rng.random() < 0.15:
        return None
    if fid in (1, 8):
        return rng.randint(-12, 12)
    if fid == 2:
        return "".join(rng.choice(S_ALPHABET) for _ in range(rng.randint(0, 4)))
    if fid in (3, 7):
        return rng.choice(FLOATS)
    if fid == 4:
        return rng.randint(-800, 800)
    if fid == 5:
        return T0 + rng.randint(-80, 80) * HOUR_US + rng.choice([0, 1, HOUR_US - 1])
    if fid == 6:
        return Decimal(rng.randint(-999, 999)).scaleb(-2)
    if fid == 9:
        return rng.random() < 0.5
    return uuid.UUID(int=rng.randint(0, 5) << 120)


def rand_literal(rng: random.Random, fid: int) -> Any:
    while True:
        v = rand_value(rng, fid)
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            return v


COLUMN_OPS = {
    "common": [Op.IS_NULL, Op.NOT_NULL, Op.LT, Op.LT_EQ, Op.GT, Op.GT_EQ, Op.EQ, Op.NOT_EQ, Op.IN, Op.NOT_IN],
    3: [Op.IS_NAN, Op.NOT_NAN], 7: [Op.IS_NAN, Op.NOT_NAN], 2: [Op.STARTS_WITH, Op.NOT_STARTS_WITH],
}


def rand_predicate(rng: random.Random, fids: list[int]) -> Expression:
    fid = rng.choice(fids)
    op = rng.choice(COLUMN_OPS["common"] + COLUMN_OPS.get(fid, []))
    if op in (Op.IS_NULL, Op.NOT_NULL, Op.IS_NAN, Op.NOT_NAN):
        values: tuple[Any, ...] = ()
    elif op in (Op.IN, Op.NOT_IN):
        values = tuple(rand_literal(rng, fid) for _ in range(rng.randint(1, 3)))
    elif op in (Op.STARTS_WITH, Op.NOT_STARTS_WITH):
        values = ("".join(rng.choice(S_ALPHABET) for _ in range(rng.randint(0, 3))),)
    else:
        values = (rand_literal(rng, fid),)
    return b(Predicate(op, Ref(NAMES[fid]), values))


def rand_expr(rng: random.Random, fids: list[int], depth: int = 2) -> Expression:
    if depth == 0 or rng.random() < 0.4:
        return rand_predicate(rng, fids)
    kind = rng.choice(["and", "or", "not"])
    if kind == "not":
        return Not(rand_expr(rng, fids, depth - 1))
    left, right = rand_expr(rng, fids, depth - 1), rand_expr(rng, fids, depth - 1)
    return And(left, right) if kind == "and" else Or(left, right)


def rand_row(rng: random.Random, fids: list[int]) -> dict[int, Any]:
    return {fid: rand_value(rng, fid) for fid in fids}


# --- predicates ----------------------------------------------------------------------------------


def test_bind_resolves_names_case_insensitively_and_types() -> None:
    bound = b(eq("S", "x"))
    assert isinstance(bound, BoundPredicate)
    assert (bound.field_id, bound.type, bound.op, bound.values) == (2, STRING, Op.EQ, ("x",))
    with pytest.raises(ValueError, match="unknown column 'S'"):
        bind(eq("S", "x"), SCHEMA, case_sensitive=True)


def test_bind_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="unknown column 'nope'"):
        b(And(eq("s", "x"), lt("nope", 1)))
    with pytest.raises(ValueError, match="NaN"):
        b(lt("f", float("nan")))
    with pytest.raises(ValueError, match="not the internal form"):
        b(eq("d", "2024-01-01"))  # dates are ints (days) once internal
    with pytest.raises(ValueError, match="float or double"):
        b(is_nan("i"))
    with pytest.raises(ValueError, match="string column"):
        b(starts_with("i", "1"))
    with pytest.raises(ValueError, match="out of range"):
        b(eq("d", 2**40))


def test_bind_simplifies() -> None:
    assert b(not_null("id")) is AlwaysTrue()
    assert b(is_null("id")) is AlwaysFalse()
    assert b(in_("i", [3])) == b(eq("i", 3))
    assert b(not_in("i", [3, 3])) == b(not_eq("i", 3))
    assert b(in_("i", [])) is AlwaysFalse()
    assert b(eq("dec", 5)) == b(eq("dec", Decimal(5)))
    assert b(eq("f", 1)).values == (1.0,)


def test_simplifying_constructors() -> None:
    x = eq("s", "a")
    assert And(x, AlwaysTrue()) is x
    assert And(AlwaysTrue(), x) is x
    assert And(x, AlwaysFalse()) is AlwaysFalse()
    assert Or(x, AlwaysFalse()) is x
    assert Or(AlwaysTrue(), x) is AlwaysTrue()
    assert Not(Not(x)) is x
    assert Not(AlwaysTrue()) is AlwaysFalse()
    assert And(x, x) is x
    assert And(x, lt("i", 1), gt("i", -1)) == And(And(x, lt("i", 1)), gt("i", -1))
    assert (x & AlwaysTrue()) is x and (x | AlwaysTrue()) is AlwaysTrue()


def test_str_is_readable() -> None:
    expr = b(And(Or(eq("s", "it's"), is_null("s")), Not(in_("d", [19723, 19724])),
                 gt_eq("ts", T0), starts_with("s", "ab"), not_nan("f")))
    assert str(expr) == ("(((((s = 'it''s' OR s IS NULL) AND NOT d IN (DATE '2024-01-01', DATE '2024-01-02'))"
                         " AND ts >= TIMESTAMP '2024-01-01 00:00:00') AND s STARTS WITH 'ab') AND NOT isnan(f))")
    assert str(eq("dec", Decimal("1.50"))) == "dec = Decimal('1.50')"


def test_referenced_field_ids() -> None:
    assert referenced_field_ids(b(And(eq("s", "a"), Or(lt("i", 1), Not(is_nan("f")))))) == {2, 8, 3}


def test_rewrite_not_is_exact_including_nulls_and_nan() -> None:
    assert rewrite_not(b(Not(lt("i", 5)))) == Or(b(gt_eq("i", 5)), b(is_null("i")))
    assert rewrite_not(b(Not(eq("s", "a")))) == b(not_eq("s", "a"))
    rng = random.Random(1)
    fids = [2, 3, 4, 6, 8]
    for _ in range(3000):
        expr = rand_expr(rng, fids)
        row = rand_row(rng, fids)
        expected = evaluate_row(expr, row)
        assert evaluate_row(Not(expr), row) is (not expected)
        assert evaluate_row(rewrite_not(Not(expr)), row) is (not expected), (str(expr), row)


def test_evaluate_row_semantics() -> None:
    nan = float("nan")
    cases = [
        (not_eq("s", "a"), {2: None}, True), (eq("s", "a"), {2: None}, False), (lt("i", 1), {}, False),
        (not_in("i", [1]), {8: None}, True), (not_starts_with("s", "a"), {2: None}, True),
        (gt("f", 1.0), {3: nan}, False), (not_eq("f", 1.0), {3: nan}, True), (not_nan("f"), {3: None}, True),
        (is_nan("f"), {3: nan}, True), (starts_with("s", ""), {2: ""}, True), (eq("f", 0.0), {3: -0.0}, True),
    ]
    for expr, row, expected in cases:
        assert evaluate_row(b(expr), row) is expected, expr


# --- projection ----------------------------------------------------------------------------------


def test_projection_identity_and_bucket() -> None:
    spec = spec_of(("s", "identity"), ("i", "bucket[16]"))
    expr = b(And(eq("s", "a"), eq("i", 34)))
    bucket = parse_transform("bucket[16]").apply(34, LONG)
    assert str(inclusive_projection(spec, SCHEMA, expr)) == f"(s_0 = 'a' AND i_1 = {bucket})"
    assert str(strict_projection(spec, SCHEMA, b(eq("s", "a")))) == "s_0 = 'a'"
    assert strict_projection(spec, SCHEMA, expr) is AlwaysFalse()  # bucket cannot prove i = 34
    assert str(strict_projection(spec, SCHEMA, b(not_eq("i", 34)))) == f"i_1 != {bucket}"
    assert inclusive_projection(spec, SCHEMA, b(lt("i", 3))) is AlwaysTrue()


def test_projection_truncate_and_time() -> None:
    spec = spec_of(("i", "truncate[10]"), ("s", "truncate[2]"), ("ts", "day"), ("ts", "hour"),
                   ("d", "month"), ("d", "year"))
    cases = [
        (lt("i", 25), "i_0 <= 20", "i_0 < 20"),
        (gt_eq("i", 20), "i_0 >= 20", "i_0 > 10"),
        (starts_with("s", "abc"), "s_1 STARTS WITH 'ab'", "false"),
        (starts_with("s", "ab"), "s_1 = 'ab'", "s_1 = 'ab'"),
        (gt_eq("ts", T0 + 10 * HOUR_US),
         "(ts_2 >= DATE '2024-01-01' AND ts_3 >= 473362)", "(ts_2 > DATE '2024-01-01' OR ts_3 > 473361)"),
        (lt("d", 19723 + 31), "(d_4 <= 648 AND d_5 <= 54)", "(d_4 < 649 OR d_5 < 54)"),
        (is_null("d"), "(d_4 IS NULL AND d_5 IS NULL)", "(d_4 IS NULL OR d_5 IS NULL)"),
    ]
    for expr, inclusive, strict in cases:
        assert str(inclusive_projection(spec, SCHEMA, b(expr))) == inclusive, expr
        assert str(strict_projection(spec, SCHEMA, b(expr))) == strict, expr


def test_projection_of_evolved_spec_with_void_field() -> None:
    spec = spec_of(("s", "void"), ("ts", "day"), spec_id=3)
    expr = b(And(eq("s", "a"), gt("ts", T0)))
    assert str(inclusive_projection(spec, SCHEMA, expr)) == "ts_1 >= DATE '2024-01-01'"
    assert strict_projection(spec, SCHEMA, expr) is AlwaysFalse()
    assert PartitionEvaluator(spec, SCHEMA, expr).eval((None, 19723))
    assert not PartitionEvaluator(spec, SCHEMA, expr).eval((None, 19722))


PROJECTION_CASES = [
    ("s", "identity"), ("f", "identity"), ("i", "bucket[4]"), ("s", "bucket[3]"), ("i", "truncate[5]"),
    ("s", "truncate[2]"), ("dec", "truncate[50]"), ("ts", "day"), ("ts", "hour"), ("ts", "month"),
    ("d", "month"), ("d", "year"), ("d", "day"), ("d", "bucket[5]"), ("u", "bucket[2]"), ("u", "identity"),
]


@pytest.mark.exhaustive
@pytest.mark.parametrize("col,transform", PROJECTION_CASES)
def test_projection_against_brute_force(col: str, transform: str) -> None:
    """Inclusive: a matching row's partition passes. Strict: a passing partition's rows all match."""
    spec = spec_of((col, transform), ("id", "void"))
    fid = SCHEMA.find_field(col).field_id  # type: ignore[union-attr]
    fids = [fid, 8]
    rng = random.Random(hash((col, transform)) & 0xFFFF)
    rows = [rand_row(rng, fids) for _ in range(150)]
    for _ in range(150):
        expr = rand_expr(rng, fids)
        inclusive = PartitionEvaluator(spec, SCHEMA, expr)
        strict = PartitionEvaluator(spec, SCHEMA, expr, strict=True)
        for row in rows:
            partition = partition_of(spec, row)
            matches = evaluate_row(expr, row)
            assert not matches or inclusive.eval(partition), (str(expr), row)
            assert matches or not strict.eval(partition), (str(expr), row)


def test_strict_projection_trap_not_equal_excludes_null_partition() -> None:
    """DELETE ... WHERE p <> 'a' keeps rows where p IS NULL, so such a partition is not fully matched."""
    spec = spec_of(("s", "identity"))
    cond = sqlglot.parse_one("DELETE FROM t WHERE s <> 'a'", dialect="spark").args["where"].this
    pred = b(to_predicate(cond, lambda c: c.name, SCHEMA, mode="strict"))
    strict = PartitionEvaluator(spec, SCHEMA, pred, strict=True)
    assert strict.eval(("b",))
    assert not strict.eval(("a",))
    assert not strict.eval((None,))
    assert not PartitionEvaluator(spec, SCHEMA, pred).eval((None,))
    file_with_nulls = DataFile(file_path="x", record_count=3, file_size_in_bytes=1, value_counts={2: 3},
                               null_value_counts={2: 1}, lower_bounds={2: b"b"}, upper_bounds={2: b"c"})
    assert not StrictMetricsEvaluator(SCHEMA, pred).eval(file_with_nulls)
    assert StrictMetricsEvaluator(SCHEMA, pred).eval(
        DataFile(file_path="y", record_count=3, file_size_in_bytes=1, value_counts={2: 3},
                 null_value_counts={2: 0}, lower_bounds={2: b"b"}, upper_bounds={2: b"c"}))


# --- metrics evaluators --------------------------------------------------------------------------


def data_file(record_count: int = 10, **metrics: Any) -> DataFile:
    return DataFile(file_path="f.parquet", record_count=record_count, file_size_in_bytes=100, **metrics)


def test_metrics_nulls_and_missing_stats() -> None:
    only_nulls = data_file(value_counts={8: 10}, null_value_counts={8: 10})
    for expr in (lt("i", 5), eq("i", 1), not_null("i"), in_("i", [1, 2])):
        assert not InclusiveMetricsEvaluator(SCHEMA, expr).eval(only_nulls), expr
    for expr in (is_null("i"), not_eq("i", 1), not_in("i", [1, 2])):
        assert InclusiveMetricsEvaluator(SCHEMA, expr).eval(only_nulls), expr
        assert StrictMetricsEvaluator(SCHEMA, expr).eval(only_nulls), expr
    no_stats = data_file()
    for expr in (lt("i", 5), is_null("i"), not_null("i"), starts_with("s", "a"), is_nan("f")):
        assert InclusiveMetricsEvaluator(SCHEMA, expr).eval(no_stats), expr
        assert not StrictMetricsEvaluator(SCHEMA, expr).eval(no_stats), expr
    assert not InclusiveMetricsEvaluator(SCHEMA, eq("i", 1)).eval(data_file(record_count=0))
    assert StrictMetricsEvaluator(SCHEMA, eq("i", 1)).eval(data_file(record_count=0))
    assert InclusiveMetricsEvaluator(SCHEMA, eq("i", 1)).eval(
        data_file(record_count=-1, value_counts={8: 0}, null_value_counts={8: 0}))


def test_metrics_nan() -> None:
    only_nan = data_file(value_counts={3: 10}, null_value_counts={3: 0}, nan_value_counts={3: 10})
    assert not InclusiveMetricsEvaluator(SCHEMA, gt("f", 1.0)).eval(only_nan)
    assert not InclusiveMetricsEvaluator(SCHEMA, not_nan("f")).eval(only_nan)
    assert StrictMetricsEvaluator(SCHEMA, is_nan("f")).eval(only_nan)
    assert StrictMetricsEvaluator(SCHEMA, not_eq("f", 1.0)).eval(only_nan)
    some_nan = data_file(value_counts={3: 10}, null_value_counts={3: 0}, nan_value_counts={3: 2},
                         lower_bounds={3: to_bytes(DOUBLE, 1.0)}, upper_bounds={3: to_bytes(DOUBLE, 2.0)})
    assert not StrictMetricsEvaluator(SCHEMA, lt("f", 5.0)).eval(some_nan)  # NaN rows fail <
    assert StrictMetricsEvaluator(SCHEMA, not_eq("f", 5.0)).eval(some_nan)
    assert not InclusiveMetricsEvaluator(SCHEMA, gt("f", 2.0)).eval(some_nan)
    assert InclusiveMetricsEvaluator(SCHEMA, is_nan("f")).eval(some_nan)
    no_nan_counts = data_file(value_counts={3: 10}, null_value_counts={3: 0},
                              lower_bounds={3: to_bytes(DOUBLE, 1.0)}, upper_bounds={3: to_bytes(DOUBLE, 2.0)})
    assert not StrictMetricsEvaluator(SCHEMA, lt("f", 5.0)).eval(no_nan_counts)
    assert InclusiveMetricsEvaluator(SCHEMA, is_nan("f")).eval(no_nan_counts)
    nan_bound = data_file(value_counts={3: 10}, lower_bounds={3: to_bytes(DOUBLE, float("nan"))},
                          upper_bounds={3: to_bytes(DOUBLE, float("nan"))})
    assert InclusiveMetricsEvaluator(SCHEMA, gt("f", 1.0)).eval(nan_bound)
    assert InclusiveMetricsEvaluator(SCHEMA, lt("f", 1.0)).eval(nan_bound)


def test_metrics_truncated_string_bounds_and_starts_with() -> None:
    # values "abcdef".."abzzzz" truncated to 2 code points: lower "ab", upper "ac"
    f = data_file(value_counts={2: 10}, null_value_counts={2: 0}, lower_bounds={2: b"ab"}, upper_bounds={2: b"ac"})
    inclusive = lambda e: InclusiveMetricsEvaluator(SCHEMA, e).eval(f)  # noqa: E731
    strict = lambda e: StrictMetricsEvaluator(SCHEMA, e).eval(f)  # noqa: E731
    assert inclusive(starts_with("s", "abc")) and inclusive(starts_with("s", "ab"))
    assert not inclusive(starts_with("s", "aa")) and not inclusive(starts_with("s", "ad"))
    assert inclusive(starts_with("s", "ac")) and not inclusive(starts_with("s", "acz"))  # max <= "ac"
    assert not strict(starts_with("s", "ab"))  # upper "ac" does not start with "ab"
    assert inclusive(eq("s", "abzz")) and not inclusive(eq("s", "b"))
    assert strict(not_starts_with("s", "b")) and not strict(not_starts_with("s", "a"))
    exact = data_file(value_counts={2: 3}, null_value_counts={2: 0}, lower_bounds={2: b"abc"},
                      upper_bounds={2: b"abz"})
    assert StrictMetricsEvaluator(SCHEMA, starts_with("s", "ab")).eval(exact)
    assert not InclusiveMetricsEvaluator(SCHEMA, not_starts_with("s", "ab")).eval(exact)
    invalid_utf8 = data_file(value_counts={2: 3}, lower_bounds={2: b"\xe2\x82"}, upper_bounds={2: b"\xff"})
    assert InclusiveMetricsEvaluator(SCHEMA, eq("s", "a")).eval(invalid_utf8)


def test_metrics_promoted_int_bounds_on_long_column() -> None:
    f = data_file(value_counts={8: 10}, null_value_counts={8: 0}, lower_bounds={8: to_bytes(INT, -5)},
                  upper_bounds={8: to_bytes(INT, 7)})
    assert not InclusiveMetricsEvaluator(SCHEMA, gt("i", 7)).eval(f)
    assert InclusiveMetricsEvaluator(SCHEMA, gt("i", 6)).eval(f)
    assert StrictMetricsEvaluator(SCHEMA, gt_eq("i", -5)).eval(f)
    assert not InclusiveMetricsEvaluator(SCHEMA, lt("i", -2**40)).eval(f)
    g = data_file(value_counts={3: 2}, null_value_counts={3: 0}, nan_value_counts={3: 0},
                  lower_bounds={3: to_bytes(FLOAT, 0.5)}, upper_bounds={3: to_bytes(FLOAT, 1.5)})
    assert StrictMetricsEvaluator(SCHEMA, lt_eq("f", 1.5)).eval(g)
    assert not InclusiveMetricsEvaluator(SCHEMA, gt("f", 1.5)).eval(g)


def file_from_rows(rng: random.Random, rows: list[dict[int, Any]], fids: list[int]) -> DataFile:
    """Metrics like a writer would produce (strings/uuids truncated to 2), then randomly dropped."""
    vc, nc, nan, lower, upper = {}, {}, {}, {}, {}
    for fid in fids:
        t = TYPES[fid]
        vals = [r.get(fid) for r in rows]
        vc[fid] = len(vals)
        nc[fid] = sum(v is None for v in vals)
        ordinary = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
        if t in (DOUBLE, FLOAT):
            nan[fid] = len(vals) - nc[fid] - len(ordinary)
        if not ordinary:
            continue
        lo, hi = min(ordinary), max(ordinary)
        if t in (DOUBLE, FLOAT):
            lo, hi = normalize_float_bounds(lo, hi)
        lo, hi = truncate_lower_bound(t, lo, 2), truncate_upper_bound(t, hi, 2)
        bound_type: IcebergType = INT if fid == 8 and rng.random() < 0.5 else t  # pre-promotion file
        lower[fid] = to_bytes(bound_type, lo)
        if hi is not None:
            upper[fid] = to_bytes(bound_type, hi)
    maps = [m if rng.random() < 0.85 else None for m in (vc, nc, nan, lower, upper)]
    for m in maps:
        if m and rng.random() < 0.2:
            m.pop(rng.choice(list(m)))
    return data_file(record_count=len(rows), value_counts=maps[0], null_value_counts=maps[1],
                     nan_value_counts=maps[2], lower_bounds=maps[3], upper_bounds=maps[4])


@pytest.mark.exhaustive
def test_metrics_evaluators_against_brute_force() -> None:
    rng = random.Random(7)
    fids = [2, 3, 4, 5, 6, 7, 8, 10]
    checked = 0
    for _ in range(600):
        rows = [rand_row(rng, fids) for _ in range(rng.randint(1, 6))]
        f = file_from_rows(rng, rows, fids)
        for _ in range(20):
            expr = rand_expr(rng, fids)
            results = [evaluate_row(expr, r) for r in rows]
            if any(results):
                assert InclusiveMetricsEvaluator(SCHEMA, expr).eval(f), (str(expr), rows, f)
            if not all(results):
                assert not StrictMetricsEvaluator(SCHEMA, expr).eval(f), (str(expr), rows, f)
            checked += 1
    assert checked == 12000


# --- manifest evaluator ----------------------------------------------------------------------------


def summarize(spec: PartitionSpec, partitions: list[tuple[Any, ...]]) -> list[FieldSummary]:
    out = []
    for i, pf in enumerate(spec.fields):
        t = pf.transform.result_type(TYPES[pf.source_id])
        vals = [p[i] for p in partitions]
        ordinary = [v for v in vals if v is not None and not (isinstance(v, float) and math.isnan(v))]
        out.append(FieldSummary(
            contains_null=any(v is None for v in vals),
            contains_nan=any(isinstance(v, float) and math.isnan(v) for v in vals),
            lower_bound=to_bytes(t, min(ordinary)) if ordinary else None,
            upper_bound=to_bytes(t, max(ordinary)) if ordinary else None))
    return out


def manifest(spec: PartitionSpec, partitions: list[FieldSummary] | None) -> ManifestFile:
    return ManifestFile(manifest_path="m.avro", manifest_length=1, partition_spec_id=spec.spec_id,
                        added_snapshot_id=1, partitions=partitions)


def test_manifest_evaluator_basics() -> None:
    spec = spec_of(("s", "identity"), ("ts", "day"))
    summaries = summarize(spec, [("b", 19723), ("d", 19725), (None, 19724)])
    m = manifest(spec, summaries)
    assert ManifestEvaluator(spec, SCHEMA, eq("s", "c")).eval(m)
    assert not ManifestEvaluator(spec, SCHEMA, eq("s", "e")).eval(m)
    assert ManifestEvaluator(spec, SCHEMA, is_null("s")).eval(m)
    assert not ManifestEvaluator(spec, SCHEMA, lt("ts", T0)).eval(m)
    assert ManifestEvaluator(spec, SCHEMA, lt("ts", T0 + 1)).eval(m)
    assert not ManifestEvaluator(spec, SCHEMA, starts_with("s", "e")).eval(m)
    assert ManifestEvaluator(spec, SCHEMA, not_eq("s", "b")).eval(m)
    assert ManifestEvaluator(spec, SCHEMA, eq("s", "zzz")).eval(manifest(spec, None))
    all_null = manifest(spec, summarize(spec, [(None, 19723)]))
    assert not ManifestEvaluator(spec, SCHEMA, not_null("s")).eval(all_null)
    assert ManifestEvaluator(spec, SCHEMA, not_starts_with("s", "a")).eval(all_null)
    with pytest.raises(ValueError, match="spec"):
        ManifestEvaluator(spec_of(("s", "identity"), spec_id=1), SCHEMA, eq("s", "a")).eval(m)


def test_manifest_evaluator_against_brute_force() -> None:
    rng = random.Random(11)
    specs = [spec_of(("s", "identity"), ("i", "bucket[4]")), spec_of(("f", "identity"), ("d", "month")),
             spec_of(("s", "truncate[1]"), ("ts", "day"), ("dec", "truncate[100]")),
             spec_of(("id", "void"), ("ts", "hour"))]
    fids = [2, 3, 4, 5, 6, 8]
    for _ in range(300):
        spec = rng.choice(specs)
        rows = [rand_row(rng, fids) for _ in range(rng.randint(1, 8))]
        m = manifest(spec, summarize(spec, [partition_of(spec, r) for r in rows]))
        for _ in range(10):
            expr = rand_expr(rng, fids)
            if any(evaluate_row(expr, r) for r in rows):
                assert ManifestEvaluator(spec, SCHEMA, expr).eval(m), (str(expr), rows)


# --- from_sql --------------------------------------------------------------------------------------


def where(sql: str) -> sqlglot.exp.Expression:
    return sqlglot.parse_one(f"SELECT * FROM t WHERE {sql}", dialect="spark").args["where"].this


def target_only(column: sqlglot.exp.Column) -> str | None:
    """Columns qualified with `src` belong to another table."""
    return None if column.table == "src" else column.name


def translate(sql: str, mode: str = "inclusive") -> str:
    return str(b(to_predicate(where(sql), target_only, SCHEMA, mode=mode)))  # type: ignore[arg-type]


def test_from_sql_translations() -> None:
    cases = {
        "s = 'a' AND i > 5": "(s = 'a' AND i > 5)",
        "5 < i": "i > 5",
        "-3 >= i": "i <= -3",
        "s <> 'a'": "(s IS NOT NULL AND s != 'a')",
        "NOT (s = 'a')": "(s IS NOT NULL AND s != 'a')",
        "i IN (1, 2, NULL)": "i IN (1, 2)",
        "i NOT IN (1, 2)": "(i IS NOT NULL AND i NOT IN (1, 2))",
        "i NOT IN (1, NULL)": "false",
        "i IS NULL OR s IS NOT NULL": "(i IS NULL OR s IS NOT NULL)",
        "i BETWEEN 1 AND 3": "(i >= 1 AND i <= 3)",
        "i NOT BETWEEN 1 AND 3": "(i < 1 OR i > 3)",
        "s LIKE 'ab%'": "s STARTS WITH 'ab'",
        "s NOT LIKE 'ab%'": "(s IS NOT NULL AND s NOT STARTS WITH 'ab')",
        "s LIKE 'ab'": "s = 'ab'",
        "s LIKE 'a_c%'": "true",
        "d = DATE '2024-01-01'": "d = DATE '2024-01-01'",
        "d >= '2024-01-02'": "d >= DATE '2024-01-02'",
        "d < CAST('2024-01-03' AS DATE)": "d < DATE '2024-01-03'",
        "ts >= TIMESTAMP '2024-01-01 10:00:00'": "ts >= TIMESTAMP '2024-01-01 10:00:00'",
        "ts < TIMESTAMP '2024-01-01T12:00:00+02:00'": "ts < TIMESTAMP '2024-01-01 10:00:00'",
        "ts < DATE '2024-01-02'": "ts < TIMESTAMP '2024-01-02 00:00:00'",
        "dec = 1.5": "dec = 1.50",
        "dec = 1.505": "true",
        "i = 2.0": "i = 2",
        "i = 2.5": "true",
        "f > 1.5": "(f > 1.5 OR isnan(f))",
        "f <= 1e3": "f <= 1000.0",
        "fl = 0.1": "true",
        "fl = 0.5": "fl = 0.5",
        "flag": "flag = TRUE",
        "NOT flag": "flag = FALSE",
        "flag = true": "flag = TRUE",
        "i <=> NULL": "i IS NULL",
        "NOT (i <=> 3)": "i != 3",
        "i = NULL": "false",
        "u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7'": "u = 'f79c3e09-677c-4bbd-a479-3f349cb785e7'",
        "u = 'F79C3E09-677C-4BBD-A479-3F349CB785E7'": "true",
        "s = src.s AND i = 1": "i = 1",
        "abs(i) = 1 OR s = 'x'": "true",
        "i = 1 AND s = i": "i = 1",
        "TRUE AND i = 1": "i = 1",
        "i IN (SELECT x FROM y)": "true",
        "unknown_col = 1": "true",
        "CAST(i AS STRING) = '1'": "true",
        "i = CAST('300' AS TINYINT)": "true",
    }
    for sql, expected in cases.items():
        assert translate(sql) == expected, sql


def test_from_sql_untranslatable_parts_respect_mode_under_not() -> None:
    assert translate("abs(i) = 1", "strict") == "false"
    assert translate("NOT (abs(i) = 1)", "inclusive") == "true"
    assert translate("NOT (abs(i) = 1)", "strict") == "false"
    assert translate("NOT (abs(i) = 1 AND s = 'a')", "inclusive") == "true"
    assert translate("NOT (abs(i) = 1 AND s = 'a')", "strict") == "(s IS NOT NULL AND s != 'a')"
    assert translate("NOT (abs(i) = 1 OR s = 'a')", "inclusive") == "(s IS NOT NULL AND s != 'a')"
    assert translate("NOT (abs(i) = 1 OR s = 'a')", "strict") == "false"
    with pytest.raises(ValueError, match="mode"):
        to_predicate(where("i = 1"), target_only, SCHEMA, mode="loose")  # type: ignore[arg-type]


def test_split_conjuncts() -> None:
    parts = split_conjuncts(where("(a = 1 AND (b = 2)) AND (c = 3 OR d = 4)"))
    assert [p.sql() for p in parts] == ["a = 1", "b = 2", "c = 3 OR d = 4"]
    assert [p.sql() for p in split_conjuncts(where("a = 1"))] == ["a = 1"]


def _rand_sql(rng: random.Random, depth: int = 2) -> str:
    if depth == 0 or rng.random() < 0.35:
        i, s, f = rng.randint(-3, 3), rng.choice(["a", "ab", "b", ""]), rng.choice(["1.5", "0.0", "-2.5", "1e0"])
        op = rng.choice(["=", "<>", "<", "<=", ">", ">="])
        return rng.choice([
            f"i {op} {i}", f"{i} {op} i", f"s {op} '{s}'", f"f {op} {f}", f"d {op} DATE '2024-01-0{rng.randint(1, 4)}'",
            f"i IN ({i}, {i + 1})", f"i NOT IN ({i}, NULL)", f"s IN ('{s}', NULL)", "i IS NULL", "s IS NOT NULL",
            f"s LIKE '{s}%'", f"s NOT LIKE '{s}%'", f"i BETWEEN {i} AND {i + 2}", f"f NOT BETWEEN -1 AND {f}",
            f"src.o {op} {i}", f"abs(i) {op} {i}", f"i <=> {rng.choice(['NULL', str(i)])}", f"i {op} NULL",
            "flag", f"flag = {rng.choice(['true', 'false'])}", "i = 1.5", f"d = '2024-01-0{rng.randint(1, 4)}'",
        ])
    kind = rng.choice(["AND", "OR", "NOT"])
    if kind == "NOT":
        return f"NOT ({_rand_sql(rng, depth - 1)})"
    return f"({_rand_sql(rng, depth - 1)}) {kind} ({_rand_sql(rng, depth - 1)})"


@pytest.mark.exhaustive
def test_from_sql_against_duckdb() -> None:
    """SQL semantics oracle: inclusive keeps every selected row; strict selects only selected rows."""
    rng = random.Random(3)
    fids = [8, 2, 3, 4, 9]
    rows = [rand_row(rng, fids) | {"o": rng.choice([None, 0, 1, 2])} for _ in range(60)]
    rows += [{8: None, 2: None, 3: None, 4: None, 9: None, "o": None},
             {8: 1, 2: "a", 3: float("nan"), 4: 19723, 9: True, "o": 1}]
    con = duckdb.connect()
    con.execute("CREATE TABLE t (rid INT, i BIGINT, s VARCHAR, f DOUBLE, d DATE, flag BOOLEAN, o INT)")
    for rid, r in enumerate(rows):
        d = to_python(DATE, r[4])
        con.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?)", [rid, r[8], r[2], r[3], d, r[9], r["o"]])
    for _ in range(400):
        sql = _rand_sql(rng)
        duck = sqlglot.transpile(f"SELECT rid FROM t AS src WHERE {sql}", read="spark", write="duckdb")[0]
        selected = {rid for (rid,) in con.execute(duck).fetchall()}
        cond = where(sql)
        translated = {mode: b(to_predicate(cond, lambda c: None if c.table == "src" and c.name == "o" else c.name,
                                           SCHEMA, mode=mode)) for mode in ("inclusive", "strict")}
        for rid, r in enumerate(rows):
            row = {k: v for k, v in r.items() if isinstance(k, int)}
            if rid in selected:
                assert evaluate_row(translated["inclusive"], row), (sql, r, str(translated["inclusive"]))
            else:
                assert not evaluate_row(translated["strict"], row), (sql, r, str(translated["strict"]))


def test_rand_helpers_cover_sql_translation_cases() -> None:
    """Guards the oracle test: some random conditions translate to real predicates in both modes."""
    rng = random.Random(3)
    exprs = [to_predicate(where(_rand_sql(rng)), target_only, SCHEMA, mode="strict") for _ in range(200)]
    assert sum(not isinstance(e, (AlwaysTrue, AlwaysFalse)) for e in exprs) > 100

