"""Scanned rows matched to their data file by a 64-bit key instead of the path string.

A scan with row identity could carry Spark's spelling of each row's file (`_metadata.file_path`,
a ~100-byte URI). Joining on it costs a hash of the string per row: on a 2M-row merge-on-read
scan the per-file facts join and the position-delete anti-join together doubled the plain scan.
So rows carry a long that names their file (`scan_keys`):
- its `_metadata.file_size` where no other scanned file has that size: Spark holds it per file,
  so a row pays neither a hash nor the copy of the path into the per-row `_metadata` struct (on
  10M rows of 100 files: +0.4 s of task time over a plain read, against +1.0 s for the hash of
  the path). The manifests' `file_size_in_bytes` are the keys.
- else Spark's own `xxhash64` of the spelling, computed natively for the rows of those files
  only (a `CASE` on the size, against an array literal so that the generated code does not change
  with the sizes: referencing the path there cost a plain size key's time, measured);
  the JVM shim computes the same key of each such file on the driver (XxHash64.java: no Spark
  query).
The keys of a scan must all differ, or the caller keeps the string joins, so a collision can
never mix up two files. A row whose key is no planned file's (its file's size on storage differs
from its manifest's) fails its task in both lookups (FileFacts.java, and the delete spec lists
every planned file), rather than read as another file's or as live.

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
  row), turned back into the path after the join. A filter on the ordinal reads only the row's
  `_metadata`, so Spark can test it against each file as it lists them: a copy-on-write MERGE's
  second pass narrows its first pass's scan to the files to rewrite that way, never opening the
  others (`ordinal_filter_prunes_files` says where Spark does).
- `deleted_positions` (and `deletes_spec`, which the v2 delete writer hands to the shim): the
  same per-file loading for the merge-on-read writers, which fold a changed data file's previous
  deletes into its new DV or delete file: asked once per changed file in the write tasks, so the
  previous deletes of the files a statement reads but does not change are never read (nor
  shuffled). These key by the path hash: they see manifest paths, not scanned rows.
On Spark Connect, where the shim cannot load, none applies: the reader joins on strings and the
writers read the previous delete rows as a DataFrame.
"""
from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable

from pyspark.sql import Column, SparkSession, functions as F

from pyice_sql.core.model.manifest import FileContent, ManifestEntry
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.spark.connect_backend import is_connect
from pyice_sql.spark.frames import jvm_column
from pyice_sql.spark.read.deletion_vectors import is_deletion_vector

# separators of the spec (PositionDeleteFilter.liveRows): records, fields, numbers of a DV entry
_RECORD, _FIELD, _NUMBER = "\0", "\1", "\2"


def file_key(path: Column) -> Column:
    """The 64-bit key of Spark's spelling of a path (the value `file_keys` computes)."""
    return F.xxhash64(path)


def file_key_sql(path: str) -> str:
    """`file_key` as SQL over the column `path`."""
    return f"xxhash64({path})"


def file_keys(spark: SparkSession, spellings: list[str]) -> list[int] | None:
    """The key of each of the scan's files (Spark's spellings), or None when the shim is not loaded
    or two of them share a key."""
    if is_connect(spark) or not spellings:
        return None
    from pyice_sql.spark.jvm.bridge import load_shim

    keys = load_shim(spark).file_keys(_RECORD.join(spellings))
    return None if keys is None else [int(k) for k in keys.split(",")]


def scan_keys(spark: SparkSession, tasks: list[FileScanTask], spellings: Callable[[], dict[str, str]],
              size: Column, path: Column) -> tuple[list[int], Column] | None:
    """The key of each task's data file, and the column of it over the rows' `_metadata.file_size`
    (`size`) and `file_path` (`path`): the file's size where no other task's file has that size,
    else the hash of Spark's spelling of its path (`spellings()`: manifest path -> spelling). None
    when the shim is not loaded or two keys are equal (the caller joins on the path)."""
    if is_connect(spark):
        return None
    sizes = [t.file.file_size_in_bytes for t in tasks]
    shared = {s for s, n in Counter(sizes).items() if n > 1}
    keys = list(sizes)
    column = size
    if shared:
        names = spellings()
        hashed = [i for i, s in enumerate(sizes) if s in shared]
        hashes = file_keys(spark, [names[tasks[i].file.file_path] for i in hashed])
        if hashes is None:
            return None
        for i, h in zip(hashed, hashes):
            keys[i] = h
        # the shared sizes as one array literal, not an IN list: Spark writes an IN's literals into
        # the generated code, so each new set of sizes compiled the scan's stage again (30-95 ms a
        # stage, on every statement after one that wrote two files of one size); an array literal
        # is passed by reference and the code stays the same
        shared_sizes = F.expr("array(" + ", ".join(f"{s}L" for s in sorted(shared)) + ")")
        column = F.when(F.array_contains(shared_sizes, size), file_key(path)).otherwise(size)
    return (keys, column) if len(set(keys)) == len(keys) else None


def live_rows(spark: SparkSession, tasks: list[FileScanTask], keys: list[int], key: Column,
              pos: Column) -> Column | None:
    """A predicate true for the rows of `tasks`' data files that no position delete or deletion
    vector removes, over the rows' file `key` and `pos` columns; `keys` are the tasks' file keys
    (`scan_keys`). A row whose key is no task's fails its task. None when a DV entry lacks its
    blob's place (the join path then names it)."""
    from pyice_sql.spark.jvm.bridge import load_shim

    spec = deletes_spec([(k, t.file.file_path, t.deletes) for t, k in zip(tasks, keys)], every_file=True)
    return None if spec is None else jvm_column(load_shim(spark).live_rows(spec, key._jc, pos._jc))


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

    return [jvm_column(c) for c in load_shim(spark).file_facts(_RECORD.join(records), types, key._jc)]


def paths_by_ordinal(spark: SparkSession, paths: list[str], ordinal: Column) -> Column | None:
    """`paths[ordinal]` per row, as a lookup in a table shipped once (FileFacts.java), for rows that
    carried their file's ordinal (`reader.FILE_ORDINAL_COL`) through a join instead of its path;
    None where the shim is absent (the rows then carry the path)."""
    if is_connect(spark) or not paths:
        return None
    looked_up = lookup_facts(spark, {i: (p,) for i, p in enumerate(paths)}, ["string"], ordinal)
    return None if looked_up is None else looked_up[0]


def ordinal_filter_prunes_files(spark: SparkSession) -> bool:
    """Whether Spark tests a filter over a scan's rows' file ordinal (a lookup of their
    `_metadata`) against each file as it lists them, so that the other files are never opened: it
    pushes the filter below the projection that looks the ordinal up, down to the scan, unless
    `spark.sql.optimizer.avoidDoubleFilterEval` is on (Spark 4.2 on, SPARK-47672: a filter over a
    UDF's result stays above the projection there, so as not to run the UDF twice). Never on Spark
    Connect, whose ordinals come from a join."""
    if is_connect(spark):
        return False
    # asked first: a failed `get` costs 10-20 ms (0.2 s on first use), pyspark turning the Java
    # exception into Python's in ~70 py4j round trips
    if not spark.conf.isModifiable(_AVOID_DOUBLE_FILTER_EVAL):  # a Spark without the setting: pushed down
        return True
    return str(spark.conf.get(_AVOID_DOUBLE_FILTER_EVAL)).strip().lower() != "true"  # its default, if unset


_AVOID_DOUBLE_FILTER_EVAL = "spark.sql.optimizer.avoidDoubleFilterEval"


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
    return lambda path: jvm_column(shim.deleted_positions(spec, path._jc))


def deletes_spec(files: list[tuple[int, str, Iterable[ManifestEntry]]], every_file: bool = False) -> str | None:
    """The spec DeleteLoader.java reads: per (key, data file path, delete entries) with a
    position delete, a record of its key, path and one field per delete file or DV; with
    `every_file`, a first record `*` and a record of the key alone for each other file. None when
    a DV entry lacks its blob's place."""
    records = ["*"] if every_file else []
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
        elif every_file:
            records.append(str(key))
    return _RECORD.join(records)
