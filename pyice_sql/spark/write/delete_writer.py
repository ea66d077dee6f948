"""Position delete files for merge-on-read: `(file_path, pos)` rows, one delete file per data file.

Each delete file holds the deleted positions of exactly one data file, sorted by position,
and is recorded in that data file's spec and partition with `referenced_data_file` set, so
every reader (Java, PyIceberg by its equal file_path bounds, DuckDB) scopes it to that one
file. The `file_path` strings are the data file's manifest path, byte for byte. Rows are
routed to their delete file by the SHA-256 of that path, computed in the job and used as the
output folder of a staging write: no table of targets is shipped to the executors (a broadcast
costs a Spark job), and the driver maps each folder back to its data file by the same digest.
Each file then moves to Iceberg's place for it (its data file's partition folder, named
`<task>-0-<operation id>-<count>-deletes.parquet`, see write/locations.py).
"""
from __future__ import annotations

import hashlib
from typing import Callable

from pyspark.sql import Column, DataFrame, Window, WindowSpec, functions as F

from pyice_sql.core import properties as props
from pyice_sql.core.faults import fault_point
from pyice_sql.core.model import types as it
from pyice_sql.core.model.manifest import DataFile, FileContent
from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.spark.schema import FIELD_ID_KEY
from pyice_sql.spark.write.data_writer import NO_SUCCESS_MARKER, WriteContext, final_locations, written_files
from pyice_sql.core.format.locations import data_location, new_operation_id, partition_to_path
from pyice_sql.spark.write.stats import data_file_from_footer

DELETE_SCHEMA = Schema((
    it.NestedField(2147483546, "file_path", it.STRING, True),
    it.NestedField(2147483545, "pos", it.LONG, True),
))
_FULL_METRICS = {props.DEFAULT_WRITE_METRICS_MODE: "full"}
# Folder key of each delete file: not `_`-prefixed, or remove_orphan_files (Iceberg skips hidden
# paths) could never clean up the delete files of a failed commit.
_TARGET = "target_file"
_FIRST = "__first"


PerFile = Callable[[DataFrame, WindowSpec], DataFrame]


def write_position_deletes(deletes: DataFrame, targets: dict[str, DataFile],
                           ctx: WriteContext, per_file: PerFile | None = None,
                           previous: Callable[[Column], Column] | None = None) -> list[DataFile]:
    """Write `deletes` (columns `_file` = manifest path of the data file, `_pos`) as delete files.

    `targets` maps data file paths to their DataFile, whose spec and partition the delete file
    inherits; a target without rows gets no delete file, rows of a path not in `targets` are
    dropped (staged, then discarded with the staging folder).
    `per_file`, when given, sees the rows once they are grouped by data file and sorted by
    position, with the window over one data file's rows in that order, and returns the rows to
    write (the caller's dedup, checks and counts ride in the same job as the write).
    `previous`, when given, maps the `_file` column to the data file's previous deleted positions
    (read/file_keys.py `deleted_positions`): they are folded into its new delete file, asked once
    per data file that has a row to write (never one of the rows).
    """
    if not targets:
        return []
    by_digest = {_path_digest(p): f for p, f in targets.items()}
    rows = deletes.withColumn(_TARGET, F.sha2(F.col("_file"), 256))
    # Folding makes the write far bigger than its shuffle (a file's previous positions join after
    # it), so the partitions are not left to AQE, which would coalesce them by the shuffle's size
    # (one task for all files): one per touched file, up to the cluster's parallelism.
    if previous is not None:
        rows = rows.repartition(max(1, min(len(targets), deletes.sparkSession.sparkContext.defaultParallelism)),
                                F.col(_TARGET))
    else:
        rows = rows.repartition(F.col(_TARGET))
    rows = rows.sortWithinPartitions(_TARGET, "_pos")
    window = Window.partitionBy(_TARGET).orderBy("_pos")
    if per_file is not None:
        rows = per_file(rows, window)
    if previous is not None:
        rows = rows.withColumn(_FIRST, F.lag("_pos").over(window).isNull())  # the file's first row to write
        pos = F.array(F.col("_pos").cast("long"))
        positions = F.when(F.col(_FIRST), F.concat(pos, previous(F.col("_file")))).otherwise(pos)
        rows = (rows.select("_file", _TARGET, F.explode(positions).alias("_pos"))
                .sortWithinPartitions(_TARGET, "_pos"))
    rows = rows.select(F.col("_file").alias("file_path", metadata={FIELD_ID_KEY: 2147483546}),
                       F.col("_pos").cast("long").alias("pos", metadata={FIELD_ID_KEY: 2147483545}),
                       F.col(_TARGET))
    operation_id = new_operation_id(deletes=True)
    out_dir = f"{data_location(ctx.location, ctx.properties)}/pyice-staging-{operation_id}"
    codec = ctx.properties.get(props.DELETE_PARQUET_COMPRESSION,
                               ctx.properties.get(props.PARQUET_COMPRESSION, props.PARQUET_COMPRESSION_DEFAULT)).lower()
    (rows.write.mode("error").options(**NO_SUCCESS_MARKER)
     .option("compression", "none" if codec == "uncompressed" else codec)
     .partitionBy(_TARGET).parquet(out_dir))
    staged = [(path, footer, by_digest.get(_digest_of(path))) for path, footer in written_files(ctx, out_dir)]
    staged = [s for s in staged if s[2] is not None]  # rows of a path not in `targets` are dropped
    specs = {s.spec_id: s for s in ctx.specs + (ctx.spec,)}
    finals = final_locations(ctx, [(path, _partition_path(ctx, specs.get(target.spec_id), target))
                                   for path, _, target in staged], operation_id, deletes=True)
    out = []
    for (path, footer, target), final in zip(staged, finals):
        ctx.io.move(path, final)
        out.append(data_file_from_footer(
            footer, DELETE_SCHEMA, _FULL_METRICS, final, target.partition, target.spec_id,
            FileContent.POSITION_DELETES, referenced_data_file=target.file_path))
    ctx.io.delete_tree(out_dir)
    fault_point("delete-files")
    return out


def _path_digest(path: str) -> str:
    """Spark's `sha2(path, 256)`: the hex SHA-256 of the path's UTF-8 bytes."""
    return hashlib.sha256(path.encode("utf-8")).hexdigest()


def _digest_of(staged_path: str) -> str:
    """The `<digest>` of a staged file's `target_file=<digest>` folder."""
    return staged_path.rsplit("/", 2)[-2].split("=", 1)[1]


def _partition_path(ctx: WriteContext, spec: PartitionSpec | None, target: DataFile) -> str:
    """The partition folder of a delete file: its data file's, in that file's spec (as Java)."""
    return partition_to_path(spec, ctx.schema, target.partition) if spec is not None and spec.fields else ""
