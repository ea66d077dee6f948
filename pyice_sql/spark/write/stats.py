"""Turn a Parquet footer summary (from the jvm shim) into an Iceberg DataFile's metrics.

Parquet's raw min/max statistics are already Iceberg's single-value encoding for most
physical types (little-endian ints and floats, raw bytes); the exceptions handled here are
decimals stored as INT32/INT64/FIXED, string/binary truncation under the default
`truncate(16)` metrics mode, NaN (never a bound) and signed zeros. Columns inside lists and
maps get no metrics, as in Iceberg Java.
"""
from __future__ import annotations

import re
import struct
from typing import Any, Collection

from pyice_sql.core import properties as props
from pyice_sql.core.model import types as it
from pyice_sql.core.model.bounds import normalize_float_bounds, truncate_lower_bound, truncate_upper_bound
from pyice_sql.core.model.conversions import decimal_from_unscaled, from_bytes, to_bytes
from pyice_sql.core.model.manifest import DataFile, FileContent
from pyice_sql.core.model.schema import Schema

_TRUNCATE = re.compile(r"^truncate\((\d+)\)$")


def metrics_mode(properties: dict[str, str], column: str) -> tuple[str, int | None]:
    """(mode, width) for a column from `write.metadata.metrics.*` table properties."""
    mode = properties.get(props.METRICS_MODE_COLUMN_CONF_PREFIX + column,
                          properties.get(props.DEFAULT_WRITE_METRICS_MODE,
                                         props.DEFAULT_WRITE_METRICS_MODE_DEFAULT)).strip().lower()
    m = _TRUNCATE.match(mode)
    if m:
        return "truncate", int(m.group(1))
    if mode in ("none", "counts", "full"):
        return mode, None
    raise ValueError(f"unknown metrics mode {mode!r} for column {column}")


def _decode_parquet_value(t: it.IcebergType, physical: str, raw: bytes) -> Any:
    """Parquet plain-encoded statistic → Iceberg internal value of type t."""
    if isinstance(t, it.DecimalType):
        if physical == "INT32":
            unscaled = struct.unpack("<i", raw)[0]
        elif physical == "INT64":
            unscaled = struct.unpack("<q", raw)[0]
        else:
            unscaled = int.from_bytes(raw, "big", signed=True)
        return decimal_from_unscaled(unscaled, t.scale)
    if physical == "INT96":
        return None
    return from_bytes(t, raw)


def _bounds(t: it.IcebergType, physical: str, mn: str | None, mx: str | None, mode: str,
            width: int | None) -> tuple[bytes | None, bytes | None]:
    if mode in ("none", "counts") or mn is None or mx is None:
        return None, None
    lo = _decode_parquet_value(t, physical, bytes.fromhex(mn))
    hi = _decode_parquet_value(t, physical, bytes.fromhex(mx))
    if lo is None or hi is None:
        return None, None
    if isinstance(t, it.PrimitiveType) and t.name in ("float", "double"):
        lo, hi = normalize_float_bounds(lo, hi)
        if lo is None or hi is None:
            return None, None
    if mode == "truncate" and width is not None:
        lo = truncate_lower_bound(t, lo, width)
        hi = truncate_upper_bound(t, hi, width)
    return (to_bytes(t, lo) if lo is not None else None), (to_bytes(t, hi) if hi is not None else None)


def top_level_leaves(schema: Schema) -> dict[tuple[str, ...], it.NestedField]:
    """Primitive fields reachable through structs only (leaves inside lists/maps get no metrics)."""
    out: dict[tuple[str, ...], it.NestedField] = {}

    def visit(fields: tuple[it.NestedField, ...], prefix: tuple[str, ...]) -> None:
        for f in fields:
            if isinstance(f.type, it.StructType):
                visit(f.type.fields, prefix + (f.name,))
            elif it.is_primitive(f.type):
                out[prefix + (f.name,)] = f

    visit(schema.fields, ())
    return out


def float_leaves(schema: Schema, properties: dict[str, str]) -> dict[int, tuple[str, ...]]:
    """The float and double leaves (`top_level_leaves`) that get NaN counts: those whose metrics
    mode is not `none`, as Iceberg Java counts them. Field id to name path."""
    return {f.field_id: path for path, f in top_level_leaves(schema).items()
            if it.is_floating(f.type) and metrics_mode(properties, ".".join(path))[0] != "none"}


def _kept_nan_counts(kept: str | None, floats: Collection[int]) -> dict[int, int] | None:
    """The NaN counts of the float columns `floats` (field ids) in the footer text pyice's writer
    kept (`id=count` entries): an empty map where there are none, as Iceberg Java writes; None
    (unknown) where the writer counted none of them."""
    if not floats:
        return {}
    if kept is None:
        return None
    counts = {int(fid): int(n) for fid, n in (e.split("=") for e in kept.split(",") if e)}
    return {fid: n for fid, n in counts.items() if fid in floats} or None


def data_file_from_footer(footer: dict, schema: Schema, properties: dict[str, str], file_path: str,
                          partition: tuple, spec_id: int, content: FileContent = FileContent.DATA,
                          referenced_data_file: str | None = None) -> DataFile:
    """Build the DataFile for one written Parquet file from its footer summary.

    Columns are matched by Parquet field id when the file has them, else by name path. NaN counts
    come from what pyice's writer keeps in the footer (`nanCounts`, NanCounts.java), when it did.
    """
    leaves = top_level_leaves(schema)
    by_id = {f.field_id: (path, f) for path, f in leaves.items()}
    column_sizes: dict[int, int] = {}
    value_counts: dict[int, int] = {}
    null_counts: dict[int, int] = {}
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    for col in footer["columns"]:
        fid = col.get("fieldId")
        match = by_id.get(fid) if fid is not None else None
        if match is None and fid is None:
            path = tuple(col["path"])
            f = leaves.get(path)
            match = (path, f) if f is not None else None
        if match is None:
            continue
        path, field = match
        mode, width = metrics_mode(properties, ".".join(path))
        if mode == "none":
            continue
        column_sizes[field.field_id] = int(col["compressedSize"])
        value_counts[field.field_id] = int(col["valueCount"])
        if col.get("nullCount") is not None:
            null_counts[field.field_id] = int(col["nullCount"])
        lo, hi = _bounds(field.type, col["physicalType"], col.get("min"), col.get("max"), mode, width)
        if lo is not None:
            lower[field.field_id] = lo
        if hi is not None:
            upper[field.field_id] = hi
    return DataFile(
        content=content, file_path=file_path, partition=partition, record_count=int(footer["rowCount"]),
        file_size_in_bytes=int(footer["length"]), column_sizes=column_sizes, value_counts=value_counts,
        null_value_counts=null_counts, lower_bounds=lower, upper_bounds=upper,
        # the float columns with metrics (their mode is not `none`); delete files keep no NaN counts
        nan_value_counts=None if content != FileContent.DATA else _kept_nan_counts(
            footer.get("nanCounts"), [fid for fid in value_counts if it.is_floating(by_id[fid][1].type)]),
        split_offsets=sorted(footer.get("splitOffsets") or []) or None,
        sort_order_id=0 if content == FileContent.DATA else None,
        referenced_data_file=referenced_data_file, spec_id=spec_id,
    )
