"""Which files a table's snapshots reach: manifest lists, manifests, data/delete files, statistics.

Expiry deletes what the expired snapshots reached minus what the retained ones still reach;
orphan removal keeps everything any snapshot or metadata file reaches. Both sides use this one
walk. Each distinct manifest is read once (snapshots share most of theirs): a few on the driver,
more in one Spark job (the shim's BulkFiles; decoding 100 manifests of 1,000 entries takes ~8 s
on the driver's one Python core). Paths are compared by `path_key`, so `file:/a`, `file:///a` and `/a` are one file.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Iterable
from urllib.parse import urlparse

from pyice_sql.core.format.manifests import read_entries, read_manifest_list
from pyice_sql.core.errors import UnsupportedError
from pyice_sql.core.format.fileio import FileIO, local_path
from pyice_sql.core.model.manifest import EntryStatus, FileContent, ManifestFile
from pyice_sql.core.model.metadata import TableMetadata

_READERS = 8
DRIVER_MANIFESTS = 16  # above this many manifests to read, one Spark job reads them


def path_key(path: str) -> str:
    """One spelling per file: local paths as plain absolute paths, others as scheme://authority/path."""
    parsed = urlparse(path)
    if parsed.scheme in ("", "file"):
        return "/" + local_path(path).lstrip("/")
    return f"{parsed.scheme}://{parsed.netloc}/{parsed.path.lstrip('/')}"


@dataclass
class ReachableFiles:
    """Files reached from some snapshots, each as {path_key: path as written in metadata}."""

    manifest_lists: dict[str, str] = field(default_factory=dict)
    manifests: dict[str, str] = field(default_factory=dict)
    content: dict[str, tuple[str, FileContent]] = field(default_factory=dict)  # key -> (path, content)
    statistics: dict[str, str] = field(default_factory=dict)

    def keys(self) -> set[str]:
        return set(self.manifest_lists) | set(self.manifests) | set(self.content) | set(self.statistics)


def statistics_paths(metadata: TableMetadata, snapshot_ids: set[int] | None = None) -> list[str]:
    """Statistics and partition-statistics files, of `snapshot_ids` only when given."""
    out = []
    for stats in (*metadata.statistics, *metadata.partition_statistics):
        path = stats.get("statistics-path")
        if path and (snapshot_ids is None or stats.get("snapshot-id") in snapshot_ids):
            out.append(path)
    return out


def reachable_files(io: FileIO, metadata: TableMetadata, snapshot_ids: Iterable[int] | None = None,
                    skip_manifests: set[str] = frozenset(), shim=None) -> ReachableFiles:
    """Files reached from `snapshot_ids` (all snapshots when None).

    Manifests whose key is in `skip_manifests` are counted as reached but not opened: every file
    they list is reached through them anyway (expiry passes the retained side's manifests, whose
    content is already known to stay). With the jvm `shim`, many manifests are read by a Spark job.
    """
    ids = {s.snapshot_id for s in metadata.snapshots} if snapshot_ids is None else set(snapshot_ids)
    out = ReachableFiles()
    manifests: dict[str, ManifestFile] = {}
    for snapshot in metadata.snapshots:
        if snapshot.snapshot_id not in ids:
            continue
        if snapshot.manifest_list is None:
            raise UnsupportedError(f"snapshot {snapshot.snapshot_id} lists its manifests inline (format v1 "
                                   "without a manifest list); table maintenance does not support it")
        out.manifest_lists[path_key(snapshot.manifest_list)] = snapshot.manifest_list
        for m in read_manifest_list(io, snapshot.manifest_list):
            manifests.setdefault(path_key(m.manifest_path), m)
    for key, m in manifests.items():
        out.manifests[key] = m.manifest_path
    to_read = [m for key, m in manifests.items() if key not in skip_manifests]
    if shim is not None and len(to_read) > DRIVER_MANIFESTS:
        for path, content in shim.live_entries([m.manifest_path for m in to_read]):
            out.content[path_key(path)] = (path, FileContent(content))
    else:
        with ThreadPoolExecutor(max_workers=_READERS) as pool:
            for entries in pool.map(lambda m: read_entries(io, m), to_read):
                for e in entries:
                    if e.status != EntryStatus.DELETED:
                        f = e.data_file
                        out.content[path_key(f.file_path)] = (f.file_path, f.content)
    for path in statistics_paths(metadata, ids if snapshot_ids is not None else None):
        out.statistics[path_key(path)] = path
    return out
