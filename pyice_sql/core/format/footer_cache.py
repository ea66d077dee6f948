"""The field-id columns of Parquet footers, kept between scans.

A data file whose adding snapshot has expired, in a table whose columns were renamed or widened
since, is read by the names and types its footer gives (`spark/read/reader.py`); without a cache
every scan of such a table read every such file's footer again: 100,000 footer reads per statement
on a large table. A data file is written once and never changed, so what its footer says is kept,
keyed by its path and length (a file replaced under the same path has, but for a rare accident,
another length; the manifest says which length it should have).

Only what the reader needs is kept: each leaf column's field id, path and types. Files written by
the same schema hold equal tuples, and those are shared, so a file costs its key and one reference.
Bounded by count, least recently used out first.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

DEFAULT_MAX_FILES = 200_000

# a leaf column: (its field id, None in a file written without ids; its path of names; physical
# type; logical type)
Leaf = tuple["int | None", tuple[str, ...], "str | None", str]
Leaves = tuple[Leaf, ...]


class FooterCache:
    """(file path, length) → the file's `Leaves`, at most `max_files` of them (thread-safe)."""

    def __init__(self, max_files: int = DEFAULT_MAX_FILES) -> None:
        self.max_files = max_files
        self._lock = threading.Lock()
        self._held: OrderedDict[tuple[str, int], Leaves] = OrderedDict()
        self._shared: dict[Leaves, Leaves] = {}

    def leaves(self, files: list[tuple[str, int]], read: Callable[[list[str]], list[dict]]) -> list[Leaves]:
        """The leaves of each (path, length) in `files`, in order; the footers not held are read by
        `read` (paths → FooterStats.java-shaped dicts, in order) in one call."""
        with self._lock:
            found = [self._held.get(f) for f in files]
            for f, held in zip(files, found):
                if held is not None:
                    self._held.move_to_end(f)
        missing = [f for f, held in zip(files, found) if held is None]
        if missing:
            read_now = dict(zip(missing, map(_leaves, read([p for p, _ in missing]))))
            with self._lock:
                for f, leaves in read_now.items():
                    read_now[f] = self._keep(f, leaves)
            found = [held if held is not None else read_now[f] for f, held in zip(files, found)]
        return found

    def _keep(self, key: tuple[str, int], leaves: Leaves) -> Leaves:
        leaves = self._shared.setdefault(leaves, leaves)
        if self.max_files > 0:
            self._held[key] = leaves
            self._held.move_to_end(key)
            while len(self._held) > self.max_files:
                self._held.popitem(last=False)
            if len(self._shared) > self.max_files:  # only files of many schemas get here
                self._shared = {v: v for v in self._held.values()}
        return leaves


def _leaves(footer: dict) -> Leaves:
    return tuple((c.get("fieldId"), tuple(c["path"]), c.get("physicalType"), c.get("logicalType") or "")
                 for c in footer["columns"])


FOOTERS = FooterCache()
