"""Deletion vectors for merge-on-read DELETE / UPDATE / MERGE on format v3 tables.

A v3 table gains no new position-delete files: each touched data file gets ONE deletion vector
(DV) holding every position deleted in it so far, because readers apply at most one DV per data
file and then ignore the position deletes it replaced (spec, "Deletion Vectors"). So, as
Iceberg Java's BaseDVFileWriter does, a file's new DV is the union of
  - the positions this statement deletes,
  - the file's previous DV, if any, and
  - every position-delete file that applies to it (v2 leftovers of an upgraded table, file- or
    partition-scoped),
and the commit removes the previous DV and the file-scoped position-delete files (a
partition-scoped one may still serve other data files; readers skip it for this file).

The positions are gathered and each DV is serialized (`core.format.deletion_vector`, pure
Python) on the executors, grouped by data file; the driver receives the compact blobs and
writes them as one Puffin file for the statement (`<task>-0-<operation id>-00001-deletes.puffin`
in the data folder, as Java names its DV files), then describes one delete-file entry per DV:
content POSITION_DELETES, format PUFFIN, the data file's spec and partition,
`referenced_data_file`, the blob's `content_offset` / `content_size_in_bytes`, and the DV's
cardinality as record_count.
"""
from __future__ import annotations

import functools

from pyspark.sql import DataFrame, SparkSession, functions as F, types as T

from pyice_sql.core.format.deletion_vector import (
    BLOB_TYPE, CARDINALITY, REFERENCED_DATA_FILE, ROW_POSITION_FIELD_ID, serialize_positions,
)
from pyice_sql.core.format.locations import file_name, new_file_location, new_operation_id
from pyice_sql.core.format.puffin import Blob, write_puffin
from pyice_sql.core.model.manifest import DataFile, FileContent, ManifestEntry
from pyice_sql.core.scan.delete_index import referenced_path
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.spark.read.deletion_vectors import PUFFIN, is_deletion_vector, read_deletion_vector_rows
from pyice_sql.spark.read.reader import FILE_COL, POS_COL, read_position_deletes
from pyice_sql.spark.write.data_writer import WriteContext

_CREATED_BY = "pyice_sql"


def _serialize(positions: list[int]) -> bytes:
    """Runs in the executors: one data file's deleted positions as a `deletion-vector-v1` blob."""
    return serialize_positions(positions)


def write_deletion_vectors(spark: SparkSession, positions: DataFrame, touched: list[FileScanTask],
                           ctx: WriteContext) -> tuple[list[DataFile], list[ManifestEntry]]:
    """One DV per touched data file, merged with its previous deletes, in one new Puffin file.

    `positions`: the statement's deleted rows as `_file` (the manifest's data file path) and
    `_pos`. Returns the new DV entries and the delete-file entries they replace (to remove).
    """
    if not touched:
        return [], []
    previous = {(d.data_file.file_path, d.data_file.content_offset): d for t in touched for d in t.deletes
                if d.data_file.content == FileContent.POSITION_DELETES}
    frames = [positions.select(FILE_COL, F.col(POS_COL).cast("long"))]
    dvs = [d.data_file for d in previous.values() if is_deletion_vector(d.data_file)]
    files = [d.data_file for d in previous.values() if not is_deletion_vector(d.data_file)]
    if dvs:
        frames.append(read_deletion_vector_rows(spark, dvs))
    if files:
        frames.append(read_position_deletes(spark, files))
    targets = {t.file.file_path: t.file for t in touched}
    wanted = spark.createDataFrame([(p,) for p in targets], T.StructType([T.StructField(FILE_COL, T.StringType())]))
    rows = functools.reduce(DataFrame.unionByName, frames).join(F.broadcast(wanted), FILE_COL)
    grouped = rows.groupBy(FILE_COL).agg(F.collect_set(POS_COL).alias("positions"))
    blobs = sorted((r[FILE_COL], bytes(r["blob"]), r["cardinality"]) for r in grouped.select(
        FILE_COL, F.udf(_serialize, T.BinaryType())("positions").alias("blob"),
        F.size("positions").alias("cardinality")).collect())
    if not blobs:
        return [], []
    content, written = write_puffin(
        [Blob(BLOB_TYPE, (ROW_POSITION_FIELD_ID,), blob, {REFERENCED_DATA_FILE: target, CARDINALITY: str(card)})
         for target, blob, card in blobs], {"created-by": _CREATED_BY})
    name = file_name(0, 0, new_operation_id(deletes=True), 1, deletes=True, extension=PUFFIN.lower())
    path = new_file_location(ctx.location, ctx.properties, "", name)
    ctx.io.write_new(path, content)
    out = [DataFile(content=FileContent.POSITION_DELETES, file_path=path, file_format=PUFFIN,
                    partition=targets[target].partition, spec_id=targets[target].spec_id, record_count=card,
                    file_size_in_bytes=len(content), referenced_data_file=target, content_offset=meta.offset,
                    content_size_in_bytes=meta.length)
           for (target, _, card), meta in zip(blobs, written)]
    touched_paths = {target for target, _, _ in blobs}
    replaced = [d for d in previous.values() if referenced_path(d.data_file) in touched_paths]
    return out, replaced
