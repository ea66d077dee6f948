"""Whether narrowing a MERGE's target scan by the source's join-key values can skip any file.

Narrowing costs a pass over the source (its key range and distinct values: 3-5 Spark jobs)
before the MERGE itself. It pays off when the planned files hold different keys: a partition
field derived from a key column (identity, bucket, truncate, ...), or key bounds with no value
common to all files (data clustered by key). When some key value lies within every file's
bounds (keys spread over the files, or a single file), a source key there matches every file,
and the few keys that could avoid a file are at the range's edges: the pass is skipped and the
join finds unmatched rows at no extra cost.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from pyice_sql.core.expr.evaluators import decode_bound
from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.scan.planner import FileScanTask


def source_keys_can_prune(tasks: Iterable[FileScanTask], schema: Schema, spec_by_id: Callable[[int], PartitionSpec | None],
                          key_columns: Iterable[str]) -> bool:
    """True when some key column separates the planned files (see the module doc)."""
    tasks = list(tasks)
    if len(tasks) < 2:
        return False
    fields = [f for f in (schema.find_field(c) for c in key_columns) if f is not None]
    key_ids = {f.field_id for f in fields}
    specs = [spec_by_id(s) for s in {t.file.spec_id for t in tasks}]
    if any(pf.source_id in key_ids for spec in specs if spec is not None for pf in spec.fields):
        return True
    return any(_no_common_key(tasks, f.field_id, f.type) for f in fields)


def _no_common_key(tasks: list[FileScanTask], field_id: int, field_type) -> bool:
    """No value of the field lies within every bounded file's [lower, upper]."""
    ranges: list[tuple[Any, Any]] = []
    for t in tasks:
        lo = decode_bound(field_type, (t.file.lower_bounds or {}).get(field_id))
        hi = decode_bound(field_type, (t.file.upper_bounds or {}).get(field_id))
        if lo is None or hi is None:
            continue  # no bounds: the file can never be skipped by metrics, whatever the keys
        ranges.append((lo, hi))
    if len(ranges) < 2:
        return False
    try:
        return max(r[0] for r in ranges) > min(r[1] for r in ranges)
    except TypeError:  # bounds of mixed, incomparable types: assume narrowing may help
        return True
