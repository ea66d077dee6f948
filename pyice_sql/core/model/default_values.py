"""Format v3 column defaults in the spec's JSON single-value form (appendix D), both ways.

A field's `initial-default` / `write-default` is stored in table metadata as JSON: numbers and
booleans as themselves, decimals, dates, times, timestamps and UUIDs as ISO / canonical strings,
binary and fixed as hex. Everything else in pyice_sql works on internal values
(`core.model.conversions`), so this module converts between the two and checks that a default
fits its field: a default Java wrote must read back exactly, and one we write must parse in Java.
Only primitive types carry non-null defaults here (nested defaults are refused by name).
"""
from __future__ import annotations

import datetime as dt
import math
import re
import uuid
from decimal import Decimal, InvalidOperation
from typing import Any

from pyice_sql.core.errors import UnsupportedError
from pyice_sql.core.model.conversions import decimal_scale, to_internal, to_python
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.types import DecimalType, IcebergType, NestedField, StructType, type_kind, walk_fields

DEFAULTS_FORMAT_VERSION = 3  # the first format version whose fields may carry non-null defaults
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})*$")
_ISO_TIME = re.compile(r"^\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?$")
_ISO_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?P<zone>[+-]\d{2}:\d{2})?$")


class DefaultValueError(ValueError):
    """A default value that is not the JSON single-value form of its field's type."""


def _fail(t: IcebergType, value: Any, why: str) -> DefaultValueError:
    return DefaultValueError(f"{value!r} is not a valid {t} default: {why}")


def from_json(t: IcebergType, value: Any) -> Any:
    """The internal value of a JSON default of type `t` (None for JSON null).

    Raises:
        DefaultValueError: the JSON is not the spec's form for `t`, or `t` is nested.
    """
    if value is None:
        return None
    kind = type_kind(t)
    if kind == "nested":
        raise _fail(t, value, "non-null defaults of struct, list and map columns are not supported")
    if kind == "unknown":
        raise _fail(t, value, "a column of type unknown can only default to null")
    if kind == "boolean":
        if not isinstance(value, bool):
            raise _fail(t, value, "expected a JSON boolean")
        return value
    if kind in ("int", "long", "float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _fail(t, value, "expected a JSON number")
        if kind in ("int", "long") and not (isinstance(value, int) or float(value).is_integer()):
            raise _fail(t, value, "expected a whole number")
        value = int(value) if kind in ("int", "long") else float(value)
    elif not isinstance(value, str):
        raise _fail(t, value, "expected a JSON string")
    elif kind == "decimal":
        value = _decimal(t, value)
    elif kind in ("timestamp", "timestamptz"):
        value = _timestamp(t, value, kind == "timestamptz")
    elif kind == "time" and not _ISO_TIME.match(value):
        raise _fail(t, value, "expected an ISO-8601 time")
    elif kind in ("binary", "fixed"):
        if not _HEX.match(value):
            raise _fail(t, value, "expected a hexadecimal string")
        value = bytes.fromhex(value)
    elif kind == "uuid":
        try:
            value = uuid.UUID(value)
        except ValueError:
            raise _fail(t, value, "expected a UUID string") from None
    try:
        return to_internal(t, value)
    except (ValueError, TypeError) as e:
        raise _fail(t, value, str(e)) from None


def _decimal(t: DecimalType, text: str) -> Decimal:
    try:
        d = Decimal(text)
    except InvalidOperation:
        raise _fail(t, text, "expected a decimal string") from None
    if not d.is_finite() or decimal_scale(d) != t.scale:
        raise _fail(t, text, f"expected a decimal with scale {t.scale}")
    return d


def _timestamp(t: IcebergType, text: str, with_zone: bool) -> dt.datetime:
    m = _ISO_TIMESTAMP.match(text)
    if m is None:
        raise _fail(t, text, "expected an ISO-8601 timestamp")
    zone = m.group("zone")
    if with_zone and zone != "+00:00":
        raise _fail(t, text, "a timestamptz default must end in +00:00")
    if not with_zone and zone is not None:
        raise _fail(t, text, "a timestamp default must not carry a zone offset")
    return dt.datetime.fromisoformat(text)


def to_json(t: IcebergType, value: Any) -> Any:
    """The JSON single-value form of internal value `value` of type `t` (None stays None)."""
    if value is None:
        return None
    kind = type_kind(t)
    if kind == "nested":
        raise _fail(t, value, "non-null defaults of struct, list and map columns are not supported")
    if kind in ("boolean", "int", "long", "string"):
        return value
    if kind in ("float", "double"):
        if math.isnan(value) or math.isinf(value):
            raise _fail(t, value, "NaN and infinities have no JSON number form")
        return value
    if kind == "decimal":
        return f"{value:f}"
    if kind in ("binary", "fixed"):
        return bytes(value).hex()
    python = to_python(t, value)
    if kind in ("time", "timestamp", "timestamptz"):
        return python.isoformat(timespec="microseconds")
    return str(python)  # date (yyyy-mm-dd), uuid (lowercase)


def check_default(t: IcebergType, value: Any, required: bool, what: str) -> None:
    """Refuse a JSON default that does not fit its field: wrong form, or null on a NOT NULL field.

    Raises:
        DefaultValueError: naming `what` (the field and its table).
    """
    if value is None:
        if required:
            raise DefaultValueError(f"{what}: a NOT NULL column cannot default to NULL")
        return
    try:
        from_json(t, value)
    except DefaultValueError as e:
        raise DefaultValueError(f"{what}: {e}") from None


def read_as_initial_default(schema: Schema, written: Schema | None) -> tuple[NestedField, ...]:
    """The top-level fields of `schema` that data files written with schema `written` lack and that
    have an initial-default: every row of such a file holds that default, not NULL (spec: column
    projection). `written` None means the file has every column.

    Raises:
        UnsupportedError: a nested field would need its initial-default (not read yet).
    """
    if written is None or written is schema:
        return ()
    present = written.id_to_field()
    for path, f in walk_fields(StructType(schema.fields)):
        if len(path) > 1 and f.initial_default is not None and f.field_id not in present:
            raise UnsupportedError(f"column {'.'.join(path)} has a default value inside a nested type, "
                                   "which pyice_sql cannot read yet")
    return tuple(f for f in schema.fields if f.initial_default is not None and f.field_id not in present)
