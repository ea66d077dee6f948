"""What a write mode needs of one row-level statement, and what it hands back to the commit.

The executor plans and tags; a write mode (merge_on_read.py, copy_on_write.py) turns the tagged
rows into files and counts, from this typed context alone (no calls back into the session).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Callable

from pyspark.errors import PySparkAssertionError
from pyspark.sql import Column, DataFrame, Observation, SparkSession, functions as F

from pyice_sql.core.model.manifest import DataFile, FileContent
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.plan.nodes import DELETE, INSERT, MATCHED, UPDATE, RowLevelPlan
from pyice_sql.core.scan.delete_index import referenced_path
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.spark.observations import observe, observed_metrics
from pyice_sql.spark.rowlevel.compile.merge_rows import FILE, MATCHED_PAIR, OP, POS
from pyice_sql.spark.write.data_writer import WriteContext

# Marker of the in-job cardinality failure: the executor then builds the full error on the driver.
CARDINALITY_MARKER = "pyice-merge-cardinality-violation"

# the name of a column of source row ids -> true where no matched pair had that source row: SQL text,
# or a Column where Spark cannot load the shim's function catalog (copy_on_write.py)
NotMatched = Callable[[str], "str | Column"]


@dataclass(frozen=True)
class RowLevelWrite:
    """One statement's tagged rows (MergeRows output, persisted) and what writing them takes."""

    spark: SparkSession
    plan: RowLevelPlan
    schema: Schema
    tagged: DataFrame
    tasks: tuple[FileScanTask, ...]  # the target files read (their rows are in `tagged`)
    write: WriteContext
    # tagged rows -> the same rows, their table columns NOT NULL checked; the data writer takes the table's
    # columns by name (a projection of its own would be one more analysis of the plan)
    checked_rows: Callable[[DataFrame], DataFrame]
    # copy-on-write by predicate (UPDATE / DELETE): the files to rewrite -> the rows to write back
    # (copies and updated rows; format v3: with their lineage), read through the statement's scan;
    # None: rewrite by joining with the changed rows
    rewrite_rows: Callable[[list[FileScanTask]], DataFrame] | None = None
    # copy-on-write MERGE by MergeRows again (copy_on_write.py): `tagged` holds the matched side
    # only, and this tags the rows of the given files again, joined with the source so that every
    # target row is kept (a row no clause changes carries its values); None: by the changed rows
    # (its second argument: where the count of changes kept the matched pairs' source rows, the test of the
    # others, see `matched_sources`; else None)
    merge_rows: Callable[[list[FileScanTask], NotMatched | None], DataFrame] | None = None
    file_ordinals: bool = False  # the tagged rows carry FILE_ORDINAL: their file's index in `tasks`
    # merge-on-read: called with `tagged` before two jobs read it (the executor caches it, and
    # releases it after the statement), so both see the same rows
    read_twice: Callable[[DataFrame], None] = lambda rows: None
    # `merge_rows` joins target and source by a shuffle of both on the join key (a NOT MATCHED
    # clause, no broadcast): adaptive execution sizes its tasks already, so no rebalance follows
    merged_by_key: bool = False
    # `merge_rows` broadcasts the source: the target's rows stay in the tasks that read them, each
    # file's together and in order, so those tasks can write them (copy_on_write.py)
    merged_as_read: bool = False
    # `tagged` carries each matched pair's source row id (SOURCE_ROW): the count of changes keeps the ids, and
    # `merge_rows` takes the source rows no pair matched from them instead of joining again (copy_on_write.py)
    matched_sources: bool = False

    @property
    def by_path(self) -> dict[str, FileScanTask]:
        return {t.file.file_path: t for t in self.tasks}

    @property
    def writes_rows(self) -> bool:
        return writes_rows(self.plan)

    @property
    def checks_cardinality(self) -> bool:
        """Spark/Iceberg check cardinality whenever there are WHEN MATCHED clauses, except for one
        unconditional DELETE (deleting a row matched twice is still unambiguous)."""
        plan = self.plan
        if plan.source is None:
            return False
        matched = [i for i in plan.instructions if i.kind == MATCHED]
        return bool(matched) and not (len(matched) == 1 and matched[0].operation == DELETE
                                      and matched[0].condition is None)


@dataclass
class Written:
    """What a write mode wrote and counted: the commit's inputs and the result row's numbers."""

    updated: int = 0
    deleted: int = 0
    inserted: int = 0
    data_files: list[DataFile] = field(default_factory=list)
    delete_files: list[DataFile] = field(default_factory=list)
    rewritten: list[FileScanTask] = field(default_factory=list)  # data files replaced (copy-on-write)
    folded: list = field(default_factory=list)  # delete entries replaced by the new delete files
    referenced: list[str] = field(default_factory=list)  # data files the new deletes point at


def writes_rows(plan: RowLevelPlan) -> bool:
    """Whether the statement can produce new rows (an UPDATE or INSERT action): a DELETE, or a
    MERGE that only deletes, writes no data files, only deletes."""
    return any(i.operation in (UPDATE, INSERT) for i in plan.instructions)


# Above this many tagged rows the new rows are written by parallel tasks however few they are
# (one task would have to read every tagged row).
ONE_TASK_TAGGED_ROWS = 500_000


def counting_new_rows(w: RowLevelWrite) -> tuple[DataFrame, Observation]:
    """The tagged rows, observed: the delete write that reads them counts the rows to update and
    to insert, so the new-row write knows its size before it runs (see `write_new_rows`)."""
    counts = Observation(f"pyice_counts_{uuid.uuid4().hex}")
    return observe(w.tagged, counts, op_count(UPDATE).alias("updated"), op_count(INSERT).alias("inserted"),
                   F.count(F.lit(1)).alias("tagged")), counts


def write_new_rows(w: RowLevelWrite, write: Callable[[DataFrame, int | None], list[DataFile]],
                   counts: Observation | None = None) -> tuple[list[DataFile], dict]:
    """Merge-on-read: `write(rows, known_rows)` the updated and inserted rows as data files; with
    their counts (none of either when the statement cannot produce rows).

    The counts come from `counts` (`counting_new_rows`, observed by the delete write) when the
    caller passes it, only once that write wrote files: an Observation whose plan Spark did not
    run, or proved empty, never reports, and reading it would wait forever. Then there is no
    data write at all when they are 0, and `known_rows` when the tagged rows are few enough for
    one task. Otherwise they are observed by this write itself."""
    if not w.writes_rows:
        return [], {}
    rows = tagged_new_rows(w)
    counted = observed(counts, dict) if counts is not None else {}
    if counted:
        new = (counted["updated"] or 0) + (counted["inserted"] or 0)
        one_task = (counted["tagged"] or 0) <= ONE_TASK_TAGGED_ROWS
        return (write(rows, new if one_task else None) if new else []), counted
    inserts = Observation(f"pyice_inserts_{uuid.uuid4().hex}")
    data_files = write(observe(rows, inserts, op_count(UPDATE).alias("updated"), op_count(INSERT).alias("inserted")),
                       None)
    return data_files, observed(inserts, lambda: new_row_counts(w.tagged)) if data_files else {}


def observed(observation: Observation, fallback: Callable[[], dict]) -> dict:
    """The metrics an Observation collected during a write, else `fallback()` (one aggregate job).

    Spark reports no metrics for an observed plan it proved empty (its optimizer drops the
    observation with the rows), and Spark Connect's `Observation.get` raises where none came back;
    the counts must never silently become 0 (a statement would then look like it changed nothing),
    so they are recomputed. Any other failure to read them is raised: recounting hid Spark 4.0's
    missing `Observation.getRow` as two or three extra jobs per statement."""
    try:
        values = observed_metrics(observation)
    except PySparkAssertionError:  # Spark Connect: no metrics came back for it
        values = {}
    return values if values else fallback()


def deleted_count(tagged: DataFrame) -> dict:
    """Rows the statement deletes, a position deleted twice counted once (the observation's fallback)."""
    return {"deleted": tagged.where(F.col(OP) == DELETE).select(FILE, POS).distinct().count()}


def new_row_counts(tagged: DataFrame) -> dict:
    """Updated and inserted rows (the observation's fallback)."""
    row = tagged.agg(op_count(UPDATE).alias("updated"), op_count(INSERT).alias("inserted")).first()
    return {"updated": row["updated"] or 0, "inserted": row["inserted"] or 0}


# Written as SQL text: two round trips to the JVM each, where the Column API takes 10-20
# (spark/frames.py); they are built several times per statement.
ACTING_SQL = f"{OP} IN ({DELETE}, {UPDATE})"  # the row deletes or updates its target row
NEW_ROW_SQL = f"{OP} IN ({UPDATE}, {INSERT})"  # the row is written as a new row: an update's values, or an insert


def acting_rows(w: RowLevelWrite, condition: str, tagged: DataFrame | None = None) -> DataFrame:
    """`tagged` (by default the statement's tagged rows) where `condition` (SQL) holds, a condition true
    of every row that deletes or updates. An UPDATE or DELETE tags only the rows its WHERE selects,
    each with its one unconditional action: there every row holds, and the filter (one more
    analysis of the whole plan) is left out."""
    rows = w.tagged if tagged is None else tagged
    return rows if w.plan.source is None else rows.where(F.expr(condition))


def tagged_new_rows(w: RowLevelWrite) -> DataFrame:
    """The tagged rows written as new rows (an update's values, an insert): all of an UPDATE's
    (see `acting_rows`)."""
    return w.tagged if w.plan.source is None and w.writes_rows else w.tagged.where(new_row())


def acting() -> Column:
    return F.expr(ACTING_SQL)


def new_row() -> Column:
    return F.expr(NEW_ROW_SQL)


def matched(plan: RowLevelPlan) -> Column:
    return F.col(MATCHED_PAIR) if plan.source is not None else F.lit(False)


def changes_sql(w: RowLevelWrite, new_rows: bool = False) -> str:
    """SQL of the rows a write of changes takes: those that delete or update a target row, with
    `new_rows` those written as new rows too, and where MERGE checks cardinality its matched pairs
    (a target row in two of them fails the write)."""
    return " OR ".join([ACTING_SQL, *([NEW_ROW_SQL] if new_rows else []),
                        *([MATCHED_PAIR] if w.checks_cardinality else [])])


def op_count(op: int) -> Column:
    return F.expr(f"sum(CASE WHEN {OP} = {op} THEN 1 ELSE 0 END)")


def file_scoped_deletes(task: FileScanTask):
    """Position delete files that apply to this data file only (safe to drop or fold with it)."""
    return [d for d in task.deletes if d.data_file.content == FileContent.POSITION_DELETES
            and referenced_path(d.data_file) == task.file.file_path]

