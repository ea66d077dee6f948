"""Deletion vectors in the scan: DV blobs decoded on the executors into (data file, position) rows.

A DV is a delete-file entry (content POSITION_DELETES, file_format PUFFIN) whose blob lies at
`content_offset` / `content_size_in_bytes` in its Puffin file and covers exactly
`referenced_data_file`; the planner's DeleteFileIndex already pairs it with that one file under
the position-delete sequence-number rule. Here the DVs become the same `(_file, _pos)` rows a
position-delete file gives, so the reader removes both kinds with its one anti-join (a data file
of a table upgraded from v2 can have old position-delete files and a DV at once).

Spark reads each Puffin file once (`binaryFile`, through Hadoop's file systems, so any store
Spark reads works); a small broadcast table lists each file's blobs, and a Python UDF decodes
them with the pure codec of `core.format.deletion_vector`, checking magic, length, CRC and the
entry's record_count. A damaged DV fails the Spark job with a DeletionVectorError naming the
Puffin file.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, functions as F, types as T

from pyice_sql.core.format.deletion_vector import DeletionVectorError, deserialize_positions
from pyice_sql.core.model.manifest import DataFile

PUFFIN = "PUFFIN"
_BLOB = T.StructType([T.StructField("offset", T.LongType()), T.StructField("length", T.LongType()),
                      T.StructField("data_file", T.StringType()), T.StructField("cardinality", T.LongType())])
_DECODED = T.ArrayType(T.StructType([T.StructField("data_file", T.StringType()),
                                     T.StructField("positions", T.ArrayType(T.LongType()))]))


def is_deletion_vector(f: DataFile) -> bool:
    return f.file_format.upper() == PUFFIN


def _decode(path: str, content: bytes, blobs: list) -> list[tuple[str, list[int]]]:
    """Runs in the executors: every DV blob of one Puffin file, as (data file, positions)."""
    out = []
    for offset, length, data_file, declared in blobs:
        blob = content[offset:offset + length]
        if len(blob) != length:
            raise DeletionVectorError(f"deletion vector for {data_file} at offset {offset} length {length} "
                                      f"runs past the end of the file ({len(content)} bytes)", path)
        positions = deserialize_positions(blob, path)
        if len(positions) != declared:
            raise DeletionVectorError(f"deletion vector for {data_file} holds {len(positions)} positions but "
                                      f"its manifest entry says {declared}", path)
        out.append((data_file, positions.tolist()))
    return out


def read_deletion_vector_rows(spark: SparkSession, dvs: list[DataFile]) -> DataFrame:
    """The deleted `(_file, _pos)` rows of DV entries; `_file` is the referenced data file's
    path exactly as the manifest spells it."""
    from pyice_sql.spark.read.reader import FILE_COL, POS_COL, manifest_path_key, spark_path_key

    for f in dvs:
        if f.referenced_data_file is None or f.content_offset is None or f.content_size_in_bytes is None:
            raise DeletionVectorError("deletion vector entry lacks referenced_data_file, content_offset or "
                                      "content_size_in_bytes", f.file_path)
    by_file: dict[str, list[tuple[int, int, str, int]]] = {}
    for f in dvs:
        by_file.setdefault(f.file_path, []).append(
            (f.content_offset, f.content_size_in_bytes, f.referenced_data_file, f.record_count))
    listing = spark.createDataFrame(list(by_file.items()), T.StructType(
        [T.StructField("puffin", T.StringType()), T.StructField("blobs", T.ArrayType(_BLOB))]))
    listing = listing.select(manifest_path_key(F.col("puffin")).alias("__key"), "puffin", "blobs")
    files = (spark.read.format("binaryFile").load(list(by_file))  # load(*paths) takes a 2nd path as format
             .select(spark_path_key(F.col("path")).alias("__key"), "content"))
    decode = F.udf(_decode, _DECODED)
    decoded = files.join(F.broadcast(listing), "__key").select(
        F.explode(decode("puffin", "content", "blobs")).alias("dv"))
    return decoded.select(F.col("dv.data_file").alias(FILE_COL), F.explode("dv.positions").alias(POS_COL))
