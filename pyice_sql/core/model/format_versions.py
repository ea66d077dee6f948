"""Which Iceberg format versions pyice_sql reads and which it writes, and the refusal in between.

Format v3 tables (Iceberg Java 1.8+) are read: metadata, deletion vectors, row lineage. They are
not written yet: a commit that ignored a data file's deletion vector (and wrote v2 position
deletes next to it) or dropped row lineage would corrupt the table for every engine, so every
write path refuses a v3 table by name before it writes a file.
"""
from __future__ import annotations

from pyice_sql.core.errors import SqlPosition, UnsupportedError

READABLE_FORMAT_VERSIONS = (1, 2, 3)
WRITABLE_FORMAT_VERSIONS = (1, 2)


class FormatVersionWriteError(UnsupportedError):
    """A write (DML, DDL, procedure, commit) to a table whose format version pyice_sql only reads."""


def check_writable(format_version: int, table_name: str, position: SqlPosition | None = None) -> None:
    """Refuse a write to `table_name` when its format version is read-only for pyice_sql."""
    if format_version not in WRITABLE_FORMAT_VERSIONS:
        raise FormatVersionWriteError(f"format v{format_version} writes not supported yet by pyice_sql: "
                                      f"{table_name}", position=position)
