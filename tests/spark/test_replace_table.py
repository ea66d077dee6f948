"""CREATE OR REPLACE TABLE keeps the table's identity and history and swaps schema, spec and rows
in one commit (expected values checked against Iceberg Java 1.10 running the same statements)."""
from __future__ import annotations

import pytest

from pyice_sql.core.catalog.base import TableIdentifier

pytestmark = pytest.mark.spark


def metadata(ice, name):
    table = ice.load("local", TableIdentifier.parse(name))
    return table.metadata


def test_replace_as_select_keeps_history_and_reuses_column_ids(ice):
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, s string, x int) USING iceberg PARTITIONED BY (s) "
            "TBLPROPERTIES ('a'='1')")
    ice.sql("INSERT INTO local.db.t VALUES (1, 'a', 1), (2, 'b', 2)")
    before = metadata(ice, "db.t")
    ice.sql("CREATE OR REPLACE TABLE local.db.t USING iceberg PARTITIONED BY (bucket(2, id)) "
            "TBLPROPERTIES ('b'='2') AS SELECT id, CAST(x AS string) AS x, 'n' AS y FROM local.db.t")
    after = metadata(ice, "db.t")
    assert after.table_uuid == before.table_uuid and after.location == before.location
    # same-named columns keep their ids (id 1, x 3); the new column takes the next id after last-column-id
    assert [(f.name, f.field_id, str(f.type)) for f in after.schema().fields] == \
        [("id", 1, "long"), ("x", 3, "string"), ("y", 4, "string")]
    assert [(str(f.transform), f.field_id) for f in after.spec().fields] == [("bucket[2]", 1001)]
    assert after.properties["a"] == "1" and after.properties["b"] == "2"
    # one new snapshot, no parent, holding only the replacement's rows; the old snapshot stays in history
    assert len(after.snapshots) == 2
    new = after.current_snapshot()
    assert new.parent_snapshot_id is None and new.summary["operation"] == "overwrite"  # as Iceberg Java
    assert new.summary["total-records"] == "2"
    got = sorted(tuple(r) for r in ice.sql("SELECT * FROM local.db.t").collect())
    assert got == [(1, "1", "n"), (2, "2", "n")]
    old = before.current_snapshot().snapshot_id
    assert sorted(tuple(r) for r in ice.sql(f"SELECT id FROM local.db.t VERSION AS OF {old}").collect()) == [(1,), (2,)]


def test_replace_with_columns_only_leaves_an_empty_table(ice):
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.e (id bigint) USING iceberg")
    ice.sql("INSERT INTO local.db.e VALUES (1)")
    ice.sql("CREATE OR REPLACE TABLE local.db.e (id bigint, note string) USING iceberg")
    md = metadata(ice, "db.e")
    assert md.current_snapshot() is None and len(md.snapshots) == 1
    assert ice.sql("SELECT * FROM local.db.e").count() == 0
    assert ice.sql("SELECT * FROM local.db.e").columns == ["id", "note"]
