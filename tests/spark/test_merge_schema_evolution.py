"""MERGE WITH SCHEMA EVOLUTION, in copy-on-write and merge-on-read.

The reference engine (Spark 3.5) has no such statement, so the expected rows are those of Spark
4.1's own MergeIntoSchemaEvolutionTests (the same target, source and clauses), computed by hand:
new source columns that `SET col = s.col`, `INSERT (.., col)`, `UPDATE SET *` or `INSERT *`
write are added to the target; existing rows read NULL for them; with `*`, a target column the
source lacks keeps its value (UPDATE) or is NULL (INSERT). The schema change and the rows land
in one metadata commit. PyIceberg and DuckDB read an evolved table.
"""
from __future__ import annotations

import pytest

from pyice_sql.core.catalog.base import TableIdentifier
from pyice_sql.core.errors import AnalysisError, UnsupportedError
from tests.interop.engines import assert_peers_read, ice_rows

pytestmark = pytest.mark.spark

MODES = ("copy-on-write", "merge-on-read")
TARGET = [(1, 100, "hr"), (2, 200, "software"), (3, 300, "hr"), (4, 400, "marketing"), (5, 500, "executive")]


def _table(ice, name: str, mode: str) -> str:
    table = f"local.db.{name}_{mode[:3]}"
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE {table} (pk int, salary int, dep string) USING iceberg PARTITIONED BY (dep) "
            f"TBLPROPERTIES ('write.merge.mode'='{mode}', 'format-version'='2')")
    ice.sql(f"INSERT INTO {table} VALUES " + ", ".join(f"({a}, {b}, '{c}')" for a, b, c in TARGET))
    return table


def _source(ice, rows, schema: str) -> None:
    ice.spark.createDataFrame(rows, schema).createOrReplaceTempView("src")


def _metadata(ice, table: str):
    return ice.catalogs["local"].load_table(TableIdentifier(("db",), table.split(".")[-1])).metadata


@pytest.mark.parametrize("mode", MODES)
def test_explicit_assignments_add_the_source_column_in_the_merge_commit(ice, mode):
    table = _table(ice, "explicit", mode)
    _source(ice, [(4, 150, "dummy", True), (5, 250, "dummy", True), (6, 350, "dummy", False)],
            "pk int, salary int, dep string, active boolean")
    before = _metadata(ice, table)
    ice.sql(f"MERGE WITH SCHEMA EVOLUTION INTO {table} t USING src s ON t.pk = s.pk "
            "WHEN MATCHED THEN UPDATE SET dep = 'software', active = s.active "
            "WHEN NOT MATCHED THEN INSERT (pk, salary, dep, active) VALUES (s.pk, 0, s.dep, s.active)")
    assert ice_rows(ice.sql(f"SELECT * FROM {table}")) == [
        [1, 100, "hr", None], [2, 200, "software", None], [3, 300, "hr", None], [4, 400, "software", True],
        [5, 500, "software", True], [6, 0, "dummy", False]]
    after = _metadata(ice, table)
    assert [f.name for f in after.schema().fields] == ["pk", "salary", "dep", "active"]
    assert not after.schema().find_field("active").required
    # one commit: the metadata log grew by one file, whose snapshot was written with the new schema
    assert len(after.metadata_log) == len(before.metadata_log) + 1
    assert after.current_snapshot().schema_id == after.current_schema_id != before.current_schema_id


@pytest.mark.parametrize("mode", MODES)
def test_conditions_may_read_the_new_column_of_the_target(ice, mode):
    table = _table(ice, "cond", mode)
    _source(ice, [(4, 450, "finance", True), (5, 550, "finance", False), (6, 350, "sales", True),
                  (7, 250, "sales", False)], "pk int, salary int, dep string, active boolean")
    ice.sql(f"MERGE WITH SCHEMA EVOLUTION INTO {table} t USING src s ON t.pk = s.pk "
            "WHEN MATCHED AND t.active IS NULL AND s.salary > 450 THEN UPDATE SET salary = s.salary, active = s.active "
            "WHEN NOT MATCHED AND s.active = true THEN INSERT (pk, salary, dep, active) "
            "VALUES (s.pk, s.salary, s.dep, s.active)")
    assert ice_rows(ice.sql(f"SELECT * FROM {table}")) == [
        [1, 100, "hr", None], [2, 200, "software", None], [3, 300, "hr", None], [4, 400, "marketing", None],
        [5, 550, "executive", False], [6, 350, "sales", True]]


@pytest.mark.parametrize("mode", MODES)
def test_star_actions_copy_what_the_source_has(ice, mode, tmp_path):
    table = _table(ice, "star", mode)
    _source(ice, [(4, 150, True), (5, 250, True), (6, 350, False)], "pk int, salary int, active boolean")
    ice.sql(f"MERGE WITH SCHEMA EVOLUTION INTO {table} t USING src s ON t.pk = s.pk "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    expected = [[1, 100, "hr", None], [2, 200, "software", None], [3, 300, "hr", None],
                [4, 150, "marketing", True], [5, 250, "executive", True], [6, 350, None, False]]
    assert ice_rows(ice.sql(f"SELECT * FROM {table}")) == expected
    if mode == "merge-on-read":
        assert_peers_read(_metadata(ice, table).location.replace("file://", ""), expected)


def test_without_the_clause_a_new_column_is_an_error_and_nothing_commits(ice):
    table = _table(ice, "plain", "merge-on-read")
    _source(ice, [(4, 150, "x", True)], "pk int, salary int, dep string, active boolean")
    before = _metadata(ice, table)
    with pytest.raises(AnalysisError, match="active"):
        ice.sql(f"MERGE INTO {table} t USING src s ON t.pk = s.pk WHEN MATCHED THEN UPDATE SET active = s.active")
    assert _metadata(ice, table).metadata_log == before.metadata_log


def test_a_new_nested_field_is_refused_by_name_and_nothing_commits(ice):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql("CREATE TABLE local.db.nested (pk int, s struct<c1: int>) USING iceberg")
    ice.sql("INSERT INTO local.db.nested VALUES (1, named_struct('c1', 1))")
    ice.spark.sql("SELECT 1 AS pk, named_struct('c1', 2, 'c3', true) AS s").createOrReplaceTempView("src")
    before = _metadata(ice, "local.db.nested")
    with pytest.raises(UnsupportedError, match=r"nested field s\.c3"):
        ice.sql("MERGE WITH SCHEMA EVOLUTION INTO local.db.nested t USING src ON t.pk = src.pk "
                "WHEN MATCHED THEN UPDATE SET *")
    assert _metadata(ice, "local.db.nested").metadata_log == before.metadata_log
