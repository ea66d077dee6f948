"""Manifest-level metadata: data/delete files, manifest entries and manifest-list rows.

These are plain values, independent of the Avro encoding (see `pyice_sql.core.format.avro_codec`), so
planning and commit code can build, filter and compare them without touching files. Partition
tuples hold the "internal" representation of `pyice_sql.core.model.conversions` (date → int days,
timestamps → int µs, decimal → Decimal, uuid → UUID), in the order of the spec's fields.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any


class FileContent(IntEnum):
    """What a file in a manifest holds (`data_file.content`, field 134)."""

    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


class ManifestContent(IntEnum):
    """Whether a manifest tracks data files or delete files (manifest-list field 517)."""

    DATA = 0
    DELETES = 1


class EntryStatus(IntEnum):
    """Manifest entry status (field 0); scans only see EXISTING and ADDED entries."""

    EXISTING = 0
    ADDED = 1
    DELETED = 2


@dataclass(frozen=True, kw_only=True)
class DataFile:
    """A data or delete file with its partition tuple and column metrics (record `r2`).

    `spec_id` is not stored in v2 manifests: readers take it from the manifest list, and
    writers only use it to pick the manifest a file belongs in.
    """

    content: FileContent = FileContent.DATA
    file_path: str
    file_format: str = "PARQUET"
    partition: tuple[Any, ...] = ()
    record_count: int
    file_size_in_bytes: int
    column_sizes: dict[int, int] | None = None
    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: list[int] | None = None
    equality_ids: list[int] | None = None
    sort_order_id: int | None = None
    referenced_data_file: str | None = None
    spec_id: int = 0
    # format v3: the row id of the file's first row (explicit or inherited), and a deletion
    # vector's blob inside its Puffin file
    first_row_id: int | None = None
    content_offset: int | None = None
    content_size_in_bytes: int | None = None


DeleteFile = DataFile


@dataclass(frozen=True, kw_only=True)
class ManifestEntry:
    """One file's row in a manifest.

    `snapshot_id` and the sequence numbers may be None only for ADDED entries being written:
    readers then inherit them from the manifest list (§3 of the spec notes). `sequence_number`
    is the data sequence number, the one that decides which deletes apply.
    """

    status: EntryStatus
    snapshot_id: int | None = None
    sequence_number: int | None = None
    file_sequence_number: int | None = None
    data_file: DataFile


@dataclass(frozen=True, kw_only=True)
class FieldSummary:
    """Per-partition-field summary in a manifest-list row (record `r508`), used to prune manifests."""

    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True, kw_only=True)
class ManifestFile:
    """One manifest-list row (record `manifest_file`).

    The file and row counts are None only when read from v1 lists that omitted them; readers
    must then treat them as "maybe non-zero".
    """

    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    content: ManifestContent = ManifestContent.DATA
    sequence_number: int = 0
    min_sequence_number: int = 0
    added_snapshot_id: int
    added_files_count: int | None = None
    existing_files_count: int | None = None
    deleted_files_count: int | None = None
    added_rows_count: int | None = None
    existing_rows_count: int | None = None
    deleted_rows_count: int | None = None
    partitions: list[FieldSummary] | None = None
    key_metadata: bytes | None = None
    first_row_id: int | None = None  # format v3, data manifests: the first row id its files inherit
