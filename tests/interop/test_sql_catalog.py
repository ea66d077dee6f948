"""The SQLite catalog (`catalog_type="sql"`) is shared with PyIceberg's SqlCatalog both ways.

  - a table pyice creates and writes there is loaded by
    `pyiceberg.catalog.sql.SqlCatalog("local", uri="sqlite:///<warehouse>/catalog.db", ...)`
    and scanned (fully and with a row filter) with our rows;
  - a table PyIceberg creates and appends to there is read by pyice with PyIceberg's rows; then
    pyice appends and PyIceberg, reloading through the catalog, sees that commit, and vice versa.
"""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from tests.interop.engines import assert_same_rows, ice_rows, sort_rows

pytestmark = pytest.mark.interop


@pytest.fixture
def catalogs(spark, tmp_path):
    import pyice_sql
    from pyiceberg.catalog.sql import SqlCatalog

    warehouse = str(tmp_path / "warehouse")
    ice = pyice_sql.connect(spark, warehouse=warehouse, catalog_type="sql")
    ice.sql("CREATE DATABASE local.db")
    peer = SqlCatalog("local", uri=f"sqlite:///{warehouse}/catalog.db", warehouse=f"file://{warehouse}")
    return ice, peer


def _scan(peer, name: str, row_filter=None) -> list:
    table = peer.load_table(name)
    scan = table.scan(row_filter=row_filter) if row_filter is not None else table.scan()
    return sort_rows(list(r.values()) for r in scan.to_arrow().to_pylist())


def test_pyiceberg_reads_our_sql_catalog_table(catalogs):
    ice, peer = catalogs
    ice.sql("""CREATE TABLE local.db.t (id bigint, s string, ts timestamp, d decimal(10,2), tags struct<k: string>)
               USING iceberg PARTITIONED BY (bucket(4, id), days(ts))""")
    ice.sql("INSERT INTO local.db.t VALUES (1, 'a', TIMESTAMP'2024-01-01 10:00:00', 1.50, named_struct('k', 'x')), "
            "(2, NULL, NULL, NULL, NULL)")
    ice.sql("INSERT INTO local.db.t VALUES (3, 'c', TIMESTAMP'2024-01-02 10:00:00', -3.25, named_struct('k', NULL))")
    ice.sql("ALTER TABLE local.db.t ADD COLUMN extra int")
    ice.sql("INSERT INTO local.db.t VALUES (4, 'd', TIMESTAMP'2024-01-03 00:00:00', 4.00, NULL, 44)")
    ours = ice_rows(ice.sql("SELECT * FROM local.db.t"))
    assert len(ours) == 4
    assert ("db",) in peer.list_namespaces() and ("db", "t") in peer.list_tables("db")
    assert_same_rows(ours, _scan(peer, "db.t"), "PyIceberg's SqlCatalog scan of our table")
    assert_same_rows([r for r in ours if r[0] == 3], _scan(peer, "db.t", "id = 3"),
                     "PyIceberg's filtered scan (id = 3) of our table")
    assert_same_rows([r for r in ours if r[1] in ("a", "c")], _scan(peer, "db.t", "s IN ('a', 'c')"),
                     "PyIceberg's filtered scan (s IN ('a', 'c')) of our table")


def test_we_read_pyiceberg_sql_catalog_table(catalogs):
    import pyarrow as pa
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import (
        DecimalType, DoubleType, LongType, NestedField, StringType, TimestampType, TimestamptzType,
    )

    ice, peer = catalogs
    schema = Schema(
        NestedField(1, "id", LongType(), required=False), NestedField(2, "cat", StringType(), required=False),
        NestedField(3, "ts", TimestamptzType(), required=False), NestedField(4, "ntz", TimestampType(), required=False),
        NestedField(5, "amount", DecimalType(10, 2), required=False), NestedField(6, "x", DoubleType(), required=False))
    # identity only: PyIceberg's writer needs the optional pyiceberg-core package for other transforms
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "cat"))
    table = peer.create_table("db.py", schema=schema, partition_spec=spec)
    utc = dt.timezone.utc
    arrow_schema = schema.as_arrow()

    def batch(rows):
        cols = list(zip(*rows))
        return pa.Table.from_arrays([pa.array(c, type=f.type) for c, f in zip(cols, arrow_schema)], schema=arrow_schema)

    table.append(batch([(1, "a", dt.datetime(2024, 1, 1, 10, tzinfo=utc), dt.datetime(2024, 1, 1, 10),
                         Decimal("1.50"), 0.5),
                        (2, None, None, None, None, None)]))
    table.append(batch([(3, "b", dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=utc),
                         dt.datetime(2000, 2, 29, 12), Decimal("-7.25"), float("inf"))]))
    theirs = _scan(peer, "db.py")
    assert len(theirs) == 3
    assert_same_rows(theirs, ice_rows(ice.sql("SELECT * FROM local.db.py")), "pyice reading PyIceberg's table")
    assert_same_rows([r for r in theirs if r[1] == "b"], ice_rows(ice.sql("SELECT * FROM local.db.py WHERE cat = 'b'")),
                     "pyice's pruned read of PyIceberg's table")
    # commits alternate through the shared catalog
    ice.sql("INSERT INTO local.db.py VALUES (4, 'a', TIMESTAMP'2024-02-02 00:00:00', TIMESTAMP_NTZ'2024-02-02 00:00:00', "
            "4.00, -1.0)")
    after_ours = _scan(peer, "db.py")
    assert len(after_ours) == 4
    assert_same_rows(after_ours, ice_rows(ice.sql("SELECT * FROM local.db.py")), "PyIceberg after pyice's append")
    peer.load_table("db.py").append(batch([(5, "c", None, None, Decimal("5.55"), None)]))
    assert_same_rows(_scan(peer, "db.py"), ice_rows(ice.sql("SELECT * FROM local.db.py")),
                     "pyice after PyIceberg's append on top of ours")
