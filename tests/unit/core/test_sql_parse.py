"""Parsing: every supported statement form, pyice vs pass-through, error positions, scripts."""
from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from sqlglot import exp

from pyice_sql.core.errors import ParseError, PyIceError, SqlPosition, UnsupportedError
from pyice_sql.core.sql.dialect import PyIceSpark
from pyice_sql.core.sql.script import bind_parameters, split_script, sql_literal, substitute_variables
from pyice_sql.core.sql.parser import parse_statement
from pyice_sql.core.sql.statements import (
    AlterTableAddColumns, AlterTableAddPartitionField, AlterTableAlterColumn, AlterTableDropColumns,
    AlterTableDropPartitionField, AlterTableRename, AlterTableRenameColumn, AlterTableReplacePartitionField,
    AlterTableSetProperties, AlterTableUnsetProperties, Call, ColumnSpec, CreateNamespace, CreateTable,
    Delete, Describe, DropNamespace, DropTable, Explain, Insert, MatchedDelete, MatchedUpdate, Merge,
    NewColumn, NotMatchedBySourceDelete, NotMatchedBySourceUpdate, NotMatchedInsert, PartitionTransform,
    PassThrough, Query, ShowNamespaces, ShowTables, TableRef, Update, UseNamespace,
    position_of, replace_tables, tables_read,
)

CATALOGS = {"local", "cat"}


def parse(sql: str, default: str = "spark_catalog", **kwargs):
    return parse_statement(sql, lambda name: name in CATALOGS, default, **kwargs)


def sql_of(node: exp.Expression) -> str:
    return node.sql(dialect=PyIceSpark)


def ref(name: str, **kwargs) -> TableRef:
    *namespace, table = name.split(".")
    return TableRef(namespace[0], tuple(namespace[1:]), table, **kwargs)


# ---- errors -------------------------------------------------------------------------------

def test_error_renders_position():
    err = PyIceError("unknown column 'x' in table local.db.t", position=SqlPosition(2, 14))
    assert str(err) == "unknown column 'x' in table local.db.t (line 2, column 14)"
    assert str(PyIceError("plain")) == "plain"


def test_position_of_offset_with_origin():
    text = "SELECT 1\nFROM t"
    assert SqlPosition.of_offset(text, 0) == SqlPosition(1, 1)
    assert SqlPosition.of_offset(text, 14) == SqlPosition(2, 6)
    assert SqlPosition.of_offset(text, 7, SqlPosition(3, 5)) == SqlPosition(3, 12)
    assert SqlPosition.of_offset(text, 14, SqlPosition(3, 5)) == SqlPosition(4, 6)


# ---- DDL ------------------------------------------------------------------------------------

def test_create_table_full():
    stmt = parse(
        "CREATE TABLE IF NOT EXISTS cat.db.t (id BIGINT NOT NULL COMMENT 'the id', s STRING, ts TIMESTAMP,"
        " m MAP<STRING, ARRAY<INT>>, st STRUCT<a: INT, b: STRING>, d DECIMAL(10,2)) USING iceberg"
        " PARTITIONED BY (s, bucket(16, id), days(ts), truncate(4, s), years(ts), months(ts), hours(ts))"
        " COMMENT 'tbl' LOCATION '/w/t' TBLPROPERTIES ('format-version'='2', write.format.default='orc')"
    )
    assert isinstance(stmt, CreateTable)
    assert stmt.table == ref("cat.db.t")
    assert stmt.if_not_exists and stmt.as_select is None and not stmt.replace
    assert stmt.columns == (
        ColumnSpec("id", "BIGINT", True, "the id"), ColumnSpec("s", "STRING"), ColumnSpec("ts", "TIMESTAMP"),
        ColumnSpec("m", "MAP<STRING, ARRAY<INT>>"), ColumnSpec("st", "STRUCT<a: INT, b: STRING>"),
        ColumnSpec("d", "DECIMAL(10, 2)"),
    )
    assert stmt.partitioning == (
        PartitionTransform("identity", "s"), PartitionTransform("bucket", "id", 16),
        PartitionTransform("day", "ts"), PartitionTransform("truncate", "s", 4),
        PartitionTransform("year", "ts"), PartitionTransform("month", "ts"), PartitionTransform("hour", "ts"),
    )
    assert stmt.properties == {"format-version": "2", "write.format.default": "orc"}
    assert (stmt.comment, stmt.location) == ("tbl", "/w/t")


def test_create_table_singular_transforms_and_hive_partition_column():
    stmt = parse("CREATE TABLE cat.db.t (ts TIMESTAMP, n INT) PARTITIONED BY (day(ts), hour(ts), p STRING)")
    assert stmt.partitioning == (PartitionTransform("day", "ts"), PartitionTransform("hour", "ts"),
                                 PartitionTransform("identity", "p"))
    assert stmt.columns[-1] == ColumnSpec("p", "STRING")


def test_create_table_as_select_reads_pyice_tables():
    stmt = parse("CREATE OR REPLACE TABLE cat.db.t USING iceberg PARTITIONED BY (a) AS SELECT * FROM cat.db.src")
    assert isinstance(stmt, CreateTable) and stmt.replace
    assert stmt.partitioning == (PartitionTransform("identity", "a"),)
    assert isinstance(stmt.as_select, Query)
    assert stmt.as_select.tables == (ref("cat.db.src"),)


def test_create_table_in_default_pyice_catalog():
    stmt = parse("CREATE TABLE db.t (a INT)", default="local")
    assert stmt.table == ref("local.db.t")


def test_create_table_other_provider_in_pyice_catalog_is_unsupported():
    with pytest.raises(UnsupportedError, match="USING parquet"):
        parse("CREATE TABLE cat.db.t (a INT) USING parquet")


def test_drop_table():
    assert parse("DROP TABLE IF EXISTS cat.db.t PURGE") == DropTable(ref("cat.db.t"), True, True)
    assert parse("DROP TABLE db.t", default="local") == DropTable(ref("local.db.t"))


def test_namespaces():
    assert parse("CREATE DATABASE IF NOT EXISTS cat.db") == CreateNamespace("cat", ("db",), True, {})
    assert parse("CREATE NAMESPACE cat.a.b COMMENT 'c' LOCATION '/l' WITH DBPROPERTIES ('k'='v')") == \
        CreateNamespace("cat", ("a", "b"), False, {"comment": "c", "location": "/l", "k": "v"})
    assert parse("CREATE SCHEMA db", default="local") == CreateNamespace("local", ("db",))
    assert parse("DROP DATABASE IF EXISTS cat.db CASCADE") == DropNamespace("cat", ("db",), True, True)
    assert parse("DROP NAMESPACE db", default="local") == DropNamespace("local", ("db",))


def test_show_and_describe():
    assert parse("SHOW DATABASES", default="local") == ShowNamespaces("local", ())
    assert parse("SHOW NAMESPACES IN cat") == ShowNamespaces("cat", ())
    assert parse("SHOW NAMESPACES IN cat.a LIKE 'x*'") == ShowNamespaces("cat", ("a",), "x*")
    assert parse("SHOW TABLES IN db", default="local") == ShowTables("local", ("db",))
    assert parse("SHOW TABLES FROM cat.db 'a*'") == ShowTables("cat", ("db",), "a*")
    assert parse("SHOW TABLES", default="local") == ShowTables("local", ())
    assert parse("DESCRIBE TABLE EXTENDED cat.db.t") == Describe(ref("cat.db.t"), True)
    assert parse("DESC db.t", default="local") == Describe(ref("local.db.t"), False)
    assert parse("DESCRIBE t", default="local") == Describe(TableRef("local", (), "t"))


def test_use_namespace():
    assert parse("USE cat.db") == UseNamespace("cat", ("db",))
    assert parse("USE db", default="local") == UseNamespace(None, ("db",))
    assert isinstance(parse("USE db"), PassThrough)


# ---- ALTER TABLE ----------------------------------------------------------------------------

T = ref("cat.db.t")


@pytest.mark.parametrize("sql, expected", [
    ("ALTER TABLE cat.db.t ADD COLUMN x INT COMMENT 'c'",
     AlterTableAddColumns(T, (NewColumn(("x",), "INT", False, "c"),))),
    ("ALTER TABLE cat.db.t ADD COLUMNS (x BIGINT NOT NULL, s.y STRING AFTER z, w DOUBLE FIRST)",
     AlterTableAddColumns(T, (NewColumn(("x",), "BIGINT", True), NewColumn(("s", "y"), "STRING", after="z"),
                              NewColumn(("w",), "DOUBLE", first=True)))),
    ("ALTER TABLE cat.db.t DROP COLUMN s.x", AlterTableDropColumns(T, (("s", "x"),))),
    ("ALTER TABLE cat.db.t DROP COLUMNS (x, y)", AlterTableDropColumns(T, (("x",), ("y",)))),
    ("ALTER TABLE cat.db.t RENAME COLUMN s.a TO b", AlterTableRenameColumn(T, ("s", "a"), "b")),
    ("ALTER TABLE cat.db.t ALTER COLUMN s.c TYPE bigint", AlterTableAlterColumn(T, ("s", "c"), new_type="BIGINT")),
    ("ALTER TABLE cat.db.t ALTER COLUMN c COMMENT 'hi'", AlterTableAlterColumn(T, ("c",), comment="hi")),
    ("ALTER TABLE cat.db.t ALTER COLUMN c DROP NOT NULL", AlterTableAlterColumn(T, ("c",), not_null=False)),
    ("ALTER TABLE cat.db.t ALTER COLUMN c SET NOT NULL", AlterTableAlterColumn(T, ("c",), not_null=True)),
    ("ALTER TABLE cat.db.t ALTER c AFTER d", AlterTableAlterColumn(T, ("c",), after="d")),
    ("ALTER TABLE cat.db.t ALTER COLUMN c FIRST", AlterTableAlterColumn(T, ("c",), first=True)),
    ("ALTER TABLE cat.db.t SET TBLPROPERTIES ('a'='b', n=2, flag=true)",
     AlterTableSetProperties(T, {"a": "b", "n": "2", "flag": "true"})),
    ("ALTER TABLE cat.db.t UNSET TBLPROPERTIES ('a', 'c')", AlterTableUnsetProperties(T, ("a", "c"))),
    ("ALTER TABLE cat.db.t UNSET TBLPROPERTIES IF EXISTS ('a')", AlterTableUnsetProperties(T, ("a",), True)),
    ("ALTER TABLE cat.db.t ADD PARTITION FIELD bucket(16, id) AS shard",
     AlterTableAddPartitionField(T, PartitionTransform("bucket", "id", 16), "shard")),
    ("ALTER TABLE cat.db.t ADD PARTITION FIELD truncate(4, s.name)",
     AlterTableAddPartitionField(T, PartitionTransform("truncate", "s.name", 4))),
    ("ALTER TABLE cat.db.t ADD PARTITION FIELD years(ts)",
     AlterTableAddPartitionField(T, PartitionTransform("year", "ts"))),
    ("ALTER TABLE cat.db.t ADD PARTITION FIELD identity(shard)",  # Spark's spelling of a bare column
     AlterTableAddPartitionField(T, PartitionTransform("identity", "shard"))),
    ("ALTER TABLE cat.db.t DROP PARTITION FIELD shard",
     AlterTableDropPartitionField(T, PartitionTransform("identity", "shard"))),
    ("ALTER TABLE cat.db.t DROP PARTITION FIELD days(ts)",
     AlterTableDropPartitionField(T, PartitionTransform("day", "ts"))),
    ("ALTER TABLE cat.db.t REPLACE PARTITION FIELD ts_day WITH hours(ts) AS h",
     AlterTableReplacePartitionField(T, PartitionTransform("identity", "ts_day"), PartitionTransform("hour", "ts"), "h")),
    ("ALTER TABLE cat.db.t RENAME TO db2.u", AlterTableRename(T, ("db2",), "u")),
])
def test_alter_table(sql, expected):
    assert parse(sql) == expected


def test_alter_table_unknown_form_on_pyice_table_is_unsupported():
    with pytest.raises(UnsupportedError):
        parse("ALTER TABLE cat.db.t WRITE ORDERED BY x")
    with pytest.raises(UnsupportedError):
        parse("ALTER TABLE cat.db.t ADD PARTITION (p=1)")


def test_unknown_partition_transform():
    with pytest.raises(ParseError, match="unknown partition transform"):
        parse("ALTER TABLE cat.db.t ADD PARTITION FIELD weeks(ts)")


# ---- INSERT / UPDATE / DELETE ---------------------------------------------------------------

def test_insert_values_with_columns():
    stmt = parse("INSERT INTO TABLE cat.db.t (a, b) VALUES (1, 'x'), (3, NULL)")
    assert isinstance(stmt, Insert)
    assert stmt.table == T and stmt.columns == ("a", "b") and not stmt.overwrite
    assert isinstance(stmt.query.expression, exp.Values) and len(stmt.query.expression.expressions) == 2


def test_insert_select_and_overwrite():
    stmt = parse("INSERT OVERWRITE cat.db.t SELECT * FROM cat.db.src WHERE x > 1")
    assert stmt.overwrite and stmt.columns is None
    assert stmt.query.tables == (ref("cat.db.src"),)
    assert isinstance(stmt.query.expression, exp.Select)


def test_insert_overwrite_static_partition():
    stmt = parse("INSERT OVERWRITE TABLE cat.db.t PARTITION (p = 'x', d = DATE '2024-01-02', q) SELECT a FROM y")
    assert stmt.overwrite
    assert stmt.static_partition == {"p": "x", "d": datetime.date(2024, 1, 2)}


def test_update():
    stmt = parse("UPDATE cat.db.t AS a SET v = v + 1, a.s.w = 'x' WHERE a.id = 3")
    assert isinstance(stmt, Update)
    assert stmt.table == ref("cat.db.t", alias="a")
    assert [path for path, _ in stmt.assignments] == [("v",), ("s", "w")]
    assert sql_of(stmt.assignments[0][1]) == "v + 1"
    assert sql_of(stmt.where) == "a.id = 3"


def test_update_strips_full_table_name_qualifier():
    stmt = parse("UPDATE cat.db.t SET t.v = 1, db.t.w = 2, cat.db.t.x = 3")
    assert [path for path, _ in stmt.assignments] == [("v",), ("w",), ("x",)]


def test_delete():
    assert parse("DELETE FROM cat.db.t") == Delete(T, None)
    stmt = parse("DELETE FROM cat.db.t AS a WHERE a.id IN (SELECT id FROM cat.db.u)")
    assert stmt.table == ref("cat.db.t", alias="a")
    assert tables_read(stmt.where) == (ref("cat.db.u"),)


def test_write_to_metadata_table_or_old_version_is_an_error():
    with pytest.raises(ParseError, match="metadata table"):
        parse("DELETE FROM cat.db.t.snapshots")
    with pytest.raises(ParseError, match="time-travel"):
        parse("DELETE FROM cat.db.t VERSION AS OF 1 WHERE a = 1")


# ---- MERGE ----------------------------------------------------------------------------------

def test_merge_all_clause_kinds():
    stmt = parse(
        "MERGE INTO cat.db.t AS a USING src AS s ON a.id = s.id\n"
        "WHEN MATCHED AND s.op = 'd' THEN DELETE\n"
        "WHEN MATCHED AND s.x > 1 THEN UPDATE SET a.v = s.v, w = 1\n"
        "WHEN MATCHED THEN UPDATE SET *\n"
        "WHEN NOT MATCHED AND s.y THEN INSERT (id, v) VALUES (s.id, s.v)\n"
        "WHEN NOT MATCHED BY TARGET THEN INSERT *\n"
        "WHEN NOT MATCHED BY SOURCE AND a.z THEN UPDATE SET v = 0\n"
        "WHEN NOT MATCHED BY SOURCE THEN DELETE"
    )
    assert isinstance(stmt, Merge)
    assert stmt.target == ref("cat.db.t", alias="a")
    assert stmt.source_alias == "s"
    assert isinstance(stmt.source, Query) and sql_of(stmt.source.expression) == "SELECT * FROM src"
    assert sql_of(stmt.on) == "a.id = s.id"
    kinds = [type(c) for c in stmt.clauses]
    assert kinds == [MatchedDelete, MatchedUpdate, MatchedUpdate, NotMatchedInsert, NotMatchedInsert,
                     NotMatchedBySourceUpdate, NotMatchedBySourceDelete]
    delete, update, update_star, insert, insert_star, by_source_update, by_source_delete = stmt.clauses
    assert sql_of(delete.condition) == "s.op = 'd'"
    assert [p for p, _ in update.assignments] == [("v",), ("w",)] and not update.star
    assert update_star.star and update_star.condition is None
    assert insert.columns == ("id", "v") and [sql_of(v) for v in insert.values] == ["s.id", "s.v"]
    assert insert_star.star
    assert [p for p, _ in by_source_update.assignments] == [("v",)]
    assert by_source_delete.condition is None
    assert [c.position for c in stmt.clauses] == [SqlPosition(n, 1) for n in range(2, 9)]


def test_merge_source_pyice_table_and_subquery():
    stmt = parse("MERGE INTO cat.db.t USING cat.db.src ON t.id = src.id WHEN MATCHED THEN DELETE")
    assert stmt.source == ref("cat.db.src") and stmt.source_alias == "src"
    stmt = parse("MERGE INTO cat.db.t t USING (SELECT * FROM cat.db.x WHERE k) s ON t.id = s.id "
                 "WHEN MATCHED THEN UPDATE SET t.s.a = 1")
    assert isinstance(stmt.source, Query) and stmt.source.tables == (ref("cat.db.x"),)
    assert stmt.source_alias == "s"
    assert stmt.clauses[0].assignments[0][0] == ("s", "a")


def test_merge_into_default_catalog_table():
    stmt = parse("MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *",
                 default="local", is_temp_view=lambda name: name == "s")
    assert stmt.target == TableRef("local", (), "t")
    assert isinstance(stmt.source, Query) and stmt.source.tables == ()


@pytest.mark.parametrize("sql, message, position", [
    ("MERGE INTO cat.db.t USING s ON t.id = s.id\nWHEN MATCHED THEN DELETE\n  WHEN MATCHED AND s.x THEN UPDATE SET a = 1",
     "only the last WHEN MATCHED clause may omit its condition", SqlPosition(2, 1)),
    ("MERGE INTO cat.db.t USING s ON t.id = s.id\nWHEN NOT MATCHED THEN INSERT *\nWHEN NOT MATCHED AND s.x THEN INSERT *",
     "only the last WHEN NOT MATCHED clause", SqlPosition(2, 1)),
    ("MERGE INTO cat.db.t USING s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN DELETE "
     "WHEN NOT MATCHED BY SOURCE AND t.x THEN DELETE",
     "only the last WHEN NOT MATCHED BY SOURCE clause", SqlPosition(1, 44)),
    ("MERGE INTO cat.db.t USING s ON t.id = s.id\nWHEN MATCHED AND s.a THEN DELETE\nWHEN MATCHED THEN DELETE\n"
     "WHEN NOT MATCHED BY TARGET THEN INSERT *\nWHEN MATCHED AND s.b THEN UPDATE SET *",
     "WHEN MATCHED clauses must come before WHEN NOT MATCHED clauses", SqlPosition(5, 1)),
])
def test_merge_clause_order(sql, message, position):
    with pytest.raises(ParseError, match=message) as info:
        parse(sql)
    assert info.value.position == position


def test_merge_clause_order_allows_other_kinds_after_unconditional():
    stmt = parse("MERGE INTO cat.db.t USING s ON t.id = s.id WHEN MATCHED THEN DELETE "
                 "WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE THEN DELETE")
    assert len(stmt.clauses) == 3


@pytest.mark.parametrize("clause, message, at", [
    ("WHEN MATCHED THEN INSERT *", "INSERT is not allowed in WHEN MATCHED", "INSERT"),
    ("WHEN NOT MATCHED THEN DELETE", "DELETE is not allowed in WHEN NOT MATCHED", "DELETE"),
    ("WHEN NOT MATCHED THEN UPDATE SET a = 1", "UPDATE is not allowed in WHEN NOT MATCHED", "UPDATE"),
    ("WHEN NOT MATCHED BY SOURCE THEN UPDATE SET *", "UPDATE SET \\* is not allowed", "*"),
    ("WHEN NOT MATCHED BY SOURCE THEN INSERT *", "INSERT is not allowed in WHEN NOT MATCHED BY SOURCE", "INSERT"),
])
def test_merge_action_not_allowed_in_clause(clause, message, at):
    sql = f"MERGE INTO cat.db.t USING s ON t.id = s.id {clause}"
    with pytest.raises(ParseError, match=message) as info:
        parse(sql)
    assert info.value.position == SqlPosition(1, sql.index(at, 43) + 1)


def test_merge_insert_column_value_count_mismatch():
    with pytest.raises(ParseError, match="2 columns but 1 values"):
        parse("MERGE INTO cat.db.t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (a, b) VALUES (1)")


# ---- CALL / EXPLAIN / queries -------------------------------------------------------------

def test_call_positional_and_named_literals():
    assert parse("CALL cat.system.rollback_to_snapshot('db.t', 123)") == \
        Call("cat", ("system",), "rollback_to_snapshot", ("db.t", 123), {})
    stmt = parse("CALL cat.system.proc(a => 1, b => 'x', c => array(1, 2), d => map('k', 'v'), "
                 "e => TIMESTAMP '2024-01-01 10:00:00', f => -5, g => 1.5, h => true, i => NULL, j => 2.5BD)")
    assert stmt.named == {"a": 1, "b": "x", "c": [1, 2], "d": {"k": "v"},
                          "e": datetime.datetime(2024, 1, 1, 10), "f": -5, "g": 1.5, "h": True, "i": None,
                          "j": Decimal("2.5")}
    assert parse("CALL system.expire_snapshots(table => 'db.t')", default="local") == \
        Call("local", ("system",), "expire_snapshots", (), {"table": "db.t"})


def test_call_non_literal_argument():
    with pytest.raises(ParseError, match="expected a literal"):
        parse("CALL cat.system.proc(a => x + 1)")


def test_explain():
    stmt = parse("EXPLAIN MERGE INTO cat.db.t USING s ON t.id = s.id WHEN MATCHED THEN DELETE")
    assert isinstance(stmt, Explain) and isinstance(stmt.statement, Merge)
    stmt = parse("EXPLAIN EXTENDED SELECT * FROM cat.db.t")
    assert stmt.mode == "EXTENDED" and isinstance(stmt.statement, Query)
    assert parse("EXPLAIN SELECT 1") == PassThrough("EXPLAIN SELECT 1")


def test_query_time_travel():
    stmt = parse("SELECT * FROM cat.db.t VERSION AS OF 123 a JOIN cat.db.u FOR SYSTEM_TIME AS OF '2024-01-01' "
                 "ON 1 = 1 JOIN cat.db.v TIMESTAMP AS OF '2024-02-01 00:00:00' ON 1 = 1 "
                 "JOIN cat.db.w FOR SYSTEM_VERSION AS OF 7 ON 1 = 1 JOIN cat.db.x VERSION AS OF 'tag1' ON 1 = 1")
    assert isinstance(stmt, Query)
    assert stmt.tables == (
        ref("cat.db.t", alias="a", snapshot_id=123), ref("cat.db.u", as_of_timestamp="2024-01-01"),
        ref("cat.db.v", as_of_timestamp="2024-02-01 00:00:00"), ref("cat.db.w", snapshot_id=7),
        ref("cat.db.x", ref="tag1"),
    )


def test_metadata_tables():
    stmt = parse("SELECT * FROM db.t.snapshots JOIN cat.db.t.files ON 1 = 1", default="local")
    assert stmt.tables == (ref("local.db.t", metadata_table="snapshots"), ref("cat.db.t", metadata_table="files"))
    assert parse("SELECT * FROM cat.a.b.t.history").tables == (
        TableRef("cat", ("a", "b"), "t", metadata_table="history"),)


def test_query_table_positions():
    stmt = parse("SELECT *\n  FROM cat.db.t", start=SqlPosition(4, 3))
    assert stmt.tables[0].position == SqlPosition(5, 8)
    assert position_of(stmt.expression.find(exp.Star)) == SqlPosition(4, 10)


def test_replace_tables_by_views():
    stmt = parse("SELECT db.t.a, t.b, x.c FROM db.t JOIN cat.db.u x ON t.id = x.id "
                 "WHERE t.z IN (SELECT z FROM cat.db.t VERSION AS OF 5)", default="local")
    views = {ref("local.db.t"): "v1", ref("cat.db.u", alias="x"): "v2", ref("cat.db.t", snapshot_id=5): "v3"}
    assert set(stmt.tables) == set(views)
    out = replace_tables(stmt.expression, views.__getitem__)
    assert sql_of(out) == ("SELECT t.a, t.b, x.c FROM v1 AS t JOIN v2 AS x ON t.id = x.id "
                           "WHERE t.z IN (SELECT z FROM v3 AS t)")
    assert "db.t.a" in sql_of(stmt.expression)  # the original is untouched


def test_statement_writing_spark_table_from_pyice_table_is_a_query():
    stmt = parse("INSERT INTO spark_t SELECT * FROM cat.db.t")
    assert isinstance(stmt, Query) and isinstance(stmt.expression, exp.Insert)
    assert stmt.tables == (T,)
    stmt = parse("CREATE TEMP VIEW v AS SELECT * FROM cat.db.t")
    assert isinstance(stmt, Query) and stmt.tables == (T,)


def test_other_statements_on_pyice_tables_are_unsupported():
    with pytest.raises(UnsupportedError, match="TRUNCATE"):
        parse("TRUNCATE TABLE cat.db.t")
    with pytest.raises(UnsupportedError, match="SHOW"):
        parse("SHOW TBLPROPERTIES cat.db.t")
    with pytest.raises(UnsupportedError, match="view"):
        parse("CREATE VIEW cat.db.v AS SELECT 1")


# ---- pass-through ---------------------------------------------------------------------------

@pytest.mark.parametrize("sql", [
    "SELECT * FROM t",
    "SELECT * FROM db.t JOIN spark_catalog.db.u ON 1 = 1",
    "INSERT INTO db.t VALUES (1)",
    "MERGE INTO db.t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
    "UPDATE db.t SET a = 1",
    "DELETE FROM db.t WHERE a = 1",
    "CREATE TABLE db.t (a INT) USING parquet",
    "DROP TABLE db.t",
    "ALTER TABLE db.t ADD COLUMN x INT",
    "CREATE TEMP VIEW v AS SELECT 1",
    "CREATE OR REPLACE TEMPORARY VIEW v AS SELECT * FROM range(10)",
    "SET spark.sql.shuffle.partitions = 4",
    "SET x",
    "CREATE FUNCTION f AS 'com.example.F'",
    "SELECT my_udf(a), explode(b) FROM v",
    "CACHE TABLE c AS SELECT 1",
    "ADD JAR /tmp/x.jar",
    "SHOW FUNCTIONS",
    "SHOW TABLES",
    "DESCRIBE FUNCTION upper",
    "CALL other.system.proc(1)",
    "EXPLAIN SELECT * FROM db.t",
    "SELECT * FROM t WHERE",  # broken, but Spark's to report: nothing pyice in it
])
def test_pass_through_with_spark_default_catalog(sql):
    assert parse(sql) == PassThrough(sql)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM v",  # a temp view
    "WITH x AS (SELECT 1 AS a) SELECT * FROM x",
    "SELECT * FROM range(10)",
    "SELECT * FROM parquet.`/data/file.parquet`",
    "SELECT * FROM spark_catalog.db.t",
    "SELECT * FROM other.db.t",
    "INSERT INTO spark_catalog.db.t SELECT * FROM v",
    "SET spark.sql.shuffle.partitions = 4",
    "SELECT 1",
])
def test_pass_through_with_pyice_default_catalog(sql):
    assert parse(sql, default="local", is_temp_view=lambda name: name == "v") == PassThrough(sql)


# ---- syntax error positions -----------------------------------------------------------------

@pytest.mark.parametrize("sql, position, near", [
    ("SELECT *\nFROM cat.db.t\nWHERE x = = 1", SqlPosition(3, 11), "="),
    ("SELECT * FROM cat.db.t WHERE", SqlPosition(1, 24), "WHERE"),
    ("MERGE INTO cat.db.t USING s ON t.id = s.id\n  WHEN MATCHED THEN FOO", SqlPosition(2, 21), "FOO"),
    ("ALTER TABLE cat.db.t ADD PARTITION FIELD bucket(16, id) AS", SqlPosition(1, 57), "AS"),
])
def test_syntax_error_positions(sql, position, near):
    with pytest.raises(ParseError) as info:
        parse(sql)
    assert info.value.position == position
    assert f"'{near}'" in str(info.value)
    assert info.value.sql == sql


def test_syntax_error_position_is_in_the_script():
    with pytest.raises(ParseError) as info:
        parse("SELECT * FROM t WHERE (", default="local", start=SqlPosition(7, 4))
    assert info.value.position == SqlPosition(7, 26)
    assert str(info.value).endswith("(line 7, column 26)")


def test_broken_statement_in_pyice_default_catalog_is_our_error():
    with pytest.raises(ParseError):
        parse("SELECT * FROM t WHERE", default="local")


def test_more_than_one_statement():
    with pytest.raises(ParseError, match="exactly one statement"):
        parse("SELECT * FROM cat.db.t; SELECT 1")


# ---- scripts --------------------------------------------------------------------------------

def test_split_script_with_quotes_and_comments():
    script = (
        "-- leading comment; not a statement\n"
        "SELECT 'a;b', \"c;d\", `e;f` FROM t; /* block ; comment */\n"
        "  INSERT INTO t VALUES ('it\\'s;'); -- trailing; comment\n"
        "/* nested /* ; */ still comment ; */ SELECT 2\n"
        ";;\n"
    )
    parts = split_script(script)
    assert [p.sql for p in parts] == [
        "SELECT 'a;b', \"c;d\", `e;f` FROM t",
        "INSERT INTO t VALUES ('it\\'s;')",
        "SELECT 2",
    ]
    assert [p.position for p in parts] == [SqlPosition(2, 1), SqlPosition(3, 3), SqlPosition(4, 38)]


def test_split_script_raw_string_has_no_escapes():
    parts = split_script("SELECT r'a\\'; SELECT 2")
    assert [p.sql for p in parts] == ["SELECT r'a\\'", "SELECT 2"]


def test_split_script_keeps_comment_inside_statement_and_drops_empty():
    parts = split_script("SELECT 1 -- one\n, 2;\n\n   ;  -- only a comment\n")
    assert [p.sql for p in parts] == ["SELECT 1 -- one\n, 2"]


@pytest.mark.parametrize("script, message, position", [
    ("SELECT 1;\nSELECT 'abc", "unterminated string literal", SqlPosition(2, 8)),
    ("SELECT `abc", "unterminated quoted identifier", SqlPosition(1, 8)),
    ("SELECT 1 /* open /* nested */", "unterminated comment", SqlPosition(1, 10)),
])
def test_split_script_unterminated(script, message, position):
    with pytest.raises(ParseError, match=message) as info:
        split_script(script)
    assert info.value.position == position


def test_split_then_parse_reports_script_positions():
    script = "SELECT 1;\n\nSELECT *\n  FROM cat.db.t WHERE ("
    stmt = split_script(script)[1]
    with pytest.raises(ParseError) as info:
        parse(stmt.sql, start=stmt.position)
    assert info.value.position == SqlPosition(4, 23)


def test_substitute_variables():
    sql = "SELECT * FROM ${db}.t WHERE d = '${day}' -- ${not_substituted}"
    assert substitute_variables(sql, {"db": "cat.db", "day": "2024-01-01"}) == \
        "SELECT * FROM cat.db.t WHERE d = '2024-01-01' -- ${not_substituted}"


def test_substitute_missing_variable_names_it():
    with pytest.raises(ParseError, match="undefined variable 'missing'") as info:
        substitute_variables("SELECT 1,\n  ${missing}", {}, origin=SqlPosition(3, 1))
    assert info.value.position == SqlPosition(4, 3)


def test_bind_parameters_quotes_values():
    sql = bind_parameters("SELECT * FROM t WHERE a = :a AND b = :b AND c IN (:c) AND d = :d",
                          {"a": "x", "b": 3, "c": [1, 2], "d": None})
    assert sql == "SELECT * FROM t WHERE a = 'x' AND b = 3 AND c IN (array(1, 2)) AND d = NULL"


def test_bind_parameters_leaves_strings_comments_and_unknown_markers():
    sql = "SELECT ':a', `:a`, x:y, CAST(NULL AS STRUCT<f:INT>), :unknown -- :a\nFROM t WHERE v = :a"
    assert bind_parameters(sql, {"a": 1, "y": 2, "f": 3}) == \
        "SELECT ':a', `:a`, x:y, CAST(NULL AS STRUCT<f:INT>), :unknown -- :a\nFROM t WHERE v = 1"


@pytest.mark.parametrize("value", [
    "'; DROP TABLE x; --",
    "\\'; DROP TABLE x; --",
    "it's",
    "back\\slash\\",
    "line\nbreak /* not a comment */ -- nor this",
    '"double" `tick` ${var} :param',
])
def test_bound_string_parameter_cannot_inject(value):
    script = bind_parameters("DELETE FROM cat.db.t WHERE name = :name", {"name": value})
    statements = split_script(script)
    assert len(statements) == 1
    stmt = parse(statements[0].sql)
    assert isinstance(stmt, Delete)
    assert stmt.where == exp.EQ(this=exp.column("name"), expression=exp.Literal.string(value))


@pytest.mark.parametrize("value, literal", [
    (True, "TRUE"), (1.5, "1.5D"), (float("nan"), "CAST('NaN' AS DOUBLE)"), (Decimal("1E+2"), "100BD"),
    (datetime.datetime(2024, 1, 2, 3, 4, 5), "TIMESTAMP '2024-01-02 03:04:05'"),
    (datetime.date(2024, 1, 2), "DATE '2024-01-02'"), (b"\x00\xff", "X'00ff'"), ({"k": 1}, "map('k', 1)"),
])
def test_sql_literal(value, literal):
    assert sql_literal(value) == literal


def test_sql_literal_rejects_unknown_types():
    with pytest.raises(UnsupportedError):
        sql_literal(object())
