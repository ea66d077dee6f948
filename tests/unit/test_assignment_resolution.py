"""Assignment resolution without Spark: struct store assignment, MERGE clause scoping, DEFAULT,
dotted column names (hand-computed expectations; the reference engine's verdicts on the same
cases are in tests/interop/test_assignment_differential.py)."""
from __future__ import annotations

import pytest
from pyspark.sql import types as T

from pyice_sql.spark.rowlevel.compile.store_assignment import stored_value_sql
from pyice_sql.core.errors import AnalysisError, NotNullViolationError
from pyice_sql.core.model import types as it
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.plan.builder import build_merge, build_update
from pyice_sql.core.plan.nodes import INSERT, NOT_MATCHED, NOT_MATCHED_BY_SOURCE
from pyice_sql.core.sql.parser import parse_statement

AB = T.StructType([T.StructField("a", T.IntegerType()), T.StructField("b", T.StringType())])
BA = T.StructType([T.StructField("b", T.StringType()), T.StructField("a", T.IntegerType())])
SCHEMA = Schema((it.NestedField(1, "id", it.INT, True), it.NestedField(2, "v", it.STRING),
                 it.NestedField(3, "a.b", it.STRING),
                 it.NestedField(4, "c", it.StructType((it.NestedField(5, "d", it.STRING),)))))


def sql_of(src, dst=AB, by_name=True) -> str:
    return stored_value_sql("`x`", src, dst, "s", by_name, "test")


def test_struct_by_name_takes_each_field_by_its_name():
    out = sql_of(BA)
    assert "named_struct('a', CAST((`x`).`a` AS int), 'b', CAST((`x`).`b` AS string))" in out


def test_struct_by_position_takes_fields_in_order():
    out = sql_of(T.StructType([T.StructField("x", T.IntegerType()), T.StructField("y", T.StringType())]),
                 by_name=False)
    assert "named_struct('a', CAST((`x`).`x` AS int), 'b', CAST((`x`).`y` AS string))" in out


@pytest.mark.parametrize("src,by_name,message", [
    (T.StructType([T.StructField("a", T.IntegerType())]), True, "CANNOT_FIND_DATA.*`s`.`b`"),
    (T.StructType([*AB.fields, T.StructField("c", T.IntegerType())]), True, "EXTRA_STRUCT_FIELDS.*`c`"),
    (T.StructType([T.StructField("a", T.IntegerType())]), False, "STRUCT_MISSING_FIELDS.*`b`"),
    (T.StructType([T.StructField("b", T.IntegerType()), T.StructField("a", T.StringType())]), True,
     "cannot safely cast 's.a': string to int"),
])
def test_struct_values_that_do_not_fit_are_analysis_errors(src, by_name, message):
    with pytest.raises(AnalysisError, match=message):
        sql_of(src, by_name=by_name)


def test_list_elements_are_rebuilt_by_name():
    out = sql_of(T.ArrayType(BA), T.ArrayType(AB))
    assert out.startswith("transform(`x`, ") and "named_struct('a'" in out


def merge(sql: str, source_cols=("id", "v", "x")):
    return build_merge(parse_statement(sql, lambda c: c == "local", "local"), SCHEMA, list(source_cols))


def test_not_matched_names_are_the_sources_and_not_matched_by_source_names_the_targets():
    plan = merge("MERGE INTO local.db.t t USING s ON t.id = s.id WHEN NOT MATCHED AND v > 'a' THEN "
                 "INSERT (id, v) VALUES (id, x) WHEN NOT MATCHED BY SOURCE AND v IS NULL THEN UPDATE SET v = v")
    insert, update = plan.instructions
    assert insert.kind == NOT_MATCHED and update.kind == NOT_MATCHED_BY_SOURCE
    assert insert.condition.sql() == '"s".v > \'a\''
    assert insert.values["id"].sql() == '"s".id' and insert.values["v"].sql() == '"s".x'
    assert update.condition.sql() == '"t".v IS NULL' and update.values["v"].sql() == '"t".v'


@pytest.mark.parametrize("clause", [
    "WHEN NOT MATCHED THEN INSERT (id) VALUES (t.id)",
    "WHEN NOT MATCHED BY SOURCE AND s.x = 1 THEN DELETE",
])
def test_the_other_sides_alias_is_unresolved(clause):
    with pytest.raises(AnalysisError, match="UNRESOLVED_COLUMN"):
        merge(f"MERGE INTO local.db.t t USING s ON t.id = s.id {clause}")


def test_default_is_null_for_a_nullable_column_and_an_error_for_a_not_null_one():
    plan = build_update(parse_statement("UPDATE local.db.t SET v = DEFAULT", lambda c: c == "local", "local"),
                        SCHEMA)
    assert plan.instructions[0].values["v"].sql() == "NULL"
    with pytest.raises(AnalysisError, match="NO_DEFAULT_COLUMN_VALUE_AVAILABLE"):
        build_update(parse_statement("UPDATE local.db.t SET id = DEFAULT", lambda c: c == "local", "local"), SCHEMA)
    with pytest.raises(AnalysisError, match="part of an expression"):
        build_update(parse_statement("UPDATE local.db.t SET v = concat(DEFAULT, 'x')", lambda c: c == "local",
                                     "local"), SCHEMA)


def test_merge_insert_leaving_out_a_not_null_column_is_rejected_at_planning():
    with pytest.raises(NotNullViolationError, match="'id'"):
        merge("MERGE INTO local.db.t t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (v) VALUES (s.v)")
    plan = merge("MERGE INTO local.db.t t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, DEFAULT)")
    assert plan.instructions[0].operation == INSERT and plan.instructions[0].values["c"].sql() == "NULL"


def test_a_backquoted_dotted_name_is_one_column_and_a_bare_one_a_nested_field():
    plan = build_update(parse_statement("UPDATE local.db.t SET `a.b` = 'x', c.d = 'y'", lambda c: c == "local",
                                        "local"), SCHEMA)
    values = plan.instructions[0].values
    assert set(values) == {"a.b", "c"} and values["a.b"].sql() == "'x'"
    assert SCHEMA.find_field("a.b").field_id == 3 and SCHEMA.find_field("c.d").field_id == 5
    with pytest.raises(AnalysisError, match="unknown column 'c.d'"):
        build_update(parse_statement("UPDATE local.db.t SET `c.d` = 'x'", lambda c: c == "local", "local"), SCHEMA)
