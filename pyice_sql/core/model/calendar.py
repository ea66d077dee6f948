"""Calendar arithmetic (proleptic Gregorian, any range, floor semantics) and values as Java prints them.

Partition paths and Iceberg's `toHumanString` use java.time's formats, so these follow Java exactly.
"""
from __future__ import annotations

import base64
from typing import Any

from pyice_sql.core.model.conversions import MICROS_PER_DAY
from pyice_sql.core.model.types import IcebergType, PrimitiveType

EPOCH_YEAR = 1970


def civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01, for any integer (not limited to 1..9999)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (1 if month <= 2 else 0), month, day


def human_day(days: int) -> str:
    y, m, d = civil_from_days(days)
    return f"{y:04d}-{m:02d}-{d:02d}"


def _iso_year(y: int) -> str:
    """java.time's ISO year: four digits, a sign when negative, '+' beyond 9999."""
    if y > 9999:
        return f"+{y}"
    return f"-{-y:04d}" if y < 0 else f"{y:04d}"


def iso_timestamp(micros: int) -> str:
    """ISO_LOCAL_DATE_TIME as Java prints it: seconds always, fraction without trailing zeros."""
    days, rem = divmod(micros, MICROS_PER_DAY)
    y, m, d = civil_from_days(days)
    secs, frac = divmod(rem, 1_000_000)
    text = f"{_iso_year(y)}-{m:02d}-{d:02d}T{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
    return text + (f".{frac:06d}".rstrip("0") if frac else "")


def java_local_time(micros: int) -> str:
    """java.time.LocalTime.toString(): seconds only when non-zero, fraction in 3-digit groups."""
    secs, frac = divmod(micros, 1_000_000)
    text = f"{secs // 3600:02d}:{secs // 60 % 60:02d}"
    if secs % 60 or frac:
        text += f":{secs % 60:02d}"
    if frac:
        text += f".{frac // 1000:03d}" if frac % 1000 == 0 else f".{frac:06d}"
    return text


def human_value(value: Any, source: IcebergType | None) -> str:
    """Java's Transform.toHumanString for an untransformed (identity/truncate) value."""
    if value is None:
        return "null"
    name = source.name if isinstance(source, PrimitiveType) else None
    if name == "date":
        return human_day(value)
    if name == "time":
        return java_local_time(value)
    if name == "timestamp":
        return iso_timestamp(value)
    if name == "timestamptz":
        return iso_timestamp(value) + "+00:00"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
