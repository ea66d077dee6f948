"""Single-value serialisation, internal values and bound truncation (spec notes §5)."""
from __future__ import annotations

import datetime as dt
import math
import uuid
from decimal import Decimal

import pytest
from pyiceberg import conversions as pyi_conv
from pyiceberg import types as pyi

from pyice_sql.core.model.bounds import normalize_float_bounds, truncate_lower_bound, truncate_upper_bound
from pyice_sql.core.model.conversions import (
    decimal_from_unscaled, from_bytes, min_twos_complement, to_bytes, to_internal, to_python,
)
from pyice_sql.core.model.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, FLOAT, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMPTZ, UUID, DecimalType,
    FixedType,
)

U = uuid.UUID("f79c3e09-677c-4bbd-a479-3f349cb785e7")

ENCODINGS = [
    (BOOLEAN, True, b"\x01"),
    (BOOLEAN, False, b"\x00"),
    (INT, 34, b"\x22\x00\x00\x00"),
    (INT, -1, b"\xff\xff\xff\xff"),
    (LONG, 34, b"\x22" + b"\x00" * 7),
    (FLOAT, 1.0, b"\x00\x00\x80\x3f"),
    (DOUBLE, 1.0, b"\x00" * 6 + b"\xf0\x3f"),
    (DATE, 17486, (17486).to_bytes(4, "little")),
    (TIME, 81068000000, (81068000000).to_bytes(8, "little")),
    (TIMESTAMP, -1, b"\xff" * 8),
    (TIMESTAMPTZ, 1510871468000000, (1510871468000000).to_bytes(8, "little")),
    (STRING, "iceberg", b"iceberg"),
    (STRING, "\U0001F600", "\U0001F600".encode("utf-8")),
    (UUID, U, bytes.fromhex("f79c3e09677c4bbda4793f349cb785e7")),
    (FixedType(4), b"\x00\x01\x02\x03", b"\x00\x01\x02\x03"),
    (BINARY, b"\x00\x01\x02\x03", b"\x00\x01\x02\x03"),
    (DecimalType(9, 2), Decimal("14.20"), bytes.fromhex("058c")),
]


@pytest.mark.parametrize("t,value,expected", ENCODINGS, ids=lambda x: str(x)[:20])
def test_to_bytes_and_back(t, value, expected):
    assert to_bytes(t, value) == expected
    back = from_bytes(t, expected)
    assert back == value and type(back) is type(value)


@pytest.mark.parametrize("unscaled,expected", [
    (0, b"\x00"), (127, b"\x7f"), (128, b"\x00\x80"), (-128, b"\x80"), (-129, b"\xff\x7f"),
    (255, b"\x00\xff"), (-1, b"\xff"), (32767, b"\x7f\xff"), (-32768, b"\x80\x00"), (-32769, b"\xff\x7f\xff"),
])
def test_decimal_minimal_twos_complement(unscaled, expected):
    assert min_twos_complement(unscaled) == expected
    t = DecimalType(10, 0)
    assert to_bytes(t, Decimal(unscaled)) == expected
    assert from_bytes(t, expected) == Decimal(unscaled)


def test_decimal_keeps_scale_and_38_digits():
    t = DecimalType(38, 10)
    big = Decimal("1234567890123456789012345678.9012345678")
    assert from_bytes(t, to_bytes(t, big)) == big
    assert str(from_bytes(DecimalType(5, 2), b"\x00")) == "0.00"
    assert str(decimal_from_unscaled(-5, 3)) == "-0.005"


def test_promoted_reads():
    assert from_bytes(LONG, to_bytes(INT, -5)) == -5
    assert from_bytes(DOUBLE, to_bytes(FLOAT, 1.5)) == 1.5
    assert from_bytes(BOOLEAN, b"\x02") is True


@pytest.mark.parametrize("t,pyi_t,value", [
    (INT, pyi.IntegerType(), -7), (LONG, pyi.LongType(), 2**40), (DOUBLE, pyi.DoubleType(), -2.5),
    (DATE, pyi.DateType(), -1), (TIMESTAMPTZ, pyi.TimestamptzType(), -1), (STRING, pyi.StringType(), "héllo"),
    (UUID, pyi.UUIDType(), U), (DecimalType(9, 2), pyi.DecimalType(9, 2), Decimal("-12.34")),
])
def test_matches_pyiceberg(t, pyi_t, value):
    assert to_bytes(t, value) == pyi_conv.to_bytes(pyi_t, value)


def test_to_internal_dates_and_times():
    assert to_internal(DATE, dt.date(2017, 11, 16)) == 17486
    assert to_internal(DATE, "1969-12-31") == -1
    assert to_internal(TIME, dt.time(22, 31, 8)) == 81068000000
    assert to_internal(TIME, "00:00:00.000001") == 1
    with pytest.raises(TypeError):
        to_internal(DATE, dt.datetime(2020, 1, 1))


def test_to_internal_timestamps():
    # timestamp: naive wall clock; timestamptz: aware by instant, naive as UTC
    assert to_internal(TIMESTAMP, dt.datetime(2017, 11, 16, 22, 31, 8)) == 1510871468000000
    assert to_internal(TIMESTAMP, dt.datetime(1969, 12, 31, 23, 59, 59, 999999)) == -1
    la = dt.timezone(dt.timedelta(hours=-8))
    assert to_internal(TIMESTAMPTZ, dt.datetime(2017, 11, 16, 14, 31, 8, tzinfo=la)) == 1510871468000000
    assert to_internal(TIMESTAMPTZ, dt.datetime(2017, 11, 16, 22, 31, 8)) == 1510871468000000
    assert to_internal(TIMESTAMPTZ, "2017-11-16T14:31:08-08:00") == 1510871468000000
    assert to_internal(TIMESTAMP, "1970-01-01 00:00:00.000001") == 1
    with pytest.raises(ValueError):
        to_internal(TIMESTAMP, dt.datetime(2017, 1, 1, tzinfo=dt.timezone.utc))


def test_to_internal_other_types():
    assert to_internal(DecimalType(5, 2), Decimal("1.2")) == Decimal("1.20")
    assert str(to_internal(DecimalType(5, 2), "3")) == "3.00"
    with pytest.raises(ValueError):
        to_internal(DecimalType(5, 2), Decimal("1.234"))
    with pytest.raises(ValueError):
        to_internal(DecimalType(3, 2), Decimal("12.3"))
    assert to_internal(UUID, str(U)) == U
    assert to_internal(BINARY, bytearray(b"\x01")) == b"\x01"
    with pytest.raises(ValueError):
        to_internal(FixedType(2), b"\x01")
    with pytest.raises(ValueError):
        to_internal(INT, 2**31)
    assert to_internal(FLOAT, 0.1) == pytest.approx(0.1) and to_internal(FLOAT, 0.1) != 0.1  # float32
    assert to_internal(STRING, None) is None
    with pytest.raises(TypeError):
        to_internal(STRING, 5)


@pytest.mark.parametrize("t,value", [
    (DATE, dt.date(1900, 2, 28)), (TIME, dt.time(23, 59, 59, 999999)),
    (TIMESTAMP, dt.datetime(1969, 12, 31, 23, 59, 59, 1)),
    (TIMESTAMPTZ, dt.datetime(1850, 6, 1, 12, tzinfo=dt.timezone.utc)),
    (DecimalType(9, 3), Decimal("-1.500")), (UUID, U), (BINARY, b"\x00"),
])
def test_to_python_round_trip(t, value):
    assert to_python(t, to_internal(t, value)) == value
    assert to_internal(t, to_python(t, to_internal(t, value))) == to_internal(t, value)


def test_to_python_timestamp_awareness():
    assert to_python(TIMESTAMP, 0).tzinfo is None
    assert to_python(TIMESTAMPTZ, 0) == dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def test_string_bounds_count_code_points():
    # 17 code points, the 16th is a 4-byte UTF-8 character
    s = "a" * 15 + "\U0001F600" + "b"
    assert len(s) == 17 and len(s.encode("utf-8")) == 20
    assert truncate_lower_bound(STRING, s, 16) == "a" * 15 + "\U0001F600"
    assert truncate_upper_bound(STRING, s, 16) == "a" * 15 + "\U0001F601"
    assert truncate_upper_bound(STRING, "a" * 15 + "\U0010FFFF" + "b", 16) == "a" * 14 + "b"
    assert truncate_upper_bound(STRING, "ab\ud7ffz", 3) == "ab\ue000"
    assert truncate_upper_bound(STRING, "\U0010FFFF" * 3, 2) is None
    assert truncate_upper_bound(STRING, s, 17) == s
    assert truncate_lower_bound(STRING, "abc", 16) == "abc"


def test_binary_bounds():
    assert truncate_lower_bound(BINARY, b"\x01\xff\xff", 2) == b"\x01\xff"
    assert truncate_upper_bound(BINARY, b"\x01\xff\xff", 2) == b"\x02"
    assert truncate_upper_bound(BINARY, b"\x01\x02\x03", 2) == b"\x01\x03"
    assert truncate_upper_bound(BINARY, b"\xff\xff\x00", 2) is None
    assert truncate_upper_bound(BINARY, b"\xff", 2) == b"\xff"


def test_other_types_never_truncated():
    assert truncate_upper_bound(FixedType(3), b"\xff\xff\xff", 1) == b"\xff\xff\xff"
    assert truncate_lower_bound(LONG, 12345, 1) == 12345
    assert truncate_upper_bound(STRING, None, 1) is None


def test_float_bounds():
    lo, hi = normalize_float_bounds(0.0, 0.0)
    assert math.copysign(1, lo) == -1 and math.copysign(1, hi) == 1
    lo, hi = normalize_float_bounds(-0.0, -0.0)
    assert math.copysign(1, lo) == -1 and math.copysign(1, hi) == 1
    assert normalize_float_bounds(float("nan"), 1.0) == (None, None)
    assert normalize_float_bounds(-1.0, float("nan")) == (None, None)
    assert normalize_float_bounds(-1.5, 2.5) == (-1.5, 2.5)
    assert to_bytes(DOUBLE, normalize_float_bounds(0.0, 1.0)[0]) == b"\x00" * 7 + b"\x80"
