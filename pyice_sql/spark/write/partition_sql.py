"""Partition transforms as Spark SQL text, so Spark computes partition values without a Python UDF.

`transform_sql` gives, for a transform and its source column, the expression computing
`Transform.apply` in Spark, independent of the session time zone (bucket calls the JVM shim's
`pyice_bucket`). Column conventions: Spark TIMESTAMP holds timestamptz, TIMESTAMP_NTZ holds
timestamp, uuid is a STRING and time (which Spark lacks) a BIGINT of µs. The result has the Spark
type `spark_internal_type(result_type(source))`; a uuid identity value stays its text.
"""
from __future__ import annotations

from typing import Callable

from pyice_sql.core.model.calendar import EPOCH_YEAR
from pyice_sql.core.model.conversions import MICROS_PER_DAY, decimal_from_unscaled
from pyice_sql.core.model.transforms import (
    MICROS_PER_HOUR, Bucket, Day, Hour, Identity, Month, Transform, Truncate, Void, Year,
)
from pyice_sql.core.model.types import DecimalType, IcebergType, type_kind


def transform_sql(transform: Transform, column_sql: str, source: IcebergType) -> str:
    """Spark SQL text computing `transform.apply` for the column `column_sql` of type `source`."""
    return _SQL[type(transform)](transform, column_sql, source)


def spark_internal_type(t: IcebergType) -> str:
    """The Spark SQL type of the internal representation of `t` (what `transform_sql` produces)."""
    if isinstance(t, DecimalType):
        return f"DECIMAL({t.precision},{t.scale})"
    names = {"boolean": "BOOLEAN", "int": "INT", "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE",
             "date": "INT", "time": "BIGINT", "timestamp": "BIGINT", "timestamptz": "BIGINT",
             "string": "STRING", "uuid": "STRING", "fixed": "BINARY", "binary": "BINARY"}
    try:
        return names[type_kind(t)]
    except KeyError:
        raise ValueError(f"no Spark representation for partition source type {t}") from None


def _ntz_micros_sql(col: str) -> str:
    """µs since the epoch of a Spark TIMESTAMP_NTZ column, by field arithmetic (no time zone)."""
    return (f"(CAST(unix_date(CAST({col} AS DATE)) AS BIGINT) * {MICROS_PER_DAY}L"
            f" + CAST(hour({col}) * 3600 + minute({col}) * 60 AS BIGINT) * 1000000L"
            f" + CAST(extract(SECOND FROM {col}) * 1000000 AS BIGINT))")


def _micros_sql(col: str, source: IcebergType) -> str:
    """Spark `timestamp` holds Iceberg timestamptz (an instant); `timestamp_ntz` holds `timestamp`."""
    return f"unix_micros({col})" if type_kind(source) == "timestamptz" else _ntz_micros_sql(col)


def _floor_div_sql(expr: str, divisor: int) -> str:
    """Exact floor division of a BIGINT expression (Spark's `/` goes through double)."""
    return f"CAST((({expr}) - pmod({expr}, {divisor}L)) div {divisor}L AS INT)"


def _wrapping_floor_sql(col: str, width: int, bits: int) -> str:
    """`col - pmod(col, width)` with Java's two's-complement wrap-around for the few values near
    the type's minimum (Iceberg's truncate wraps there), and no overflow error under ANSI mode
    (Spark 4's default): those values take an exact detour through a wider type."""
    low, span = 2 ** (bits - 1), 2 ** bits
    wide, int_type = ("BIGINT", "INT") if bits == 32 else ("DECIMAL(21,0)", "BIGINT")
    wrapped = (f"CAST(pmod(CAST({col} AS {wide}) - pmod({col}, {width}) + {low}, {span}) - {low} "
               f"AS {int_type})")
    return f"(CASE WHEN {col} < {-low + width} THEN {wrapped} ELSE {col} - pmod({col}, {width}) END)"


def _days_sql(col: str, source: IcebergType) -> str:
    name = type_kind(source)
    if name == "date":
        return f"unix_date({col})"
    if name == "timestamp":
        return f"unix_date(CAST({col} AS DATE))"
    return _floor_div_sql(f"unix_micros({col})", MICROS_PER_DAY)


def _date_sql(col: str, source: IcebergType) -> str:
    """A DATE expression for the UTC (or wall-clock) calendar day, safe for year()/month()."""
    name = type_kind(source)
    if name == "date":
        return col
    if name == "timestamp":
        return f"CAST({col} AS DATE)"
    return f"date_from_unix_date({_days_sql(col, source)})"


def _identity_sql(transform: Identity, column_sql: str, source: IcebergType) -> str:
    name = type_kind(transform.check_source(source))
    if name == "date":
        return f"unix_date({column_sql})"
    if name in ("timestamp", "timestamptz"):
        return _micros_sql(column_sql, source)
    return column_sql


def _bucket_sql(transform: Bucket, column_sql: str, source: IcebergType) -> str:
    """Calls the JVM shim's `pyice_bucket(N, x)` with x as BIGINT, STRING, BINARY or DECIMAL.

    A uuid column (a Spark string) is passed as its 16 big-endian bytes, which is what
    Iceberg hashes, rather than as text.
    """
    name = type_kind(transform.check_source(source))
    if name in ("int", "long", "time"):
        arg = f"CAST({column_sql} AS BIGINT)"
    elif name == "date":
        arg = f"CAST(unix_date({column_sql}) AS BIGINT)"
    elif name in ("timestamp", "timestamptz"):
        arg = _micros_sql(column_sql, source)
    elif name == "uuid":
        arg = f"unhex(replace({column_sql}, '-', ''))"
    else:
        arg = column_sql
    return f"pyice_bucket({transform.num_buckets}, {arg})"


def _truncate_sql(transform: Truncate, column_sql: str, source: IcebergType) -> str:
    """Spark SQL for truncate; `substring` counts code points, matching Iceberg.

    A decimal whose floor no longer fits decimal(P, S) (e.g. -9.99 at width 50 in
    decimal(3, 2)) fails the query, as Java refuses to write it, instead of becoming null.
    Raises ValueError for decimal(38, S>6): Spark would round the intermediate difference
    (precision 39 is reduced by dropping scale), giving a wrong partition value.
    """
    name = type_kind(transform.check_source(source))
    if name in ("int", "long"):
        return _wrapping_floor_sql(column_sql, transform.width, 32 if name == "int" else 64)
    if name == "decimal":
        assert isinstance(source, DecimalType)
        if source.precision >= 38 and source.scale > 6:
            raise ValueError(f"truncate on {source} cannot be computed exactly in Spark SQL")
        step = format(decimal_from_unscaled(transform.width, source.scale), "f")
        floor = f"TRY_CAST({column_sql} - pmod({column_sql}, {step}BD) AS DECIMAL({source.precision},{source.scale}))"
        return (f"CASE WHEN {column_sql} IS NULL THEN NULL ELSE coalesce({floor},"
                f" raise_error('{transform} overflows {source}')) END")
    return f"substring({column_sql}, 1, {transform.width})"


def _year_sql(transform: Year, column_sql: str, source: IcebergType) -> str:
    transform.check_source(source)
    return f"(year({_date_sql(column_sql, source)}) - {EPOCH_YEAR})"


def _month_sql(transform: Month, column_sql: str, source: IcebergType) -> str:
    transform.check_source(source)
    d = _date_sql(column_sql, source)
    return f"((year({d}) - {EPOCH_YEAR}) * 12 + month({d}) - 1)"


def _day_sql(transform: Day, column_sql: str, source: IcebergType) -> str:
    transform.check_source(source)
    return _days_sql(column_sql, source)


def _hour_sql(transform: Hour, column_sql: str, source: IcebergType) -> str:
    if type_kind(transform.check_source(source)) == "timestamp":
        return f"(unix_date(CAST({column_sql} AS DATE)) * 24 + hour({column_sql}))"
    return _floor_div_sql(f"unix_micros({column_sql})", MICROS_PER_HOUR)


def _void_sql(transform: Void, column_sql: str, source: IcebergType) -> str:
    return f"CAST(NULL AS {spark_internal_type(source)})"


_SQL: dict[type, Callable[..., str]] = {
    Identity: _identity_sql, Bucket: _bucket_sql, Truncate: _truncate_sql, Year: _year_sql, Month: _month_sql,
    Day: _day_sql, Hour: _hour_sql, Void: _void_sql,
}
