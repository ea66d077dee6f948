"""Listing and deleting many files: on the driver when they are few, as one Spark job otherwise.

Table maintenance may face 100,000 files; one driver call per file would take hours on an
object store. Above `DRIVER_LIMIT` items the work goes to the executors (the shim's BulkFiles),
each using the Hadoop FileSystem of the path's scheme.
"""
from __future__ import annotations

from typing import Iterable

from pyice_sql.core.format.fileio import FileInfo, FileIO
from pyice_sql.spark.jvm.bridge import ShimHandle

DRIVER_LIMIT = 32


def delete_files(shim: ShimHandle, io: FileIO, paths: Iterable[str]) -> list[tuple[str, str]]:
    """Delete `paths`; returns (path, error) for each file that could not be deleted."""
    paths = list(dict.fromkeys(paths))
    if len(paths) > DRIVER_LIMIT:
        return shim.delete_many(paths)
    failed = []
    for p in paths:
        try:
            io.delete(p)
        except OSError as e:
            failed.append((p, str(e)))
    return failed


def list_files(shim: ShimHandle, io: FileIO, location: str) -> list[FileInfo]:
    """Every file below `location`.

    The top two folder levels (e.g. `data/` and its partition folders) are listed on the driver;
    the folders below them are listed recursively, in one Spark job when there are many.
    """
    location = location.rstrip("/")
    files = io.list(location, recursive=False)
    leaves: list[str] = []
    for top in io.list_dirs(location):
        top_dir = f"{location}/{top}"
        files += io.list(top_dir, recursive=False)
        leaves += [f"{top_dir}/{d}" for d in io.list_dirs(top_dir)]
    if len(leaves) > DRIVER_LIMIT:
        files += [FileInfo(f.path, f.length, f.modified_ms) for f in shim.list_many(leaves) if not f.is_dir]
    else:
        for leaf in leaves:
            files += io.list(leaf, recursive=True)
    return files
