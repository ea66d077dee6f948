"""transform_sql evaluated by Spark equals Transform.apply, whatever the session time zone."""
from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from pyice_sql.core.model.conversions import to_internal
from pyice_sql.core.model.transforms import parse_transform
from pyice_sql.core.model.types import BINARY, DATE, INT, LONG, STRING, TIMESTAMP, TIMESTAMPTZ, DecimalType
from pyice_sql.spark.write.partition_sql import spark_internal_type, transform_sql

UTC = dt.timezone.utc
DEC = DecimalType(9, 2)

# column -> (Iceberg type, Spark SQL type, transforms to check)
COLUMNS = {
    "i": (INT, "INT", ["identity", "truncate[10]", "void"]),
    "l": (LONG, "BIGINT", ["identity", "truncate[10]", "void"]),
    "d": (DATE, "DATE", ["identity", "year", "month", "day", "void"]),
    "ts": (TIMESTAMPTZ, "TIMESTAMP", ["identity", "year", "month", "day", "hour", "void"]),
    "ntz": (TIMESTAMP, "TIMESTAMP_NTZ", ["identity", "year", "month", "day", "hour", "void"]),
    "s": (STRING, "STRING", ["identity", "truncate[2]", "void"]),
    "b": (BINARY, "BINARY", ["identity", "truncate[2]"]),
    "dec": (DEC, "DECIMAL(9,2)", ["identity", "truncate[50]"]),
}

ROWS = [
    # ordinary values, in winter and summer time for America/Los_Angeles
    (1234, 2**40 + 7, dt.date(2024, 1, 1), dt.datetime(2024, 1, 1, 7, 30, tzinfo=UTC),
     dt.datetime(2024, 7, 1, 23, 30, 0, 5), "iceberg", b"\x01\x02\x03", Decimal("10.65")),
    # one microsecond / one day before the epoch
    (-1, -11, dt.date(1969, 12, 31), dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
     dt.datetime(1969, 12, 31, 23, 59, 59, 999999), "\U0001F600\U0001F601z", b"\xff", Decimal("-0.05")),
    # far past; wall clock inside the Los Angeles spring-forward gap
    (-2**31, -2**62, dt.date(1000, 3, 1), dt.datetime(1900, 2, 28, 12, 0, 0, 500000, tzinfo=UTC),
     dt.datetime(2024, 3, 10, 2, 30), "", b"", Decimal("-9999999.49")),
    (None,) * 8,
]


def _literal(value: object, spark_type: str) -> str:
    if value is None:
        return f"CAST(NULL AS {spark_type})"
    if spark_type == "DATE":
        return f"DATE'{value.isoformat()}'"
    if spark_type == "TIMESTAMP":
        return f"TIMESTAMP'{value.replace(tzinfo=None).isoformat()}Z'"
    if spark_type == "TIMESTAMP_NTZ":
        return f"TIMESTAMP_NTZ'{value.isoformat()}'"
    if spark_type == "STRING":
        return "'" + value.replace("'", "\\'") + "'"
    if spark_type == "BINARY":
        return f"X'{value.hex()}'"
    return f"CAST('{value}' AS {spark_type})"


@pytest.fixture(scope="module")
def spark(spark):
    """The shared session in a zone with daylight saving time, so that zone handling shows."""
    previous_tz = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    yield spark
    spark.conf.set("spark.sql.session.timeZone", previous_tz)


@pytest.fixture(params=["false", "true"], ids=["legacy", "ansi"])
def ansi(spark, request):
    """Spark 3.5 defaults to non-ANSI arithmetic, Spark 4 to ANSI (overflow raises): both must agree."""
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", request.param)
    yield request.param
    spark.conf.set("spark.sql.ansi.enabled", before)


@pytest.mark.spark
def test_to_sql_matches_apply_in_los_angeles(spark, ansi):
    names = list(COLUMNS)
    values_sql = ", ".join(
        "(" + ", ".join(_literal(v, COLUMNS[n][1]) for n, v in zip(names, row)) + ")" for row in ROWS)
    selects, expected = [], []
    for name, (itype, _, transforms) in COLUMNS.items():
        for text in transforms:
            tr = parse_transform(text)
            selects.append(transform_sql(tr, f"`{name}`", itype))
            expected.append((name, text, spark_internal_type(tr.result_type(itype)).lower(),
                             [tr.apply(to_internal(itype, row[names.index(name)]), itype) for row in ROWS]))
    df = spark.sql(f"SELECT {', '.join(selects)} FROM VALUES {values_sql} AS t({', '.join(names)})")
    rows = df.collect()
    assert len(rows) == len(ROWS)
    for k, (name, text, spark_type, want) in enumerate(expected):
        assert df.schema.fields[k].dataType.simpleString() == spark_type, (text, name)
        got = [bytes(r[k]) if isinstance(r[k], bytearray) else r[k] for r in rows]
        assert got == want, f"{text}({name}): spark {got} != apply {want}"
    # a decimal floor outside decimal(9,2) fails loudly rather than becoming a null partition
    overflow = transform_sql(parse_transform("truncate[50]"), "x", DEC)
    with pytest.raises(Exception, match="overflows"):
        spark.sql(f"SELECT {overflow} FROM VALUES (CAST('-9999999.99' AS DECIMAL(9,2))) AS t(x)").collect()
