"""CALL system.remove_orphan_files: delete files under the table location that no metadata reaches.

A file is an orphan when no snapshot (manifest list, manifest, data or delete file, statistics),
no metadata file in the metadata log, the current metadata file, nor version-hint.text names it,
and it was last modified before `older_than` (default: 3 days ago, so files of commits still in
flight are never taken). Hidden paths (a name starting with `_` or `.`, such as `_SUCCESS` and
`.crc` files) are skipped, except partition folders of fields whose name starts that way, as in
Iceberg. `dry_run => true` only reports them.
"""
from __future__ import annotations

import time
from typing import Any

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.errors import AnalysisError, PyIceError
from pyice_sql.spark.connect_backend import conf_enabled
from pyice_sql.spark.procedures.arguments import DAY_MS, timestamp_ms
from pyice_sql.spark.procedures.bulk_files import delete_files, list_files
from pyice_sql.spark.procedures.reachability import path_key, reachable_files
from pyice_sql.spark.procedures.registry import Parameter, ProcedureContext, procedure
from pyice_sql.spark.runtime import spark_session_zone

NAME = "remove_orphan_files"
DEFAULT_AGE_MS = 3 * DAY_MS


def referenced_keys(table: Table, shim=None) -> set[str]:
    """Path keys of every file the table's metadata reaches (all snapshots, all metadata files)."""
    md = table.metadata
    keys = reachable_files(table.io, md, shim=shim).keys()
    keys.add(path_key(table.metadata_location))
    keys.update(path_key(e.metadata_file) for e in md.metadata_log)
    keys.add(path_key(f"{md.location}/metadata/version-hint.text"))
    return keys


def _hidden(relative: str, partition_prefixes: tuple[str, ...]) -> bool:
    return any(part.startswith(("_", ".")) and not part.startswith(partition_prefixes)
               for part in relative.split("/"))


def find_orphans(table: Table, shim, location: str, older_than_ms: int) -> list[str]:
    """Orphan file paths below `location`, as the file system spells them."""
    referenced = referenced_keys(table, shim)
    prefixes = tuple(f"{f.name}=" for s in table.metadata.specs for f in s.fields if f.name.startswith(("_", ".")))
    root = path_key(location).rstrip("/")
    out = []
    for f in list_files(shim, table.io, location):
        key = path_key(f.path)
        if f.modified_ms >= older_than_ms or key in referenced:
            continue
        if _hidden(key[len(root):].lstrip("/"), prefixes):
            continue
        out.append(f.path)
    return sorted(out)


@procedure(NAME, [
    Parameter("table", required=True), Parameter("older_than"), Parameter("location"),
    Parameter("dry_run", default=False), Parameter("max_concurrent_deletes"), Parameter("file_list_view"),
    Parameter("equal_schemes"), Parameter("equal_authorities"), Parameter("prefix_mismatch_mode"),
    Parameter("prefix_listing"),
], "orphan_file_location string")
def remove_orphan_files(ctx: ProcedureContext, args: dict[str, Any]) -> list[tuple[str]]:
    table = ctx.load_table(args["table"])
    for unsupported in ("file_list_view", "equal_schemes", "equal_authorities", "prefix_mismatch_mode"):
        if args[unsupported] is not None:
            raise AnalysisError(f"{NAME}: argument {unsupported} is not supported by pyice_sql", position=ctx.position)
    if args["max_concurrent_deletes"] is not None and int(args["max_concurrent_deletes"]) <= 0:
        raise AnalysisError(f"{NAME}: max_concurrent_deletes should have value > 0, value: "
                            f"{args['max_concurrent_deletes']}", position=ctx.position)
    now = int(time.time() * 1000)
    older_than = timestamp_ms(args["older_than"], NAME, "older_than", spark_session_zone(ctx.spark))
    dry_run = bool(args["dry_run"])
    if older_than is None:
        older_than = now - DEFAULT_AGE_MS
    elif not dry_run and now - older_than < DAY_MS and not conf_enabled(ctx.spark, "spark.testing", False):
        raise AnalysisError(f"{NAME}: cannot remove orphan files with an interval less than 24 hours "
                            "(files of commits in flight could be taken); use dry_run => true to look",
                            position=ctx.position)
    location = args["location"] or table.metadata.location
    if path_key(location).rstrip("/") != path_key(table.metadata.location) and not path_key(location).startswith(
            path_key(table.metadata.location).rstrip("/") + "/"):
        raise AnalysisError(f"{NAME}: location {location} is not inside the table location "
                            f"{table.metadata.location}", position=ctx.position)
    orphans = find_orphans(table, ctx.runtime.shim, location, older_than)
    if not dry_run and orphans:
        failed = delete_files(ctx.runtime.shim, table.io, orphans)
        if failed:
            raise PyIceError(f"{NAME} on {table.full_name}: {len(failed)} of {len(orphans)} orphan files could "
                             f"not be deleted, e.g. {failed[0][0]}: {failed[0][1]}")
    return [(p,) for p in orphans]
