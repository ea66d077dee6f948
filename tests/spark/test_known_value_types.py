"""The assigned values whose types a row-level statement takes without asking Spark
(`store_assignment.known_value_types`) get exactly the types Spark's analysis of the same values
gives (the probe query it replaces), and the others are left to that analysis."""
from __future__ import annotations

import pytest

from pyice_sql.core.model import types as it
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.plan.builder import build_merge, build_update
from pyice_sql.core.sql.parser import parse_statement
from pyice_sql.spark.rowlevel.compile.merge_rows import value_name, value_probe_select
from pyice_sql.spark.rowlevel.compile.store_assignment import known_value_types

pytestmark = pytest.mark.spark

SCHEMA = Schema((it.NestedField(1, "id", it.LONG, True), it.NestedField(2, "v", it.STRING),
                 it.NestedField(3, "n", it.INT), it.NestedField(4, "b", it.BOOLEAN),
                 it.NestedField(5, "d", it.DecimalType(10, 2))))


def _views(spark):
    target = spark.sql("SELECT CAST(1 AS bigint) AS id, 'a' AS v, 2 AS n, true AS b, CAST(1 AS decimal(10, 2)) AS d")
    source = spark.sql("SELECT 1 AS id, 'b' AS v, CAST(3 AS smallint) AS n, false AS b, 1.5D AS d, "
                       "array(1) AS arr, 'x' AS ID2")
    target.createOrReplaceTempView("known_t")
    source.createOrReplaceTempView("known_s")
    return target, source


def _compare(spark, plan, relations):
    known = known_value_types(plan, relations, value_name)
    probed = {f.name: f.dataType for f in spark.sql(value_probe_select(plan, "known_t", "known_s")).schema.fields}
    assert {k: probed[k] for k in known} == known  # every type taken without Spark is Spark's
    return {name: name in known for name in probed}


def test_merge_columns_and_literals_take_sparks_types_and_the_rest_is_left_to_spark(ice):
    spark = ice.spark
    target, source = _views(spark)
    stmt = parse_statement(
        "MERGE INTO local.db.t t USING known_s s ON t.id = s.id "
        "WHEN MATCHED AND s.v = 'u' THEN UPDATE SET v = 'x', n = 7, b = TRUE, d = NULL, id = 3000000000 "
        "WHEN MATCHED AND s.v = 'w' THEN UPDATE SET n = s.n, d = s.d, v = t.v, b = NOT s.b, id = s.id + 1 "
        "WHEN MATCHED AND s.v = 'z' THEN UPDATE SET v = s.id2, d = 1.5, n = 99999999999999999999 "
        "WHEN NOT MATCHED THEN INSERT *", lambda c: c == "local", "local")
    plan = build_merge(stmt, SCHEMA, [f.name for f in source.schema.fields]).with_(join_type="left outer")
    known = _compare(spark, plan, {"t": target.schema, "s": source.schema})
    by_clause = {(k, c): known[value_name(k, c)] for k, ins in enumerate(plan.instructions) for c in ins.values}
    assert all(by_clause[(0, c)] for c in ("v", "n", "b", "d", "id"))  # literals
    assert by_clause[(1, "n")] and by_clause[(1, "d")] and by_clause[(1, "v")]  # plain columns
    assert by_clause[(1, "id")]  # int + int
    assert not by_clause[(1, "b")]  # other expressions: Spark's analysis
    # a column named only by its case and decimal / huge literals: Spark's
    assert not by_clause[(2, "v")] and not by_clause[(2, "d")] and not by_clause[(2, "n")]
    assert all(by_clause[(3, c)] for c in ("id", "v", "n", "b", "d"))  # INSERT *


def test_update_reads_unqualified_columns_from_the_target(ice):
    spark = ice.spark
    target, _ = _views(spark)
    stmt = parse_statement("UPDATE local.db.t AS t SET v = v, n = n + 1, d = d WHERE id = 1",
                           lambda c: c == "local", "local")
    plan = build_update(stmt, SCHEMA)
    known = _compare(spark, plan, {plan.target_alias: target.schema})
    names = {c: known[value_name(0, c)] for c in plan.instructions[0].values}
    assert names == {"v": True, "n": True, "d": True}


def test_arithmetic_over_int_bigint_double_takes_sparks_widened_type(ice):
    spark = ice.spark
    spark.sql("SELECT 1 AS i, CAST(2 AS bigint) AS l, 2.5D AS f, CAST(3 AS smallint) AS s, "
              "CAST(1.5 AS float) AS r, CAST(1 AS decimal(10, 2)) AS dec").createOrReplaceTempView("known_t")
    schema = Schema((it.NestedField(1, "i", it.INT), it.NestedField(2, "l", it.LONG), it.NestedField(3, "f", it.DOUBLE),
                     it.NestedField(4, "s", it.INT), it.NestedField(5, "r", it.FLOAT),
                     it.NestedField(6, "dec", it.DecimalType(10, 2))))
    stmt = parse_statement(
        "UPDATE local.db.t AS t SET i = i * 2, l = l + i - 3000000000, f = (f * 2) + l, s = s + 1, r = r * 2, "
        "dec = dec + 1 WHERE i = 1", lambda c: c == "local", "local")
    plan = build_update(stmt, schema)
    known = _compare(spark, plan, {plan.target_alias: spark.table("known_t").schema})
    names = {c: known[value_name(0, c)] for c in plan.instructions[0].values}
    # smallint, float and decimal arithmetic keep rules of their own: Spark's analysis
    assert names == {"i": True, "l": True, "f": True, "s": False, "r": False, "dec": False}
