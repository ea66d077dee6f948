"""ALTER TABLE ... SET / DROP IDENTIFIER FIELDS (Iceberg's Spark extensions), checked in the
metadata JSON itself (the schema's identifier-field-ids), not through pyice's own model."""
from __future__ import annotations

import glob
import json
import os

import pytest

from pyice_sql.core.errors import AnalysisError

pytestmark = pytest.mark.spark


@pytest.fixture
def table(ice):
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.orders (order_id int NOT NULL, amount double NOT NULL, note string, "
            "s struct<x: bigint NOT NULL> NOT NULL) USING iceberg")
    return "local.db.orders"


def current_schema(warehouse):
    latest = max(glob.glob(os.path.join(warehouse, "db", "orders", "metadata", "v*.metadata.json")),
                 key=lambda p: int(os.path.basename(p)[1:].split(".")[0]))
    with open(latest) as f:
        md = json.load(f)
    return next(s for s in md["schemas"] if s["schema-id"] == md["current-schema-id"])


def test_set_and_drop_identifier_fields(ice, table, warehouse):
    ice.sql(f"ALTER TABLE {table} SET IDENTIFIER FIELDS order_id")
    schema = current_schema(warehouse)
    assert schema["identifier-field-ids"] == [1] and schema["schema-id"] == 1
    described = {r.col_name: r.data_type for r in ice.sql(f"DESCRIBE EXTENDED {table}").collect()}
    assert described["Identifier fields"] == "[order_id]"
    ice.sql(f"ALTER TABLE {table} SET IDENTIFIER FIELDS order_id, s.x")  # SET replaces the whole set
    x_id = next(f for f in schema["fields"] if f["name"] == "s")["type"]["fields"][0]["id"]
    assert current_schema(warehouse)["identifier-field-ids"] == [1, x_id]
    ice.sql(f"ALTER TABLE {table} DROP IDENTIFIER FIELDS order_id")
    assert current_schema(warehouse)["identifier-field-ids"] == [x_id]
    with pytest.raises(AnalysisError, match="cannot drop identifier field 's.x'"):
        ice.sql(f"ALTER TABLE {table} DROP COLUMN s")
    ice.sql(f"ALTER TABLE {table} DROP IDENTIFIER FIELDS s.x")
    assert not current_schema(warehouse).get("identifier-field-ids")


@pytest.mark.parametrize("ddl, message", [
    ("SET IDENTIFIER FIELDS note", "identifier field 'note' must be NOT NULL"),
    ("SET IDENTIFIER FIELDS amount", "identifier field 'amount' must be a primitive type other than float and double"),
    ("SET IDENTIFIER FIELDS nope", "cannot set identifier field 'nope': no such column"),
    ("DROP IDENTIFIER FIELDS order_id", "cannot drop identifier field 'order_id': it is not an identifier field"),
])
def test_identifier_field_rules(ice, table, warehouse, ddl, message):
    with pytest.raises(AnalysisError, match=message):
        ice.sql(f"ALTER TABLE {table} {ddl}")
    assert not current_schema(warehouse).get("identifier-field-ids")
