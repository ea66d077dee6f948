"""Argument conversion shared by the maintenance procedures (timestamps, options maps, filters).

CALL arguments arrive as Python literals (see `sql.statements.Call`); Iceberg's procedures take
typed Spark values, so each conversion here names the procedure and argument it rejects.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Iterable, Mapping

from sqlglot import exp

from pyice_sql.core.errors import AnalysisError, ParseError
from pyice_sql.core.expr.from_sql import target_columns, to_predicate
from pyice_sql.core.expr.predicates import Expression
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.conversions import zoned_instant

DAY_MS = 24 * 3600 * 1000


def timestamp_ms(value: Any, procedure: str, name: str, zone: dt.tzinfo | None) -> int | None:
    """A TIMESTAMP argument as epoch millis; text and naive datetimes are in `zone`, the session's
    time zone (`runtime.spark_session_zone`; None: unknown to Python, so an offset is required)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise AnalysisError(f"{procedure}: {name} must be a timestamp, got {value!r}")
    if isinstance(value, (int, float)):  # Spark casts a number to a timestamp in seconds
        return int(value * 1000)
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip().replace(" ", "T", 1))
        except ValueError:
            raise AnalysisError(f"{procedure}: {name} is not a timestamp: {value!r}") from None
    if not isinstance(value, dt.date):  # a date: its midnight
        raise AnalysisError(f"{procedure}: {name} must be a timestamp, got {value!r}")
    try:
        return int(zoned_instant(value, zone).timestamp() * 1000)
    except ValueError as e:
        raise AnalysisError(f"{procedure}: {name} {e}") from None


def options_map(value: Any, procedure: str, known: Iterable[str]) -> dict[str, str]:
    """`options => map('k', 'v', ...)`: string keys and values; unknown keys are refused by name."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AnalysisError(f"{procedure}: options must be a map('key', 'value', ...), got {value!r}")
    out = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in value.items()}
    unknown = sorted(set(out) - set(known))
    if unknown:
        raise AnalysisError(f"{procedure}: unsupported option(s) {', '.join(unknown)}; supported: "
                            f"{', '.join(sorted(known))}")
    return out


def long_option(options: Mapping[str, str], key: str, default: int, procedure: str) -> int:
    try:
        return int(options[key]) if key in options else int(default)
    except ValueError:
        raise AnalysisError(f"{procedure}: option {key} must be an integer, got {options[key]!r}") from None


def bool_option(options: Mapping[str, str], key: str, default: bool, procedure: str) -> bool:
    if key not in options:
        return default
    text = options[key].strip().lower()
    if text not in ("true", "false"):
        raise AnalysisError(f"{procedure}: option {key} must be true or false, got {options[key]!r}")
    return text == "true"


def where_predicate(where: str | None, schema: Schema, procedure: str, zone: dt.tzinfo | None) -> Expression | None:
    """`where => 'sql condition'` over the table's columns as an Iceberg predicate (inclusive;
    `zone`, the session's time zone, reads its timestamps written without an offset).

    A column the table does not have is an error, as in Iceberg.
    """
    if where is None:
        return None
    from pyice_sql.core.sql.dialect import DIALECT  # the parser's dialect; imported late (heavy module)

    try:
        cond = exp.maybe_parse(where, dialect=DIALECT)
    except Exception as e:  # sqlglot raises ParseError / TokenError
        raise ParseError(f"{procedure}: cannot parse where {where!r}: {e}") from None
    for col in cond.find_all(exp.Column):
        if schema.find_field(col.name) is None:
            raise AnalysisError(f"{procedure}: where refers to unknown column {col.name!r}; "
                                f"columns: {', '.join(f.name for f in schema.fields)}")
    return to_predicate(cond, target_columns(schema, []), schema, "inclusive", zone=zone)
