"""Conflict validation for row-level commits, as Iceberg defines it per isolation level.

When the table moved between our scan and our commit, we look at each snapshot committed in
between (only at the files it added or removed, found through the manifests it wrote) and
refuse the commit when that snapshot could change our result:
  - it removed a data file we remove (copy-on-write) or reference with position deletes;
  - it added delete files that apply to a file we remove or reference;
  - under `serializable` isolation, it added data files that may hold rows matching our scan
    filter (an insert we did not see). `snapshot` isolation skips this check.
A refused commit raises ValidationError and is not retried; a merely lost race is.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.format.manifests import read_entries, read_manifest_list
from pyice_sql.core.errors import ValidationError
from pyice_sql.core.expr.evaluators import InclusiveMetricsEvaluator, PartitionEvaluator
from pyice_sql.core.expr.predicates import Expression
from pyice_sql.core.model.manifest import DataFile, EntryStatus, FileContent
from pyice_sql.core.model.snapshots import Operation, Snapshot
from pyice_sql.core.scan.delete_index import referenced_path


@dataclass(frozen=True)
class SnapshotChanges:
    added_data: list[DataFile]
    removed_data: list[DataFile]
    added_deletes: list[DataFile]


def changes_of(table: Table, snapshot: Snapshot) -> SnapshotChanges:
    """Files `snapshot` itself added or removed (its own manifests only)."""
    added, removed, deletes = [], [], []
    for manifest in read_manifest_list(table.io, snapshot.manifest_list):
        if manifest.added_snapshot_id != snapshot.snapshot_id:
            continue
        for e in read_entries(table.io, manifest):
            if e.snapshot_id != snapshot.snapshot_id:
                continue
            f = e.data_file
            if e.status == EntryStatus.ADDED:
                (added if f.content == FileContent.DATA else deletes).append(f)
            elif e.status == EntryStatus.DELETED and f.content == FileContent.DATA:
                removed.append(f)
    return SnapshotChanges(added, removed, deletes)


class RowLevelValidator:
    def __init__(self, command: str, scan_filter: Expression, isolation: str,
                 removed_paths: Iterable[str], referenced_paths: Iterable[str],
                 touched_partitions: Iterable[tuple[int, tuple]]) -> None:
        self.command = command
        self.scan_filter = scan_filter
        self.isolation = isolation
        self.watched = set(removed_paths) | set(referenced_paths)
        self.partitions = set(touched_partitions)

    def __call__(self, table: Table, snapshots: list[Snapshot]) -> None:
        md = table.metadata
        metrics = InclusiveMetricsEvaluator(md.schema(), self.scan_filter)
        partition_evals: dict[int, PartitionEvaluator] = {}
        for snap in snapshots:
            changes = changes_of(table, snap)
            gone = [f.file_path for f in changes.removed_data if f.file_path in self.watched]
            if gone and snap.operation in (Operation.OVERWRITE, Operation.DELETE, Operation.REPLACE):
                self._fail(table, snap, f"it removed data files this {self.command} reads: {gone[:3]}")
            for d in changes.added_deletes:
                target = referenced_path(d)
                hit = target in self.watched if target else (d.spec_id, d.partition) in self.partitions
                if hit:
                    self._fail(table, snap, f"it added delete file {d.file_path} for data this {self.command} changes")
            if self.isolation == "serializable" and snap.operation in (Operation.APPEND, Operation.OVERWRITE):
                for f in changes.added_data:
                    if f.spec_id not in partition_evals:
                        partition_evals[f.spec_id] = PartitionEvaluator(md.spec_by_id(f.spec_id), md.schema(),
                                                                        self.scan_filter)
                    if partition_evals[f.spec_id].eval(f.partition) and metrics.eval(f):
                        self._fail(table, snap, f"it added data file {f.file_path} that may hold rows matching "
                                   f"this {self.command}'s filter {self.scan_filter} (serializable isolation)")

    def _fail(self, table: Table, snap: Snapshot, why: str) -> None:
        raise ValidationError(f"conflict on {table.full_name}: concurrent snapshot {snap.snapshot_id} "
                              f"({snap.operation}) conflicts with this {self.command}: {why}")
