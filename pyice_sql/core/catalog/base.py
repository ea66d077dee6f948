"""The catalog contract: load, create, drop and — the one atomic step — swap table metadata.

A catalog owns where a table's current metadata file is recorded. Everything a commit writes
(data files, manifests, the new metadata file) is written before `commit` is called; `commit`
then publishes the new metadata with a compare-and-swap against the metadata the writer
started from, so a table is never half-committed and two writers never both win.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Callable, Protocol

from pyice_sql.core.errors import CorruptTableError
from pyice_sql.core.format.fileio import FileIO
from pyice_sql.core.model.metadata import TableMetadata


@dataclass(frozen=True)
class TableIdentifier:
    namespace: tuple[str, ...]
    name: str

    def __str__(self) -> str:
        return ".".join(self.namespace + (self.name,))

    @classmethod
    def parse(cls, text: str) -> "TableIdentifier":
        parts = text.split(".")
        return cls(tuple(parts[:-1]), parts[-1])


@dataclass
class Table:
    """A loaded table: its catalog, identifier, current metadata and where that metadata lives."""

    catalog: "Catalog"
    identifier: TableIdentifier
    metadata: TableMetadata
    metadata_location: str
    io: FileIO
    extras: dict = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.catalog.name}.{self.identifier}"

    def refresh(self) -> "Table":
        return self.catalog.load_table(self.identifier)


class Catalog(Protocol):
    name: str

    def load_table(self, ident: TableIdentifier) -> Table: ...
    def table_exists(self, ident: TableIdentifier) -> bool: ...
    def default_location(self, ident: TableIdentifier) -> str: ...
    def create_table(self, ident: TableIdentifier, metadata: TableMetadata) -> Table: ...
    def commit(self, base: Table, new_metadata: TableMetadata) -> Table: ...
    def drop_table(self, ident: TableIdentifier, purge: bool = False) -> None: ...
    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]: ...
    def list_namespaces(self) -> list[tuple[str, ...]]: ...
    def namespace_exists(self, namespace: tuple[str, ...]) -> bool: ...
    def create_namespace(self, namespace: tuple[str, ...]) -> None: ...
    def drop_namespace(self, namespace: tuple[str, ...]) -> None: ...


def metadata_to_bytes(metadata: TableMetadata) -> bytes:
    return json.dumps(metadata.to_json(), indent=2).encode("utf-8")


def read_metadata_file(io: FileIO, path: str) -> TableMetadata:
    """Read and parse a metadata JSON file, naming the file in any failure."""
    try:
        data = io.read(path)
    except FileNotFoundError as e:
        raise CorruptTableError(f"metadata file is missing: {path}") from e
    try:
        obj = json.loads(data)
    except ValueError as e:
        raise CorruptTableError(f"metadata file is not valid JSON: {path} ({e})") from e
    version = obj.get("format-version") if isinstance(obj, dict) else None
    from pyice_sql.core.model.format_versions import READABLE_FORMAT_VERSIONS
    if version not in READABLE_FORMAT_VERSIONS:
        raise CorruptTableError(f"metadata file {path} has format-version {version!r}; "
                                "this engine reads versions 1 to 3")
    try:
        return TableMetadata.from_json(obj)
    except (ValueError, KeyError, TypeError) as e:
        raise CorruptTableError(f"metadata file is not valid Iceberg table metadata: {path} ({e})") from e


def new_metadata_file_name(version: int | None = None) -> str:
    if version is None:
        return f"{uuid.uuid4()}.metadata.json"
    return f"{version:05d}-{uuid.uuid4()}.metadata.json"


IoFactory = Callable[[str], FileIO]
