"""Filesystem catalog in Iceberg's Hadoop layout, so Iceberg Java's HadoopCatalog shares tables.

Layout: `<warehouse>/<ns...>/<table>/metadata/v<N>.metadata.json` plus `version-hint.text`
holding the bare N. A commit publishes `v<N+1>` with create-if-absent semantics (the file is
written whole under a temporary name and linked/renamed without overwrite), so exactly one of
two racing writers gets version N+1; the hint is then updated best-effort, and readers probe
past it exactly as Java does, so a stale hint is harmless.
"""
from __future__ import annotations

import json
import logging
import re

from pyice_sql.core.catalog.base import (
    IoFactory, Table, TableIdentifier, metadata_to_bytes, read_metadata_file,
)
from pyice_sql.core.errors import (
    CommitConflictError, CorruptTableError, NamespaceAlreadyExistsError, NamespaceNotEmptyError,
    NoSuchNamespaceError, NoSuchTableError, TableAlreadyExistsError,
)
from pyice_sql.core.faults import fault_point
from pyice_sql.core.format.fileio import to_uri
from pyice_sql.core.model.metadata import TableMetadata

_log = logging.getLogger(__name__)
_VERSION_FILE = re.compile(r"^v(\d+)(\.gz)?\.metadata\.json$")


class HadoopCatalog:
    def __init__(self, name: str, warehouse: str, io_factory: IoFactory) -> None:
        self.name = name
        self.warehouse = to_uri(warehouse)
        self.io = io_factory(self.warehouse)

    # --- layout -------------------------------------------------------------------------
    def _ns_dir(self, namespace: tuple[str, ...]) -> str:
        return "/".join((self.warehouse,) + namespace)

    def default_location(self, ident: TableIdentifier) -> str:
        return f"{self._ns_dir(ident.namespace)}/{ident.name}"

    def _metadata_dir(self, ident: TableIdentifier) -> str:
        return self.default_location(ident) + "/metadata"

    def _versions(self, ident: TableIdentifier) -> dict[int, str]:
        out = {}
        for info in self.io.list(self._metadata_dir(ident), recursive=False):
            m = _VERSION_FILE.match(info.path.rsplit("/", 1)[-1])
            if m:
                out[int(m.group(1))] = info.path
        return out

    def _current_version(self, ident: TableIdentifier) -> tuple[int, str] | None:
        """The newest version: start at the hint, probe upwards; list the folder if no hint."""
        mdir = self._metadata_dir(ident)
        version = None
        hint = f"{mdir}/version-hint.text"
        if self.io.exists(hint):
            try:
                version = int(self.io.read(hint).decode().strip())
            except ValueError:
                version = None
        if version is None or not self.io.exists(f"{mdir}/v{version}.metadata.json"):
            versions = self._versions(ident)
            if not versions:
                return None
            version = max(versions)
            return version, versions[version]
        while self.io.exists(f"{mdir}/v{version + 1}.metadata.json"):
            version += 1
        return version, f"{mdir}/v{version}.metadata.json"

    # --- tables -------------------------------------------------------------------------
    def table_exists(self, ident: TableIdentifier) -> bool:
        return self._current_version(ident) is not None

    def load_table(self, ident: TableIdentifier) -> Table:
        current = self._current_version(ident)
        if current is None:
            raise NoSuchTableError(f"table {self.name}.{ident} does not exist "
                                   f"(no metadata under {self._metadata_dir(ident)})")
        version, path = current
        try:
            metadata = read_metadata_file(self.io, path)
        except CorruptTableError:
            if not self._torn(path):
                raise  # a whole file we cannot use (e.g. a newer format version): never skip a commit
            path, metadata = self._newest_whole(ident, path)
            version = max(self._versions(ident))  # the next commit goes past the torn file
        return Table(self, ident, metadata, path, self.io, {"version": version})

    def _torn(self, path: str) -> bool:
        """A metadata file that is not even JSON: written half by a writer that died."""
        try:
            json.loads(self.io.read(path))
            return False
        except ValueError:
            return True

    def _newest_whole(self, ident: TableIdentifier, torn: str) -> tuple[str, TableMetadata]:
        """The newest metadata file below a torn one.

        A torn file at a version name was never a commit (our commits and Java's publish the
        whole file under its final name at once); it is skipped, as a bad version hint is, and
        the newest whole file is current.
        """
        for _, path in sorted(self._versions(ident).items(), reverse=True):
            if self._torn(path):
                _log.warning("table %s.%s: skipping torn metadata file %s", self.name, ident, path)
                continue
            return path, read_metadata_file(self.io, path)
        raise CorruptTableError(f"table {self.name}.{ident} has no readable metadata file; newest", torn)

    def create_table(self, ident: TableIdentifier, metadata: TableMetadata) -> Table:
        """A namespace that was never created is just folders to be made (Iceberg Java's
        HadoopCatalog creates a table in any namespace: Iceberg's getting-started flow relies on it)."""
        if self.table_exists(ident):
            raise TableAlreadyExistsError(f"table {self.name}.{ident} already exists")
        path = f"{self._metadata_dir(ident)}/v1.metadata.json"
        if not self.io.publish(metadata_to_bytes(metadata), path):
            raise TableAlreadyExistsError(f"table {self.name}.{ident} already exists")
        self._write_hint(ident, 1)
        return Table(self, ident, metadata, path, self.io, {"version": 1})

    def commit(self, base: Table, new_metadata: TableMetadata) -> Table:
        version = base.extras["version"] + 1
        path = f"{self._metadata_dir(base.identifier)}/v{version}.metadata.json"
        if not self.io.publish(metadata_to_bytes(new_metadata), path):
            raise CommitConflictError(f"table {base.full_name} was changed concurrently "
                                      f"(v{version}.metadata.json already exists)")
        fault_point("swapped")
        self._write_hint(base.identifier, version)
        return Table(self, base.identifier, new_metadata, path, self.io, {"version": version})

    def _write_hint(self, ident: TableIdentifier, version: int) -> None:
        hint = f"{self._metadata_dir(ident)}/version-hint.text"
        self.io.delete(hint)
        try:
            self.io.write_new(hint, str(version).encode())
        except FileExistsError:
            pass  # a concurrent committer wrote it; readers probe past a stale hint anyway

    def drop_table(self, ident: TableIdentifier, purge: bool = False) -> None:
        if not self.table_exists(ident):
            raise NoSuchTableError(f"table {self.name}.{ident} does not exist")
        # The Hadoop layout has no registry: a table is its folder, so dropping deletes it
        # (Java's HadoopCatalog does the same, with or without PURGE).
        self.io.delete_tree(self.default_location(ident))

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {self.name}.{'.'.join(namespace)} does not exist")
        out = []
        for child in self.io.list_dirs(self._ns_dir(namespace)):
            ident = TableIdentifier(namespace, child)
            if self.table_exists(ident):
                out.append(ident)
        return sorted(out, key=str)

    # --- namespaces ---------------------------------------------------------------------
    def list_namespaces(self) -> list[tuple[str, ...]]:
        out = []
        for child in self.io.list_dirs(self.warehouse):
            if not self.table_exists(TableIdentifier((), child)):
                out.append((child,))
        return sorted(out)

    def namespace_exists(self, namespace: tuple[str, ...]) -> bool:
        return self.io.is_dir(self._ns_dir(namespace))

    def create_namespace(self, namespace: tuple[str, ...]) -> None:
        if self.namespace_exists(namespace):
            raise NamespaceAlreadyExistsError(f"namespace {self.name}.{'.'.join(namespace)} already exists")
        self.io.mkdirs(self._ns_dir(namespace))

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        if not self.namespace_exists(namespace):
            raise NoSuchNamespaceError(f"namespace {self.name}.{'.'.join(namespace)} does not exist")
        if self.io.list_dirs(self._ns_dir(namespace)) or self.io.list(self._ns_dir(namespace), recursive=False):
            raise NamespaceNotEmptyError(f"namespace {self.name}.{'.'.join(namespace)} is not empty")
        self.io.delete_tree(self._ns_dir(namespace))

