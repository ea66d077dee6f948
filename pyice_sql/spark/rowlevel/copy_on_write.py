"""Copy-on-write: rewrite exactly the data files holding a changed row, plus the inserted rows.

One pass over the tagged rows names the files to rewrite and gives the result row's counts
(each changed position once) and whether some target row is in two matched pairs (the MERGE
cardinality check): counted in the tasks that tag the rows, their positions kept in bitmaps the
driver merges (FileChanges.java: one job, no shuffle), or by a Spark aggregate where the shim is
absent; then one write job copies the untouched rows of those files next to the updated and
inserted ones.

A MERGE (`RowLevelWrite.merge_rows`, see dml.py) rewrites by MergeRows again, in Iceberg Java's
shape (its runtime file filter, then ReplaceData): the count of changes reads the matched side of the join
only, without caching it (Spark prunes it to keys, positions and what the clauses test; a small
source is broadcast); then the files with a matched row are joined with the source once more
(read through the first pass's scan when they are all the planned files: dml.py), their target
rows kept, and everything but deleted rows is written: copies, updates and inserts
from one MergeRows, as one write job. With a NOT MATCHED clause that join shuffles both sides by
key, and its tasks, sized by adaptive execution, write the files: no rebalance, Java's three
jobs. Unless the source is small and deterministic and the target scan large, or the session's
shuffles have many partitions per core (join_type.broadcast_by_matched_sources): then the count
of changes also keeps the ids of the matched pairs' source rows (FileChanges.java), and the
second pass broadcasts the source, its unmatched rows the ones those ids leave out (a subquery
of the source's view, by the shim's `unmatched_sources` function: UnmatchedSources.java); without the
shim (Spark Connect), over a large target scan, the second pass finds them by an anti-join of
its own matched side's ids (dml.py). With the source broadcast, the target's rows stay in the
scan's tasks, which write them (data_writer's `read_straight`, as an UPDATE's below): no shuffle
of every copied row. A file with a
matched row but no changed one is read (its rows decide which source rows are NOT MATCHED) but
not rewritten. Both passes see the same pairs: the source is cached or local, and the plan
deterministic. On format v3 the second pass also carries the lineage columns the copies keep
(copy_on_write_v3.py). Any other MERGE rewrites by the changed rows, as above.

An UPDATE or DELETE whose condition can be evaluated twice (`RowLevelWrite.rewrite_rows`, see
dml.py) rewrites by predicate: the count of changes scans the target without caching the tagged rows,
and the write reads the files to rewrite once more, through the same scan (narrowed to them by
their ordinal, as a MERGE's second pass), and applies the statement to them (DELETE
keeps the rows its condition does not hold for, UPDATE assigns where it holds). There is no
join of the copies with the changed rows, and no cache of them to build and broadcast. The rows
of an unpartitioned table's files without deletes are written by the scan tasks that read them,
with no shuffle (Java clusters them by `_file` through one), so each file's rows stay together
and in order: a table clustered by a column stays so (data_writer's `read_straight`).
"""
from __future__ import annotations

import uuid
from typing import Callable

from pyspark.sql import Column, DataFrame, Observation, functions as F

from pyice_sql.core.model.manifest import DataFile
from pyice_sql.core.plan.nodes import DELETE, INSERT, UPDATE
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.spark.read.reader import read_tasks
from pyice_sql.spark.frames import aliased, jvm_column, select_sql
from pyice_sql.spark.local_relation import sql_literal
from pyice_sql.spark.observations import observe
from pyice_sql.spark.rowlevel.compile.merge_rows import FILE, FILE_ORDINAL, MATCHED_PAIR, OP, POS, SOURCE_ROW
from pyice_sql.spark.rowlevel.context import (
    ACTING_SQL, NotMatched, RowLevelWrite, Written, acting_rows, matched, new_row_counts, observed, op_count,
    tagged_new_rows,
)
from pyice_sql.spark.write.data_writer import quote, write_data_files


class CardinalityViolation(Exception):
    """Some target row is in more than one matched pair (the executor names them)."""


# writes the rewritten files: (write, files to rewrite) -> new data files
Rewrite = Callable[[RowLevelWrite, list[FileScanTask]], list[DataFile]]
# writes rows as data files: `write_data_files`' arguments (format v3: `write_with_lineage`'s)
WriteRows = Callable[..., list[DataFile]]


def write_copy_on_write(w: RowLevelWrite, rewrite: Rewrite | None = None,
                        write_rows: WriteRows = write_data_files) -> Written:
    per_file, not_matched = _changes_per_file(w)
    if w.checks_cardinality and any(r["pairs"] > 1 for r in per_file):
        raise CardinalityViolation()
    out = Written(updated=sum(r["updated"] for r in per_file), deleted=sum(r["deleted"] for r in per_file),
                  inserted=sum(r["inserted"] for r in per_file))
    if w.merge_rows is not None:
        return _merge_again(w, per_file, out, not_matched, write_rows)
    if out.updated + out.deleted + out.inserted == 0:
        return out
    by_path = w.by_path
    out.rewritten = [by_path[r["f"]] for r in per_file if r["f"] is not None and r["updated"] + r["deleted"] > 0]
    out.data_files = (rewrite or _rewrite)(w, out.rewritten)
    return out


def _merge_again(w: RowLevelWrite, per_file: list, out: Written, not_matched: NotMatched | None,
                 write_rows: WriteRows) -> Written:
    """MergeRows over the files with a matched or changed row (all of them when the MERGE inserts:
    their rows decide which source rows match), writing the rows of the files to rewrite and the
    inserted ones. `per_file` (from the matched side) counted the updates and deletes;
    `not_matched`, where it kept the matched pairs' source rows, tells the others."""
    by_path = w.by_path
    out.rewritten = [by_path[r["f"]] for r in per_file if r["updated"] + r["deleted"] > 0]
    inserts = w.plan.has_not_matched
    read = [by_path[r["f"]] for r in per_file if r["f"] is not None] if inserts else out.rewritten
    if not read and not inserts:
        return out
    rows = w.merge_rows(read, not_matched)
    kept = f"{OP} <> {DELETE}"
    if len(read) > len(out.rewritten):  # the copies of the files read for their inserts only are not written
        paths = ", ".join(sql_literal(t.file.file_path, "string") for t in out.rewritten)
        kept = f"{kept} AND {FILE} IN ({paths})" if paths else "false"
    # SQL text: the Column API's conditions are ~10 round trips per step on pyspark 4
    written = rows.where(F.expr(f"CASE WHEN {FILE} IS NULL THEN {OP} = {INSERT} ELSE {kept} END"))
    if inserts:
        counts = Observation(f"pyice_inserts_{uuid.uuid4().hex}")
        written = observe(written, counts, aliased(op_count(INSERT), "inserted"))
    # with a broadcast source the scan's tasks write the rows they read (no shuffle of every copied
    # row, each file's rows kept together); the unmatched source rows come in tasks of their own
    straight = read_straight(read) if w.merged_as_read else []
    out.data_files = write_rows(w.checked_rows(written), w.write, rebalance=not (w.merged_by_key or straight),
                                read_straight=straight)
    if inserts:
        out.inserted = observed(counts, lambda: new_row_counts(rows)).get("inserted") or 0
    return out


def changed_rows(w: RowLevelWrite) -> DataFrame:
    """The (`_file`, `_pos`) of every target row an action changed: not copied by the rewrite."""
    return select_sql(acting_rows(w, ACTING_SQL), [f"{FILE} AS _file", f"{POS} AS _pos"])


def _rewrite(w: RowLevelWrite, rewritten: list[FileScanTask]) -> list[DataFile]:
    if w.rewrite_rows is not None:
        rows = w.rewrite_rows(rewritten)
        straight = read_straight(rewritten)
        return write_data_files(w.checked_rows(rows), w.write, rebalance=not straight, read_straight=straight)
    copies = (read_tasks(w.spark, w.schema, rewritten, with_metadata=True)
              .join(changed_rows(w), ["_file", "_pos"], "left_anti")
              .select(*[quote(f.name) for f in w.schema.fields]))
    new_rows = select_sql(w.checked_rows(tagged_new_rows(w)), [quote(f.name) for f in w.schema.fields])
    return write_data_files(new_rows.unionByName(copies), w.write, rebalance=True)


def read_straight(rewritten: list[FileScanTask]) -> list[DataFile]:
    """`rewritten`'s data files when the rows read from them come straight from their scan, no
    deletes applied (else none): the tasks that read them can then write them
    (`write_data_files`' `read_straight`)."""
    return [] if any(t.deletes for t in rewritten) else [t.file for t in rewritten]


def _changes_per_file(w: RowLevelWrite) -> tuple[list[dict], NotMatched | None]:
    """Per target data file `f` (None: inserted rows): rows updated, positions deleted, rows
    inserted, and the most matched pairs of one of its rows (counted up to 2: more than one is
    all the cardinality check asks). Counted in the tasks that tag the rows where they carry their
    file's ordinal (FileChanges.java: no shuffle, one job); else by a Spark aggregate. With
    `w.matched_sources`, also the test of the source rows no pair matched (FileChanges keeps the
    others' ids); else None."""
    changes = ACTING_SQL if w.plan.source is None else f"{ACTING_SQL} OR {MATCHED_PAIR} OR {OP} = {INSERT}"
    rows = w.tagged.where(changes)
    if w.file_ordinals:
        from pyice_sql.spark.jvm.bridge import load_shim

        paired = "false" if w.plan.source is None else f"coalesce({MATCHED_PAIR}, false)"
        acts = [f"coalesce({OP} = {op}, false)" for op in (UPDATE, DELETE, INSERT)]
        facts = select_sql(rows, [FILE_ORDINAL, POS, *acts, paired, *([SOURCE_ROW] if w.matched_sources else [])])
        shim = load_shim(w.spark)
        not_matched: NotMatched | None = None
        if w.matched_sources:
            found, changes = shim.file_changes_matching(facts._jdf)

            def unmatched(source_row: str) -> str | Column:
                return (shim.unmatched_sources(changes, source_row)
                        or jvm_column(shim.unmatched_sources_column(changes, F.col(source_row)._jc)))
            not_matched = unmatched
        else:
            found = shim.file_changes(facts._jdf)
        paths = [t.file.file_path for t in w.tasks]
        return [{"f": None if o is None else paths[o], "updated": u, "deleted": d, "inserted": i, "pairs": p}
                for o, u, d, i, p in found], not_matched
    if w.plan.source is None:  # UPDATE / DELETE: each target row once, no pairs
        per_file = (rows.groupBy(F.col(FILE).alias("f"))
                    .agg(op_count(UPDATE).alias("updated"), op_count(DELETE).alias("deleted"),
                         F.lit(0).alias("inserted"), F.lit(0).alias("pairs")))
        return [r.asDict() for r in per_file.collect()], None
    one = F.lit(1)
    if w.merge_rows is not None:
        # the matched side only, every row in a file: rows grouped by file are grouped by position
        # too, so one shuffle serves both aggregates (one Spark job fewer)
        rows = rows.repartition(FILE)
    per_row = (rows.groupBy(FILE, POS)
               .agg(F.count(F.when(matched(w.plan), one)).alias("pairs"),
                    F.max(F.when(F.col(OP) == UPDATE, 1).otherwise(0)).alias("updated"),
                    F.max(F.when(F.col(OP) == DELETE, 1).otherwise(0)).alias("deleted"),
                    op_count(INSERT).alias("inserted")))
    per_file = (per_row.groupBy(F.col(FILE).alias("f"))
                .agg(F.sum("updated").alias("updated"), F.sum("deleted").alias("deleted"),
                     F.sum("inserted").alias("inserted"), F.max("pairs").alias("pairs")))
    return [r.asDict() for r in per_file.collect()], None
