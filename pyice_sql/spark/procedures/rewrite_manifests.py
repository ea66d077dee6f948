"""CALL system.rewrite_manifests: re-cluster a snapshot's manifests by partition.

As Iceberg's action: the current snapshot's data manifests, then its delete manifests, of one
spec (the default one, or `spec_id`) are rewritten when there is more than one of them or they
add up to more than one target manifest (`commit.manifest.target-size-bytes`, 8 MB). Their live
entries are sorted by partition and cut into ceil(total bytes / target) manifests of EXISTING
entries (snapshot ids and sequence numbers kept), committed as one `replace` snapshot that
changes no data. Scans then prune whole manifests per partition.
"""
from __future__ import annotations

from typing import Any

from pyice_sql.core import properties as props
from pyice_sql.core.catalog.base import Table
from pyice_sql.core.format.manifests import ManifestWriter, read_entries, read_manifest_list
from pyice_sql.core.commit.producer import SnapshotUpdate, commit_update
from pyice_sql.core.errors import AnalysisError, CommitStateUnknownError
from pyice_sql.core.model.manifest import EntryStatus, ManifestContent, ManifestEntry, ManifestFile
from pyice_sql.core.model.snapshots import Operation
from pyice_sql.spark.procedures.registry import Parameter, ProcedureContext, procedure

NAME = "rewrite_manifests"


def _partition_order(entry: ManifestEntry) -> tuple:
    return tuple((v is None, v if v is not None else 0) for v in entry.data_file.partition)


def chunks(entries: list[ManifestEntry], count: int) -> list[list[ManifestEntry]]:
    """`entries` sorted by partition, cut into `count` runs of (nearly) equal length."""
    ordered = sorted(entries, key=_partition_order)
    count = max(1, min(count, len(ordered)))
    size, extra = divmod(len(ordered), count)
    out, start = [], 0
    for i in range(count):
        end = start + size + (1 if i < extra else 0)
        out.append(ordered[start:end])
        start = end
    return [c for c in out if c]


def _rewrite(table: Table, writer: ManifestWriter, manifests: list[ManifestFile], content: ManifestContent,
             spec_id: int, target: int) -> tuple[list[ManifestFile], list[ManifestFile]]:
    """(manifests replaced, manifests written) for one content type; both empty when nothing to do."""
    md = table.metadata
    matching = [m for m in manifests if m.content == content and m.partition_spec_id == spec_id]
    total = sum(m.manifest_length for m in matching)
    count = (total + target - 1) // target
    if not matching or (count <= 1 and len(matching) == 1):
        return [], []
    entries = [ManifestEntry(status=EntryStatus.EXISTING, snapshot_id=e.snapshot_id, sequence_number=e.sequence_number,
                             file_sequence_number=e.file_sequence_number, data_file=e.data_file)
               for m in matching for e in read_entries(table.io, m) if e.status != EntryStatus.DELETED]
    spec = md.spec_by_id(spec_id)
    written = [writer.write_manifest(chunk, spec, md.schema(), md.current_snapshot_id, 0, content)
               for chunk in chunks(entries, count)]
    return matching, written


@procedure(NAME, [Parameter("table", required=True), Parameter("use_caching"), Parameter("spec_id")],
           "rewritten_manifests_count int, added_manifests_count int")
def rewrite_manifests(ctx: ProcedureContext, args: dict[str, Any]) -> list[tuple]:
    table = ctx.load_table(args["table"])
    md = table.metadata
    spec_id = md.default_spec_id if args["spec_id"] is None else int(args["spec_id"])
    if md.spec_by_id(spec_id) is None:
        raise AnalysisError(f"{NAME}: invalid spec id {spec_id} for {table.full_name}; specs: "
                            f"{', '.join(str(s.spec_id) for s in md.specs)}", position=ctx.position)
    snapshot = md.current_snapshot()
    if snapshot is None:
        return [(0, 0)]
    target = int(md.property(props.MANIFEST_TARGET_SIZE_BYTES, str(props.MANIFEST_TARGET_SIZE_BYTES_DEFAULT)))
    manifests = read_manifest_list(table.io, snapshot.manifest_list)
    writer = ManifestWriter(table.io, md.location, md.format_version)
    try:
        replaced, added = [], []
        for content in (ManifestContent.DATA, ManifestContent.DELETES):
            old, new = _rewrite(table, writer, manifests, content, spec_id, target)
            replaced += old
            added += new
        if not replaced:
            return [(0, 0)]
        extra = {"manifests-created": str(len(added)), "manifests-replaced": str(len(replaced)),
                 "manifests-kept": str(len(manifests) - len(replaced)),
                 "entries-processed": str(sum(m.existing_files_count or 0 for m in added))}
        commit_update(table, SnapshotUpdate(Operation.REPLACE, snapshot.snapshot_id, summary_extra=extra,
                                            replaced_manifests=frozenset(m.manifest_path for m in replaced),
                                            added_manifests=added))
    except CommitStateUnknownError:
        raise  # the new manifests may be part of the table now
    except BaseException:
        writer.cleanup()
        raise
    return [(len(replaced), len(added))]
