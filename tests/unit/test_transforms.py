"""Partition transforms: spec test vectors, pyiceberg cross-checks and projection soundness."""
from __future__ import annotations

import datetime as dt
import itertools
import os
import uuid
from decimal import Decimal

import mmh3
import pytest
from pyiceberg import transforms as pyi_tr
from pyiceberg import types as pyi

from pyice_sql.core.model.conversions import to_internal
from pyice_sql.core.model.calendar import civil_from_days
from pyice_sql.core.model.hashing import bucket_bytes, murmur3_32
from pyice_sql.core.model.transforms import (
    Bucket, Day, Hour, Identity, Month, Transform, Truncate, Void, Year, parse_transform,
)
from pyice_sql.spark.write.partition_sql import transform_sql
from pyice_sql.core.model.types import (
    BINARY, BOOLEAN, DATE, DOUBLE, INT, LONG, STRING, TIME, TIMESTAMP, TIMESTAMPTZ, UUID, DecimalType, FixedType,
    ListType,
)

UTC = dt.timezone.utc

# ------------------------------------------------------------------------------------ murmur3 / bucket


@pytest.mark.parametrize("t,value,expected", [
    (INT, 34, 2017239379),
    (LONG, 34, 2017239379),
    (DecimalType(9, 2), Decimal("14.20"), -500754589),
    (DATE, dt.date(2017, 11, 16), -653330422),
    (TIME, dt.time(22, 31, 8), -662762989),
    (TIMESTAMP, dt.datetime(2017, 11, 16, 22, 31, 8), -2047944441),
    (TIMESTAMPTZ, "2017-11-16T14:31:08-08:00", -2047944441),
    (TIMESTAMP, dt.datetime(2017, 11, 16, 22, 31, 8, 1), -1207196810),
    (TIMESTAMPTZ, "2017-11-16T14:31:08.000001-08:00", -1207196810),
    (STRING, "iceberg", 1210000089),
    (UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7", 1488055340),
    (FixedType(4), b"\x00\x01\x02\x03", -188683207),
    (BINARY, b"\x00\x01\x02\x03", -188683207),
], ids=lambda x: str(x)[:24])
def test_spec_hash_vectors(t, value, expected):
    internal = to_internal(t, value)
    assert murmur3_32(bucket_bytes(internal, t)) == expected
    assert Bucket(100).apply(internal, t) == (expected & 0x7FFFFFFF) % 100


def test_murmur3_matches_mmh3_on_every_tail_length():
    for n in range(0, 70):
        data = os.urandom(n)
        for seed in (0, 42):
            assert murmur3_32(data, seed) == mmh3.hash(data, seed, signed=True)


def test_decimal_bucket_uses_scale_and_minimal_bytes():
    assert bucket_bytes(Decimal("-1.28")) == b"\x80"
    assert bucket_bytes(Decimal("1.28")) == b"\x00\x80"
    # the column scale decides the unscaled value, not the literal's exponent
    assert bucket_bytes(Decimal("14.2"), DecimalType(9, 2)) == bucket_bytes(Decimal("14.20"))


@pytest.mark.parametrize("pyi_type,t,values", [
    (pyi.IntegerType(), INT, [0, 1, -1, 34, -2**31, 2**31 - 1]),
    (pyi.LongType(), LONG, [2**40, -2**63]),
    (pyi.DateType(), DATE, [-1, 0, 17486]),
    (pyi.TimestamptzType(), TIMESTAMPTZ, [-1, 1510871468000001]),
    (pyi.StringType(), STRING, ["", "iceberg", "\U0001F600x"]),
    (pyi.BinaryType(), BINARY, [b"", b"\xff\x00"]),
    (pyi.UUIDType(), UUID, [uuid.UUID(int=0), uuid.UUID(int=2**128 - 1)]),
    (pyi.DecimalType(9, 2), DecimalType(9, 2), [Decimal("14.20"), Decimal("-0.01"), Decimal("1.27")]),
])
def test_bucket_matches_pyiceberg(pyi_type, t, values):
    for n in (1, 7, 16, 1024):
        ref = pyi_tr.BucketTransform(n).transform(pyi_type)
        for v in values:
            assert Bucket(n).apply(v, t) == ref(v), (n, v)


def test_bucket_rejects_unbucketable_values():
    with pytest.raises(TypeError):
        Bucket(4).apply(1.5)
    with pytest.raises(TypeError):
        Bucket(4).apply(True)


# ------------------------------------------------------------------------------------ truncate


@pytest.mark.parametrize("t,width,value,expected", [
    (INT, 10, 1, 0), (INT, 10, -1, -10), (INT, 10, 10, 10), (INT, 10, -10, -10), (LONG, 10, -11, -20),
    (INT, 10, -2**31, 2**31 - 2), (LONG, 10, -2**63, 2**63 - 2),  # Java's int/long arithmetic wraps
    (DecimalType(9, 2), 50, Decimal("10.65"), Decimal("10.50")),
    (DecimalType(9, 2), 10, Decimal("-0.05"), Decimal("-0.10")),
    (STRING, 3, "iceberg", "ice"), (STRING, 3, "ab", "ab"),
    (STRING, 2, "\U0001F600\U0001F601x", "\U0001F600\U0001F601"),
    (BINARY, 2, b"\x01\x02\x03", b"\x01\x02"),
])
def test_truncate_examples(t, width, value, expected):
    out = Truncate(width).apply(value, t)
    assert out == expected
    assert str(out) == str(expected)  # decimals keep the scale


def test_truncate_matches_pyiceberg():
    cases = [(pyi.IntegerType(), INT, range(-25, 26)), (pyi.StringType(), STRING, ["abcdef", "a", "\U0001F600bc"]),
             (pyi.DecimalType(9, 2), DecimalType(9, 2), [Decimal("-1.01"), Decimal("10.65"), Decimal("0.00")])]
    for pyi_type, t, values in cases:
        ref = pyi_tr.TruncateTransform(3).transform(pyi_type)
        for v in values:
            assert Truncate(3).apply(v, t) == ref(v)


# ------------------------------------------------------------------------------------ time transforms


def test_pre_epoch_floor():
    ts = to_internal(TIMESTAMPTZ, dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC))
    for tr in (Year(), Month(), Day(), Hour()):
        assert tr.apply(ts, TIMESTAMPTZ) == -1
        assert tr.apply(ts, TIMESTAMP) == -1
    for tr in (Year(), Month(), Day()):
        assert tr.apply(-1, DATE) == -1
    assert Hour().apply(-1, TIMESTAMP) == -1
    assert Day().apply(-86_400_000_001, TIMESTAMP) == -2


def test_time_transform_examples():
    ts = to_internal(TIMESTAMPTZ, "2024-01-01T10:30:00+00:00")
    assert (Year().apply(ts, TIMESTAMPTZ), Month().apply(ts, TIMESTAMPTZ)) == (54, 648)
    assert (Day().apply(ts, TIMESTAMPTZ), Hour().apply(ts, TIMESTAMPTZ)) == (19723, 473362)
    assert Month().apply(to_internal(DATE, "1969-01-31"), DATE) == -12
    assert Year().apply(None, DATE) is None
    with pytest.raises(ValueError):
        Year().apply(5)  # days or µs? the source type is required
    with pytest.raises(ValueError):
        Hour().apply(5, DATE)


def test_time_transforms_match_pyiceberg():
    micros = [-10**15, -86_400_000_001, -3_600_000_001, -1, 0, 1, 1704103200000000, 253402300799999999]
    days = [-719162, -366, -365, -1, 0, 59, 19723, 2932896]
    for ours, ref in ((Year(), pyi_tr.YearTransform()), (Month(), pyi_tr.MonthTransform()),
                      (Day(), pyi_tr.DayTransform()), (Hour(), pyi_tr.HourTransform())):
        for pyi_type, t in ((pyi.TimestampType(), TIMESTAMP), (pyi.TimestamptzType(), TIMESTAMPTZ)):
            fn = ref.transform(pyi_type)
            assert [ours.apply(m, t) for m in micros] == [fn(m) for m in micros], ours
        if ours != Hour():
            fn = ref.transform(pyi.DateType())
            assert [ours.apply(d, DATE) for d in days] == [fn(d) for d in days], ours


def test_civil_from_days_matches_python():
    for d in range(-719162, 2932897, 997):
        assert civil_from_days(d) == (lambda x: (x.year, x.month, x.day))(dt.date(1970, 1, 1) + dt.timedelta(d))


# ------------------------------------------------------------------------------------ metadata


def test_parse_and_str_round_trip():
    for text in ("identity", "bucket[16]", "truncate[4]", "year", "month", "day", "hour", "void"):
        assert str(parse_transform(text)) == text
    assert parse_transform(" Bucket [ 16 ] ") == Bucket(16)
    assert parse_transform("DAY") == Day()
    assert hash(parse_transform("truncate[3]")) == hash(Truncate(3))
    assert Bucket(16) != Bucket(8) and Year() != Month()
    for bad in ("zorder", "bucket", "bucket[x]", "year[2]", "truncate[0]", ""):
        with pytest.raises(ValueError, match="transform|positive"):
            parse_transform(bad)


def test_result_types_and_order():
    assert [t.result_type(TIMESTAMPTZ) for t in (Year(), Month(), Day(), Hour(), Bucket(4))] == \
        [INT, INT, DATE, INT, INT]
    assert Identity().result_type(STRING) == STRING and Truncate(3).result_type(LONG) == LONG
    assert Void().result_type(DATE) == DATE and Void().result_type(None) == INT
    assert Day().result_type(None) == DATE
    assert [t.preserves_order for t in (Identity(), Truncate(1), Year(), Month(), Day(), Hour())] == [True] * 6
    assert not Bucket(2).preserves_order and not Void().preserves_order


def test_can_transform():
    assert Bucket(2).can_transform(UUID) and not Bucket(2).can_transform(DOUBLE)
    assert not Bucket(2).can_transform(BOOLEAN)
    assert Truncate(2).can_transform(DecimalType(9, 2)) and not Truncate(2).can_transform(DATE)
    assert Day().can_transform(DATE) and not Hour().can_transform(DATE) and Hour().can_transform(TIMESTAMP)
    assert Identity().can_transform(BOOLEAN) and not Identity().can_transform(ListType(2, INT))
    assert Void().can_transform(ListType(2, INT))


def test_human_strings():
    assert Day().to_human_string(19723) == "2024-01-01"
    assert Month().to_human_string(648) == "2024-01" and Month().to_human_string(-1) == "1969-12"
    assert Year().to_human_string(54) == "2024"
    assert Hour().to_human_string(473362) == "2024-01-01-10" and Hour().to_human_string(-1) == "1969-12-31-23"
    assert all(t.to_human_string(None) == "null" for t in (Day(), Bucket(2), Identity(), Void()))
    assert Identity().to_human_string(19723, DATE) == "2024-01-01"
    ts = to_internal(TIMESTAMP, "2024-01-01T10:00:00.5")
    assert Identity().to_human_string(ts, TIMESTAMP) == "2024-01-01T10:00:00.5"
    assert Identity().to_human_string(ts - 500000, TIMESTAMPTZ) == "2024-01-01T10:00:00+00:00"
    assert Identity().to_human_string(to_internal(TIME, "10:00:00"), TIME) == "10:00"
    assert Identity().to_human_string(b"\x00\x01", BINARY) == "AAE="
    assert Identity().to_human_string(True, BOOLEAN) == "true"
    assert Truncate(50).to_human_string(Decimal("10.50")) == "10.50"
    assert Bucket(8).to_human_string(3) == "3"


def test_to_sql_text():
    assert transform_sql(Bucket(8), "`d`", DATE) == "pyice_bucket(8, CAST(unix_date(`d`) AS BIGINT))"
    assert transform_sql(Bucket(8), "s", STRING) == "pyice_bucket(8, s)"
    assert transform_sql(Bucket(8), "ts", TIMESTAMPTZ) == "pyice_bucket(8, unix_micros(ts))"
    assert transform_sql(Bucket(8), "u", UUID) == "pyice_bucket(8, unhex(replace(u, '-', '')))"
    assert transform_sql(Void(), "d", DATE) == "CAST(NULL AS INT)"
    assert "CAST(x - pmod(x, 0.50BD) AS DECIMAL(9,2))" in transform_sql(Truncate(50), "x", DecimalType(9, 2))
    with pytest.raises(ValueError):
        transform_sql(Truncate(5), "x", DecimalType(38, 10))
    with pytest.raises(ValueError):
        transform_sql(Hour(), "d", DATE)


# ------------------------------------------------------------------------------------ projection


def test_identity_and_void_projection():
    assert Identity().project_inclusive("<", (5,)) == ("<", (5,))
    assert Identity().project_strict("not_in", (1, 2)) == ("not_in", (1, 2))
    assert Void().project_inclusive("=", (5,)) is None and Void().project_strict("is_null") is None
    with pytest.raises(ValueError):
        Identity().project_inclusive("like", ("a",))


def test_bucket_projection():
    b = Bucket(16)
    h = b.apply(34)
    assert b.project_inclusive("=", (34,)) == ("=", (h,))
    assert b.project_inclusive("in", (34, 34)) == ("in", (h,))
    assert b.project_inclusive("<", (34,)) is None and b.project_inclusive("!=", (34,)) is None
    assert b.project_strict("!=", (34,)) == ("!=", (h,))
    assert b.project_strict("not_in", (34,)) == ("not_in", (h,))
    assert b.project_strict("=", (34,)) is None
    assert b.project_inclusive("is_null") == ("is_null", ())


def test_truncate_int_projection():
    t = Truncate(10)
    assert [t.project_inclusive(op, (100,)) for op in ("<", "<=", ">", ">=", "=", "!=")] == [
        ("<=", (90,)), ("<=", (100,)), (">=", (100,)), (">=", (100,)), ("=", (100,)), None]
    assert t.project_inclusive("in", (99, 100, 101)) == ("in", (90, 100))
    assert [t.project_strict(op, (100,)) for op in ("<", "<=", ">", ">=", "=", "!=")] == [
        ("<", (100,)), ("<", (100,)), (">", (100,)), (">", (90,)), None, ("!=", (100,))]
    assert t.project_strict("in", (1,)) is None
    # the word spelling of expr.predicates.Op comes back in kind
    assert t.project_inclusive("lt", (100,)) == ("lt_eq", (90,))


def test_truncate_string_projection():
    t = Truncate(3)
    assert t.project_inclusive("starts_with", ("ab",)) == ("starts_with", ("ab",))
    assert t.project_inclusive("starts_with", ("abc",)) == ("=", ("abc",))
    assert t.project_inclusive("starts_with", ("abcd",)) == ("starts_with", ("abc",))
    assert t.project_strict("starts_with", ("abcd",)) is None
    assert t.project_inclusive("not_starts_with", ("abcd",)) is None
    assert t.project_strict("not_starts_with", ("abcd",)) == ("not_starts_with", ("abc",))
    assert t.project_inclusive("<", ("abcd",), STRING) == ("<=", ("abc",))
    assert t.project_strict("<=", ("abcd",), STRING) == ("<", ("abc",))


def test_time_projection_with_pre_epoch_fix():
    ts = to_internal(TIMESTAMPTZ, "1969-12-31T10:00:00+00:00")
    assert Day().project_inclusive("=", (ts,), TIMESTAMPTZ) == ("in", (-1, 0))
    assert Day().project_strict("!=", (ts,), TIMESTAMPTZ) == ("not_in", (-1, 0))
    assert Day().project_inclusive("<", (ts,), TIMESTAMPTZ) == ("<=", (0,))
    # day of a date is exact in every Iceberg version, so it gets no widening
    assert Day().project_inclusive("=", (-1,), DATE) == ("=", (-1,))
    d = to_internal(DATE, "2017-12-01")
    assert Month().project_inclusive("<", (d,), DATE) == ("<=", (574,))
    assert Month().project_strict(">=", (d,), DATE) == (">", (574,))
    assert Year().project_strict("=", (d,), DATE) is None


def _holds(op: str, lits: tuple, x) -> bool:
    if op in ("in", "not_in"):
        return (x in lits) == (op == "in")
    if op in ("starts_with", "not_starts_with"):
        return x.startswith(lits[0]) == (op == "starts_with")
    v = lits[0]
    return {"<": x < v, "<=": x <= v, ">": x > v, ">=": x >= v, "=": x == v, "!=": x != v}[op]


def _check_sound(tr: Transform, source, domain, literals, ops) -> None:
    """Inclusive never drops a matching value; strict never accepts a non-matching one."""
    for op, lits in itertools.product(ops, literals):
        inc = tr.project_inclusive(op, lits, source)
        strict = tr.project_strict(op, lits, source)
        for x in domain:
            p = tr.apply(x, source)
            if _holds(op, lits, x) and inc is not None:
                assert _holds(inc[0], inc[1], p), (tr, op, lits, x, inc)
            if strict is not None and _holds(strict[0], strict[1], p):
                assert _holds(op, lits, x), (tr, op, lits, x, strict)


ORDER_OPS = ("<", "<=", ">", ">=", "=", "!=", "in", "not_in")


def test_projection_soundness_numbers():
    ints = range(-35, 36)
    lits = [(v,) for v in range(-25, 26)] + [(-21, 3, 20)]
    _check_sound(Truncate(10), INT, ints, lits, ORDER_OPS)
    _check_sound(Bucket(4), INT, ints, lits, ORDER_OPS)
    _check_sound(Identity(), INT, ints, lits, ORDER_OPS)
    dec = DecimalType(5, 2)
    _check_sound(Truncate(10), dec, [Decimal(i).scaleb(-2) for i in ints],
                 [tuple(Decimal(v).scaleb(-2) for v in lit) for lit in lits], ORDER_OPS)


def test_projection_soundness_dates_and_times():
    days = range(-800, 800, 13)
    day_lits = [(d,) for d in range(-400, 400, 29)] + [(-1,), (0,), (-31, 45)]
    for tr in (Year(), Month(), Day()):
        _check_sound(tr, DATE, days, day_lits, ORDER_OPS)
    hour = 3_600_000_000
    micros = [h * hour + off for h in range(-60, 60, 7) for off in (-1, 0, 1, hour // 2)]
    micro_lits = [(m,) for m in micros[::5]] + [(-1,), (0,)]
    for tr in (Day(), Hour(), Month()):
        _check_sound(tr, TIMESTAMPTZ, micros, micro_lits, ORDER_OPS)


def test_projection_soundness_strings():
    domain = ["".join(p) for n in range(5) for p in itertools.product("ab", repeat=n)]
    lits = [(s,) for s in domain] + [("a", "bab")]
    _check_sound(Truncate(2), STRING, domain, lits, ORDER_OPS + ("starts_with", "not_starts_with"))
