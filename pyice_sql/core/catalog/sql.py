"""SQL catalog on SQLite, table-compatible with PyIceberg's SqlCatalog and Java's JdbcCatalog.

The catalog database records each table's current metadata location; a commit is the
compare-and-swap `UPDATE ... WHERE metadata_location = <the one we started from>` inside a
transaction, so the row count tells whether we won. Metadata files are named
`<V:05d>-<uuid>.metadata.json` and no version hint is written, as the peers do.
"""
from __future__ import annotations

import re
import sqlite3

from pyice_sql.core.catalog.base import (
    IoFactory, Table, TableIdentifier, metadata_to_bytes, new_metadata_file_name, read_metadata_file,
)
from pyice_sql.core.errors import (
    CommitConflictError, NamespaceAlreadyExistsError, NamespaceNotEmptyError, NoSuchNamespaceError,
    NoSuchTableError, TableAlreadyExistsError,
)
from pyice_sql.core.faults import fault_point
from pyice_sql.core.format.fileio import local_path, to_uri
from pyice_sql.core.model.metadata import TableMetadata

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS iceberg_tables (
        catalog_name VARCHAR(255) NOT NULL, table_namespace VARCHAR(255) NOT NULL,
        table_name VARCHAR(255) NOT NULL, metadata_location VARCHAR(1000),
        previous_metadata_location VARCHAR(1000), iceberg_type VARCHAR(5),
        PRIMARY KEY (catalog_name, table_namespace, table_name))""",
    """CREATE TABLE IF NOT EXISTS iceberg_namespace_properties (
        catalog_name VARCHAR(255) NOT NULL, namespace VARCHAR(255) NOT NULL,
        property_key VARCHAR(255), property_value VARCHAR(1000),
        PRIMARY KEY (catalog_name, namespace, property_key))""",
)
_VERSIONED = re.compile(r"^(\d+)-.*\.metadata\.json$")


class SqlCatalog:
    def __init__(self, name: str, uri: str, warehouse: str, io_factory: IoFactory) -> None:
        self.name = name
        self.db_path = local_path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:") else local_path(uri)
        self.warehouse = to_uri(warehouse)
        self._io_factory = io_factory
        with self._connect() as con:
            for ddl in _SCHEMA:
                con.execute(ddl)

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.db_path, timeout=30, isolation_level=None)

    @staticmethod
    def _ns(namespace: tuple[str, ...]) -> str:
        return ".".join(namespace)

    def default_location(self, ident: TableIdentifier) -> str:
        return "/".join((self.warehouse,) + ident.namespace + (ident.name,))

    def _row(self, ident: TableIdentifier) -> tuple[str, str | None] | None:
        with self._connect() as con:
            return con.execute(
                "SELECT metadata_location, previous_metadata_location FROM iceberg_tables WHERE catalog_name=? "
                "AND table_namespace=? AND table_name=? AND (iceberg_type='TABLE' OR iceberg_type IS NULL)",
                (self.name, self._ns(ident.namespace), ident.name)).fetchone()

    def table_exists(self, ident: TableIdentifier) -> bool:
        return self._row(ident) is not None

    def load_table(self, ident: TableIdentifier) -> Table:
        row = self._row(ident)
        if row is None:
            raise NoSuchTableError(f"table {self.name}.{ident} does not exist in catalog database {self.db_path}")
        io = self._io_factory(row[0])
        return Table(self, ident, read_metadata_file(io, row[0]), row[0], io)

    def create_table(self, ident: TableIdentifier, metadata: TableMetadata) -> Table:
        if not self.namespace_exists(ident.namespace):
            raise NoSuchNamespaceError(f"namespace {self.name}.{self._ns(ident.namespace)} does not exist")
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"table {self.name}.{ident} already exists")
        io = self._io_factory(metadata.location)
        path = f"{metadata.location}/metadata/{new_metadata_file_name(0)}"
        io.write_new(path, metadata_to_bytes(metadata))
        try:
            with self._connect() as con:
                con.execute("INSERT INTO iceberg_tables VALUES (?, ?, ?, ?, NULL, 'TABLE')",
                            (self.name, self._ns(ident.namespace), ident.name, path))
        except sqlite3.IntegrityError as e:
            io.delete(path)
            raise TableAlreadyExistsError(f"table {self.name}.{ident} already exists") from e
        return Table(self, ident, metadata, path, io)

    def commit(self, base: Table, new_metadata: TableMetadata) -> Table:
        m = _VERSIONED.match(base.metadata_location.rsplit("/", 1)[-1])
        version = int(m.group(1)) + 1 if m else 0
        path = f"{new_metadata.location}/metadata/{new_metadata_file_name(version)}"
        base.io.write_new(path, metadata_to_bytes(new_metadata))
        fault_point("metadata-written")
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            cur = con.execute(
                "UPDATE iceberg_tables SET metadata_location=?, previous_metadata_location=? WHERE catalog_name=? "
                "AND table_namespace=? AND table_name=? AND metadata_location=?",
                (path, base.metadata_location, self.name, self._ns(base.identifier.namespace),
                 base.identifier.name, base.metadata_location))
            won = cur.rowcount == 1
            con.execute("COMMIT")
        if won:
            fault_point("swapped")
        if not won:
            base.io.delete(path)
            raise CommitConflictError(f"table {base.full_name} was changed concurrently "
                                      f"(its metadata location is no longer {base.metadata_location})")
        return Table(self, base.identifier, new_metadata, path, base.io)

    def drop_table(self, ident: TableIdentifier, purge: bool = False) -> None:
        table = self.load_table(ident)
        with self._connect() as con:
            con.execute("DELETE FROM iceberg_tables WHERE catalog_name=? AND table_namespace=? AND table_name=?",
                        (self.name, self._ns(ident.namespace), ident.name))
        if purge:
            table.io.delete_tree(table.metadata.location)

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {self.name}.{self._ns(namespace)} does not exist")
        with self._connect() as con:
            rows = con.execute("SELECT table_name FROM iceberg_tables WHERE catalog_name=? AND table_namespace=? "
                               "ORDER BY table_name", (self.name, self._ns(namespace))).fetchall()
        return [TableIdentifier(namespace, r[0]) for r in rows]

    def list_namespaces(self) -> list[tuple[str, ...]]:
        with self._connect() as con:
            rows = con.execute(
                "SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name=? UNION "
                "SELECT table_namespace FROM iceberg_tables WHERE catalog_name=?", (self.name, self.name)).fetchall()
        return sorted(tuple(r[0].split(".")) for r in rows)

    def namespace_exists(self, namespace: tuple[str, ...]) -> bool:
        return namespace in self.list_namespaces()

    def create_namespace(self, namespace: tuple[str, ...]) -> None:
        if self.namespace_exists(namespace):
            raise NamespaceAlreadyExistsError(f"namespace {self.name}.{self._ns(namespace)} already exists")
        with self._connect() as con:
            con.execute("INSERT INTO iceberg_namespace_properties VALUES (?, ?, 'exists', 'true')",
                        (self.name, self._ns(namespace)))

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {self.name}.{self._ns(namespace)} does not exist")
        if self.list_tables(namespace):
            raise NamespaceNotEmptyError(f"namespace {self.name}.{self._ns(namespace)} is not empty")
        with self._connect() as con:
            con.execute("DELETE FROM iceberg_namespace_properties WHERE catalog_name=? AND namespace=?",
                        (self.name, self._ns(namespace)))
