"""Merge-on-read on format v3 tables: deletion vectors for the changed rows, data files carrying
the updated rows' `_row_id` for the new ones.

The v2 write (merge_on_read.py) checks cardinality and drops a position changed twice inside the
position-delete write; a deletion vector is a set, so here the same window runs over the changed
positions before spark/write/dv_writer.py merges them with each file's previous deletes. Updated
rows keep their identity (spark/write/lineage_columns.py). Counts are Spark observations.
"""
from __future__ import annotations

import uuid

from pyspark.sql import Observation, Window, functions as F

from pyice_sql.core.plan.nodes import DELETE, INSERT, UPDATE
from pyice_sql.spark.rowlevel.compile.merge_rows import FILE, OP, POS
from pyice_sql.spark.rowlevel.context import (
    RowLevelWrite, Written, acting, deleted_count, matched, new_row_counts, observed, op_count,
)
from pyice_sql.spark.rowlevel.merge_on_read import OLD, per_file
from pyice_sql.spark.write.dv_writer import write_deletion_vectors
from pyice_sql.spark.write.lineage_columns import carry_row_ids, write_with_lineage


def write_merge_on_read_v3(w: RowLevelWrite) -> Written:
    check = w.checks_cardinality
    rows = w.tagged.where(acting() | matched(w.plan) if check else acting()).select(
        F.col(FILE).alias("_file"), F.col(POS).alias("_pos"), F.col(OP), F.lit(False).alias(OLD))
    deletes = Observation(f"pyice_deletes_{uuid.uuid4().hex}")
    positions = per_file(rows, Window.partitionBy("_file").orderBy("_pos"), check, folding=False).observe(
        deletes, op_count(DELETE).alias("deleted"))
    delete_files, replaced = write_deletion_vectors(w.spark, positions.select("_file", "_pos"), list(w.tasks), w.write)
    # no delete file written means no position deleted (and Spark may have reported nothing)
    deleted = (observed(deletes, lambda: deleted_count(w.tagged)).get("deleted") or 0) if delete_files else 0
    inserts = Observation(f"pyice_inserts_{uuid.uuid4().hex}")
    new_rows = carry_row_ids(w.spark, w.schema, w.tagged.where(F.col(OP).isin(UPDATE, INSERT)).observe(
        inserts, op_count(UPDATE).alias("updated"), op_count(INSERT).alias("inserted")), FILE, POS, list(w.tasks))
    data_files = write_with_lineage(w.table_rows(new_rows), w.write)
    counted = observed(inserts, lambda: new_row_counts(w.tagged)) if data_files else {}
    return Written(updated=counted.get("updated") or 0, deleted=deleted, inserted=counted.get("inserted") or 0,
                   data_files=data_files, delete_files=delete_files, folded=replaced,
                   referenced=list(dict.fromkeys(d.referenced_data_file for d in delete_files)))
