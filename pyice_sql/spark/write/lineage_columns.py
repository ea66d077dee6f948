"""Row lineage through merge-on-read UPDATE / MERGE on format v3: updated rows keep their `_row_id`.

An updated row is written to a new data file while a deletion vector hides its old copy. The
spec (and Iceberg Java) keep its identity: the new file stores the row's existing `_row_id` in
the reserved column (field id 2147483540) and a null `_last_updated_sequence_number` (field id
2147483539), so readers give it the commit's sequence number. Inserted rows store null for
both and inherit a fresh id from the file's `first_row_id` plus their position.

The old row id comes with the target row the update replaces: the statement's target scan reads
it (spark/read/row_lineage.py: stored value, else `first_row_id + _pos`) and MergeRows carries it
as `__row_id` (null for inserted rows). Metrics of the two reserved columns are not recorded in
the manifest: they are not table columns, so no scan filter can use them.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from pyspark.sql import DataFrame, functions as F

from pyice_sql.core.model.manifest import DataFile
from pyice_sql.core.model.row_lineage import LAST_UPDATED_SEQUENCE_NUMBER, LINEAGE_FIELDS, ROW_ID
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.sql.dialect import quote_identifier as quote
from pyice_sql.spark.schema import frame_schema
from pyice_sql.spark.write.data_writer import WriteContext, write_data_files

_LINEAGE_IDS = frozenset(f.field_id for f in LINEAGE_FIELDS)


def new_row_lineage(carried: str | None) -> dict[str, str]:
    """The lineage columns of a row-level write's new rows, as SQL over its tagged rows by name:
    `_row_id` from the column `carried` (that of the target row an update replaces, null for an
    inserted row; None when the statement updates nothing) and a null
    `_last_updated_sequence_number`."""
    return {ROW_ID.name: f"CAST({quote(carried)} AS BIGINT)" if carried else "CAST(NULL AS BIGINT)",
            LAST_UPDATED_SEQUENCE_NUMBER.name: "CAST(NULL AS BIGINT)"}


def with_row_ids(rows: DataFrame, carried: str) -> DataFrame:
    """Tagged `rows` plus their `new_row_lineage` (`carried` may be absent from them)."""
    lineage = new_row_lineage(carried if carried in frame_schema(rows).names else None)
    return rows.withColumns({name: F.expr(sql) for name, sql in lineage.items()})  # one analysis, not two


def write_with_lineage(rows: DataFrame, ctx: WriteContext, rebalance: bool = True,
                       known_rows: int | None = None, in_place: bool = False,
                       read_straight: Sequence[DataFile] = ()) -> list[DataFile]:
    """Write `rows` (the table's columns plus the two lineage columns) as data files
    (`rebalance`, `known_rows`, `in_place` and `read_straight` as `write_data_files`; row-level
    writes want a rebalance or their files' layout, a compaction has its own)."""
    schema = Schema(ctx.schema.fields + LINEAGE_FIELDS, ctx.schema.schema_id, ctx.schema.identifier_field_ids)
    files = write_data_files(rows, replace(ctx, schema=schema), rebalance=rebalance, known_rows=known_rows,
                             in_place=in_place, read_straight=read_straight)
    return [replace(f, **{name: _without_lineage(getattr(f, name)) for name in (
        "column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds", "upper_bounds")})
        for f in files]


def _without_lineage(metrics: dict[int, object] | None) -> dict[int, object] | None:
    return None if metrics is None else {k: v for k, v in metrics.items() if k not in _LINEAGE_IDS}
