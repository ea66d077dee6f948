"""Temp views and caches over pyice tables outlive the statement that made them and follow the
table's changes, as over Iceberg tables in Spark (whose DML refreshes cached relations).
Expected rows are computed by hand from the statements."""
from __future__ import annotations

import re

import pytest

from pyice_sql.core.errors import AnalysisError

pytestmark = pytest.mark.spark

MOR = ("TBLPROPERTIES ('write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read')")


def rows(ice, sql):
    return sorted(tuple(r) for r in ice.sql(sql).collect())


def cached(ice, name):
    return ice.spark.catalog.isCached(name)


@pytest.fixture(params=["copy-on-write", "merge-on-read"])
def table(request, ice):
    ice.sql("CREATE DATABASE local.db")
    props = MOR if request.param == "merge-on-read" else ""
    ice.sql(f"CREATE TABLE local.db.t (id int, s string) USING iceberg PARTITIONED BY (bucket(2, id)) {props}")
    ice.sql("INSERT INTO local.db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    yield "local.db.t"
    for view in ("v", "w", "c"):
        ice.spark.catalog.dropTempView(view)
    ice.spark.catalog.clearCache()


def test_temp_view_follows_merge_update_delete(ice, table):
    ice.sql(f"CREATE TEMP VIEW v AS SELECT id, upper(s) AS s FROM {table} WHERE id > 1")
    assert rows(ice, "SELECT * FROM v") == [(2, "B"), (3, "C")]
    ice.sql(f"UPDATE {table} SET s = 'x' WHERE id = 2")
    assert rows(ice, "SELECT * FROM v") == [(2, "X"), (3, "C")]
    ice.sql(f"DELETE FROM {table} WHERE id = 3")
    assert rows(ice, "SELECT * FROM v") == [(2, "X")]
    ice.sql(f"MERGE INTO {table} t USING (SELECT 4 AS id, 'd' AS s UNION ALL SELECT 1, 'z') u ON t.id = u.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    assert rows(ice, "SELECT * FROM v") == [(2, "X"), (4, "D")]
    assert rows(ice, "SELECT * FROM v JOIN local.db.t t ON v.id = t.id") == [(2, "X", 2, "x"), (4, "D", 4, "d")]
    ice.sql(f"INSERT INTO {table} VALUES (5, 'e')")
    ice.sql("CREATE OR REPLACE TEMP VIEW w AS SELECT count(*) AS n FROM v")  # a view over the view
    assert rows(ice, "SELECT * FROM w") == [(3,)]


def test_cache_table_is_used_and_refreshed_by_dml(ice, table):
    ice.sql(f"CACHE TABLE {table}")
    assert rows(ice, f"SELECT * FROM {table}") == [(1, "a"), (2, "b"), (3, "c")]
    plan = ice.sql(f"SELECT * FROM {table}")._jdf.queryExecution().optimizedPlan().toString()
    assert "InMemoryRelation" in plan  # reads come from the cache
    ice.sql(f"DELETE FROM {table} WHERE id = 1")
    assert rows(ice, f"SELECT * FROM {table}") == [(2, "b"), (3, "c")]
    assert "InMemoryRelation" in ice.sql(f"SELECT * FROM {table}")._jdf.queryExecution().optimizedPlan().toString()
    ice.sql(f"UNCACHE TABLE {table}")
    assert "InMemoryRelation" not in ice.sql(f"SELECT * FROM {table}")._jdf.queryExecution().optimizedPlan().toString()
    ice.sql(f"UNCACHE TABLE IF EXISTS {table}")  # uncaching twice is fine, as in Spark
    assert rows(ice, f"SELECT * FROM {table}") == [(2, "b"), (3, "c")]


def test_cached_views_over_the_table_are_refreshed_and_stay_cached(ice, table):
    ice.sql(f"CREATE TEMP VIEW v AS SELECT * FROM {table} WHERE s <> 'a'")
    ice.sql("CREATE TEMP VIEW w AS SELECT count(*) AS n FROM v")
    ice.sql("CACHE TABLE w")
    ice.sql(f"CACHE LAZY TABLE c OPTIONS ('storageLevel' 'DISK_ONLY') AS SELECT max(id) AS m FROM {table}")
    assert rows(ice, "SELECT * FROM w") == [(2,)]
    assert rows(ice, "SELECT * FROM c") == [(3,)]
    ice.sql(f"MERGE INTO {table} t USING (SELECT 7 AS id, 'g' AS s) u ON t.id = u.id WHEN NOT MATCHED THEN INSERT *")
    assert cached(ice, "w") and cached(ice, "c") and not cached(ice, "v")
    assert rows(ice, "SELECT * FROM w") == [(3,)]
    assert rows(ice, "SELECT * FROM c") == [(7,)]
    level = ice.spark.table("c").storageLevel
    assert level.useDisk and not level.useMemory  # the storage level the user chose is kept
    ice.sql("UNCACHE TABLE w")
    assert not cached(ice, "w")


def test_views_after_drop_name_the_table_not_an_internal_view(ice, table):
    ice.sql(f"CREATE TEMP VIEW v AS SELECT * FROM {table}")
    ice.sql(f"DROP TABLE {table}")
    with pytest.raises(AnalysisError) as e:
        ice.sql("SELECT * FROM v").collect()
    assert "local.db.t" in str(e.value) and "__pyice" not in str(e.value)


def test_unresolved_column_suggestions_hide_internal_columns(ice, table):
    for sql in (f"UPDATE {table} SET s = nope", f"DELETE FROM {table} WHERE nope = 1",
                f"MERGE INTO {table} t USING (SELECT 1 AS id) u ON t.id = u.id WHEN MATCHED THEN UPDATE SET t.s = nope"):
        with pytest.raises(AnalysisError) as e:
            ice.sql(sql)
        message = str(e.value)
        assert "UNRESOLVED_COLUMN" in message and "`s`" in message, message
        for internal in ("_pos", "_file", "_spec_id", "_partition", "__"):
            assert f"`{internal}" not in message, message


def test_a_users_cached_frame_of_a_table_stays_cached(ice, table):
    """Statements that read a table through views of their own leave a frame the user cached over
    the same table cached (Spark's dropTempView uncaches every cached plan equal to the view's)."""
    frame = ice.table(table)
    frame.cache()
    assert frame.count() == 3
    assert rows(ice, f"SELECT * FROM {table}") == [(1, "a"), (2, "b"), (3, "c")]
    ice.sql("CREATE TABLE local.db.u (id int, s string) USING iceberg")
    ice.sql(f"MERGE INTO local.db.u x USING {table} y ON x.id = y.id WHEN NOT MATCHED THEN INSERT *")
    assert rows(ice, "SELECT * FROM local.db.u") == [(1, "a"), (2, "b"), (3, "c")]
    assert frame.storageLevel.useMemory or frame.storageLevel.useDisk
    # a statement's own views are gone (live relations, `__pyice_table_<n>`, outlive it by design)
    assert not [t.name for t in ice.spark.catalog.listTables() if re.fullmatch(r"__pyice_(dml_)?\d+", t.name)]
    frame.unpersist()
