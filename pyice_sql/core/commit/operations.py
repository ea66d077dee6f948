"""Snapshot operations in Iceberg's vocabulary: what each kind of write asks the producer to commit.

A statement names the operation it performs (AppendFiles, OverwriteFiles, ReplacePartitions,
RowDelta, RewriteFiles, as Iceberg Java's table API calls them) and the builder fills the
`SnapshotUpdate`, including the `operation` recorded in the snapshot summary, which other
engines' conflict checks select by.
"""
from __future__ import annotations

from typing import Callable, Sequence

from pyice_sql.core.commit.producer import RemovedFile, SnapshotUpdate, Validator
from pyice_sql.core.model.manifest import DataFile
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.model.snapshots import MAIN_BRANCH, Operation


def append_files(start_snapshot_id: int | None, added: Sequence[DataFile] = (), *,
                 branch: str = MAIN_BRANCH) -> SnapshotUpdate:
    """AppendFiles: new data files, nothing removed ("append")."""
    return SnapshotUpdate(Operation.APPEND, start_snapshot_id, added_data_files=list(added), branch=branch)


def overwrite_files(start_snapshot_id: int | None, added: Sequence[DataFile],
                    removed: Sequence[RemovedFile] = (), *, branch: str = MAIN_BRANCH,
                    prepare: Callable[[TableMetadata], TableMetadata] | None = None) -> SnapshotUpdate:
    """OverwriteFiles: data files replaced by others ("overwrite"); `prepare` changes the
    metadata in the same commit (CREATE OR REPLACE TABLE AS SELECT)."""
    return SnapshotUpdate(Operation.OVERWRITE, start_snapshot_id, added_data_files=list(added),
                          removed=list(removed), branch=branch, prepare=prepare)


def replace_partitions(start_snapshot_id: int | None, added: Sequence[DataFile],
                       removed: Sequence[RemovedFile], *, branch: str = MAIN_BRANCH) -> SnapshotUpdate:
    """ReplacePartitions (dynamic INSERT OVERWRITE): the partitions `added` lands in lose their
    files; "overwrite" when some were removed, else "append", flagged replace-partitions."""
    op = Operation.OVERWRITE if removed else Operation.APPEND
    return SnapshotUpdate(op, start_snapshot_id, added_data_files=list(added), removed=list(removed),
                          summary_extra={"replace-partitions": "true"}, branch=branch)


def row_delta(start_snapshot_id: int | None, added_data: Sequence[DataFile], added_deletes: Sequence[DataFile],
              removed: Sequence[RemovedFile], validate: Validator, *, branch: str = MAIN_BRANCH) -> SnapshotUpdate:
    """RowDelta (MERGE / UPDATE / DELETE): rows added, delete files added, files removed whole.

    The summary operation is the narrowest that describes the change: "delete" when only rows
    go, "append" when only rows come, else "overwrite".
    """
    if (removed or added_deletes) and not added_data:
        op = Operation.DELETE
    elif added_data and not removed and not added_deletes:
        op = Operation.APPEND
    else:
        op = Operation.OVERWRITE
    return SnapshotUpdate(op, start_snapshot_id, added_data_files=list(added_data),
                          added_delete_files=list(added_deletes), removed=list(removed), validate=validate,
                          branch=branch)


def rewrite_files(start_snapshot_id: int | None, removed: Sequence[RemovedFile], *,
                  added_data: Sequence[DataFile] = (), added_deletes: Sequence[DataFile] = (),
                  validate: Validator | None = None, data_sequence_number: int | None = None) -> SnapshotUpdate:
    """RewriteFiles (compaction): the same rows in other files ("replace"); compacted data keeps
    the data sequence number it was read at, so deletes committed meanwhile still apply."""
    return SnapshotUpdate(Operation.REPLACE, start_snapshot_id, added_data_files=list(added_data),
                          added_delete_files=list(added_deletes), removed=list(removed), validate=validate,
                          added_data_sequence_number=data_sequence_number)
