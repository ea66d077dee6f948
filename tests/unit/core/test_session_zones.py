"""Timestamps written without an offset are read in the session's time zone, as Spark reads them:
zone names as Spark accepts them, java.time's resolution of clock changes, and the pruning
predicates and defaults built from such timestamps. Expected instants are
computed by hand (Los Angeles is UTC-8 in winter, UTC-7 in summer; Kolkata UTC+5:30)."""
from __future__ import annotations

import datetime as dt

import pytest
from sqlglot import exp

from pyice_sql.core.expr.from_sql import constant_value, to_predicate
from pyice_sql.core.model.conversions import to_internal
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.types import DATE, LONG, TIMESTAMP, TIMESTAMPTZ, NestedField
from pyice_sql.core.model.zones import UTC, is_fixed_offset, session_zone, wall_clock_instant
from pyice_sql.core.sql.dialect import DIALECT

SCHEMA = Schema((NestedField(1, "id", LONG), NestedField(2, "ts", TIMESTAMPTZ), NestedField(3, "ntz", TIMESTAMP),
                 NestedField(4, "d", DATE)))
LA, KOLKATA = session_zone("America/Los_Angeles"), session_zone("Asia/Kolkata")


def utc(text: str) -> int:
    """The internal value (µs) of a UTC instant written `YYYY-MM-DD HH:MM:SS`."""
    return to_internal(TIMESTAMPTZ, dt.datetime.fromisoformat(text).replace(tzinfo=UTC))


def translate(sql: str, zone: dt.tzinfo | None, mode: str = "inclusive") -> str:
    cond = exp.maybe_parse(sql, dialect=DIALECT)
    return str(to_predicate(cond, lambda c: c.name, SCHEMA, mode, zone=zone))


def test_session_zone_names() -> None:
    assert session_zone("UTC") is UTC and session_zone("Etc/UTC") is UTC and session_zone("Z") is UTC
    assert session_zone("+05:30").utcoffset(None) == dt.timedelta(hours=5, minutes=30)
    assert session_zone("-08:00").utcoffset(None) == dt.timedelta(hours=-8)
    assert session_zone("GMT+8").utcoffset(None) == dt.timedelta(hours=8)
    assert session_zone("UTC-0330").utcoffset(None) == dt.timedelta(hours=-3, minutes=-30)
    assert str(session_zone("America/Los_Angeles")) == "America/Los_Angeles"
    assert session_zone("PST") is None and session_zone("Nowhere/Else") is None and session_zone(None) is None
    assert session_zone("+19:00") is None
    assert is_fixed_offset(session_zone("+05:30")) and not is_fixed_offset(LA)


def test_wall_clock_instant_resolves_clock_changes_as_java_time() -> None:
    assert wall_clock_instant(dt.datetime(2024, 1, 1, 6), LA) == dt.datetime(2024, 1, 1, 14, tzinfo=UTC)
    assert wall_clock_instant(dt.datetime(2024, 7, 1, 6), LA) == dt.datetime(2024, 7, 1, 13, tzinfo=UTC)
    # 2024-03-10 02:30 does not exist in Los Angeles: java.time moves it forward by the hour's gap
    assert wall_clock_instant(dt.datetime(2024, 3, 10, 2, 30), LA) == dt.datetime(2024, 3, 10, 10, 30, tzinfo=UTC)
    # 2024-11-03 01:30 happens twice: java.time takes the earlier offset (PDT, UTC-7)
    assert wall_clock_instant(dt.datetime(2024, 11, 3, 1, 30), LA) == dt.datetime(2024, 11, 3, 8, 30, tzinfo=UTC)
    assert wall_clock_instant(dt.datetime(2024, 1, 1, 6), KOLKATA) == dt.datetime(2024, 1, 1, 0, 30, tzinfo=UTC)


def test_timestamptz_literals_are_read_in_the_session_zone() -> None:
    six_la = utc("2024-01-01 14:00:00")
    assert translate("ts < TIMESTAMP '2024-01-01 06:00:00'", LA) == f"ts < {six_la}"
    assert translate("ts < '2024-01-01 06:00:00'", LA) == f"ts < {six_la}"  # a string Spark casts
    assert translate("ts < CAST('2024-01-01 06:00:00' AS TIMESTAMP)", LA) == f"ts < {six_la}"
    assert translate("ts < TIMESTAMP_NTZ '2024-01-01 06:00:00'", LA) == f"ts < {six_la}"
    assert translate("ts >= DATE '2024-01-02'", LA) == f"ts >= {utc('2024-01-02 08:00:00')}"  # its midnight there
    assert translate("ts < TIMESTAMP '2024-01-01 06:00:00'", KOLKATA) == f"ts < {utc('2024-01-01 00:30:00')}"
    assert translate("ts IN ('2024-01-01 06:00:00', TIMESTAMP '2024-07-01 06:00:00')", LA) == \
        f"ts IN ({six_la}, {utc('2024-07-01 13:00:00')})"
    # an offset names the instant whatever the zone
    assert translate("ts < TIMESTAMP '2024-01-01 06:00:00+02:00'", LA) == f"ts < {utc('2024-01-01 04:00:00')}"
    # strict (a file must match whole, e.g. deleted by its metadata): the same instant
    assert translate("ts < TIMESTAMP '2024-01-01 06:00:00'", KOLKATA, "strict") == \
        f"ts < {utc('2024-01-01 00:30:00')}"


def test_zone_less_timestamps_are_left_to_spark_where_the_zone_is_unknown() -> None:
    assert translate("ts < TIMESTAMP '2024-01-01 06:00:00'", None) == "true"
    assert translate("ts < TIMESTAMP '2024-01-01 06:00:00'", None, "strict") == "false"
    assert translate("ts < TIMESTAMP '2024-01-01 06:00:00Z'", None) == f"ts < {utc('2024-01-01 06:00:00')}"
    assert translate("id = 3", None) == "id = 3"


def test_timestamp_without_zone_columns_keep_wall_clocks() -> None:
    wall = to_internal(TIMESTAMP, dt.datetime(2024, 1, 1, 6))
    assert translate("ntz < TIMESTAMP_NTZ '2024-01-01 06:00:00'", LA) == f"ntz < {wall}"
    assert translate("ntz < '2024-01-01 06:00:00'", LA) == f"ntz < {wall}"
    # against a TIMESTAMP Spark reads the column in the session zone: the wall clocks' order where
    # the zone has one offset; around daylight saving changes it is not, so that is left to Spark
    assert translate("ntz < TIMESTAMP '2024-01-01 06:00:00'", session_zone("+05:30")) == f"ntz < {wall}"
    assert translate("ntz < TIMESTAMP '2024-01-01 06:00:00'", LA) == "true"


def test_defaults_read_timestamps_in_the_session_zone() -> None:
    node = exp.maybe_parse("TIMESTAMP '2024-01-01 00:00:00'", dialect=DIALECT)
    assert constant_value(node, TIMESTAMPTZ, LA) == utc("2024-01-01 08:00:00")
    assert constant_value(node, TIMESTAMPTZ, UTC) == utc("2024-01-01 00:00:00")
    with pytest.raises(ValueError):
        constant_value(node, TIMESTAMPTZ, None)
    # stored in a timestamp without zone: Spark's cast of the instant back to the zone's wall clock
    assert constant_value(node, TIMESTAMP, LA) == to_internal(TIMESTAMP, dt.datetime(2024, 1, 1))

