"""Parsing of the DML forms Spark 3.4-4.1 added: INSERT ... BY NAME, INSERT ... REPLACE WHERE and
MERGE WITH SCHEMA EVOLUTION (sqlglot's Spark dialect plus ours, so every Spark line gets them)."""
from __future__ import annotations

import pytest

from pyice_sql.core.errors import ParseError
from pyice_sql.core.sql import statements as st
from pyice_sql.core.sql.parser import parse_statement


def parse(sql: str) -> st.Statement:
    return parse_statement(sql, lambda c: c == "local", "spark_catalog")


def test_insert_by_name_keeps_the_query_and_no_column_list():
    stmt = parse("INSERT INTO local.db.t BY NAME SELECT 1 AS b, 2 AS a")
    assert isinstance(stmt, st.Insert) and stmt.by_name and stmt.columns is None and stmt.replace_where is None
    assert stmt.query.expression.sql(dialect="spark") == "SELECT 1 AS b, 2 AS a"


def test_insert_replace_where_keeps_its_condition():
    stmt = parse("INSERT INTO TABLE local.db.t REPLACE WHERE p = 'a' AND id > 3 SELECT * FROM local.db.s")
    assert isinstance(stmt, st.Insert) and not stmt.by_name and not stmt.overwrite
    assert stmt.replace_where.sql(dialect="spark") == "p = 'a' AND id > 3"
    assert [t.name for t in stmt.query.tables] == ["s"]


@pytest.mark.parametrize("sql,message", [
    ("INSERT INTO local.db.t (a, b) BY NAME SELECT 1 AS a, 2 AS b", "BY NAME takes no column list"),
])
def test_malformed_forms_are_parse_errors_with_a_place(sql, message):
    with pytest.raises(ParseError, match=message) as e:
        parse(sql)
    assert e.value.position is not None


def test_merge_with_schema_evolution_sets_the_flag_and_plain_merge_does_not():
    sql = ("MERGE {}INTO local.db.t t USING s ON t.id = s.id "
           "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    evolving, plain = parse(sql.format("WITH SCHEMA EVOLUTION ")), parse(sql.format(""))
    assert isinstance(evolving, st.Merge) and evolving.schema_evolution
    assert isinstance(plain, st.Merge) and not plain.schema_evolution
    assert evolving.clauses == plain.clauses and evolving.on == plain.on


def test_forms_on_spark_tables_pass_through_unchanged():
    sql = "INSERT INTO db.t BY NAME SELECT 1 AS a"
    assert parse(sql) == st.PassThrough(sql)
