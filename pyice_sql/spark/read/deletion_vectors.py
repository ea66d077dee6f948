"""Deletion vectors in the scan: DV blobs decoded on the executors into (data file, position) rows.

A DV is a delete-file entry (content POSITION_DELETES, file_format PUFFIN) whose blob lies at
`content_offset` / `content_size_in_bytes` in its Puffin file and covers exactly
`referenced_data_file`; the planner's DeleteFileIndex already pairs it with that one file under
the position-delete sequence-number rule. Here the DVs become the same `(_file, _pos)` rows a
position-delete file gives, so the reader removes both kinds with its one anti-join (a data file
of a table upgraded from v2 can have old position-delete files and a DV at once).

Spark reads each Puffin file once (`binaryFile`, through Hadoop's file systems, so any store
Spark reads works); each file's blobs come from a map literal (parsed once by the optimizer, so
no broadcast job), and `pyice_dv_positions` decodes them on the executors: the JVM shim's codec,
or on Spark Connect a Python UDF over `core.format.deletion_vector`. Both check magic, length,
CRC and the entry's record_count; a damaged DV fails the Spark job with an error naming the
Puffin file.
"""
from __future__ import annotations

import json

from pyspark.sql import Column, DataFrame, SparkSession, functions as F, types as T

from pyice_sql.core.format.deletion_vector import DeletionVectorError
from pyice_sql.core.model.manifest import DataFile

PUFFIN = "PUFFIN"
# The SQL functions of the DV codec (registered by Runtime.attach; signatures in jvm_shim/README.md)
POSITIONS_SQL, SERIALIZE_SQL = "pyice_dv_positions", "pyice_dv_serialize"
_BLOB = T.StructType([T.StructField("offset", T.LongType()), T.StructField("length", T.LongType()),
                      T.StructField("data_file", T.StringType()), T.StructField("cardinality", T.LongType())])


def is_deletion_vector(f: DataFile) -> bool:
    return f.file_format.upper() == PUFFIN


def read_deletion_vector_rows(spark: SparkSession, dvs: list[DataFile], spellings: dict[str, str] | None = None,
                              file_col: str | None = None) -> DataFrame:
    """The deleted `(_file, _pos)` rows of DV entries; `_file` is the referenced data file's path
    exactly as the manifest spells it, or its entry in `spellings` (then named `file_col`)."""
    from pyice_sql.spark.read.reader import FILE_COL, POS_COL, spark_path_key
    from pyice_sql.spark.read.spark_paths import local_key

    for f in dvs:
        if f.referenced_data_file is None or f.content_offset is None or f.content_size_in_bytes is None:
            raise DeletionVectorError("deletion vector entry lacks referenced_data_file, content_offset or "
                                      "content_size_in_bytes", f.file_path)
    by_file: dict[str, list[dict]] = {}
    for f in dvs:
        target = spellings[f.referenced_data_file] if spellings is not None else f.referenced_data_file
        by_file.setdefault(f.file_path, []).append(
            {"offset": f.content_offset, "length": f.content_size_in_bytes, "data_file": target,
             "cardinality": f.record_count})
    blobs = _constant_map({local_key(p): b for p, b in by_file.items()}, T.ArrayType(_BLOB))
    files = spark.read.format("binaryFile").load(list(by_file))  # load(*paths) takes a 2nd path as format
    blob = F.explode(F.element_at(blobs, spark_path_key(F.col("path")))).alias("blob")
    decoded = files.select("path", "content", blob).select(
        F.col("blob.data_file").alias(file_col or FILE_COL),
        F.expr(f"{POSITIONS_SQL}(content, blob.offset, blob.length, blob.cardinality, path)").alias("positions"))
    return decoded.select(file_col or FILE_COL, F.explode("positions").alias(POS_COL))


def _constant_map(entries: dict[str, object], value_type: T.DataType) -> Column:
    """A string-keyed map as one JSON literal: constant-folded into a map literal at planning, so
    thousands of entries cost neither a join nor a huge expression tree."""
    return F.from_json(F.lit(json.dumps(entries)), T.MapType(T.StringType(), value_type), {"mode": "FAILFAST"})
