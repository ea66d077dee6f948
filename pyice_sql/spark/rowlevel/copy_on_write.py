"""Copy-on-write: rewrite exactly the data files holding a changed row, plus the inserted rows.

One aggregate over the tagged rows names the files to rewrite and gives the result row's
counts (each changed position once) and whether some target row is in two matched pairs (the
MERGE cardinality check); then one write job copies the untouched rows of those files next to
the updated and inserted ones.

An UPDATE or DELETE whose condition can be evaluated twice (`RowLevelWrite.rewrite_rows`, see
dml.py) rewrites by predicate: the aggregate scans the target without caching the tagged rows,
and the write reads the files to rewrite once more and applies the statement to them (DELETE
keeps the rows its condition does not hold for, UPDATE assigns where it holds). There is no
join of the copies with the changed rows, and no cache of them to build and broadcast.
"""
from __future__ import annotations

from typing import Callable

from pyspark.sql import DataFrame, functions as F

from pyice_sql.core.model.manifest import DataFile
from pyice_sql.core.plan.nodes import DELETE, INSERT, UPDATE
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.spark.read.reader import read_tasks
from pyice_sql.spark.rowlevel.compile.merge_rows import FILE, OP, POS
from pyice_sql.spark.rowlevel.context import RowLevelWrite, Written, acting, matched, op_count
from pyice_sql.spark.write.data_writer import quote, write_data_files


class CardinalityViolation(Exception):
    """Some target row is in more than one matched pair (the executor names them)."""


# writes the rewritten files: (write, files to rewrite) -> new data files
Rewrite = Callable[[RowLevelWrite, list[FileScanTask]], list[DataFile]]


def write_copy_on_write(w: RowLevelWrite, rewrite: Rewrite | None = None) -> Written:
    per_file = _changes_per_file(w).collect()
    if w.checks_cardinality and any(r["pairs"] > 1 for r in per_file):
        raise CardinalityViolation()
    out = Written(updated=sum(r["updated"] for r in per_file), deleted=sum(r["deleted"] for r in per_file),
                  inserted=sum(r["inserted"] for r in per_file))
    if out.updated + out.deleted + out.inserted == 0:
        return out
    by_path = w.by_path
    out.rewritten = [by_path[r["f"]] for r in per_file if r["f"] is not None and r["updated"] + r["deleted"] > 0]
    out.data_files = (rewrite or _rewrite)(w, out.rewritten)
    return out


def changed_rows(w: RowLevelWrite) -> DataFrame:
    """The (`_file`, `_pos`) of every target row an action changed: not copied by the rewrite."""
    return w.tagged.where(acting()).select(F.col(FILE).alias("_file"), F.col(POS).alias("_pos"))


def _rewrite(w: RowLevelWrite, rewritten: list[FileScanTask]) -> list[DataFile]:
    if w.rewrite_rows is not None:
        rows = w.rewrite_rows(read_tasks(w.spark, w.schema, rewritten))
        return write_data_files(w.table_rows(rows), w.write, rebalance=True)
    copies = (read_tasks(w.spark, w.schema, rewritten, with_metadata=True)
              .join(changed_rows(w), ["_file", "_pos"], "left_anti")
              .select(*[quote(f.name) for f in w.schema.fields]))
    new_rows = w.table_rows(w.tagged.where(F.col(OP).isin(UPDATE, INSERT)))
    return write_data_files(new_rows.unionByName(copies), w.write, rebalance=True)


def _changes_per_file(w: RowLevelWrite) -> DataFrame:
    """Per target data file (NULL: inserted rows): rows updated, positions deleted, rows
    inserted, and the most matched pairs of one of its rows."""
    if w.plan.source is None:  # UPDATE / DELETE: each target row once, no pairs
        return (w.tagged.where(acting()).groupBy(F.col(FILE).alias("f"))
                .agg(op_count(UPDATE).alias("updated"), op_count(DELETE).alias("deleted"),
                     F.lit(0).alias("inserted"), F.lit(0).alias("pairs")))
    one = F.lit(1)
    per_row = (w.tagged.where(acting() | matched(w.plan) | (F.col(OP) == INSERT))
               .groupBy(FILE, POS)
               .agg(F.count(F.when(matched(w.plan), one)).alias("pairs"),
                    F.max(F.when(F.col(OP) == UPDATE, 1).otherwise(0)).alias("updated"),
                    F.max(F.when(F.col(OP) == DELETE, 1).otherwise(0)).alias("deleted"),
                    op_count(INSERT).alias("inserted")))
    return (per_row.groupBy(F.col(FILE).alias("f"))
            .agg(F.sum("updated").alias("updated"), F.sum("deleted").alias("deleted"),
                 F.sum("inserted").alias("inserted"), F.max("pairs").alias("pairs")))
