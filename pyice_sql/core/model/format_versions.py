"""Which Iceberg format versions pyice_sql reads and writes, and the v3 writes still refused.

Format v3 tables (Iceberg Java 1.8+) are read (metadata, deletion vectors, row lineage) and
written: every commit assigns row ids (core.model.row_lineage), merge-on-read DELETE / UPDATE /
MERGE write deletion vectors. A v3 write path that is not built yet is refused by name before
it writes a file, because a commit that moved rows without their `_row_id`, or wrote v2
position deletes next to a deletion vector, would corrupt the table for every engine.
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


def refuse_on_v3(format_version: int, what: str, table_name: str, position: SqlPosition | None = None) -> None:
    """Refuse `what` (a write path not built for format v3 yet) on a v3 table."""
    if format_version >= 3:
        raise FormatVersionWriteError(f"{what} not supported yet by pyice_sql on format v3 tables: "
                                      f"{table_name}", position=position)
