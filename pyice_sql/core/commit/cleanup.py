"""The one place a statement's written files are deleted when it fails before committing.

Data and delete files are written before the commit; a statement that fails (while planning,
writing more files or committing) must not leave them in the table directory. When the commit
state is unknown the table may already reference them, so they are kept.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.commit.producer import SnapshotUpdate, commit_update
from pyice_sql.core.errors import CommitStateUnknownError
from pyice_sql.core.format.fileio import FileIO
from pyice_sql.core.model.manifest import DataFile


@contextmanager
def delete_written_on_failure(io: FileIO, written: Sequence[DataFile]) -> Iterator[None]:
    """Run the block; if it raises, delete every file in `written` (read at failure time, so a
    list the block appends to is covered) and re-raise — unless the commit state is unknown."""
    try:
        yield
    except CommitStateUnknownError:
        raise
    except BaseException:
        for f in written:
            io.delete(f.file_path)
        raise


@contextmanager
def staging_removed_on_failure(io: FileIO, folder: str) -> Iterator[None]:
    """Run a Spark write into the staging `folder`; if it fails, delete the folder (Spark's output
    committer removes only its own temporary files, leaving the folder, and whatever its job
    committed before the failure) and re-raise."""
    try:
        yield
    except BaseException:
        io.delete_tree(folder)
        raise


def commit_or_clean(table: Table, update: SnapshotUpdate, written: Sequence[DataFile]) -> Table:
    """Commit `update`; on failure delete the files this statement wrote, then re-raise."""
    with delete_written_on_failure(table.io, written):
        return commit_update(table, update)
