"""Which Iceberg format versions pyice_sql reads and writes.

Format v3 tables (Iceberg Java 1.8+) are read (metadata, deletion vectors, row lineage) and
written: every commit assigns row ids (core.model.row_lineage); merge-on-read DELETE / UPDATE /
MERGE write deletion vectors; every write that moves rows to new files (copy-on-write DML,
rewrite_data_files) stores their `_row_id` and last-updated sequence number as Iceberg Java does,
and rewrite_position_delete_files turns v2 position deletes into deletion vectors. A format
above v3 is refused by name before anything is written.
"""
from __future__ import annotations

from pyice_sql.core.errors import SqlPosition, UnsupportedError

READABLE_FORMAT_VERSIONS = (1, 2, 3)
WRITABLE_FORMAT_VERSIONS = (1, 2, 3)


class FormatVersionWriteError(UnsupportedError):
    """A write (DML, DDL, procedure, commit) that pyice_sql cannot do on the table's format version."""


def check_writable(format_version: int, table_name: str, position: SqlPosition | None = None) -> None:
    """Refuse a write to `table_name` when its format version is read-only for pyice_sql."""
    if format_version not in WRITABLE_FORMAT_VERSIONS:
        raise FormatVersionWriteError(f"format v{format_version} writes not supported yet by pyice_sql: "
                                      f"{table_name}", position=position)
