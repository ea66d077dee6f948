"""Position delete files for merge-on-read: `(file_path, pos)` rows, one delete file per data file.

Each delete file holds the deleted positions of exactly one data file, sorted by position,
and is recorded in that data file's spec and partition with `referenced_data_file` set, so
every reader (Java, PyIceberg by its equal file_path bounds, DuckDB) scopes it to that one
file. The `file_path` strings are the data file's manifest path, byte for byte. Each file is
named and placed as Iceberg places it (its data file's partition folder,
`<n>-0-<operation id>-<count>-deletes.parquet`, see write/locations.py).

Two writers:
- In the tasks (the JVM shim's PositionDeleteWriter.java, as Iceberg Java's delta writer): rows
  are partitioned and sorted by the data file's 64-bit key and position (the key: the file's index
  among the targets where the rows carry it, else the hash of its path, read/file_keys.py); each
  task streams a data file's positions, merged with the previous ones it folds, into that file's
  delete file at its final place, and hands back the footer summary. No staging folder, second
  sort, footer read or move. The driver plans each target's file name up front (one per data
  file, so a retried task overwrites its failed attempt's file; with speculative execution on,
  two live attempts would write one file, so Spark's writer is used).
- Spark's Parquet writer, where the shim cannot load (Spark Connect) or two targets share a key:
  rows are routed to their delete file by the SHA-256 of the path, used as the output folder of a
  staging write, which the driver maps back to the data file by the same digest; each file then
  moves to its place.
"""
from __future__ import annotations

import base64
import hashlib
import json
from typing import Callable, NamedTuple

from pyspark.sql import DataFrame, SparkSession, functions as F

from pyice_sql.core import properties as props
from pyice_sql.core.commit.cleanup import staging_removed_on_failure
from pyice_sql.core.faults import fault_point
from pyice_sql.core.model import types as it
from pyice_sql.core.model.manifest import DataFile, FileContent, ManifestEntry
from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.spark.connect_backend import conf_enabled, is_connect
from pyice_sql.spark.frames import repartitioned, select_sql, sorted_within_partitions
from pyice_sql.spark.read.file_keys import deletes_spec, file_key_sql, file_keys
from pyice_sql.spark.schema import FIELD_ID_KEY
from pyice_sql.spark.write.data_writer import (
    WriteContext, final_locations, parquet_codec, parquet_layout_options, quote, write_options, written_files,
    zstd_level_options,
)
from pyice_sql.spark.write.dv_writer import write_vectors
from pyice_sql.core.format.locations import (
    data_location, file_name, new_file_location, new_operation_id, partition_to_path,
)
from pyice_sql.spark.write.stats import data_file_from_footer

DELETE_SCHEMA = Schema((
    it.NestedField(2147483546, "file_path", it.STRING, True),
    it.NestedField(2147483545, "pos", it.LONG, True),
))
_FULL_METRICS = {props.DEFAULT_WRITE_METRICS_MODE: "full"}
# Folder key of each delete file: not `_`-prefixed, or remove_orphan_files (Iceberg skips hidden
# paths) could never clean up the delete files of a failed commit.
_TARGET = "target_file"
_KEY = "__file_key"
# the columns the in-task writer reads ahead of the rows' own when it writes along a data file write
_DELETES, _EMITS = "__deletes", "__emits"
# separators of PositionDeleteWriter.java's targets spec: records, fields
_RECORD, _FIELD = "\0", "\1"


# a write's step over the rows grouped by data file, given the column that names their file (a
# Window of it is built only by a step that uses one: pyspark's Window costs ~10 ms of py4j lookups)
PerFile = Callable[[DataFrame, str], DataFrame]


class InTaskTargets(NamedTuple):
    """What the in-task writer needs beyond the rows: each target's 64-bit key (in the order of
    the targets), the column of the rows giving their data file's index among the targets (None:
    the key is the hash of the path), the spec of the previous deletes it folds (None: folds
    nothing), and whether it writes deletion vectors (format v3) rather than delete files."""

    keys: list[int]
    ordinal: str | None
    previous: str | None
    vectors: bool = False

    def key_sql(self, path: str) -> str:
        """The SQL of a row's key, where the column `path` holds its data file's path."""
        return quote(self.ordinal) if self.ordinal is not None else file_key_sql(path)


def in_task_targets(spark: SparkSession, targets: dict[str, DataFile], folded: dict[str, list[ManifestEntry]],
                    ordinal: str | None = None, vectors: bool = False) -> InTaskTargets | None:
    """The targets' keys when the delete files can be written in the tasks, which then also fold
    the previous deletes `folded` (per data file path); None: Spark's writer (no shim, two targets
    share a key, a previous delete the shim cannot read, a path holding a separator of the writer's
    targets spec, or speculative execution, whose second attempt of a task would write the same
    file as the first: Spark's commit protocol keeps one).
    `ordinal`: the column of the rows giving their data file's index in `targets`, which then keys
    them (else the hash of the path, computed per row and for each target by a JVM query).
    `vectors`: the tasks serialize each target's deletion vector (format v3), which the driver
    writes as one Puffin file (dv_writer.write_vectors), instead of writing delete files."""
    if not targets or is_connect(spark) or conf_enabled(spark, "spark.speculation", False):
        return None
    if any(_RECORD in p or _FIELD in p for p in targets):  # the targets spec could not hold the path
        return None
    keys = list(range(len(targets))) if ordinal is not None else file_keys(spark, list(targets))
    if keys is None:
        return None
    key_of = dict(zip(targets, keys))
    previous = deletes_spec([(key_of[p], p, entries) for p, entries in folded.items()]) if folded else None
    if folded and previous is None:
        return None
    return InTaskTargets(keys, ordinal, previous, vectors)


def write_position_deletes(deletes: DataFrame, targets: dict[str, DataFile], ctx: WriteContext,
                           per_file: PerFile | None = None, in_tasks: InTaskTargets | None = None
                           ) -> list[DataFile]:
    """Write `deletes` (columns `_file` = manifest path of the data file, `_pos`) as delete files.

    `targets` maps data file paths to their DataFile, whose spec and partition the delete file
    inherits; a target without rows gets no delete file.
    `per_file`, when given, sees the rows once they are grouped by data file and sorted by
    position, with the name of the column that tells their data file (to window over), and returns
    the rows to write (the caller's dedup, checks and counts ride in the same job as the write).
    `in_tasks` (from `in_task_targets`) selects the in-task writer, which then also folds the
    previous deletes it names into each target's new delete file.
    """
    if not targets:
        return []
    if in_tasks is not None:
        return _write_in_tasks(deletes, targets, ctx, per_file, in_tasks)
    return _write_with_spark(deletes, targets, ctx, per_file)


def along_columns(in_tasks: InTaskTargets, path: str, pos: str, deletes: str, emits: str) -> list[str]:
    """The leading columns of the rows of `write_position_deletes_along`, as SQL over rows whose
    columns `path` and `pos` give the data file and position a row replaces, and where `deletes`
    (SQL) holds on a row whose position is deleted, `emits` on one that goes on to the data write.
    In the caller's projection: no operation of their own to analyse."""
    return [f"{in_tasks.key_sql(path)} AS {_KEY}", f"CAST({pos} AS bigint) AS _pos",
            f"{deletes} AS {_DELETES}", f"{emits} AS {_EMITS}"]


class WrittenAlong(NamedTuple):
    """What `write_position_deletes_along` wrote, and the rows that went by its filter: `counts` maps
    `updated` (a row deleting a position and going on), `deleted` (deleting only) and `inserted`
    (going on only) to their numbers."""

    delete_files: list[DataFile]
    data_files: list[DataFile]
    counts: dict[str, int]


def write_position_deletes_along(rows: DataFrame, targets: dict[str, DataFile], ctx: WriteContext,
                                 in_tasks: InTaskTargets, write_rows: Callable[[DataFrame], list[DataFile]] | None,
                                 on_repeat: str | None = None, as_read: bool = False) -> WrittenAlong:
    """The in-task writer inside the data file write, as Iceberg Java's delta writer: `rows`
    (leading columns `along_columns`, then the new row's) are grouped by data file as for
    `write_position_deletes`, and the rows of no data file (inserted rows: no key) all go to one
    task; the position of each row whose `deletes` column holds goes to the delete files, and the
    rows whose `emits` column holds go on to `write_rows` (with every column: it takes the
    table's), whose tasks write the delete files as they go. One write job instead of two, and the
    rows are not cached between them. A position's second row (its target row in a second matched
    pair of a MERGE) fails the job with the message `on_repeat`, or is dropped where that is None;
    the rows are counted as they go by (`WrittenAlong`), each changed position once, so the caller
    needs neither a window over them nor an observation.

    `write_rows` None: no row goes on (a DELETE, a MERGE that only deletes): the filter's job is
    the delete write alone, with no Row conversion, per-file window or observation of its own.
    `as_read`: the rows come straight from a scan that reads each data file whole in one task
    (`data_writer.files_read_whole`), so they are grouped by file and in position order already:
    no shuffle, the scan's tasks write the delete files."""
    from pyice_sql.spark.jvm.bridge import load_shim

    spark = rows.sparkSession
    keyed, outputs, spec = _in_task_rows(rows, targets, ctx, None, in_tasks, along=write_rows is not None,
                                         keyed=True, as_read=as_read)
    shim = load_shim(spark)
    along = (shim.deletion_vectors_along(keyed._jdf, spec, in_tasks.previous, on_repeat) if in_tasks.vectors else
             shim.position_delete_files_along(keyed._jdf, spec, in_tasks.previous, _codec(ctx), _layout(ctx, spark),
                                              on_repeat))
    data_files: list[DataFile] = []
    try:
        if write_rows is None:
            along.rows().collectAsList()  # the job: no row passes the filter, so nothing comes back
        else:
            data_files = write_rows(type(rows)(along.rows(), spark))  # pyspark's classic DataFrame of a JVM one
        delete_files = _described(shim.delete_file_summaries(along), targets, outputs, ctx, in_tasks.vectors)
        return WrittenAlong(delete_files, data_files, shim.along_counts(along))
    except BaseException:
        _delete_planned(ctx, outputs)
        for f in data_files:
            ctx.io.delete(f.file_path)
        raise


def _write_in_tasks(deletes: DataFrame, targets: dict[str, DataFile], ctx: WriteContext, per_file: PerFile | None,
                    in_tasks: InTaskTargets) -> list[DataFile]:
    from pyice_sql.spark.jvm.bridge import load_shim

    spark = deletes.sparkSession
    rows, outputs, spec = _in_task_rows(deletes, targets, ctx, per_file, in_tasks)
    rows = select_sql(rows, [_KEY, "CAST(_pos AS BIGINT) AS _pos"])
    shim = load_shim(spark)
    try:
        written = (shim.write_deletion_vectors(rows._jdf, spec, in_tasks.previous) if in_tasks.vectors else
                   shim.write_position_delete_files(rows._jdf, spec, in_tasks.previous, _codec(ctx),
                                                    _layout(ctx, spark)))
        return _described(written, targets, outputs, ctx, in_tasks.vectors)
    except BaseException:
        _delete_planned(ctx, outputs)
        raise


def _in_task_rows(rows: DataFrame, targets: dict[str, DataFile], ctx: WriteContext, per_file: PerFile | None,
                  in_tasks: InTaskTargets, along: bool = False, keyed: bool = False, as_read: bool = False
                  ) -> tuple[DataFrame, dict[str, str], str]:
    """The in-task writer's rows (keyed, grouped by data file, sorted by position, `per_file`
    applied), each target's planned delete file (none for deletion vectors), and the writer's
    targets spec. `along`: the rows go on to a data file write; `keyed`: they carry their key
    already (`write_position_deletes_along`); `as_read`: they come grouped and sorted from the
    scan."""
    operation_id = new_operation_id(deletes=True)
    specs = {s.spec_id: s for s in ctx.specs + (ctx.spec,)}
    outputs = {} if in_tasks.vectors else {
        path: new_file_location(ctx.location, ctx.properties, _partition_path(ctx, specs.get(f.spec_id), f),
                                file_name(i, 0, operation_id, 1, deletes=True))
        for i, (path, f) in enumerate(targets.items())}
    if not keyed:
        rows = rows.withColumn(_KEY, F.expr(in_tasks.key_sql("_file")))
    if not as_read:
        rows = sorted_within_partitions(_grouped_by_file(rows, len(targets), along), [_KEY, "_pos"])
    if per_file is not None:
        rows = per_file(rows, _KEY)
    spec = _RECORD.join(f"{key}{_FIELD}{outputs.get(path, '')}{_FIELD}{path}"
                        for key, path in zip(in_tasks.keys, targets))
    return rows, outputs, spec


def _grouped_by_file(rows: DataFrame, targets: int, along: bool) -> DataFrame:
    """`rows` partitioned by their data file's key."""
    spark = rows.sparkSession
    if along and conf_enabled(spark, "spark.sql.adaptive.enabled", True):
        # the rows carry the new rows too: adaptive execution sizes the tasks by them, as it does
        # a Spark write's (a few changed rows make one task, so one new data file)
        return repartitioned(rows, [_KEY])
    # not left to AQE, which would coalesce by the shuffle's size: folding adds each file's
    # previous positions after it (one task would write every file)
    return repartitioned(rows, [_KEY], max(1, min(targets, spark.sparkContext.defaultParallelism)))


def _delete_planned(ctx: WriteContext, outputs: dict[str, str]) -> None:
    """After a failed write: delete the planned delete files that finished tasks wrote."""
    for out in outputs.values():
        ctx.io.delete(out)


def _described(written: str, targets: dict[str, DataFile], outputs: dict[str, str], ctx: WriteContext,
               vectors: bool) -> list[DataFile]:
    """The in-task writer's answer as delete entries of their data files: the footer summaries of
    the delete files it wrote at `outputs`, or (`vectors`) the deletion vector blobs it serialized,
    written here as one Puffin file. A data file's deletes written by two tasks (each held part of
    its rows, and wrote its part over the other's) fail the statement, never commit part of them."""
    summaries = json.loads(written)
    out = _vectors_described(summaries, targets, ctx) if vectors else _files_described(summaries, targets, outputs)
    fault_point("delete-files")
    return out


def _vectors_described(summaries: list[dict], targets: dict[str, DataFile], ctx: WriteContext) -> list[DataFile]:
    _once([f["dataFile"] for f in summaries], lambda path: (path, "two deletion vectors"))
    return write_vectors(sorted((f["dataFile"], base64.b64decode(f["blob"]), f["cardinality"])
                                for f in summaries), targets, ctx) if summaries else []


def _files_described(summaries: list[dict], targets: dict[str, DataFile], outputs: dict[str, str]) -> list[DataFile]:
    data_file_of = {out: targets[p] for p, out in outputs.items()}
    _once([f["path"] for f in summaries], lambda path: (data_file_of[path].file_path, f"delete file {path}"))
    return [data_file_from_footer(f, DELETE_SCHEMA, _FULL_METRICS, f["path"], data_file_of[f["path"]].partition,
                                  data_file_of[f["path"]].spec_id, FileContent.POSITION_DELETES,
                                  referenced_data_file=data_file_of[f["path"]].file_path)
            for f in summaries]


def _once(paths: list[str], named: Callable[[str], tuple[str, str]]) -> None:
    """Fails on a path written twice; `named` gives its data file and what was written twice."""
    seen: set[str] = set()
    for path in paths:
        if path in seen:
            data_file, what = named(path)
            raise RuntimeError(f"the position deletes of data file {data_file} were written by two tasks ({what}): "
                               "its rows were not read by one task")
        seen.add(path)


def _write_with_spark(deletes: DataFrame, targets: dict[str, DataFile], ctx: WriteContext,
                      per_file: PerFile | None) -> list[DataFile]:
    by_digest = {_path_digest(p): f for p, f in targets.items()}
    rows = (deletes.withColumn(_TARGET, F.sha2(F.col("_file"), 256))
            .repartition(F.col(_TARGET)).sortWithinPartitions(_TARGET, "_pos"))
    if per_file is not None:
        rows = per_file(rows, _TARGET)
    rows = rows.select(F.col("_file").alias("file_path", metadata={FIELD_ID_KEY: 2147483546}),
                       F.col("_pos").cast("long").alias("pos", metadata={FIELD_ID_KEY: 2147483545}),
                       F.col(_TARGET))
    operation_id = new_operation_id(deletes=True)
    out_dir = f"{data_location(ctx.location, ctx.properties)}/pyice-staging-{operation_id}"
    codec = _codec(ctx)
    with staging_removed_on_failure(ctx.io, out_dir):
        (rows.write.mode("error").options(**write_options(rows.sparkSession))
         .option("compression", "none" if codec == "uncompressed" else codec).options(**_layout(ctx, rows.sparkSession))
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


def _codec(ctx: WriteContext) -> str:
    """The delete files' Parquet compression codec from the table's properties (lower case)."""
    return parquet_codec(ctx.properties, deletes=True)


def _layout(ctx: WriteContext, spark: SparkSession) -> dict[str, str]:
    """The delete files' Parquet layout and zstd level options (`data_writer`'s)."""
    return {**parquet_layout_options(ctx.properties, ctx.location, deletes=True),
            **zstd_level_options(spark, ctx.properties, ctx.location, deletes=True)}


def _path_digest(path: str) -> str:
    """Spark's `sha2(path, 256)`: the hex SHA-256 of the path's UTF-8 bytes."""
    return hashlib.sha256(path.encode("utf-8")).hexdigest()


def _digest_of(staged_path: str) -> str:
    """The `<digest>` of a staged file's `target_file=<digest>` folder."""
    return staged_path.rsplit("/", 2)[-2].split("=", 1)[1]


def _partition_path(ctx: WriteContext, spec: PartitionSpec | None, target: DataFile) -> str:
    """The partition folder of a delete file: its data file's, in that file's spec (as Java)."""
    return partition_to_path(spec, ctx.schema, target.partition) if spec is not None and spec.fields else ""
