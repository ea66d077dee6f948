"""DeleteFileIndex: which delete files apply to which data file.

The rules (Iceberg spec, v2):
  - a position delete file applies to a data file with data sequence number ≤ its own, in the
    same spec and partition; when it names one data file (`referenced_data_file`, or equal
    lower/upper bounds on the `file_path` column) only to that file;
  - an equality delete file applies to data with a strictly smaller data sequence number, in
    the same spec and partition, or to every data file when its spec is unpartitioned.
Delete files are bucketed by (spec id, partition) and kept sorted by sequence number, so each
lookup costs a dictionary probe plus a bisect.
"""
from __future__ import annotations

import bisect
from collections import defaultdict

from pyice_sql.core.model.manifest import DataFile, FileContent, ManifestEntry

DELETE_FILE_PATH_ID = 2147483546


def referenced_path(f: DataFile) -> str | None:
    """The single data file a position delete file targets, when it says so."""
    if f.referenced_data_file:
        return f.referenced_data_file
    lo = (f.lower_bounds or {}).get(DELETE_FILE_PATH_ID)
    hi = (f.upper_bounds or {}).get(DELETE_FILE_PATH_ID)
    if lo is not None and lo == hi:
        return lo.decode("utf-8")
    return None


class _SeqBucket:
    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.files: list[ManifestEntry] = []

    def add(self, seq: int, f: ManifestEntry) -> None:
        i = bisect.bisect_right(self.seqs, seq)
        self.seqs.insert(i, seq)
        self.files.insert(i, f)

    def at_least(self, seq: int) -> list[ManifestEntry]:
        return self.files[bisect.bisect_left(self.seqs, seq):]

    def greater_than(self, seq: int) -> list[ManifestEntry]:
        return self.files[bisect.bisect_right(self.seqs, seq):]


class DeleteFileIndex:
    def __init__(self) -> None:
        self._pos_by_partition: dict[tuple, _SeqBucket] = defaultdict(_SeqBucket)
        self._pos_by_path: dict[str, _SeqBucket] = defaultdict(_SeqBucket)
        self._eq_by_partition: dict[tuple, _SeqBucket] = defaultdict(_SeqBucket)
        self._eq_global = _SeqBucket()

    def add(self, entry: ManifestEntry, unpartitioned_spec: bool = False) -> None:
        f = entry.data_file
        seq = entry.sequence_number or 0
        if f.content == FileContent.POSITION_DELETES:
            target = referenced_path(f)
            if target is not None:
                self._pos_by_path[target].add(seq, entry)
            else:
                self._pos_by_partition[(f.spec_id, f.partition)].add(seq, entry)
        elif f.content == FileContent.EQUALITY_DELETES:
            if unpartitioned_spec or not f.partition:
                self._eq_global.add(seq, entry)
            else:
                self._eq_by_partition[(f.spec_id, f.partition)].add(seq, entry)

    def for_data_file(self, f: DataFile, data_sequence_number: int) -> tuple[ManifestEntry, ...]:
        """Entries of the delete files that apply to data file `f`."""
        key = (f.spec_id, f.partition)
        out: list[ManifestEntry] = []
        if key in self._pos_by_partition:
            out += self._pos_by_partition[key].at_least(data_sequence_number)
        if f.file_path in self._pos_by_path:
            out += self._pos_by_path[f.file_path].at_least(data_sequence_number)
        if key in self._eq_by_partition:
            out += self._eq_by_partition[key].greater_than(data_sequence_number)
        out += self._eq_global.greater_than(data_sequence_number)
        return tuple(out)
