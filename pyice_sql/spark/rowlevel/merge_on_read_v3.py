"""Merge-on-read on format v3 tables: deletion vectors for the changed rows, data files carrying
the updated rows' `_row_id` for the new ones (spark/write/lineage_columns.py).

Where the JVM shim is loaded, the v2 write's shape (merge_on_read.py) with each data file's DV
serialized by the task that holds its rows, in place of a delete file: an UPDATE or a MERGE over a
small source in one job, a DELETE in the scan's tasks; the driver writes the blobs as one Puffin
file. Otherwise (Spark Connect, speculative execution) the tagged rows are cached and
spark/write/dv_writer.py groups each file's positions with its previous deletes through a shuffle
(a DV is a set: that grouping drops a position changed twice and checks cardinality), then the
new rows are written. Counts there come from the DV write and a Spark observation.
"""
from __future__ import annotations

from pyspark.sql import functions as F

from pyice_sql.core.plan.nodes import DELETE
from pyice_sql.spark.frames import select_sql
from pyice_sql.spark.rowlevel.compile.merge_rows import FILE, OP, POS, ROW_ID
from pyice_sql.spark.rowlevel.context import (
    CARDINALITY_MARKER, RowLevelWrite, Written, acting, acting_rows, changes_sql, counting_new_rows, write_new_rows,
)
from pyice_sql.spark.rowlevel.merge_on_read import write_deletion_vectors_in_tasks
from pyice_sql.spark.write.dv_writer import Changes, write_deletion_vectors
from pyice_sql.spark.write.lineage_columns import with_row_ids, write_with_lineage


def write_merge_on_read_v3(w: RowLevelWrite) -> Written:
    in_tasks = write_deletion_vectors_in_tasks(w)
    if in_tasks is not None:
        return in_tasks
    check = w.checks_cardinality
    if w.writes_rows:  # the deletion vector write, then the data write
        w.read_twice(w.tagged)
    tagged, counts = counting_new_rows(w)
    rows = select_sql(acting_rows(w, changes_sql(w), tagged), [f"{FILE} AS _file", f"{POS} AS _pos", OP])
    changes = Changes(rows, F.col(OP) == DELETE, acting(),
                      f"{CARDINALITY_MARKER}: a target row matched more than one source row" if check else None)
    delete_files, replaced, deleted = write_deletion_vectors(w.spark, changes, list(w.tasks), w.write)
    data_files, counted = write_new_rows(
        w, lambda rows, n: write_with_lineage(w.checked_rows(with_row_ids(rows, ROW_ID)), w.write, known_rows=n),
        counts if delete_files else None)
    return Written(updated=counted.get("updated") or 0, deleted=deleted, inserted=counted.get("inserted") or 0,
                   data_files=data_files, delete_files=delete_files, folded=replaced,
                   referenced=list(dict.fromkeys(d.referenced_data_file for d in delete_files)))
