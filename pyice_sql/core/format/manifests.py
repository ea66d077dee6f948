"""Reading and writing manifest and manifest-list files through a FileIO.

Wraps the byte-level codec with file access, naming (`<commit-uuid>-m<N>.avro`,
`snap-<id>-<attempt>-<uuid>.avro`) and errors that name the file that could not be read.
"""
from __future__ import annotations

import uuid

from pyice_sql.core.errors import CorruptTableError
from pyice_sql.core.format import avro_codec
from pyice_sql.core.format.fileio import FileIO
from pyice_sql.core.format.manifest_cache import MANIFESTS
from pyice_sql.core.model.manifest import ManifestContent, ManifestEntry, ManifestFile
from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.schema import Schema


def read_entries(io: FileIO, manifest: ManifestFile) -> list[ManifestEntry]:
    """The entries of `manifest`, decoded once per process while the cache holds them (manifest_cache.py)."""
    return MANIFESTS.read(io, manifest, lambda: _decode(io, manifest))


def _decode(io: FileIO, manifest: ManifestFile) -> tuple[int, list[ManifestEntry]]:
    """The manifest file's length and its entries, with what they inherit from `manifest` filled in."""
    try:
        data = io.read(manifest.manifest_path)
    except FileNotFoundError as e:
        raise CorruptTableError(f"manifest file is missing: {manifest.manifest_path}") from e
    try:
        entries = avro_codec.read_manifest(data, manifest)
    except Exception as e:  # fastavro raises many types on garbage input
        raise CorruptTableError(f"manifest file cannot be read: {manifest.manifest_path} ({e})") from e
    from pyice_sql.core.model.row_lineage import inherit_first_row_ids
    return len(data), inherit_first_row_ids(entries, manifest)


def read_manifest_list(io: FileIO, path: str) -> list[ManifestFile]:
    try:
        data = io.read(path)
    except FileNotFoundError as e:
        raise CorruptTableError(f"manifest list is missing: {path}") from e
    try:
        return avro_codec.read_manifest_list(data)
    except Exception as e:
        raise CorruptTableError(f"manifest list cannot be read: {path} ({e})") from e


class ManifestWriter:
    """Names and writes the manifests of one commit attempt, remembering them for cleanup."""

    def __init__(self, io: FileIO, location: str, format_version: int = 2) -> None:
        self.io = io
        self.location = location
        self.format_version = format_version
        self.commit_uuid = uuid.uuid4()
        self.written: list[str] = []

    def write_manifest(self, entries: list[ManifestEntry], spec: PartitionSpec, schema: Schema, snapshot_id: int,
                       sequence_number: int, content: ManifestContent) -> ManifestFile:
        path = f"{self.location}/metadata/{self.commit_uuid}-m{len(self.written)}.avro"
        data = avro_codec.write_manifest(entries, spec, schema, snapshot_id, content, self.format_version)
        self.io.write_new(path, data)
        self.written.append(path)
        return avro_codec.summarize_manifest(entries, spec, schema, path, len(data), snapshot_id,
                                             sequence_number, content)

    def write_manifest_list(self, manifests: list[ManifestFile], snapshot_id: int, parent_id: int | None,
                            sequence_number: int, attempt: int, first_row_id: int | None = None) -> str:
        path = f"{self.location}/metadata/snap-{snapshot_id}-{attempt}-{self.commit_uuid}.avro"
        data = avro_codec.write_manifest_list(manifests, snapshot_id, parent_id, sequence_number,
                                              self.format_version, first_row_id)
        self.io.write_new(path, data)
        self.written.append(path)
        return path

    def cleanup(self, keep: set[str] = frozenset()) -> None:
        for path in self.written:
            if path not in keep:
                self.io.delete(path)
        self.written = [p for p in self.written if p in keep]
