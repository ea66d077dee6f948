"""The Spark session's time zone (`spark.sql.session.timeZone`) in Python.

Spark reads a zone-less timestamp in a statement (`TIMESTAMP '2024-01-01 06:00:00'`, a string
compared with or cast to a TIMESTAMP column, a DATE compared with one, `TIMESTAMP AS OF '...'`)
as the wall clock of the session's zone, and so must pyice wherever it turns such a value into an
instant itself: its pruning predicates, column defaults and time travel. Read as UTC in a session
west of UTC, `ts < TIMESTAMP '2024-01-01 06:00:00'` named an instant hours early, so the files
holding the rows it matches were pruned away and the statement changed none of them.
"""
from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

UTC = dt.timezone.utc

# java.time's fixed-offset spellings Spark accepts: `+08:00`, `-0530`, `UTC+8`, `GMT-03:00`
_OFFSET = re.compile(r"^(?:UTC|GMT|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$", re.IGNORECASE)
_UTC_NAMES = {"z", "utc", "gmt", "ut", "uct", "zulu", "universal", "greenwich"}


def session_zone(name: str | None) -> dt.tzinfo | None:
    """The zone `name` (a region such as `America/Los_Angeles`, `UTC`, or an offset such as
    `+08:00`) as a tzinfo: a fixed offset as `datetime.timezone`, a region as `ZoneInfo` (its
    daylight saving rules). None when Python does not know it (Java's three-letter aliases such as
    `PST`): callers then leave zone-dependent values to Spark."""
    text = (name or "").strip()
    if text.lower().removeprefix("etc/") in _UTC_NAMES:
        return UTC
    m = _OFFSET.match(text)
    if m:
        sign, hours, minutes, seconds = m.groups()
        offset = dt.timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
        if offset > dt.timedelta(hours=18):
            return None
        return dt.timezone(-offset if sign == "-" else offset)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def is_fixed_offset(zone: dt.tzinfo | None) -> bool:
    """Whether `zone` has one offset at every instant (no daylight saving time)."""
    return isinstance(zone, dt.timezone)


def wall_clock_instant(wall: dt.datetime, zone: dt.tzinfo) -> dt.datetime:
    """The instant (UTC-aware) that the zone-less reading `wall` names in `zone`, resolved as
    java.time resolves it for Spark: a reading in a gap (clocks set forward) moves forward by the
    gap, an ambiguous one (clocks set back) takes the earlier offset, which is Python's `fold=0`."""
    return wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
