"""Row lineage on read: the `_row_id` and `_last_updated_sequence_number` metadata columns.

They are added to a scan only when a query names them (like Iceberg's `_file` / `_pos`, they are
not table columns, so `SELECT *` must not show them). Each data file is read with the two
columns' reserved field ids, so values a writer stored in the file (an updated row keeps its
`_row_id`) win; where a value is null or the file lacks the column, the spec's inheritance fills
it from a small broadcast table of per-file facts: `first_row_id + _pos` and the file's data
sequence number (see `core.model.row_lineage`).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, functions as F, types as T

from pyice_sql.core.model.row_lineage import LAST_UPDATED_SEQUENCE_NUMBER, LINEAGE_FIELDS, ROW_ID
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.scan.planner import FileScanTask

_FIRST_ROW_ID, _DATA_SEQ = "__first_row_id", "__data_seq"


def read_with_lineage(spark: SparkSession, schema: Schema, tasks: list[FileScanTask],
                      with_metadata: bool = False) -> DataFrame:
    """`read_tasks` (same columns and deletes) plus `_row_id` and `_last_updated_sequence_number`."""
    from pyice_sql.spark.read.reader import FILE_COL, METADATA_COLUMNS, POS_COL, read_tasks

    lineage_schema = Schema(schema.fields + LINEAGE_FIELDS, schema.schema_id, schema.identifier_field_ids)
    rows = read_tasks(spark, lineage_schema, tasks, with_metadata=True)
    files = spark.createDataFrame(
        [(t.file.file_path, t.file.first_row_id, t.data_sequence_number) for t in tasks],
        T.StructType([T.StructField(FILE_COL, T.StringType()), T.StructField(_FIRST_ROW_ID, T.LongType()),
                      T.StructField(_DATA_SEQ, T.LongType())]))
    rows = rows.join(F.broadcast(files), FILE_COL)
    row_id = F.coalesce(F.col(ROW_ID.name), F.col(_FIRST_ROW_ID) + F.col(POS_COL)).alias(ROW_ID.name)
    # Iceberg Java leaves both null for a file without a first_row_id (added before the v3 upgrade)
    inherited_seq = F.when(F.col(_FIRST_ROW_ID).isNotNull(), F.col(_DATA_SEQ))
    seq = F.coalesce(F.col(LAST_UPDATED_SEQUENCE_NUMBER.name), inherited_seq).alias(
        LAST_UPDATED_SEQUENCE_NUMBER.name)
    columns = [F.col("`" + f.name.replace("`", "``") + "`") for f in schema.fields]
    return rows.select(*columns, row_id, seq, *(METADATA_COLUMNS if with_metadata else ()))
