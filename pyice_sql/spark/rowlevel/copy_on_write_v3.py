"""Copy-on-write on format v3 tables: rewritten files keep every surviving row's lineage.

As Iceberg Java (1.10) does, and as the spec's "Row Lineage" requires of a writer that moves rows:
  - a copied row (untouched, in a rewritten file) keeps its `_row_id` AND its
    `_last_updated_sequence_number`, both stored explicitly in the new file;
  - an updated row keeps its `_row_id` and stores a null sequence number, so it reads the
    commit's sequence number (spark/write/lineage_columns.py, shared with merge-on-read);
  - an inserted row stores null for both and gets a fresh id from the new file's first_row_id.
A MERGE that rewrites by MergeRows again (copy_on_write.py) reads the lineage with the target's
rows and its second pass stores them so (compile/merge_rows.py `tagged_select`, `lineage`); an
UPDATE or DELETE by predicate keeps or resets them in its SQL; any other statement joins the
files' rows with the changed ones. Deletion vectors of the rewritten files are removed by the
commit with the files (rowlevel/dml.py `_removed_files`), as Java's rewrite does.
"""
from __future__ import annotations

from pyice_sql.core.model.manifest import DataFile
from pyice_sql.core.model.row_lineage import LINEAGE_COLUMNS
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.spark.read.reader import FILE_COL, POS_COL
from pyice_sql.spark.read.row_lineage import read_with_lineage
from pyice_sql.spark.frames import select_sql
from pyice_sql.spark.rowlevel.compile.merge_rows import ROW_ID
from pyice_sql.spark.rowlevel.context import RowLevelWrite, Written, tagged_new_rows
from pyice_sql.spark.rowlevel.copy_on_write import changed_rows, read_straight, write_copy_on_write
from pyice_sql.spark.write.data_writer import quote
from pyice_sql.spark.schema import frame_schema
from pyice_sql.spark.write.lineage_columns import new_row_lineage, write_with_lineage


def write_copy_on_write_v3(w: RowLevelWrite) -> Written:
    return write_copy_on_write(w, _rewrite_with_lineage, write_with_lineage)


def _rewrite_with_lineage(w: RowLevelWrite, rewritten: list[FileScanTask]) -> list[DataFile]:
    if w.rewrite_rows is not None:  # by predicate: the SQL keeps or resets each row's lineage
        rows = w.rewrite_rows(rewritten)  # read with their lineage
        straight = read_straight(rewritten)
        return write_with_lineage(w.checked_rows(rows), w.write, rebalance=not straight, read_straight=straight)
    copies = (read_with_lineage(w.spark, w.schema, rewritten, with_metadata=True)
              .join(changed_rows(w), [FILE_COL, POS_COL], "left_anti")
              .select(*[quote(f.name) for f in w.schema.fields], *LINEAGE_COLUMNS))
    new_rows = tagged_new_rows(w)
    lineage = new_row_lineage(ROW_ID if ROW_ID in frame_schema(new_rows).names else None)
    new_rows = select_sql(w.checked_rows(new_rows), [*(quote(f.name) for f in w.schema.fields),
                                                     *(f"{sql} AS {quote(n)}" for n, sql in lineage.items())])
    return write_with_lineage(new_rows.unionByName(copies), w.write)
