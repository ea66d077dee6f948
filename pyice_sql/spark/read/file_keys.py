"""Scanned rows matched to their data file by a 64-bit key instead of the path string.

A scan with row identity carries Spark's spelling of each row's file (`_metadata.file_path`, a
~100-byte URI). Joining on it costs a hash of the string per row: on a 2M-row merge-on-read scan
the per-file facts join and the position-delete anti-join together doubled the plain scan. Here
the key is Spark's own `xxhash64` of the spelling, computed natively per row, and the JVM shim
computes the same key of every planned file on the driver (over a local relation: no job) to
check that no two of the scan's files share one; if two do, the caller keeps the string joins,
so a collision can never mix up two files.

The uses:
- `live_rows`: position deletes and deletion vectors applied inside the scan tasks, the way
  Iceberg Java applies them (`PositionDeleteFilter.java`: per data file, its delete files and
  DV blobs as the planner paired them, loaded in the task on the file's first row), instead of
  reading every delete row, building a hash table on the driver, broadcasting and probing it.
- `lookup_facts`: the reader's per-file facts (`_file`, partition, sequence number) looked up by
  the key in a table shipped once (FileFacts.java), one column per fact: no broadcast join,
  whose broadcast is a job every row-level scan waited for; unused facts are pruned, and an
  UPDATE or DELETE looks up those of its matching rows only.
- `paths_by_ordinal`: the same lookup by a file's index in the scan, which a row-level
  statement's rows carry through its join in place of the path (8 bytes, not ~100, per shuffled
  row), turned back into the path after the join.
- `deleted_positions` (and `deletes_spec`, which the v2 delete writer hands to the shim): the
  same per-file loading for the merge-on-read writers, which fold a changed data file's previous
  deletes into its new DV or delete file: asked once per changed file in the write tasks, so the
  previous deletes of the files a statement reads but does not change are never read (nor
  shuffled).
On Spark Connect, where the shim cannot load, none applies: the reader joins on strings and the
writers read the previous delete rows as a DataFrame.
"""
from __future__ import annotations

from typing import Callable, Iterable

from pyspark.sql import Column, SparkSession, functions as F

from pyice_sql.core.model.manifest import FileContent, ManifestEntry
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.spark.connect_backend import is_connect
from pyice_sql.spark.read.deletion_vectors import is_deletion_vector

# separators of the spec (PositionDeleteFilter.liveRows): records, fields, numbers of a DV entry
_RECORD, _FIELD, _NUMBER = "\0", "\1", "\2"


def file_key(path: Column) -> Column:
    """The 64-bit key of Spark's spelling of a path (the value `file_keys` computes)."""
    return F.xxhash64(path)


def file_keys(spark: SparkSession, spellings: list[str]) -> list[int] | None:
    """The key of each of the scan's files (Spark's spellings), or None when the shim is not loaded
    or two of them share a key."""
    if is_connect(spark) or not spellings:
        return None
    from pyice_sql.spark.jvm.bridge import load_shim

    keys = load_shim(spark).file_keys(_RECORD.join(spellings))
    return None if keys is None else [int(k) for k in keys.split(",")]


def live_rows(spark: SparkSession, tasks: list[FileScanTask], keys: list[int], path: Column,
              pos: Column) -> Column | None:
    """A predicate true for the rows of `tasks`' data files that no position delete or deletion
    vector removes, over the rows' `path` (Spark's spelling) and `pos` columns; `keys` are the
    tasks' file keys, from `file_keys`. None when a DV entry lacks its blob's place (the join path
    then names it)."""
    from pyice_sql.spark.jvm.bridge import load_shim

    spec = deletes_spec([(key, t.file.file_path, t.deletes) for t, key in zip(tasks, keys)])
    return None if spec is None else _column(load_shim(spark).live_rows(spec, path._jc, pos._jc))


def lookup_facts(spark: SparkSession, facts: dict[int, tuple], types: list[str], key: Column) -> list[Column] | None:
    """Per data file fact, a column over the rows' file `key` column giving that fact of the row's
    file: `facts` maps each scanned file's key to its facts, typed by `types` (`string`, `int`,
    `bigint`). None when a string fact holds a separator of the shipped table (the caller joins)."""
    records = []
    for k, values in facts.items():
        fields = [str(k)] + ["" if v is None else str(v) for v in values]
        if any(_RECORD in f or _FIELD in f for f in fields):
            return None
        records.append(_FIELD.join(fields))
    from pyice_sql.spark.jvm.bridge import load_shim

    return [_column(c) for c in load_shim(spark).file_facts(_RECORD.join(records), types, key._jc)]


def paths_by_ordinal(spark: SparkSession, paths: list[str], ordinal: Column) -> Column | None:
    """`paths[ordinal]` per row, as a lookup in a table shipped once (FileFacts.java), for rows that
    carried their file's ordinal (`reader.FILE_ORDINAL_COL`) through a join instead of its path;
    None where the shim is absent (the rows then carry the path)."""
    if is_connect(spark) or not paths:
        return None
    looked_up = lookup_facts(spark, {i: (p,) for i, p in enumerate(paths)}, ["string"], ordinal)
    return None if looked_up is None else looked_up[0]


def deleted_positions(spark: SparkSession, deletes: dict[str, list[ManifestEntry]]) -> Callable[[Column], Column] | None:
    """For the writers that fold previous deletes into a data file's new ones: a function of a
    column of data file paths (as manifests spell them, keys of `deletes`) giving each file's
    deleted positions by `deletes`, sorted, as array<bigint>, read in the task that asks (once per
    file it asks for). None where the shim is absent, two paths share a key or a DV entry lacks
    its blob's place: the caller then reads the delete rows as a DataFrame."""
    paths = list(deletes)
    keys = file_keys(spark, paths)
    spec = None if keys is None else deletes_spec([(k, p, deletes[p]) for k, p in zip(keys, paths)])
    if spec is None:
        return None
    from pyice_sql.spark.jvm.bridge import load_shim

    shim = load_shim(spark)
    return lambda path: _column(shim.deleted_positions(spec, path._jc))


def deletes_spec(files: list[tuple[int, str, Iterable[ManifestEntry]]]) -> str | None:
    """The spec DeleteLoader.java reads: per (key, data file path, delete entries) with a
    position delete, a record of its key, path and one field per delete file or DV; None when a DV
    entry lacks its blob's place."""
    records = []
    for key, data_file, entries in files:
        fields = [str(key), data_file]
        for d in entries:
            f = d.data_file
            if f.content != FileContent.POSITION_DELETES:
                continue
            if is_deletion_vector(f):
                if f.content_offset is None or f.content_size_in_bytes is None:
                    return None
                fields.append("V" + _NUMBER.join(
                    [f.file_path, str(f.content_offset), str(f.content_size_in_bytes), str(f.record_count)]))
            else:
                fields.append("P" + f.file_path)
        if len(fields) > 2:
            records.append(_FIELD.join(fields))
    return _RECORD.join(records)


def _column(jcol: object) -> Column:
    try:  # Spark 4 moved the py4j-backed Column class
        from pyspark.sql.classic.column import Column as ClassicColumn
    except ImportError:
        ClassicColumn = Column
    return ClassicColumn(jcol)
