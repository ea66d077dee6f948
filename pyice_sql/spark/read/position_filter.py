"""Position deletes and deletion vectors applied inside the scan tasks, by the JVM shim.

The join-based removal (`reader._apply_position_deletes`) reads every delete row into a DataFrame,
builds a hash table of (path string, position) on the driver, broadcasts it and probes it with
every scanned row: on a 2M-row merge-on-read scan that is a job, ~0.15 s of driver work and the
costliest per-row step (hashing a ~100-byte path), together ~2x the plain scan. Iceberg Java
loads each data file's deleted positions in the task that reads the file instead.
`PositionDeleteFilter.java` does the same as a UDF over (xxhash64(`_metadata.file_path`),
`_metadata.row_index`): the spec built here tells it, per planned data file, its delete files and
deletion-vector blobs (the pairing the planner made under the sequence-number rules).

Used wherever the shim is loaded; on Spark Connect (no shim), or when two of the scan's files
share a 64-bit key (the shim checks, so a collision can never drop a live row), the caller keeps
the join.
"""
from __future__ import annotations

from pyspark.sql import Column, SparkSession

from pyice_sql.core.model.manifest import FileContent
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.spark.connect_backend import is_connect
from pyice_sql.spark.read.deletion_vectors import is_deletion_vector

# separators of the spec (PositionDeleteFilter.liveRows): records, fields, numbers of a DV entry
_RECORD, _FIELD, _NUMBER = "\0", "\1", "\2"


def live_rows(spark: SparkSession, tasks: list[FileScanTask], spellings: dict[str, str],
              path: Column, pos: Column) -> Column | None:
    """A predicate true for the rows of `tasks`' data files that no position delete or deletion
    vector removes, over the rows' `path` (Spark's spelling) and `pos` columns; None where the
    shim cannot do it (the caller then joins)."""
    if is_connect(spark):
        return None
    from pyice_sql.spark.jvm.bridge import load_shim

    records = []
    for t in tasks:
        fields = [spellings[t.file.file_path], t.file.file_path]
        for d in t.deletes:
            f = d.data_file
            if f.content != FileContent.POSITION_DELETES:
                continue
            if is_deletion_vector(f):
                if f.content_offset is None or f.content_size_in_bytes is None:
                    return None  # the join path names the damaged entry
                fields.append("V" + _NUMBER.join(
                    [f.file_path, str(f.content_offset), str(f.content_size_in_bytes), str(f.record_count)]))
            else:
                fields.append("P" + f.file_path)
        records.append(_FIELD.join(fields))
    jcol = load_shim(spark).live_rows(_RECORD.join(records), path._jc, pos._jc)
    return None if jcol is None else _column(jcol)


def _column(jcol: object) -> Column:
    try:  # Spark 4 moved the py4j-backed Column class
        from pyspark.sql.classic.column import Column as ClassicColumn
    except ImportError:
        ClassicColumn = Column
    return ClassicColumn(jcol)
