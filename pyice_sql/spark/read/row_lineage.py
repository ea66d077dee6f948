"""Row lineage on read: the `_row_id` and `_last_updated_sequence_number` metadata columns.

They are added to a scan only when a query names them (like Iceberg's `_file` / `_pos`, they are
not table columns, so `SELECT *` must not show them). Each data file is read with the two
columns' reserved field ids, so values a writer stored in the file (an updated row keeps its
`_row_id`) win; where a value is null or the file lacks the column, the spec's inheritance fills
it from per-file facts the scan already looks up: `first_row_id + _pos` and the
file's data sequence number (see `core.model.row_lineage`).
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from pyice_sql.core.model.row_lineage import LAST_UPDATED_SEQUENCE_NUMBER, LINEAGE_FIELDS, ROW_ID
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.core.sql.dialect import quote_identifier as quote
from pyice_sql.spark.frames import select_sql


def read_with_lineage(spark: SparkSession, schema: Schema, tasks: list[FileScanTask],
                      with_metadata: bool = False, live_flag: str | None = None, file_ordinal: bool = False,
                      row_filter: str | None = None) -> DataFrame:
    """`read_tasks` (same columns, deletes, `live_flag`, `file_ordinal` and `row_filter`) plus
    `_row_id` and `_last_updated_sequence_number`. The projection is SQL text (spark/frames.py):
    built as Columns it took ~90 round trips to the JVM on the benchmark's table, ~50 ms of a
    v3 statement's driver time before its first job."""
    from pyice_sql.spark.read.reader import (
        FILE_ORDINAL_COL, FIRST_ROW_ID_COL, METADATA_COLUMNS, POS_COL, SEQ_COL, read_tasks,
    )

    lineage_schema = Schema(schema.fields + LINEAGE_FIELDS, schema.schema_id, schema.identifier_field_ids)
    rows = read_tasks(spark, lineage_schema, tasks, file_facts=True, live_flag=live_flag, file_ordinal=file_ordinal,
                      row_filter=row_filter)
    row_id, seq, first_row_id = quote(ROW_ID.name), quote(LAST_UPDATED_SEQUENCE_NUMBER.name), quote(FIRST_ROW_ID_COL)
    # Iceberg Java leaves both null for a file without a first_row_id (added before the v3 upgrade)
    lineage = [f"coalesce({row_id}, {first_row_id} + {quote(POS_COL)}) AS {row_id}",
               f"coalesce({seq}, CASE WHEN {first_row_id} IS NOT NULL THEN {quote(SEQ_COL)} END) AS {seq}"]
    rest = [*(METADATA_COLUMNS if with_metadata else ()), *([FILE_ORDINAL_COL] if file_ordinal else ()),
            *([live_flag] if live_flag else ())]
    return select_sql(rows, [*(quote(f.name) for f in schema.fields), *lineage, *map(quote, rest)])
