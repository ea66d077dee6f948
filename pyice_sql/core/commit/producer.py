"""SnapshotProducer: turn a set of file changes into one new snapshot, atomically.

The data and delete files are already written when a commit starts. An attempt then
  1. refreshes the table and, when it moved since the operation read it, re-validates the
     change against every snapshot committed in between (the operation's `validate` hook —
     Iceberg's conflict rules) and fails for good on a real conflict;
  2. writes a manifest per (spec, content) for the added files (entries inherit the snapshot
     id and sequence number, so these manifests stay valid across retries), and rewrites only
     the parent manifests that hold removed files (their entries become DELETED; the rest of
     those manifests are carried as EXISTING); all other parent manifests are reused as is,
     and runs of manifests are merged as Java merges them (`merge_manifests`), so a table that
     takes many small commits keeps a bounded number of manifests for every scan to read;
  3. writes the manifest list and the new metadata, and asks the catalog to swap it in.
A lost swap retries from step 1 per `commit.retry.*`. On a final failure every file the
commit wrote is deleted, and the caller deletes the data files: nothing becomes visible. When
the catalog cannot tell whether the commit landed (CommitStateUnknownError) every file is kept,
since the table may already reference them.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace
from typing import Callable

from pyice_sql.core import properties as props
from pyice_sql.core.catalog.base import Table
from pyice_sql.core.format.manifests import ManifestWriter, read_entries, read_manifest_list
from pyice_sql.core.errors import CommitConflictError, CommitStateUnknownError, ValidationError
from pyice_sql.core.faults import fault_point
from pyice_sql.core.model.manifest import (
    DataFile, EntryStatus, FileContent, ManifestContent, ManifestEntry, ManifestFile,
)
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.model.row_lineage import assign_manifest_first_row_ids
from pyice_sql.core.model.snapshots import Snapshot, build_summary, new_snapshot_id


@dataclass(frozen=True)
class RemovedFile:
    """A live file to remove, as read during planning, with the manifest it was found in."""

    entry: ManifestEntry
    manifest_path: str


Validator = Callable[[Table, list[Snapshot]], None]


@dataclass
class SnapshotUpdate:
    """One snapshot's worth of change: what to add, what to remove, and how to validate it."""

    operation: str
    start_snapshot_id: int | None
    added_data_files: list[DataFile] = field(default_factory=list)
    added_delete_files: list[DataFile] = field(default_factory=list)
    removed: list[RemovedFile] = field(default_factory=list)
    summary_extra: dict[str, str] = field(default_factory=dict)
    validate: Validator | None = None
    branch: str = "main"
    # compaction output keeps the data sequence number of the snapshot it read (Iceberg's
    # use-starting-sequence-number), so deletes committed meanwhile still apply to its rows
    added_data_sequence_number: int | None = None
    # manifest compaction: parent manifests replaced by already written ones (entries EXISTING)
    replaced_manifests: frozenset[str] = frozenset()
    added_manifests: list[ManifestFile] = field(default_factory=list)
    # a metadata change applied to each attempt's base before the snapshot is added (CREATE OR
    # REPLACE TABLE AS SELECT: new schema and spec, main cleared), so both land in one commit
    prepare: Callable[[TableMetadata], TableMetadata] | None = None


def snapshots_since(metadata: TableMetadata, start_id: int | None, branch: str = "main") -> list[Snapshot]:
    """Snapshots on `branch` committed after `start_id`, oldest first."""
    ref = metadata.refs.get(branch)
    out = []
    sid = ref.snapshot_id if ref is not None else None
    while sid is not None and sid != start_id:
        snap = metadata.snapshot_by_id(sid)
        if snap is None:
            break
        out.append(snap)
        sid = snap.parent_snapshot_id
    return list(reversed(out))


def publish_metadata(table: Table, new_metadata: TableMetadata) -> Table:
    """Record the previous metadata file in the metadata log, then compare-and-swap."""
    from pyice_sql.core.model.format_versions import check_writable
    check_writable(max(table.metadata.format_version, new_metadata.format_version),  # the last guard of
                   table.full_name)  # every commit
    max_entries = int(new_metadata.property(props.METADATA_PREVIOUS_VERSIONS_MAX,
                                            str(props.METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT)))
    logged = new_metadata.with_metadata_log(table.metadata_location, table.metadata.last_updated_ms, max_entries)
    return table.catalog.commit(table, logged)


def update_metadata(table: Table, change: Callable[[TableMetadata], TableMetadata]) -> Table:
    """Commit a change that adds no files (refs, rollback): apply `change` to the latest metadata
    and swap it in, re-reading and re-applying it (so its checks see the new state) when another
    writer won the race, per `commit.retry.*`. A change that returns its input commits nothing."""
    retries = _Retries(table.metadata)
    base = table
    while True:
        new_metadata = change(base.metadata)
        if new_metadata is base.metadata:
            return base
        try:
            return publish_metadata(base, new_metadata)
        except CommitConflictError:
            if not retries.wait():
                raise
            base = base.refresh()


class _Retries:
    """A table's `commit.retry.*` budget for re-trying a lost compare-and-swap."""

    def __init__(self, metadata: TableMetadata) -> None:
        p = metadata.property
        self.limit = int(p(props.COMMIT_NUM_RETRIES, str(props.COMMIT_NUM_RETRIES_DEFAULT)))
        self.min_wait = int(p(props.COMMIT_MIN_RETRY_WAIT_MS, str(props.COMMIT_MIN_RETRY_WAIT_MS_DEFAULT))) / 1000
        self.max_wait = int(p(props.COMMIT_MAX_RETRY_WAIT_MS, str(props.COMMIT_MAX_RETRY_WAIT_MS_DEFAULT))) / 1000
        total = int(p(props.COMMIT_TOTAL_RETRY_TIME_MS, str(props.COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT)))
        self.deadline = time.monotonic() + total / 1000
        self.attempt = 0

    def wait(self) -> bool:
        """Count a lost attempt; back off (jittered exponential) and return True if another is allowed."""
        self.attempt += 1
        if self.attempt > self.limit or time.monotonic() > self.deadline:
            return False
        wait = min(self.max_wait, self.min_wait * (2 ** (self.attempt - 1)))
        time.sleep(wait * (0.5 + random.random()))
        return True


def commit_update(table: Table, update: SnapshotUpdate) -> Table:
    """Commit `update` to `table` with retries; returns the table as committed."""
    retries = _Retries(table.metadata)
    writer = ManifestWriter(table.io, table.metadata.location, table.metadata.format_version)
    snapshot_id = new_snapshot_id([s.snapshot_id for s in table.metadata.snapshots])
    added = _AddedManifests(writer, update, snapshot_id)
    base = table
    try:
        while True:
            if retries.attempt > 0 or _moved(base, update):
                base = base.refresh() if retries.attempt > 0 else base
                if update.validate is not None:
                    update.validate(base, snapshots_since(base.metadata, update.start_snapshot_id, update.branch))
            new_metadata = _build(base, update, writer, added, snapshot_id, retries.attempt)
            try:
                return publish_metadata(base, new_metadata)
            except CommitConflictError:
                writer.cleanup(keep=added.paths())
                if not retries.wait():
                    raise
    except CommitStateUnknownError:
        raise  # the files may be part of the table now: never delete them
    except BaseException:
        writer.cleanup()
        raise


def _moved(table: Table, update: SnapshotUpdate) -> bool:
    ref = table.metadata.refs.get(update.branch)
    return (ref.snapshot_id if ref else None) != update.start_snapshot_id


class _AddedManifests:
    """Manifests for added files; written once, their ManifestFile re-sequenced per attempt."""

    def __init__(self, writer: ManifestWriter, update: SnapshotUpdate, snapshot_id: int) -> None:
        self.writer, self.update, self.snapshot_id = writer, update, snapshot_id
        self.manifests: list[ManifestFile] | None = None

    def paths(self) -> set[str]:
        return {m.manifest_path for m in self.manifests or []}

    def get(self, metadata: TableMetadata, sequence_number: int) -> list[ManifestFile]:
        if self.manifests is None:
            self.manifests = []
            for files, content in ((self.update.added_data_files, ManifestContent.DATA),
                                   (self.update.added_delete_files, ManifestContent.DELETES)):
                by_spec: dict[int, list[DataFile]] = {}
                for f in files:
                    by_spec.setdefault(f.spec_id, []).append(f)
                data_seq = self.update.added_data_sequence_number if content == ManifestContent.DATA else None
                for spec_id, group in sorted(by_spec.items()):
                    entries = [ManifestEntry(status=EntryStatus.ADDED, snapshot_id=self.snapshot_id,
                                             sequence_number=data_seq, data_file=f) for f in group]
                    self.manifests.append(self.writer.write_manifest(
                        entries, metadata.spec_by_id(spec_id), metadata.schema(), self.snapshot_id,
                        sequence_number, content))
        explicit = self.update.added_data_sequence_number
        return [replace(m, sequence_number=sequence_number,
                        min_sequence_number=explicit if explicit is not None and m.content == ManifestContent.DATA
                        else sequence_number)
                for m in self.manifests]


def _build(base: Table, update: SnapshotUpdate, writer: ManifestWriter, added: _AddedManifests,
           snapshot_id: int, attempt: int) -> TableMetadata:
    metadata = update.prepare(base.metadata) if update.prepare is not None else base.metadata
    ref = metadata.refs.get(update.branch)
    parent = metadata.snapshot_by_id(ref.snapshot_id) if ref is not None else None
    sequence_number = metadata.next_sequence_number()
    manifests = added.get(metadata, sequence_number)
    data_manifests = [m for m in manifests if m.content == ManifestContent.DATA]
    delete_manifests = [m for m in manifests if m.content == ManifestContent.DELETES]
    parent_manifests = read_manifest_list(base.io, parent.manifest_list) if parent is not None else []
    kept = _carry_over(base, parent_manifests, update, writer, snapshot_id, sequence_number)
    if update.replaced_manifests:
        kept = _replace_manifests(base, kept, update, snapshot_id, sequence_number)
    kept = [m for m in kept if _has_live_files(m) or m.added_snapshot_id == snapshot_id]
    ordered = (data_manifests + [m for m in kept if m.content == ManifestContent.DATA]
               + delete_manifests + [m for m in kept if m.content == ManifestContent.DELETES])
    if not update.replaced_manifests:  # a manifest rewrite lays the manifests out itself
        ordered = merge_manifests(base, ordered, writer, snapshot_id, sequence_number)
    fault_point("manifests")
    first_row_id = added_rows = None
    if metadata.next_row_id is not None:  # format v3: every data manifest gets its row ids here
        first_row_id = metadata.next_row_id
        ordered, added_rows = assign_manifest_first_row_ids(ordered, first_row_id)
    list_path = writer.write_manifest_list(ordered, snapshot_id, parent.snapshot_id if parent else None,
                                           sequence_number, attempt, first_row_id)
    fault_point("manifest-list")
    removed_files = [r.entry.data_file for r in update.removed]
    summary = build_summary(
        update.operation, parent.summary if parent else None,
        added_data_files=update.added_data_files,
        removed_data_files=[f for f in removed_files if f.content == FileContent.DATA],
        added_delete_files=update.added_delete_files,
        removed_delete_files=[f for f in removed_files if f.content != FileContent.DATA],
        extra={"engine-name": "pyice_sql", **update.summary_extra})
    snapshot = Snapshot(snapshot_id=snapshot_id, parent_snapshot_id=parent.snapshot_id if parent else None,
                        sequence_number=sequence_number, timestamp_ms=_now_ms(metadata),
                        manifest_list=list_path, summary=summary, schema_id=metadata.current_schema_id,
                        first_row_id=first_row_id, added_rows=added_rows)
    return metadata.add_snapshot(snapshot, update.branch)


def file_key(f: DataFile) -> tuple[str, int | None]:
    """What identifies a file in a manifest: its path, and for a deletion vector (format v3) also
    its blob's offset, since the DVs of many data files share one Puffin file."""
    return f.file_path, f.content_offset


def _has_live_files(manifest: ManifestFile) -> bool:
    """False for a manifest left holding only entries an earlier snapshot deleted: Java drops those
    from the next snapshot rather than carrying them forever (unknown v1 counts count as live)."""
    return not (manifest.added_files_count == 0 and manifest.existing_files_count == 0)


def _now_ms(metadata: TableMetadata) -> int:
    """Wall clock, but never before the table's last update (Java validates log ordering)."""
    return max(int(time.time() * 1000), metadata.last_updated_ms + 1)


def _carry_over(base: Table, parent_manifests: list[ManifestFile], update: SnapshotUpdate,
                writer: ManifestWriter, snapshot_id: int, sequence_number: int) -> list[ManifestFile]:
    """Parent manifests for the new snapshot: untouched ones reused, ones holding removed files rewritten."""
    remove_keys = {file_key(r.entry.data_file) for r in update.removed}
    if not remove_keys:
        return parent_manifests
    hinted = {r.manifest_path for r in update.removed}
    # delete files are looked for in every delete manifest (they are few): the deletion vectors of
    # one Puffin file may sit in several (one per spec), and callers may hint a data manifest
    any_delete_manifest = any(r.entry.data_file.content != FileContent.DATA for r in update.removed)
    metadata = base.metadata
    out = []
    found: set[tuple[str, int | None]] = set()
    for m in parent_manifests:
        # Only manifests named by planning (or written since) can hold the removed files.
        if m.manifest_path not in hinted and not _written_since(metadata, m, update.start_snapshot_id) and not (
                any_delete_manifest and m.content == ManifestContent.DELETES):
            out.append(m)
            continue
        entries = read_entries(base.io, m)
        live = [e for e in entries if e.status != EntryStatus.DELETED]
        hits = [e for e in live if file_key(e.data_file) in remove_keys]
        if not hits:
            out.append(m)
            continue
        found.update(file_key(e.data_file) for e in hits)
        rewritten = [
            replace(e, status=EntryStatus.DELETED, snapshot_id=snapshot_id)
            if file_key(e.data_file) in remove_keys else replace(e, status=EntryStatus.EXISTING)
            for e in live
        ]
        out.append(writer.write_manifest(rewritten, metadata.spec_by_id(m.partition_spec_id), metadata.schema(),
                                             snapshot_id, sequence_number, m.content))
    missing = remove_keys - found
    if missing:
        raise ValidationError(
            f"files to remove are no longer in table {base.full_name} (removed by a concurrent commit): "
            + ", ".join(sorted(path for path, _ in missing)[:5]))
    return out


def merge_manifests(base: Table, manifests: list[ManifestFile], writer: ManifestWriter, snapshot_id: int,
                    sequence_number: int) -> list[ManifestFile]:
    """A snapshot's manifest list (`manifests`, its new manifests first per content type) with runs
    of manifests merged into one, by Iceberg Java's rule (ManifestMergeManager, per
    `commit.manifest-merge.enabled`, `commit.manifest.min-count-to-merge` and `.target-size-bytes`).

    Per content type and spec, the manifests are packed from the oldest end into bins of up to the
    target size, keeping their order, so the newest bin is the under-filled one. A bin of several
    manifests becomes one; the bin holding the content's first manifest (the new one, when the
    snapshot adds files of that content) only once it holds the minimum count. Entries this
    snapshot added or deleted keep that status, other live ones become EXISTING (explicit sequence
    numbers and first row ids), and entries an earlier snapshot deleted are dropped.
    """
    metadata = base.metadata
    if metadata.property(props.MANIFEST_MERGE_ENABLED, str(props.MANIFEST_MERGE_ENABLED_DEFAULT)).lower() != "true":
        return manifests
    min_count = int(metadata.property(props.MANIFEST_MIN_MERGE_COUNT, str(props.MANIFEST_MIN_MERGE_COUNT_DEFAULT)))
    target = int(metadata.property(props.MANIFEST_TARGET_SIZE_BYTES, str(props.MANIFEST_TARGET_SIZE_BYTES_DEFAULT)))
    first: dict[ManifestContent, ManifestFile] = {}
    groups: dict[tuple[ManifestContent, int], list[ManifestFile]] = {}
    for m in manifests:
        first.setdefault(m.content, m)
        groups.setdefault((m.content, m.partition_spec_id), []).append(m)
    merged: dict[str, ManifestFile] = {}  # first manifest of a merged bin -> the merged manifest
    dropped: set[str] = set()
    for (content, spec_id), group in groups.items():
        for bin_ in _pack_from_end(group, target):
            if len(bin_) == 1 or (first[content] in bin_ and len(bin_) < min_count):
                continue
            entries = [_merged_entry(e, snapshot_id) for m in bin_ for e in read_entries(base.io, m)]
            merged[bin_[0].manifest_path] = writer.write_manifest(
                [e for e in entries if e is not None], metadata.spec_by_id(spec_id), metadata.schema(),
                snapshot_id, sequence_number, content)
            dropped.update(m.manifest_path for m in bin_[1:])
    return [merged.get(m.manifest_path, m) for m in manifests if m.manifest_path not in dropped]


def _merged_entry(entry: ManifestEntry, snapshot_id: int) -> ManifestEntry | None:
    """An entry as a merged manifest holds it (None: dropped)."""
    if entry.snapshot_id == snapshot_id and entry.status != EntryStatus.EXISTING:
        return entry
    return None if entry.status == EntryStatus.DELETED else replace(entry, status=EntryStatus.EXISTING)


def _pack_from_end(manifests: list[ManifestFile], target: int) -> list[list[ManifestFile]]:
    """`manifests` (newest first) cut into consecutive bins of up to `target` bytes, filled from the
    oldest end (Java's ListPacker.packEnd with a lookback of 1); the newest bin first."""
    bins: list[list[ManifestFile]] = []
    size = 0
    for m in reversed(manifests):
        if bins and size + m.manifest_length <= target:
            bins[-1].insert(0, m)
            size += m.manifest_length
        else:
            bins.append([m])
            size = m.manifest_length
    return list(reversed(bins))


def _replace_manifests(base: Table, kept: list[ManifestFile], update: SnapshotUpdate, snapshot_id: int,
                       sequence_number: int) -> list[ManifestFile]:
    missing = update.replaced_manifests - {m.manifest_path for m in kept}
    if missing:
        raise ValidationError(f"manifests to replace are no longer in table {base.full_name} (rewritten by a "
                              f"concurrent commit): {', '.join(sorted(missing)[:3])}")
    added = [replace(m, added_snapshot_id=snapshot_id, sequence_number=sequence_number)
             for m in update.added_manifests]
    return added + [m for m in kept if m.manifest_path not in update.replaced_manifests]


def _written_since(metadata: TableMetadata, manifest: ManifestFile, start_snapshot_id: int | None) -> bool:
    start = metadata.snapshot_by_id(start_snapshot_id) if start_snapshot_id is not None else None
    return start is None or manifest.sequence_number > start.sequence_number
