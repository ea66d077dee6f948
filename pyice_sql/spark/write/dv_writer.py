"""Deletion vectors for merge-on-read DELETE / UPDATE / MERGE on format v3 tables.

A v3 table gains no new position-delete files: each data file the statement deletes rows from
gets ONE deletion vector (DV) holding every position deleted in it so far, because readers apply
at most one DV per data file and then ignore the position deletes it replaced (spec, "Deletion
Vectors"). So, as Iceberg Java's BaseDVFileWriter does, a file's new DV is the union of
  - the positions this statement deletes,
  - the file's previous DV, if any, and
  - every position-delete file that applies to it (v2 leftovers of an upgraded table, file- or
    partition-scoped),
and the commit removes the previous DV and the file-scoped position-delete files (a
partition-scoped one may still serve other data files; readers skip it for this file). A file
the statement read but deletes nothing from keeps its DV: rewriting it would widen the commit's
conflict scope to rows the statement never touched.

One Spark job (one shuffle by data file) does it all: the statement's changed positions are
grouped per (file, position), which drops a position changed twice and, when MERGE must check
cardinality, fails the job on a target row in two matched pairs; then per file, the files with
a new position get the previous deletes folded in (read in that task, for that file only, by the
JVM shim's `deleted_positions`; without the shim, the previous delete rows of every file read
join the shuffle and the grouping) and their DV serialized on the
executors (`pyice_dv_serialize`: the JVM shim, or a Python UDF on Spark Connect). The driver
receives the compact blobs and writes them as one Puffin file for the statement
(`<task>-0-<operation id>-00001-deletes.puffin` in the data folder, as Java names its DV files),
then describes one delete-file entry per DV: content POSITION_DELETES, format PUFFIN, the data
file's spec and partition, `referenced_data_file`, the blob's `content_offset` /
`content_size_in_bytes`, and the DV's cardinality as record_count.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, functions as F, types as T

from pyice_sql.core.format.deletion_vector import BLOB_TYPE, CARDINALITY, REFERENCED_DATA_FILE, ROW_POSITION_FIELD_ID
from pyice_sql.core.format.locations import file_name, new_file_location, new_operation_id
from pyice_sql.core.format.puffin import Blob, write_puffin
from pyice_sql.core.model.manifest import DataFile, FileContent, ManifestEntry
from pyice_sql.core.scan.delete_index import referenced_path
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.spark.local_relation import local_rows
from pyice_sql.spark.read.file_keys import deleted_positions
from pyice_sql.spark.read.deletion_vectors import PUFFIN, SERIALIZE_SQL, is_deletion_vector, read_deletion_vector_rows
from pyice_sql.spark.read.reader import FILE_COL, POS_COL, read_position_deletes
from pyice_sql.spark.write.data_writer import WriteContext

_CREATED_BY = "pyice_sql"
_NEW, _DELETED, _ACTED, _OLD = "__new", "__deleted", "__acted", "__old"


@dataclass(frozen=True)
class Changes:
    """The statement's changed target rows as `_file` (the manifest's data file path) and `_pos`,
    with `deleted` true for a row the statement deletes outright (not an update) and `acting`
    true for a row it deletes or updates. Rows neither deleted nor acting (a MERGE's matched pairs
    whose clause does nothing) only take part in the cardinality check."""

    rows: DataFrame
    deleted: Column
    acting: Column
    cardinality_error: str | None  # fail the job with this message on a position changed twice


def write_deletion_vectors(spark: SparkSession, changes: Changes | None, touched: list[FileScanTask],
                           ctx: WriteContext) -> tuple[list[DataFile], list[ManifestEntry], int]:
    """One DV per data file with a newly deleted position, merged with its previous deletes, in
    one new Puffin file; with no `changes` (a compaction of deletes), one DV per file of `touched`
    that has previous deletes. Returns the new DV entries, the delete-file entries they replace
    (to remove), and the number of rows the statement deletes outright (each position once)."""
    if not touched:
        return [], [], 0
    previous = {(d.data_file.file_path, d.data_file.content_offset): d for t in touched for d in t.deletes
                if d.data_file.content == FileContent.POSITION_DELETES}
    # a statement's DVs fold the previous deletes of the files it changes, read in the write tasks for
    # those files only (the JVM shim); otherwise those of every file read join the shuffle
    folding = None
    if changes is not None and previous:
        folding = deleted_positions(spark, {t.file.file_path: t.deletes for t in touched if t.deletes})
    read = [d.data_file for d in previous.values()] if folding is None else []
    dvs = [f for f in read if is_deletion_vector(f)]
    files = [f for f in read if not is_deletion_vector(f)]
    frames = ([read_deletion_vector_rows(spark, dvs)] if dvs else []) + (
        [read_position_deletes(spark, files)] if files else [])
    frames = [old.select(FILE_COL, POS_COL, F.lit(False).alias(_DELETED), F.lit(False).alias(_ACTED),
                         F.lit(False).alias(_NEW)) for old in frames]
    if changes is not None:
        frames.insert(0, changes.rows.select(FILE_COL, F.col(POS_COL).cast("long"), changes.deleted.alias(_DELETED),
                                             changes.acting.alias(_ACTED), F.lit(True).alias(_NEW)))
    if not frames:
        return [], [], 0
    rows = functools.reduce(DataFrame.unionByName, frames)
    if changes is None:  # a partition-scoped delete file also names files outside `touched`
        wanted = local_rows(spark, [(t.file.file_path,) for t in touched], T.StructType(
            [T.StructField(FILE_COL, T.StringType())]))
        rows = rows.join(F.broadcast(wanted), FILE_COL)
    positions = _positions_per_file(rows, changes.cardinality_error if changes else None, changes is not None)
    if folding is not None:  # disjoint: the statement changed live rows only
        positions = positions.withColumn("positions", F.concat("positions", folding(F.col(FILE_COL))))
    blobs = sorted((r[FILE_COL], bytes(r["blob"]), r["cardinality"], r["deleted"]) for r in positions.select(
        FILE_COL, F.expr(f"{SERIALIZE_SQL}(positions)").alias("blob"), F.size("positions").alias("cardinality"),
        "deleted").collect())
    if not blobs:
        return [], [], 0
    out = write_vectors([(target, blob, card) for target, blob, card, _ in blobs],
                        {t.file.file_path: t.file for t in touched}, ctx)
    touched_paths = {target for target, _, _, _ in blobs}
    replaced = [d for d in previous.values() if referenced_path(d.data_file) in touched_paths]
    return out, replaced, sum(deleted for _, _, _, deleted in blobs)


def write_vectors(blobs: list[tuple[str, bytes, int]], targets: dict[str, DataFile],
                  ctx: WriteContext) -> list[DataFile]:
    """The statement's deletion vectors, `blobs` of (data file path, serialized DV, cardinality) in
    the order to store them, written as one Puffin file; one delete-file entry per DV, in the spec
    and partition of its data file (`targets` by path)."""
    content, written = write_puffin(
        [Blob(BLOB_TYPE, (ROW_POSITION_FIELD_ID,), blob, {REFERENCED_DATA_FILE: target, CARDINALITY: str(card)})
         for target, blob, card in blobs], {"created-by": _CREATED_BY})
    name = file_name(0, 0, new_operation_id(deletes=True), 1, deletes=True, extension=PUFFIN.lower())
    path = new_file_location(ctx.location, ctx.properties, "", name)
    ctx.io.write_new(path, content)
    return [DataFile(content=FileContent.POSITION_DELETES, file_path=path, file_format=PUFFIN,
                     partition=targets[target].partition, spec_id=targets[target].spec_id, record_count=card,
                     file_size_in_bytes=len(content), referenced_data_file=target, content_offset=meta.offset,
                     content_size_in_bytes=meta.length)
            for (target, _, card), meta in zip(blobs, written)]


def _positions_per_file(rows: DataFrame, cardinality_error: str | None, only_changed: bool) -> DataFrame:
    """Per data file (`only_changed`: with a newly changed position): `positions` (new and
    previous, each once) and `deleted` (new positions deleted outright). One shuffle: rows are
    partitioned by file, so both groupings (by position, then by file) run in the same tasks."""
    new = F.col(_NEW)
    per_position = rows.repartition(FILE_COL).groupBy(FILE_COL, POS_COL).agg(
        F.count(F.when(new, 1)).alias("pairs"), F.max(new & F.col(_DELETED)).alias(_DELETED),
        F.max(new & F.col(_ACTED)).alias(_ACTED), F.max(~new).alias(_OLD))
    keep = F.col(_ACTED) | F.col(_OLD)
    if cardinality_error is not None:  # every new row is a matched pair or acts on a target row
        keep = F.when(F.col("pairs") > 1, F.raise_error(F.lit(cardinality_error))).otherwise(keep)
    per_file = per_position.where(keep).groupBy(FILE_COL).agg(
        F.collect_list(POS_COL).alias("positions"), F.max(_ACTED).alias(_ACTED),
        F.count(F.when(F.col(_DELETED), 1)).alias("deleted"))
    return per_file.where(F.col(_ACTED)) if only_changed else per_file
