"""CALL system.expire_snapshots: drop old snapshots, then delete the files only they reached.

Which snapshots stay follows Iceberg's RemoveSnapshots: main always stays; another branch or tag
stays while its snapshot is younger than its max-ref-age-ms (default table property
history.expire.max-ref-age-ms, unbounded); every kept branch keeps its newest ancestors, at
least min-snapshots-to-keep (retain_last / history.expire.min-snapshots-to-keep, default 1) and
all younger than max-snapshot-age-ms (older_than / history.expire.max-snapshot-age-ms, default
5 days); snapshots on no branch stay while younger than older_than. `snapshot_ids` expires
those snapshots too, and refusing one a kept branch or tag points at.

The metadata commit comes first (one atomic swap, retried on a lost race with the choice
recomputed on the new state); only then are files deleted: those the expired snapshots reached
(manifest lists, manifests, data and delete files, statistics) that no kept snapshot reaches.
A crash between the two leaves unreferenced files for remove_orphan_files, never a broken table.
`dry_run => true` (a pyice extension) reports the counts and changes nothing.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Iterable

from pyice_sql.core import properties as props
from pyice_sql.core.catalog.base import Table
from pyice_sql.core.commit.producer import update_metadata
from pyice_sql.core.errors import AnalysisError, PyIceError, UnsupportedError
from pyice_sql.core.model.manifest import FileContent
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.model.snapshots import MAIN_BRANCH
from pyice_sql.spark.procedures.arguments import timestamp_ms
from pyice_sql.spark.procedures.bulk_files import delete_files
from pyice_sql.spark.procedures.reachability import path_key, reachable_files, statistics_paths
from pyice_sql.spark.procedures.registry import Parameter, ProcedureContext, procedure
from pyice_sql.spark.runtime import spark_session_zone

NAME = "expire_snapshots"


@dataclass(frozen=True)
class ExpiryPolicy:
    now_ms: int
    older_than_ms: int | None = None  # None: the table's history.expire.max-snapshot-age-ms
    retain_last: int | None = None  # None: the table's history.expire.min-snapshots-to-keep
    snapshot_ids: tuple[int, ...] = ()


def _long_property(md: TableMetadata, key: str, default: int) -> int:
    try:
        return int(md.property(key, str(default)))
    except ValueError:
        raise AnalysisError(f"{NAME}: table property {key} must be an integer, got {md.property(key)!r}") from None


def expire(md: TableMetadata, policy: ExpiryPolicy, table_name: str = "table") -> TableMetadata:
    """`md` without the snapshots (and refs) `policy` expires; `md` itself when nothing expires."""
    now = policy.now_ms
    older_than = (policy.older_than_ms if policy.older_than_ms is not None
                  else now - _long_property(md, props.MAX_SNAPSHOT_AGE_MS, props.MAX_SNAPSHOT_AGE_MS_DEFAULT))
    min_keep = (policy.retain_last if policy.retain_last is not None
                else _long_property(md, props.MIN_SNAPSHOTS_TO_KEEP, props.MIN_SNAPSHOTS_TO_KEEP_DEFAULT))
    max_ref_age = _long_property(md, props.MAX_REF_AGE_MS, props.MAX_REF_AGE_MS_DEFAULT)
    kept_refs = {}
    for name, ref in md.refs.items():
        snap = md.snapshot_by_id(ref.snapshot_id)
        age_limit = ref.max_ref_age_ms if ref.max_ref_age_ms is not None else max_ref_age
        if name == MAIN_BRANCH or (snap is not None and now - snap.timestamp_ms <= age_limit):
            kept_refs[name] = ref
    for sid in policy.snapshot_ids:
        holders = sorted(n for n, r in kept_refs.items() if r.snapshot_id == sid)
        if holders:
            raise AnalysisError(f"{NAME} on {table_name}: cannot expire {sid}. Still referenced by refs: {holders}")
    retain = {r.snapshot_id for r in kept_refs.values()}
    on_refs: set[int] = set()
    for ref in kept_refs.values():
        if not ref.is_branch:
            on_refs.add(ref.snapshot_id)
            continue
        branch_older_than = now - ref.max_snapshot_age_ms if ref.max_snapshot_age_ms is not None else older_than
        branch_keep = ref.min_snapshots_to_keep if ref.min_snapshots_to_keep is not None else min_keep
        kept = 0
        for ancestor in md.ancestors(ref.snapshot_id):
            if kept < branch_keep or ancestor.timestamp_ms >= branch_older_than:
                retain.add(ancestor.snapshot_id)
                kept += 1
            else:
                break
        on_refs.update(a.snapshot_id for a in md.ancestors(ref.snapshot_id))
    retain |= {s.snapshot_id for s in md.snapshots if s.snapshot_id not in on_refs and s.timestamp_ms >= older_than}
    existing = {s.snapshot_id for s in md.snapshots}
    remove = (existing - retain) | (set(policy.snapshot_ids) & existing)
    dropped_refs = [n for n in md.refs if n not in kept_refs]
    if not remove and not dropped_refs:
        return md
    out = md
    for name in dropped_refs:
        out = out.remove_ref(name)
    return out.remove_snapshots(remove)


@dataclass
class ExpiredFiles:
    """Files to delete after an expiry, by Iceberg's result categories."""

    data: list[str]
    position_deletes: list[str]
    equality_deletes: list[str]
    manifests: list[str]
    manifest_lists: list[str]
    statistics: list[str]

    def all(self) -> list[str]:
        return (self.data + self.position_deletes + self.equality_deletes + self.manifests + self.manifest_lists
                + self.statistics)

    def counts(self) -> tuple[int, ...]:
        return (len(self.data), len(self.position_deletes), len(self.equality_deletes), len(self.manifests),
                len(self.manifest_lists), len(self.statistics))


def expired_files(table: Table, before: TableMetadata, after: TableMetadata, shim=None) -> ExpiredFiles:
    """What the snapshots in `before` but not `after` reached and no snapshot of `after` reaches."""
    kept_ids = {s.snapshot_id for s in after.snapshots}
    gone_ids = [s.snapshot_id for s in before.snapshots if s.snapshot_id not in kept_ids]
    kept = reachable_files(table.io, after, shim=shim)
    gone = reachable_files(table.io, before, gone_ids, skip_manifests=set(kept.manifests), shim=shim)
    kept_stats = {path_key(p) for p in statistics_paths(after)}
    by_content: dict[FileContent, list[str]] = {c: [] for c in FileContent}
    for key, (path, content) in gone.content.items():
        if key not in kept.content:
            by_content[content].append(path)
    return ExpiredFiles(
        data=by_content[FileContent.DATA], position_deletes=by_content[FileContent.POSITION_DELETES],
        equality_deletes=by_content[FileContent.EQUALITY_DELETES],
        manifests=[p for k, p in gone.manifests.items() if k not in kept.manifests],
        manifest_lists=[p for k, p in gone.manifest_lists.items() if k not in kept.manifest_lists],
        statistics=[p for k, p in gone.statistics.items() if k not in kept_stats])


def _snapshot_ids(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    values: Iterable[Any] = value if isinstance(value, (list, tuple)) else [value]
    try:
        return tuple(int(v) for v in values)
    except (TypeError, ValueError):
        raise AnalysisError(f"{NAME}: snapshot_ids must be array(<snapshot id>, ...), got {value!r}") from None


@procedure(NAME, [
    Parameter("table", required=True), Parameter("older_than"), Parameter("retain_last"),
    Parameter("max_concurrent_deletes"), Parameter("stream_results"), Parameter("snapshot_ids"),
    Parameter("clean_expired_metadata"), Parameter("dry_run", default=False),
], "deleted_data_files_count long, deleted_position_delete_files_count long, "
   "deleted_equality_delete_files_count long, deleted_manifest_files_count long, "
   "deleted_manifest_lists_count long, deleted_statistics_files_count long")
def expire_snapshots(ctx: ProcedureContext, args: dict[str, Any]) -> list[tuple]:
    table = ctx.load_table(args["table"])
    if args["max_concurrent_deletes"] is not None and int(args["max_concurrent_deletes"]) <= 0:
        raise AnalysisError(f"{NAME}: max_concurrent_deletes should have value > 0, value: "
                            f"{args['max_concurrent_deletes']}", position=ctx.position)
    if args["retain_last"] is not None and int(args["retain_last"]) < 1:
        raise AnalysisError(f"{NAME}: number of snapshots to retain must be at least 1, cannot be: "
                            f"{args['retain_last']}", position=ctx.position)
    if args["clean_expired_metadata"]:
        raise UnsupportedError(f"{NAME}: clean_expired_metadata is not supported by pyice_sql", position=ctx.position)
    if table.metadata.property(props.GC_ENABLED, str(props.GC_ENABLED_DEFAULT).lower()).lower() == "false":
        raise AnalysisError(f"{NAME} on {table.full_name}: cannot expire snapshots: GC is disabled "
                            "(deleting files may corrupt other tables)", position=ctx.position)
    policy = ExpiryPolicy(
        now_ms=int(time.time() * 1000),
        older_than_ms=timestamp_ms(args["older_than"], NAME, "older_than", spark_session_zone(ctx.spark)),
        retain_last=None if args["retain_last"] is None else int(args["retain_last"]),
        snapshot_ids=_snapshot_ids(args["snapshot_ids"]))
    if args["dry_run"]:
        after = expire(table.metadata, policy, table.full_name)
        return [expired_files(table, table.metadata, after, ctx.runtime.shim).counts()]
    bases: list[TableMetadata] = []

    def change(md: TableMetadata) -> TableMetadata:
        bases.append(md)
        return expire(md, policy, table.full_name)

    committed = update_metadata(table, change)
    if committed.metadata is bases[-1]:
        return [(0, 0, 0, 0, 0, 0)]
    doomed = expired_files(committed, bases[-1], committed.metadata, ctx.runtime.shim)
    failed = delete_files(ctx.runtime.shim, table.io, doomed.all())
    if failed:
        raise PyIceError(f"{NAME} on {table.full_name}: snapshots expired, but {len(failed)} unreachable files could "
                         f"not be deleted (remove_orphan_files will find them), e.g. {failed[0][0]}: {failed[0][1]}")
    return [doomed.counts()]
