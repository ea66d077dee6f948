"""Decoded manifests kept between reads, as Iceberg Java's manifest cache (`io.manifest.cache-enabled`).

A manifest is written once and never changed (each commit writes new ones), so its decoded entries
can be kept and shared: a session's statements read mostly the manifests the one before read, and
decoding them in Python is two thirds of planning a scan (a 10,000-file manifest: 0.4 s of 0.6 s).
Entries are frozen dataclasses, so a cached list is handed out as a new list of the same entries.

Keyed by the manifest-list row's fields that decoding reads (path, length, sequence number, adding
snapshot, spec, first row id: what entries inherit). Bounded by the Python memory its entries take,
estimated from their column metrics (`entry_bytes`; Java's cache bounds the manifests' file bytes,
whose compression tells little about the objects decoded from them), least recently used out first;
a manifest larger than a quarter of the bound is never held; 0 turns it off. Once full, a manifest
is let in only if it has been read more often than the one it would push out first (reads counted,
halved every `_AGING_READS`): a table whose manifests outgrow the bound, each plan reading them all
in turn, keeps the ones held and hits them, where plain LRU would push out each one just before the
next plan reads it and never hit. A hit is checked against the file's length now, so a manifest
removed or replaced on disk (a damaged table) is read again and its error names it, as without the
cache.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from pyice_sql.core.format.fileio import FileIO
from pyice_sql.core.model.manifest import ManifestEntry, ManifestFile

DEFAULT_MAX_BYTES = 100 * 2**20  # as Iceberg Java's io.manifest.cache.max-total-bytes
# an entry's objects without its column metrics, and per metric value (tracemalloc: a 3-column
# table's 10,000 entries with 14 metrics each took 20.8 MB)
_ENTRY_BYTES, _METRIC_BYTES = 1200, 64
_AGING_READS = 1000  # reads between two halvings of the read counts, so old favourites fade

_Key = tuple[str, int, int, int, int, "int | None"]


class ManifestCache:
    """Decoded manifests, at most about `max_bytes` of them, least recently used out first and let in
    by the rule above once full (thread-safe: procedures read manifests from a thread pool)."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._held: OrderedDict[_Key, tuple[int, list[ManifestEntry], int]] = OrderedDict()
        self._size = 0
        self._reads: dict[_Key, int] = {}  # reads of each manifest, held or not (aged)
        self._until_aging = _AGING_READS

    def read(self, io: FileIO, manifest: ManifestFile,
             decode: Callable[[], tuple[int, list[ManifestEntry]]]) -> list[ManifestEntry]:
        """The entries of `manifest`: cached, or `decode()` (the file's length and its entries) and kept."""
        key = (manifest.manifest_path, manifest.manifest_length, manifest.sequence_number,
               manifest.added_snapshot_id, manifest.partition_spec_id, manifest.first_row_id)
        with self._lock:
            self._count(key)
            held = self._held.get(key)
            if held is not None:
                self._held.move_to_end(key)
        if held is not None and _length(io, manifest.manifest_path) == held[0]:
            return list(held[1])
        length, entries = decode()
        weight = sum(map(entry_bytes, entries))
        if 0 < weight <= self.max_bytes // 4:
            self._keep(key, length, entries, weight)
        return entries

    def resize(self, max_bytes: int) -> None:
        with self._lock:
            self.max_bytes = max_bytes
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._held.clear()
            self._size = 0
            self._reads.clear()

    def _count(self, key: _Key) -> None:
        self._reads[key] = self._reads.get(key, 0) + 1
        self._until_aging -= 1
        if self._until_aging <= 0:
            self._reads = {k: n // 2 for k, n in self._reads.items() if n > 1}
            self._until_aging = _AGING_READS

    def _keep(self, key: _Key, length: int, entries: list[ManifestEntry], weight: int) -> None:
        with self._lock:
            old = self._held.pop(key, None)
            self._size -= old[2] if old else 0
            if self._size + weight > self.max_bytes and self._held:
                first = next(iter(self._held))  # what would go first: let in only what is read more
                if self._reads.get(key, 0) <= self._reads.get(first, 0):
                    return
            self._size += weight
            self._held[key] = (length, list(entries), weight)
            self._evict()

    def _evict(self) -> None:
        while self._size > self.max_bytes and self._held:
            _, (_, _, weight) = self._held.popitem(last=False)
            self._size -= weight


def entry_bytes(entry: ManifestEntry) -> int:
    """About the Python memory of a decoded entry: grows with its file's column metrics."""
    f = entry.data_file
    metrics = (f.column_sizes, f.value_counts, f.null_value_counts, f.nan_value_counts, f.lower_bounds,
               f.upper_bounds)
    return _ENTRY_BYTES + _METRIC_BYTES * sum(len(m) for m in metrics if m)


def _length(io: FileIO, path: str) -> int | None:
    try:
        return io.length(path)
    except Exception:  # noqa: BLE001 - gone or unreadable: read it again, whose error names the file
        return None


MANIFESTS = ManifestCache()
