"""Snapshots, snapshot refs, snapshot ids and snapshot summaries.

A snapshot is one committed table state. Its summary is more than decoration: Java's
concurrent-writer validation selects snapshots by `operation`, and engines read the running
`total-*` counters, which are only valid if every commit carries them forward. So the summary
is built here the way Iceberg Java builds it.
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, Collection, Iterable, Mapping, Protocol


class Operation:
    """The only values `summary["operation"]` may take; Java's conflict checks select by them."""

    APPEND = "append"
    OVERWRITE = "overwrite"
    DELETE = "delete"
    REPLACE = "replace"


OPERATIONS = (Operation.APPEND, Operation.OVERWRITE, Operation.DELETE, Operation.REPLACE)

BRANCH = "branch"
TAG = "tag"
MAIN_BRANCH = "main"

DATA = 0
POSITION_DELETES = 1
EQUALITY_DELETES = 2


@dataclass(frozen=True)
class Snapshot:
    """One table state: its manifest list plus lineage (parent, sequence number) and summary.

    `manifests` holds a v1 snapshot's inline manifest paths (no manifest list); readers that
    only understand manifest lists must check it and fail clearly.
    """

    snapshot_id: int
    parent_snapshot_id: int | None
    sequence_number: int
    timestamp_ms: int
    manifest_list: str | None
    summary: dict[str, str] = field(default_factory=dict)
    schema_id: int | None = None
    manifests: tuple[str, ...] | None = None
    first_row_id: int | None = None  # format v3 row lineage: the table's next-row-id at this commit
    added_rows: int | None = None  # format v3: rows this commit assigned ids to

    @property
    def operation(self) -> str | None:
        return self.summary.get("operation")

    def to_json(self) -> dict[str, Any]:
        """Java's key order; sequence-number only when > 0 and parent only when present."""
        out: dict[str, Any] = {}
        if self.sequence_number > 0:
            out["sequence-number"] = self.sequence_number
        out["snapshot-id"] = self.snapshot_id
        if self.parent_snapshot_id is not None:
            out["parent-snapshot-id"] = self.parent_snapshot_id
        out["timestamp-ms"] = self.timestamp_ms
        if self.summary:
            summary = {"operation": self.summary["operation"]} if "operation" in self.summary else {}
            summary.update(self.summary)
            out["summary"] = summary
        if self.manifest_list is not None:
            out["manifest-list"] = self.manifest_list
        elif self.manifests is not None:
            out["manifests"] = list(self.manifests)
        if self.schema_id is not None:
            out["schema-id"] = self.schema_id
        if self.first_row_id is not None:
            out["first-row-id"] = self.first_row_id
        if self.added_rows is not None:
            out["added-rows"] = self.added_rows
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "Snapshot":
        """Parse v1 or v2; a summary without `operation` gets `overwrite`, as Java reads it."""
        summary = {str(k): _summary_value(k, v) for k, v in (obj.get("summary") or {}).items()}
        if summary and "operation" not in summary:
            summary = {"operation": Operation.OVERWRITE, **summary}
        manifests = obj.get("manifests")
        return cls(
            snapshot_id=int(obj["snapshot-id"]),
            parent_snapshot_id=_optional_int(obj.get("parent-snapshot-id")),
            sequence_number=int(obj.get("sequence-number", 0)),
            timestamp_ms=int(obj["timestamp-ms"]),
            manifest_list=obj.get("manifest-list"),
            summary=summary,
            schema_id=_optional_int(obj.get("schema-id")),
            manifests=tuple(manifests) if manifests is not None else None,
            first_row_id=_optional_int(obj.get("first-row-id")),
            added_rows=_optional_int(obj.get("added-rows")),
        )


def _summary_value(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"snapshot summary value for {key!r} is not a string: {value!r}")
    return value


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


@dataclass(frozen=True)
class SnapshotRef:
    """A named pointer to a snapshot: a branch (moves on commit) or a tag (fixed), with retention."""

    snapshot_id: int
    type: str = BRANCH
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    max_ref_age_ms: int | None = None

    def __post_init__(self) -> None:
        if self.type not in (BRANCH, TAG):
            raise ValueError(f"invalid snapshot ref type {self.type!r}")
        if self.type == TAG and (self.min_snapshots_to_keep is not None or self.max_snapshot_age_ms is not None):
            raise ValueError("tags cannot carry min-snapshots-to-keep or max-snapshot-age-ms")

    @property
    def is_branch(self) -> bool:
        return self.type == BRANCH

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"snapshot-id": self.snapshot_id, "type": self.type}
        if self.min_snapshots_to_keep is not None:
            out["min-snapshots-to-keep"] = self.min_snapshots_to_keep
        if self.max_snapshot_age_ms is not None:
            out["max-snapshot-age-ms"] = self.max_snapshot_age_ms
        if self.max_ref_age_ms is not None:
            out["max-ref-age-ms"] = self.max_ref_age_ms
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "SnapshotRef":
        return cls(int(obj["snapshot-id"]), str(obj["type"]).lower(), _optional_int(obj.get("min-snapshots-to-keep")),
                   _optional_int(obj.get("max-snapshot-age-ms")), _optional_int(obj.get("max-ref-age-ms")))


def new_snapshot_id(existing_ids: Collection[int]) -> int:
    """A random positive 63-bit id not in `existing_ids` (ids must be unique within a table)."""
    while True:
        candidate = secrets.randbits(63)
        if candidate > 0 and candidate not in existing_ids:
            return candidate


class ContentFileLike(Protocol):
    """What build_summary needs of a data or delete file."""

    content: int
    record_count: int
    file_size_in_bytes: int
    partition: Any


# Counter keys in the order Iceberg Java emits them, and the totals each pair feeds.
_COUNTER_KEYS = (
    "added-data-files", "deleted-data-files",
    "added-equality-delete-files", "removed-equality-delete-files",
    "added-position-delete-files", "removed-position-delete-files",
    "added-delete-files", "removed-delete-files",
    "added-dvs", "removed-dvs",
    "added-records", "deleted-records",
    "added-files-size", "removed-files-size",
    "added-position-deletes", "removed-position-deletes",
    "added-equality-deletes", "removed-equality-deletes",
)
_TOTALS = (
    ("total-records", "added-records", "deleted-records"),
    ("total-files-size", "added-files-size", "removed-files-size"),
    ("total-data-files", "added-data-files", "deleted-data-files"),
    ("total-delete-files", "added-delete-files", "removed-delete-files"),
    ("total-position-deletes", "added-position-deletes", "removed-position-deletes"),
    ("total-equality-deletes", "added-equality-deletes", "removed-equality-deletes"),
)
CHANGED_PARTITION_COUNT = "changed-partition-count"


def build_summary(
    operation: str,
    previous_summary: Mapping[str, str] | None,
    *,
    added_data_files: Iterable[ContentFileLike],
    removed_data_files: Iterable[ContentFileLike],
    added_delete_files: Iterable[ContentFileLike],
    removed_delete_files: Iterable[ContentFileLike],
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The snapshot summary Iceberg Java would write for this change, with running totals.

    `previous_summary` is the summary of the branch head this commit builds on, or None when
    the branch has no snapshot yet (totals then start at 0). A parent summary lacking a total
    stops that total, as in Java, rather than inventing a wrong number. `extra` adds custom keys
    such as `replace-partitions` or `engine-name`.
    """
    if operation not in OPERATIONS:
        raise ValueError(f"invalid snapshot operation {operation!r}; expected one of {OPERATIONS}")
    counts = dict.fromkeys(_COUNTER_KEYS, 0)
    partitions: set[Any] = set()
    for files, added, deletes in ((added_data_files, True, False), (removed_data_files, False, False),
                                  (added_delete_files, True, True), (removed_delete_files, False, True)):
        for f in files:
            if (f.content != DATA) != deletes:
                kind = "delete" if deletes else "data"
                raise ValueError(f"file with content {f.content} passed as a {kind} file")
            _count_file(counts, f, added)
            partitions.add((getattr(f, "spec_id", None), _hashable(f.partition)))

    summary: dict[str, str] = {"operation": operation}
    for key, value in (extra or {}).items():
        if key == "operation" or key in counts or key == CHANGED_PARTITION_COUNT or key.startswith("total-"):
            raise ValueError(f"summary key {key!r} is computed and cannot be passed in extra")
        summary[key] = _summary_value(key, value)
    summary.update({key: str(n) for key, n in counts.items() if n > 0})
    summary[CHANGED_PARTITION_COUNT] = str(len(partitions))

    base = previous_summary if previous_summary is not None else {total: "0" for total, _, _ in _TOTALS}
    for total_key, added_key, removed_key in _TOTALS:
        previous = base.get(total_key)
        if previous is None:
            continue
        try:
            total = int(previous) + counts[added_key] - counts[removed_key]
        except ValueError:
            continue
        if total >= 0:
            summary[total_key] = str(total)
    return summary


def _count_file(counts: dict[str, int], f: ContentFileLike, added: bool) -> None:
    add_or_remove = "added" if added else "removed"
    # a deletion vector (format v3) counts as its blob, not the Puffin file it shares with others
    dv = str(getattr(f, "file_format", "")).upper() == "PUFFIN"
    counts[f"{add_or_remove}-files-size"] += f.content_size_in_bytes if dv else f.file_size_in_bytes
    if f.content == DATA:
        counts["added-data-files" if added else "deleted-data-files"] += 1
        counts["added-records" if added else "deleted-records"] += f.record_count
    elif f.content == POSITION_DELETES:
        counts[f"{add_or_remove}-delete-files"] += 1
        counts[f"{add_or_remove}-dvs" if dv else f"{add_or_remove}-position-delete-files"] += 1
        counts[f"{add_or_remove}-position-deletes"] += f.record_count
    elif f.content == EQUALITY_DELETES:
        counts[f"{add_or_remove}-delete-files"] += 1
        counts[f"{add_or_remove}-equality-delete-files"] += 1
        counts[f"{add_or_remove}-equality-deletes"] += f.record_count
    else:
        raise ValueError(f"unknown file content type {f.content}")


def _hashable(value: Any) -> Any:
    """A hashable stand-in for a partition tuple, so distinct partitions can be counted."""
    if isinstance(value, Mapping):
        return tuple((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value
