"""Merge-on-read writes: position deletes for the changed rows, data files for the new ones.

Two write jobs and no pass before them. The delete write groups the changed target rows by
data file and position (the shuffle it needs anyway); over that order one window drops a row
changed twice (a lone unconditional DELETE matched by several source rows) or, when MERGE must
check cardinality, fails the job on a target row in two matched pairs. The counts of the
result row are Spark observations of the two writes (the one-job write below counts in its
tasks), and the files touched are the ones that got a delete file. The existing file-scoped
position deletes of a data file that gets new deletes are folded into its new delete file, so a
reader opens at most one delete file per data file (as Iceberg Java 1.10 does for v2 tables):
the JVM shim's delete writer reads them in the write task for that file only
(write/delete_writer.py); with Spark's writer (no shim), those of every file read ride along in
the shuffle and are kept only for data files that get new deletes.

Where the shim writes the delete files, an UPDATE, a MERGE without an INSERT clause and a MERGE
over a small source (`RowLevelPlan.small_source`: few inserts) write both in one job: the rows
grouped for the delete write go on, with their new values, to the data write, whose tasks write
the delete files as they stream by (Iceberg Java's delta writer), so the tagged rows are neither
cached nor read twice. Inserted rows have no data file: they ride in the task of the rows without
one. There the in-task writer also does the window's work (a position's second row dropped, or
the job failed on it) and counts the rows as they go by: no window, no observation. A statement
that writes no rows (a DELETE, a MERGE that only deletes) runs the same filter in a job of its
own, where no row passes it: no Row conversion of the deleted rows and no observation, whose
node would split the scan's generated code in two (each part compiled again per statement: the
literals of its filter are in the code). A MERGE over a large source keeps two jobs: its inserts
go to the data write's own advisory-size tasks, never all into one task of the delete write.

A DELETE has no join: where the scan reads each data file whole in one task
(`data_writer.files_read_whole` sets the splits for the write) its rows reach the delete writer
grouped by file and in position order already, so the scan's tasks write the delete files with
no shuffle at all: one Spark job, where Iceberg Java runs two (`_read_straight`). The
writer fails a task that sees a file's rows come apart, and the driver a statement whose delete
file two tasks wrote (delete_writer.py), so a split that did cut a file can never commit.

Format v3 takes the same paths with the shim (`write_deletion_vectors_in_tasks`): the task that
would write a data file's delete file serializes its deletion vector instead, every position
delete that applies to the file folded in (readers take the DV alone), and the driver writes the
statement's DVs as one Puffin file; the new rows carry their lineage. Without the shim,
merge_on_read_v3.py.
"""
from __future__ import annotations

import uuid
from contextlib import nullcontext
from functools import partial
from typing import Callable

from pyspark.sql import DataFrame, Observation, Window, functions as F

from pyice_sql.core.model.manifest import DataFile, FileContent
from pyice_sql.core.scan.delete_index import referenced_path
from pyice_sql.core.plan.nodes import DELETE, INSERT
from pyice_sql.spark.frames import aliased, select_sql
from pyice_sql.spark.observations import observe
from pyice_sql.spark.schema import frame_schema
from pyice_sql.spark.read.reader import read_position_deletes
from pyice_sql.spark.rowlevel.compile.merge_rows import FILE, FILE_ORDINAL, OP, POS, ROW_ID
from pyice_sql.spark.rowlevel.context import (
    ACTING_SQL, CARDINALITY_MARKER, NEW_ROW_SQL, RowLevelWrite, Written, acting, acting_rows, changes_sql,
    counting_new_rows, deleted_count, file_scoped_deletes, observed, op_count, write_new_rows,
)
from pyice_sql.spark.write.data_writer import files_read_whole, quote, split_size, write_data_files
from pyice_sql.spark.write.lineage_columns import new_row_lineage, with_row_ids, write_with_lineage
from pyice_sql.spark.write.delete_writer import (
    InTaskTargets, PerFile, along_columns, in_task_targets, write_position_deletes, write_position_deletes_along,
)

OLD = "__old"  # a position from an existing delete file being folded
_KEEP = "__keep"
_ROW_COLUMNS = ("_file", "_pos", OLD, _KEEP)  # what the rows of the delete write add to a row's own
_TWO_PAIRS = f"{CARDINALITY_MARKER}: a target row matched more than one source row"  # a position twice


def write_merge_on_read(w: RowLevelWrite) -> Written:
    return _write(w, *_targets(w, vectors=False))


def write_deletion_vectors_in_tasks(w: RowLevelWrite) -> Written | None:
    """The same writes on a format v3 table: each data file's deletion vector (all its previous
    position deletes folded in) serialized by the tasks that would write its delete file, the
    new rows carrying their lineage; None where the tasks cannot (no JVM shim: the caller writes
    them through Spark, merge_on_read_v3.py)."""
    targets, folded, in_tasks = _targets(w, vectors=True)
    return None if in_tasks is None else _write(w, targets, folded, in_tasks)


def _targets(w: RowLevelWrite, vectors: bool) -> tuple[dict[str, DataFile], dict[str, list], InTaskTargets | None]:
    """The data files read, by path; the previous deletes each one's new deletes fold in (v2: the
    file-scoped delete files, which the commit then removes; v3: every position delete that
    applies, since readers take a DV alone); and the in-task writer's targets (None: Spark's
    writer)."""
    targets = {t.file.file_path: t.file for t in w.tasks}
    # the rows' file ordinals index `targets` too: one target per task, in the tasks' order
    by_ordinal = w.file_ordinals and len(targets) == len(w.tasks)
    folded = {t.file.file_path: [d for d in t.deletes if d.data_file.content == FileContent.POSITION_DELETES]
              if vectors else file_scoped_deletes(t) for t in w.tasks}
    folded = {p: ds for p, ds in folded.items() if ds}
    return targets, folded, in_task_targets(w.spark, targets, folded, FILE_ORDINAL if by_ordinal else None, vectors)


def _write(w: RowLevelWrite, targets: dict[str, DataFile], folded: dict[str, list],
           in_tasks: InTaskTargets | None) -> Written:
    check = w.checks_cardinality
    by_ordinal = in_tasks is not None and in_tasks.ordinal is not None
    if in_tasks is not None and (_in_one_job(w) or not w.writes_rows):
        as_read = by_ordinal and _read_straight(w, list(targets.values()))
        return _write_in_one_job(w, targets, folded, in_tasks, as_read)
    if w.writes_rows:  # the delete write, then the data write
        w.read_twice(w.tagged)
    # the new rows' counts are observed by the delete write, for the data write (none to write: no counts)
    tagged, counts = counting_new_rows(w) if w.writes_rows else (w.tagged, None)
    rows = select_sql(acting_rows(w, changes_sql(w), tagged), [
        f"{FILE} AS _file", f"{POS} AS _pos", OP, f"false AS {OLD}", *([FILE_ORDINAL] if by_ordinal else [])])
    unioned = bool(folded) and in_tasks is None
    if unioned:  # Spark's writer: the previous delete rows of every file read ride along in the shuffle
        old = read_position_deletes(w.spark, [d.data_file for ds in folded.values() for d in ds])
        rows = rows.unionByName(old.select("_file", "_pos", F.lit(None).cast("int").alias(OP),
                                           F.lit(True).alias(OLD)))
    deletes = Observation(f"pyice_deletes_{uuid.uuid4().hex}")
    grouped = _counting(w, check, unioned, deletes, ((DELETE, "deleted"),))
    delete_files = write_position_deletes(rows, targets, w.write, grouped, in_tasks)
    # an observation of rows the optimizer proved empty (or of no job at all) reports nothing
    # no delete file written means no position deleted (and Spark may have reported nothing)
    deleted = (observed(deletes, lambda: deleted_count(w.tagged)).get("deleted") or 0) if delete_files else 0
    write_rows = _new_rows_writer(w, in_tasks)
    data_files, counted = write_new_rows(w, lambda rows, n: write_rows(rows, rebalance=True, known_rows=n),
                                         counts if delete_files else None)
    return _written(counted, deleted, data_files, delete_files, folded)


def _new_rows_writer(w: RowLevelWrite, in_tasks: InTaskTargets | None,
                     with_lineage: bool = False) -> Callable[..., list[DataFile]]:
    """The data file write of the new rows (keywords: `write_data_files`'); on format v3 they carry
    their lineage (an updated row keeps its `_row_id`), `with_lineage`: already."""
    if in_tasks is not None and in_tasks.vectors:
        lineage = (lambda rows: rows) if with_lineage else partial(with_row_ids, carried=ROW_ID)
        return lambda rows, **kw: write_with_lineage(w.checked_rows(lineage(rows)), w.write, **kw)
    return lambda rows, **kw: write_data_files(w.checked_rows(rows), w.write, **kw)


def _written(counted: dict, deleted: int, data_files: list[DataFile], delete_files: list[DataFile],
             folded: dict[str, list]) -> Written:
    """The commit's inputs: the previous deletes of a file with new deletes are removed where they
    apply to it alone (a partition-scoped delete file may serve other files)."""
    touched = list(dict.fromkeys(d.referenced_data_file for d in delete_files))
    return Written(updated=counted.get("updated") or 0, deleted=deleted, inserted=counted.get("inserted") or 0,
                   data_files=data_files, delete_files=delete_files, referenced=touched,
                   folded=[d for p in touched for d in folded.get(p, ()) if referenced_path(d.data_file) == p])


def _read_straight(w: RowLevelWrite, files: list[DataFile]) -> bool:
    """Whether the deleted rows come to the delete write straight from the scan, each data file's
    in one task and in position order, so the scan's tasks write the delete files with no shuffle:
    one job where Iceberg Java runs two. So for a DELETE (a MERGE joins, so shuffles) whose files
    have no equality deletes (their anti-join may shuffle), read with splits that never cut a file
    (`data_writer.files_read_whole`), where Spark would cut none anyway (a larger file read by one
    task would slow the scan more than the shuffle costs). Not for an UPDATE: its new rows would
    be written by every scan task holding one (a data file per core), where the shuffle's adaptive
    tasks write few."""
    return (w.plan.source is None and not w.writes_rows
            and not any(d.data_file.content == FileContent.EQUALITY_DELETES for t in w.tasks for d in t.deletes)
            and max((f.file_size_in_bytes for f in files), default=0) <= split_size(w.spark, files))


def _in_one_job(w: RowLevelWrite) -> bool:
    """Whether the new rows can go with the delete write's rows: every new row replaces a changed
    target row (grouped by the data file it replaces a row of), or the inserts are few (a small
    source), so the one task that gets them all writes them as fast as a task of their own."""
    names = {f.name.lower() for f in w.schema.fields}
    return (w.writes_rows and (w.plan.small_source or not any(i.operation == INSERT for i in w.plan.instructions))
            and not names & set(_ROW_COLUMNS))


def _write_in_one_job(w: RowLevelWrite, targets: dict, folded: dict, in_tasks: InTaskTargets,
                      as_read: bool) -> Written:
    """The delete files and the new rows' data files, written by the same tasks (one job); a
    statement that writes no rows (a DELETE, a MERGE that only deletes) runs the in-task writer's
    job alone, straight from the scan when `as_read` (`_read_straight`). The in-task writer also
    does MERGE's per-file step (a position's second row fails the job when `check`, else is
    dropped) and counts the rows, each changed position once: no window and no observation, each
    one more analysis of the whole plan."""
    check = w.checks_cardinality
    if w.writes_rows:
        # only what the shuffle, the per-file step and the data write read: the tagged rows' other
        # columns would widen the shuffle and the shim's row conversion, and every plan over them;
        # on format v3 the new rows' lineage too, in this projection (no step of its own to analyse)
        lineage = (new_row_lineage(ROW_ID if ROW_ID in frame_schema(w.tagged).names else None)
                   if in_tasks.vectors else {})
        columns = [*along_columns(in_tasks, FILE, POS, ACTING_SQL, NEW_ROW_SQL),
                   *(quote(f.name) for f in w.schema.fields), *(f"{sql} AS {quote(n)}" for n, sql in lineage.items())]
        new_rows = partial(_new_rows_writer(w, in_tasks, with_lineage=True), in_place=True)
    else:
        columns, new_rows = along_columns(in_tasks, FILE, POS, ACTING_SQL, "false"), None
    rows = select_sql(acting_rows(w, changes_sql(w, new_rows=True)), columns)
    with files_read_whole(w.spark, list(targets.values())) if as_read else nullcontext():
        delete_files, data_files, counted = write_position_deletes_along(
            rows, targets, w.write, in_tasks, new_rows, _TWO_PAIRS if check else None, as_read)
    if not delete_files and not data_files:  # each new row replaces a deleted position: nothing changed
        return Written()
    return _written(counted, counted.get("deleted") or 0, data_files, delete_files, folded)


def _counting(w: RowLevelWrite, check: bool, folding: bool, observation: Observation,
              ops: tuple[tuple[int, str], ...]) -> PerFile:
    """The delete write's per-file step (`per_file`), counting the rows of each operation of `ops`
    (operation, metric name) into `observation` there, once the rows are grouped by data file:
    an observation in the scan's stage would split its generated code in two. An UPDATE or DELETE
    changes each target row once, so without folded rows in the shuffle it needs no window: the
    rows are counted as they come."""
    def counted(rows: DataFrame) -> DataFrame:
        return observe(rows, observation, *[aliased(op_count(op), name) for op, name in ops])
    if w.plan.source is None and not folding:
        return lambda rows, file_column: counted(rows)
    return lambda rows, file_column: counted(per_file(rows, file_column, check, folding))


def per_file(rows: DataFrame, file_column: str, check: bool, folding: bool) -> DataFrame:
    """The positions to write of each data file (named by `file_column`), in order: each changed
    position once (a second matched pair of a position fails the job when `check`), plus the
    folded old positions of data files that have a new one."""
    window = Window.partitionBy(file_column).orderBy("_pos")
    new = ~F.col(OLD)
    again = new & F.coalesce(F.lag("_pos").over(window) == F.col("_pos"), F.lit(False))
    written = F.col(OLD) | acting() | (F.col(OP) == INSERT)  # an inserted row has no position: never again
    if check:  # every row is a matched pair or acts on a target row: a position twice is two pairs
        keep = F.when(again, F.raise_error(F.lit(_TWO_PAIRS))).otherwise(written)
    else:
        keep = ~again & written
    if folding:
        whole_file = window.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
        keep = keep & (F.max(F.when(new & acting(), 1).otherwise(0)).over(whole_file) == 1)
    return rows.withColumn(_KEEP, keep).where(F.col(_KEEP))  # the writer selects its columns
