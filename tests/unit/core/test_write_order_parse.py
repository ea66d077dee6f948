"""Parsing of Iceberg's write-order DDL and of SET TBLPROPERTIES without `=` (hand-written expectations)."""
from __future__ import annotations

import pytest

from pyice_sql.core.errors import ParseError
from pyice_sql.core.model.sort_order import ASC, DESC, NULLS_FIRST, NULLS_LAST
from pyice_sql.core.sql import statements as st
from pyice_sql.core.sql.write_order import SetWriteOrder, SortTerm, parse


def ours(sql):
    return parse(sql, lambda c: c == "local", "local")


def test_ordered_by_terms_directions_and_nulls():
    s = ours("ALTER TABLE local.db.t WRITE ORDERED BY id DESC, bucket(16, `a b`) NULLS LAST, truncate(s, 4) ASC, "
             "days(ts) DESC NULLS FIRST;")
    assert isinstance(s, SetWriteOrder) and s.distribution_mode == "range"
    assert (s.table.catalog, s.table.namespace, s.table.name) == ("local", ("db",), "t")
    assert s.order == (
        SortTerm(st.PartitionTransform("identity", "id"), DESC, NULLS_LAST),
        SortTerm(st.PartitionTransform("bucket", "a b", 16), ASC, NULLS_LAST),
        SortTerm(st.PartitionTransform("truncate", "s", 4), ASC, NULLS_FIRST),
        SortTerm(st.PartitionTransform("days", "ts"), DESC, NULLS_FIRST))


def test_distribution_modes():
    assert ours("ALTER TABLE db.t WRITE LOCALLY ORDERED BY id").distribution_mode == "none"
    s = ours("alter table db.t write distributed by partition")
    assert (s.order, s.distribution_mode) == ((), "hash")
    s = ours("ALTER TABLE db.t WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY id")
    assert (len(s.order), s.distribution_mode) == (1, "hash")
    assert ours("ALTER TABLE db.t WRITE UNORDERED") == SetWriteOrder(ours("ALTER TABLE db.t WRITE UNORDERED").table,
                                                                     (), "none")


def test_properties_without_equals():
    s = ours("ALTER TABLE local.db.t SET TBLPROPERTIES ('k' 'v', 'a.b' = 'it''s')")
    assert isinstance(s, st.AlterTableSetProperties) and s.properties == {"k": "v", "a.b": "it's"}
    assert ours("ALTER TABLE local.db.t SET TBLPROPERTIES ('k' = 'v')") is None  # the main parser's form


def test_not_ours():
    assert ours("ALTER TABLE spark_catalog.db.t WRITE ORDERED BY id") is None
    assert ours("ALTER TABLE other.db.t WRITE ORDERED BY id") is None
    assert ours("SELECT 1") is None
    assert ours("ALTER TABLE local.db.t ADD COLUMN x int") is None


def test_bad_term_is_a_parse_error_with_position():
    with pytest.raises(ParseError) as e:
        ours("ALTER TABLE local.db.t WRITE ORDERED BY id SIDEWAYS")
    assert e.value.position.column == 41
