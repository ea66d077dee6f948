"""Column metrics bounds: truncated string/binary bounds and float bounds that stay valid.

Bounds are what other engines prune with, so each rule here matches Iceberg Java's.
"""
from __future__ import annotations

import math
from typing import Any

from pyice_sql.core.model.types import IcebergType, PrimitiveType

_MAX_CODE_POINT = 0x10FFFF
_SURROGATES = (0xD800, 0xDFFF)


def truncate_lower_bound(t: IcebergType, v: Any, width: int) -> Any:
    """A lower bound for `v` truncated to `width` (code points for strings, bytes for binary).

    A prefix never sorts after the value, so plain truncation stays a valid lower bound.
    Other types (including fixed) are never truncated.
    """
    if v is None or not isinstance(t, PrimitiveType) or t.name not in ("string", "binary"):
        return v
    return v[:width]


def _next_code_point(cp: int) -> int | None:
    if cp >= _MAX_CODE_POINT:
        return None
    nxt = cp + 1
    return _SURROGATES[1] + 1 if _SURROGATES[0] <= nxt <= _SURROGATES[1] else nxt


def truncate_upper_bound(t: IcebergType, v: Any, width: int) -> Any:
    """An upper bound for `v` no longer than `width`, or None when none exists.

    The prefix is made larger than every value sharing it by incrementing its last
    incrementable unit (code point, skipping surrogates; or byte below 0xFF) and dropping the
    rest, as Iceberg Java's UnicodeUtil/BinaryUtil do. None means "omit the upper bound".
    """
    if v is None or not isinstance(t, PrimitiveType) or t.name not in ("string", "binary"):
        return v
    if len(v) <= width:
        return v
    if t.name == "string":
        for i in range(width - 1, -1, -1):
            nxt = _next_code_point(ord(v[i]))
            if nxt is not None:
                return v[:i] + chr(nxt)
        return None
    for i in range(width - 1, -1, -1):
        if v[i] < 0xFF:
            return bytes(v[:i]) + bytes([v[i] + 1])
    return None


def normalize_float_bounds(lower: float | None, upper: float | None) -> tuple[float | None, float | None]:
    """Make float/double min/max valid Iceberg bounds.

    NaN is never a bound, so a NaN min or max drops both (as Java does). Because -0.0 sorts
    before +0.0 in Iceberg but compares equal in IEEE, a zero lower bound becomes -0.0 and a
    zero upper bound +0.0, so both zeros are always covered.
    """
    if (lower is not None and math.isnan(lower)) or (upper is not None and math.isnan(upper)):
        return None, None
    if lower == 0.0:
        lower = -0.0
    if upper == 0.0:
        upper = 0.0
    return lower, upper
