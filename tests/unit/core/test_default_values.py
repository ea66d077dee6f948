"""Format v3 column defaults without Spark: the JSON single-value form, SQL constants, pruning.

Truth: the examples of the spec's appendix D table ("JSON single-value serialization"), the
defaults Iceberg Java 1.10.2 wrote into a metadata file (`initial-default: 7`), and values
computed by hand.
"""
from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest
from sqlglot import parse_one

from pyice_sql.core.errors import UnsupportedError
from pyice_sql.core.expr.evaluators import InclusiveMetricsEvaluator, StrictMetricsEvaluator
from pyice_sql.core.expr.from_sql import constant_value
from pyice_sql.core.expr.predicates import eq, in_, is_null, not_null
from pyice_sql.core.model import types as it
from pyice_sql.core.model.default_values import DefaultValueError, check_default, from_json, \
    read_as_initial_default, to_json
from pyice_sql.core.model.manifest import DataFile
from pyice_sql.core.model.metadata import new_table_metadata
from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.sort_order import UNSORTED
from pyice_sql.core.plan.defaults import default_sql, write_default
from pyice_sql.core.scan.planner import default_metrics, with_default_metrics

# (type, the spec's example, the internal value it stands for: computed by hand)
SPEC_EXAMPLES = [
    (it.BOOLEAN, True, True),
    (it.INT, 34, 34),
    (it.LONG, 34, 34),
    (it.DOUBLE, 1.0, 1.0),
    (it.DecimalType(4, 2), "14.20", Decimal("14.20")),
    (it.DATE, "2017-11-16", (dt.date(2017, 11, 16) - dt.date(1970, 1, 1)).days),
    (it.TIME, "22:31:08.123456", ((22 * 60 + 31) * 60 + 8) * 1_000_000 + 123456),
    (it.TIMESTAMP, "2017-11-16T22:31:08.123456", 1510871468123456),
    (it.TIMESTAMPTZ, "2017-11-16T22:31:08.123456+00:00", 1510871468123456),
    (it.STRING, "iceberg", "iceberg"),
    (it.UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7", uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")),
    (it.FixedType(4), "000102ff", b"\x00\x01\x02\xff"),
    (it.BINARY, "000102ff", b"\x00\x01\x02\xff"),
]


@pytest.mark.parametrize("t, text, internal", SPEC_EXAMPLES, ids=[str(e[0]) for e in SPEC_EXAMPLES])
def test_spec_examples_read_and_write_back(t, text, internal):
    assert from_json(t, text) == internal
    assert to_json(t, internal) == text


def test_java_written_default_reads_and_lenient_spellings_canonicalise():
    field = it.field_from_json({"id": 2, "name": "c", "required": False, "type": "int", "doc": "doc",
                                "initial-default": 7, "write-default": 9})  # as Java 1.10.2 wrote it
    assert (from_json(field.type, field.initial_default), from_json(field.type, field.write_default)) == (7, 9)
    # Java's ISO writer drops zero seconds; upper-case hex is still hex
    assert to_json(it.TIMESTAMP, from_json(it.TIMESTAMP, "2017-11-16T22:31")) == "2017-11-16T22:31:00.000000"
    assert to_json(it.BINARY, from_json(it.BINARY, "00FF")) == "00ff"


@pytest.mark.parametrize("t, bad", [
    (it.INT, True), (it.INT, "7"), (it.INT, 2.5), (it.INT, 2**31), (it.BOOLEAN, 1), (it.STRING, 7),
    (it.DecimalType(4, 2), "14.2"), (it.DecimalType(4, 2), "140.20"), (it.DATE, 17486),
    (it.TIMESTAMP, "2017-11-16T22:31:08+00:00"), (it.TIMESTAMPTZ, "2017-11-16T22:31:08"),
    (it.TIMESTAMPTZ, "2017-11-16T22:31:08+01:00"), (it.BINARY, "0g"), (it.FixedType(4), "0001"),
    (it.UUID, "not-a-uuid"), (it.PrimitiveType("unknown"), 1),
    (it.StructType((it.NestedField(3, "x", it.INT),)), {}),
])
def test_malformed_defaults_are_refused(t, bad):
    with pytest.raises(DefaultValueError):
        from_json(t, bad)


def test_a_not_null_column_cannot_default_to_null():
    with pytest.raises(DefaultValueError, match="c of t: a NOT NULL column cannot default to NULL"):
        check_default(it.INT, None, True, "column c of t")
    check_default(it.INT, None, False, "column c of t")


@pytest.mark.parametrize("sql, t, internal", [
    ("7", it.INT, 7), ("-7", it.LONG, -7), ("'a b'", it.STRING, "a b"), ("true", it.BOOLEAN, True),
    ("1.5", it.DecimalType(5, 2), Decimal("1.50")), ("2.5", it.DOUBLE, 2.5),
    ("DATE '2020-02-03'", it.DATE, (dt.date(2020, 2, 3) - dt.date(1970, 1, 1)).days),
    ("TIMESTAMP_NTZ '2020-01-01 10:00:00'", it.TIMESTAMP, 1577872800000000), ("NULL", it.INT, None),
])
def test_sql_default_constants(sql, t, internal):
    assert constant_value(parse_one(sql, dialect="spark"), t) == internal


@pytest.mark.parametrize("sql, t", [("'x'", it.INT), ("2.5", it.INT), ("rand()", it.DOUBLE), ("c + 1", it.INT),
                                    ("1.234", it.DecimalType(5, 2))])
def test_sql_defaults_that_are_not_exact_constants_are_refused(sql, t):
    with pytest.raises(ValueError, match="is not a constant of type"):
        constant_value(parse_one(sql, dialect="spark"), t)


@pytest.mark.parametrize("t, value, sql", [
    (it.INT, 7, "CAST('7' AS INT)"), (it.LONG, 34, "CAST('34' AS BIGINT)"),
    (it.DecimalType(4, 2), "14.20", "CAST('14.20' AS DECIMAL(4, 2))"),
    (it.DATE, "2017-11-16", "CAST('2017-11-16' AS DATE)"),
    (it.TIMESTAMP, "2017-11-16T22:31:08.123456", "CAST('2017-11-16T22:31:08.123456' AS TIMESTAMP_NTZ)"),
    (it.TIMESTAMPTZ, "2017-11-16T22:31:08.123456+00:00",
     "CAST('2017-11-16T22:31:08.123456+00:00' AS TIMESTAMP)"),
    (it.STRING, "it's", "'it\\'s'"), (it.BOOLEAN, False, "FALSE"), (it.BINARY, "00FF", "UNHEX('00ff')"),
])
def test_defaults_as_spark_constants(t, value, sql):
    assert default_sql(t, value, "c").sql(dialect="spark") == sql


def test_write_default_prefers_the_fields_write_default():
    assert write_default(it.NestedField(2, "c", it.INT, False, None, 7, 9)).sql(dialect="spark") == \
        "CAST('9' AS INT)"
    assert write_default(it.NestedField(2, "c", it.INT, False, None, 7, None)).sql(dialect="spark") == "NULL"
    assert write_default(it.NestedField(2, "c", it.INT, True, None, 7, None)) is None
    with pytest.raises(UnsupportedError, match="column 'u' has type uuid"):
        default_sql(it.UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7", "u")


OLD = Schema((it.NestedField(1, "id", it.LONG),), 0)
NEW = Schema((it.NestedField(1, "id", it.LONG), it.NestedField(2, "c", it.INT, False, None, 7, 9),
              it.NestedField(3, "d", it.STRING)), 1)


def _old_file() -> DataFile:
    """A file written with OLD: metrics for `id` only, as Java writes them."""
    return DataFile(file_path="/t/data/old.parquet", record_count=10, file_size_in_bytes=1,
                    value_counts={1: 10}, null_value_counts={1: 0}, lower_bounds={1: (0).to_bytes(8, "little")},
                    upper_bounds={1: (9).to_bytes(8, "little")})


def test_files_older_than_a_defaulted_column_prune_by_the_default():
    assert [f.name for f in read_as_initial_default(NEW, OLD)] == ["c"]  # d has no default: reads NULL
    assert read_as_initial_default(NEW, None) == () and read_as_initial_default(NEW, NEW) == ()
    old = with_default_metrics(_old_file(), default_metrics(NEW, OLD))

    def might(expr):
        return InclusiveMetricsEvaluator(NEW, expr).eval(old)
    assert might(eq("c", 7)) and might(in_("c", [1, 7])) and might(not_null("c"))
    assert not might(eq("c", 9)) and not might(is_null("c")) and not might(in_("c", [1, 2]))
    assert StrictMetricsEvaluator(NEW, eq("c", 7)).eval(old)  # every row holds 7
    # without the default's metrics the file is never pruned on c (no stats: unknown), never wrongly
    assert InclusiveMetricsEvaluator(NEW, eq("c", 9)).eval(_old_file())
    assert not StrictMetricsEvaluator(NEW, eq("c", 7)).eval(_old_file())


def test_a_nested_initial_default_is_refused_by_name():
    nested = Schema((it.NestedField(1, "id", it.LONG), it.NestedField(
        4, "s", it.StructType((it.NestedField(5, "x", it.INT, False, None, 1, 1),)))), 2)
    before = Schema((it.NestedField(1, "id", it.LONG), it.NestedField(4, "s", it.StructType(()))), 1)
    with pytest.raises(UnsupportedError, match="column s.x has a default value inside a nested type"):
        read_as_initial_default(nested, before)


def test_a_schema_differing_only_in_a_default_is_a_new_schema():
    md = new_table_metadata(NEW, PartitionSpec(0, ()), UNSORTED, "/t", format_version=3)
    changed = Schema((NEW.fields[0], it.NestedField(2, "c", it.INT, False, None, 7, 8), NEW.fields[2]), 0)
    md2 = md.add_schema(changed, make_current=True)
    assert md2.current_schema_id != md.current_schema_id
    assert md2.schema().fields[1].write_default == 8
    assert md2.add_schema(Schema(md2.schema().fields, 0), make_current=True).current_schema_id == \
        md2.current_schema_id


def _parse(sql: str):
    from pyice_sql.core.sql.parser import parse_statement
    return parse_statement(sql, lambda name: name == "local", "local")


def test_default_ddl_parses():
    add = _parse("ALTER TABLE local.db.t ADD COLUMNS (c int NOT NULL DEFAULT -7 COMMENT 'x', d string)")
    assert [(c.path, c.not_null, c.comment, c.default and c.default.sql(dialect="spark")) for c in add.columns] == [
        (("c",), True, "x", "-7"), (("d",), False, None, None)]
    set_default = _parse("ALTER TABLE local.db.t ALTER COLUMN c SET DEFAULT 'a' || 'b'")
    assert set_default.default.sql(dialect="spark") == "'a' || 'b'" and not set_default.drop_default
    drop = _parse("ALTER TABLE local.db.t ALTER COLUMN c DROP DEFAULT")
    assert drop.default is None and drop.drop_default
    with pytest.raises(UnsupportedError, match=r"DEFAULT in CREATE TABLE .* is not supported \(line 1, column"):
        _parse("CREATE TABLE local.db.t (id bigint DEFAULT 1) USING iceberg")
