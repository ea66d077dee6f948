"""Planned files → one Spark DataFrame, with Iceberg's deletes applied by joins.

Spark reads the Parquet files itself, matching columns by Iceberg field id (so renamed,
dropped and re-added columns read right; tables written without ids are read by name).
Position deletes and deletion vectors are applied in the scan tasks by the JVM shim's per-file
filter (`file_keys`); where the shim is absent (Spark Connect) they are read as a
DataFrame and removed with a broadcast left-anti join on (file, row position). Equality deletes
are removed with a left-anti join on their columns (null-safe), limited to older data in the
same partition. Row identity comes from Spark's hidden `_metadata` column: `row_index`, and the
file as a 64-bit key (`file_keys.scan_keys`: its `file_size` where no other scanned file has
that size, else the hash of `file_path`, a percent-encoded URI kept raw: each planned file's
Spark spelling is computed once on the driver, `spark_paths`). The per-file facts (`_file`,
partition, sequence number of each file) are looked up by that key, or joined on the spelling
itself from a small table where the shim is absent.
"""
from __future__ import annotations

import dataclasses
import functools
import json

from pyspark.sql import Column, DataFrame, SparkSession, functions as F, types as T

from pyice_sql.core.errors import UnsupportedError
from pyice_sql.core.format.fileio import is_local
from pyice_sql.core.format.footer_cache import FOOTERS, Leaf, Leaves
from pyice_sql.core.model import types as it
from pyice_sql.core.model.manifest import DataFile, FileContent, ManifestEntry
from pyice_sql.core.model.default_values import read_as_initial_default
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.plan.defaults import default_sql
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.core.sql.dialect import DIALECT, quote_identifier as quote
from pyice_sql.spark.connect_backend import is_connect
from pyice_sql.spark.frames import aliased, column, select_sql
from pyice_sql.spark.jvm.file_format import data_file_format
from pyice_sql.spark.local_relation import local_rows
from pyice_sql.spark.read.file_keys import live_rows, lookup_facts, scan_keys
from pyice_sql.spark.read.spark_paths import local_key, spark_spellings
from pyice_sql.spark.schema import FIELD_ID_KEY, parquet_node_ids, schema_to_spark, to_spark_type

FILE_COL, POS_COL, SPEC_COL, PARTITION_COL, SEQ_COL = "_file", "_pos", "_spec_id", "_partition", "_seq"
FIRST_ROW_ID_COL = "__first_row_id"  # the data file's first_row_id (format v3 row lineage)
FILE_ORDINAL_COL = "__file_ordinal"  # the index of the row's file in the tasks read (bigint)
METADATA_COLUMNS = (FILE_COL, POS_COL, SPEC_COL, PARTITION_COL)
DELETE_FILE_PATH = T.StructField("file_path", T.StringType(), False, {FIELD_ID_KEY: 2147483546})
DELETE_POS = T.StructField("pos", T.LongType(), False, {FIELD_ID_KEY: 2147483545})
_KEY = "__path_key"
_SPARK_PATH = "__spark_path"  # `_metadata.file_path` as Spark reports it
_FILE_SIZE = "__file_size"  # `_metadata.file_size`
# the row's file: its size and Spark's spelling of its path (file_keys.scan_keys picks the key; the
# path is pruned from the scan when unused), and its position
_ROW_ID = [f"_metadata.file_path AS {_SPARK_PATH}", f"_metadata.file_size AS {_FILE_SIZE}",
           f"_metadata.row_index AS {POS_COL}"]
# the facts of a scanned row's data file, by which it is written back (`_file`, `_spec_id`,
# `_partition`), its position deletes joined (`__path_key`), its equality deletes scoped (`_seq`)
# and its row ids inherited (`__first_row_id`)
_FACTS = (T.StructField(FILE_COL, T.StringType()), T.StructField(_KEY, T.StringType()),
          T.StructField(SPEC_COL, T.IntegerType()), T.StructField(PARTITION_COL, T.StringType()),
          T.StructField(SEQ_COL, T.LongType()), T.StructField(FIRST_ROW_ID_COL, T.LongType()),
          T.StructField(FILE_ORDINAL_COL, T.LongType()))
# Position deletes are broadcast to the scan tasks while their estimated size stays below this;
# beyond it Spark picks the join (a shuffle of the scan).
_BROADCAST_DELETES_BYTES = 256 << 20


def manifest_path_key(col: Column) -> Column:
    """Canonical key of a path as stored in metadata (not percent-encoded)."""
    return F.regexp_replace(col, "^file:/+", "/")


def spark_path_key(col: Column) -> Column:
    """Canonical key of a path as Spark reports it in `_metadata.file_path` (percent-encoded URI).

    Evaluated once per row: a path without '%' decodes to itself, so only those with an escape
    pay for the regex + URL decoding (which tripled the cost of a 2M-row scan with row identity).
    """
    decoded = F.when(col.contains("%"), F.url_decode(F.regexp_replace(col, r"\+", "%2B"))).otherwise(col)
    return manifest_path_key(decoded)


def partition_key(f: DataFile) -> str:
    return json.dumps([f.spec_id, list(f.partition)], default=str)


_LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold"


# Iceberg stores proleptic Gregorian dates and timestamps: files written by Java (which carry no
# Spark calendar marker) are read as they are, whatever the session's rebase setting.
_READ_OPTIONS = {"recursiveFileLookup": "true", "datetimeRebaseMode": "CORRECTED", "int96RebaseMode": "CORRECTED"}


def _read_parquet(spark: SparkSession, schema: T.StructType, paths: list[str]) -> DataFrame:
    if len(paths) <= 32 or not all(is_local(p) for p in paths):
        return _load(spark, schema, paths)
    # Spark stats every path while building the DataFrame, in a Spark job of one task per path once
    # there are more than `threshold` (32) of them: ~10 s for 1,700 local files, where the driver
    # takes < 1 s. So local files are listed on the driver (remote stores keep the parallel job).
    previous = spark.conf.get(_LISTING_THRESHOLD, None)
    spark.conf.set(_LISTING_THRESHOLD, str(len(paths) + 1))
    try:
        return _load(spark, schema, paths)
    finally:
        if previous is None:
            spark.conf.unset(_LISTING_THRESHOLD)
        else:
            spark.conf.set(_LISTING_THRESHOLD, previous)


def _load(spark: SparkSession, schema: T.StructType, paths: list[str]) -> DataFrame:
    """`spark.read.schema(schema).options(...).format(...).load(*paths)` in the format
    `data_file_format` names (the shim's, whose scans cost less per file, where Spark can load it),
    built on the JVM's reader on a classic session, the paths handed over in one piece: pyspark's
    reader makes a py4j round trip per path and five more to find the active session for the
    schema (~0.25 ms each)."""
    reader = spark.read
    if is_connect(spark):
        return reader.schema(schema).options(**_READ_OPTIONS).parquet(*paths)
    from pyice_sql.spark.jvm.bridge import java_string_list, seq_of

    jvm = spark._jvm
    jreader = reader._jreader.schema(spark._jsparkSession.parseDataType(schema.json())).format(data_file_format(spark))
    for key, value in _READ_OPTIONS.items():
        jreader = jreader.option(key, value)
    return reader._df(jreader.load(seq_of(jvm, java_string_list(jvm, paths))))


def empty_frame(spark: SparkSession, schema: Schema, with_metadata: bool, file_facts: bool = False,
                file_ordinal: bool = False) -> DataFrame:
    fields = list(schema_to_spark(schema).fields)
    if with_metadata:
        fields += [T.StructField(FILE_COL, T.StringType()), T.StructField(POS_COL, T.LongType()),
                   T.StructField(SPEC_COL, T.IntegerType()), T.StructField(PARTITION_COL, T.StringType())]
    if file_facts:
        fields += [T.StructField(SEQ_COL, T.LongType()), T.StructField(FIRST_ROW_ID_COL, T.LongType())]
    if file_ordinal:
        fields.append(T.StructField(FILE_ORDINAL_COL, T.LongType()))
    return spark.createDataFrame([], T.StructType(fields))


def read_tasks(spark: SparkSession, schema: Schema, tasks: list[FileScanTask],
               with_metadata: bool = False, file_facts: bool = False, live_flag: str | None = None,
               file_ordinal: bool = False, row_filter: str | None = None) -> DataFrame:
    """The live rows of `tasks`' data files as a DataFrame of the table's columns.

    With `with_metadata`, adds `_file` (the manifest's path string), `_pos` (row position),
    `_spec_id` and `_partition` (a canonical text key of the file's partition tuple); with
    `file_facts`, those and `_seq` (the file's data sequence number) and `__first_row_id`, which row
    lineage inherits from (they are per-file facts like the others: no extra lookup); with
    `file_ordinal`, `__file_ordinal`, the index of the row's file in `tasks`: 8 bytes to carry
    through a shuffle in place of the path (`file_keys.paths_by_ordinal` turns it back).
    With `live_flag`, rows that position deletes remove are not filtered out here but flagged
    false in a column of that name, and the caller must filter on it: a statement puts its own
    predicate first, so the in-task filter loads the deletes of the files with a matching row only
    (Spark evaluates `a AND b` in order, and would put the filter of a scan below it first).
    With `row_filter` (Spark SQL over the table's columns), only the rows meeting it, tested before
    the position-delete filter for the same reason.
    """
    with_metadata = with_metadata or file_facts or file_ordinal
    if not tasks:
        empty = empty_frame(spark, schema, with_metadata, file_facts, file_ordinal)
        return empty.withColumn(live_flag, F.lit(True)) if live_flag else empty
    with_ids = not schema.has_list_or_map()
    names = [quote(f.name) for f in schema.fields]
    # keyed by path and offset: the deletion vectors of several data files share one Puffin file
    deletes = {(d.data_file.file_path, d.data_file.content_offset): d for t in tasks for d in t.deletes}
    # per distinct written schema (tasks share a few): the file's column types, and the columns
    # added since the file was written that read as their initial-default
    groups: dict[tuple[Schema | None, frozenset[int]], list[str]] = {}
    read_schemas: dict[int, tuple[Schema | None, frozenset[int]]] = {}
    # files whose snapshot expired, of a table whose columns were renamed or widened: as their footers say
    held = _held_schemas(spark, schema, [t for t in tasks if t.written_schema is None and t.changed_ids])
    for t in tasks:
        written = t.written_schema or held.get(t.file.file_path)
        key = id(written)
        if key not in read_schemas:
            read_schemas[key] = (_file_read_schema(schema, written, partial=t.written_schema is None),
                                 frozenset(f.field_id for f in read_as_initial_default(schema, written)))
        groups.setdefault(read_schemas[key], []).append(t.file.file_path)
    row_identity = with_metadata or bool(deletes)
    parts: list[tuple[DataFrame, list[str]]] = []
    for (read_schema, defaulted), paths in groups.items():
        part = _read_parquet(spark, schema_to_spark(read_schema or schema, with_ids), paths)
        if (read_schema is None and not defaulted and not (row_identity or live_flag or row_filter)
                and len(groups) == 1):
            return part
        parts.append((part, paths))

    @functools.cache
    def spellings() -> dict[str, str]:
        return {p: s for part, paths in parts for p, s in spark_spellings(part, paths).items()}

    pos_deletes = [d.data_file for d in deletes.values() if d.data_file.content == FileContent.POSITION_DELETES]
    eq_deletes = [d for d in deletes.values() if d.data_file.content == FileContent.EQUALITY_DELETES]
    # the per-file facts, when rows need them: looked up by the 64-bit file key when the scan's keys
    # are distinct, else a small table joined on the path; a position-delete join then matches rows
    # by their `__path_key`, so it needs no table of its own
    keyed = with_metadata or bool(eq_deletes)
    facts = [(t.file.file_path, local_key(t.file.file_path), t.file.spec_id, partition_key(t.file),
              t.data_sequence_number, t.file.first_row_id, i) for i, t in enumerate(tasks)] if keyed else []

    def identified(size: Column, path: Column, pos: Column) -> tuple[dict[str, Column], Column | None, bool]:
        """Over the row's file (its `_metadata.file_size` and `file_path` as `size`, `path`) and
        `pos`: the facts' columns (none: they are joined by the path), the position-delete filter
        (None: the deletes are joined), and whether those are all there is (no join follows)."""
        keys = key = looked_up = live = None
        if row_identity:
            found = scan_keys(spark, tasks, spellings, size, path)
            if found is not None:
                keys, key = found
        if pos_deletes and keys:
            live = live_rows(spark, tasks, keys, key, pos)
        if keyed and keys is not None:
            looked_up = lookup_facts(spark, dict(zip(keys, facts)), [f.dataType.simpleString() for f in _FACTS], key)
        found_facts = {} if looked_up is None else {f.name: c for c, f in zip(looked_up, _FACTS)}
        return (found_facts, live,
                (live is not None or not pos_deletes) and not eq_deletes and (looked_up is not None or not keyed))

    # Where one group read as written reaches the final projection with nothing joined, the row's
    # file and position are its `_metadata` fields, read there: a projection naming them first
    # would be one more analysis of the whole plan on the driver (~10-15 ms each)
    as_written = [read_schema is None and not defaulted for read_schema, defaulted in groups]
    # equality deletes are joined on the rows' columns, which must be named first: not direct, and
    # `identified` (shim calls) runs once
    direct = row_identity and as_written == [True] and not eq_deletes
    if direct:
        added, live, direct = identified(*(column(spark, f"_metadata.{c}")
                                           for c in ("file_size", "file_path", "row_index")))
    if not direct:
        added, live, _ = identified(F.col(_FILE_SIZE), F.col(_SPARK_PATH), F.col(POS_COL))
    frames = []
    for (part, _), (read_schema, defaulted), whole in zip(parts, groups, as_written):
        if whole:  # as written: the columns by name, in one round trip
            frames.append(part if direct else select_sql(part, names + (_ROW_ID if row_identity else [])))
            continue
        cols = [F.col(n) for n in names] if read_schema is None else [
            _as_current(r, f) for r, f in zip(read_schema.fields, schema.fields)]
        cols = [F.expr(default_sql(f.type, f.initial_default, f.name).sql(dialect=DIALECT)).alias(f.name)
                if f.field_id in defaulted else c for c, f in zip(cols, schema.fields)]
        frames.append(part.select(*cols, *[F.expr(e) for e in (_ROW_ID if row_identity else [])]))
    data = functools.reduce(DataFrame.union, frames)
    keep = F.expr(row_filter) if row_filter is not None else None
    if not row_identity and not live_flag:
        return data if keep is None else data.where(keep)
    # the position-delete filter: a column the caller filters on (the live flag), or part of this filter
    if live is not None:
        pos_deletes = []
        if live_flag:
            added[live_flag] = live
        else:
            keep = live if keep is None else keep & live
    elif live_flag:
        added[live_flag] = F.lit(True)  # deletes (if any) are applied by the joins below
    if keep is not None:
        data = data.where(keep)
    if keyed and FILE_COL not in added:  # no facts looked up: joined by the path
        files = local_rows(spark, [(spellings()[t.file.file_path], *f) for t, f in zip(tasks, facts)],
                           T.StructType([T.StructField(_SPARK_PATH, T.StringType()), *_FACTS]))
        data = data.join(F.broadcast(files), _SPARK_PATH)
    meta = [FILE_COL, POS_COL, SPEC_COL, PARTITION_COL] if with_metadata else []
    extra = [*meta, *([SEQ_COL, FIRST_ROW_ID_COL] if file_facts else []), *([FILE_ORDINAL_COL] if file_ordinal else []),
             *([live_flag] if live_flag else [])]
    if direct and not extra:  # the table's columns as written, filtered: no projection to add
        return data
    if direct or not pos_deletes and not eq_deletes and all(c in added or c == POS_COL for c in extra):
        # nothing joined after them: the added columns are computed in the final projection
        pos = column(spark, "_metadata.row_index" if direct else POS_COL)
        return select_sql(data, names, [aliased(added.get(c, pos), c) for c in extra])
    if added:
        data = data.select("*", *[c.alias(n) for n, c in added.items()])
    if pos_deletes:
        data = _apply_position_deletes(spark, data, pos_deletes, spellings(), keyed)
    if eq_deletes:
        data = _apply_equality_deletes(spark, schema, data, eq_deletes)
    return select_sql(data, names + [quote(c) for c in extra])


def _file_read_schema(schema: Schema, written: Schema | None, partial: bool = False) -> Schema | None:
    """`schema` as files written with schema `written` hold it, for Spark to read them by: each
    field (at any depth) under the name it was written with, a renamed one included, and at the
    type it was written with where it has been promoted since (int → long, float → double, wider
    decimal: Spark cannot widen Parquet types itself); a field added since under a name another
    field had then, under a name no file holds (so it reads NULL). None when that is `schema` itself.

    Spark matches a table without lists and maps by field id (`schema_to_spark`'s ids) and any
    other by name, and it pushes a filter into the Parquet reader by name either way: requested
    by their current names, a renamed column read NULL from older files of a table with a list or
    map, and a filter on a column named as another one was when the file was written (columns
    whose names were swapped, a field dropped and added again) skipped row groups by that other
    column's statistics. The caller renames the columns back (`_as_current`).

    `partial`: `written` holds only the fields of `schema` the files hold (`_footer_schema`), not
    the others they may hold under any name: every field they lack gets a name none holds."""
    if written is None or written is schema:
        return None
    old = written.id_to_field()
    changed = False

    def at_written(t: it.IcebergType, field_id: int | None) -> it.IcebergType:
        nonlocal changed
        if isinstance(t, it.StructType):
            held = old.get(field_id) if field_id is not None else None
            held_type = held.type if held is not None else None
            names = {f.name.lower() for f in held_type.fields} if isinstance(held_type, it.StructType) else set()
            return it.StructType(tuple(as_written(f, names) for f in t.fields))
        if isinstance(t, it.ListType):
            return dataclasses.replace(t, element=at_written(t.element, t.element_id))
        if isinstance(t, it.MapType):
            return dataclasses.replace(t, key=at_written(t.key, t.key_id), value=at_written(t.value, t.value_id))
        before = old.get(field_id) if field_id is not None else None
        if before is not None and it.is_primitive(before.type) and before.type != t and it.can_promote(before.type, t):
            changed = True
            return before.type
        return t

    def as_written(f: it.NestedField, written_names: set[str]) -> it.NestedField:
        """`f` as read from files whose struct holding it has fields `written_names` (lower case)."""
        nonlocal changed
        before = old.get(f.field_id)
        name = f.name if before is None else before.name
        if before is None and (partial or f.name.lower() in written_names):  # added since, under a name then taken
            name = f"__pyice_absent_{f.field_id}"
        changed = changed or name != f.name
        return dataclasses.replace(f, name=name, type=at_written(f.type, f.field_id))

    fields = tuple(as_written(f, {w.name.lower() for w in written.fields}) for f in schema.fields)
    return Schema(fields, schema.schema_id, schema.identifier_field_ids) if changed else None


def _held_schemas(spark: SparkSession, schema: Schema, tasks: list[FileScanTask]) -> dict[str, Schema]:
    """Data file path → the part of `schema` the file holds, as it holds it (names, types), from
    the footers of `tasks`' files (kept between scans: `FOOTERS`): those whose written schema is
    unknown (their snapshot expired) in a table whose columns were renamed or widened
    (`FileScanTask.changed_ids`). Equal schemas are one object."""
    if not tasks:
        return {}
    from pyice_sql.spark.connect_backend import ConnectBackend
    from pyice_sql.spark.jvm.bridge import load_shim

    def read(paths: list[str]) -> list[dict]:
        return (ConnectBackend(spark) if is_connect(spark) else load_shim(spark)).footer_stats(paths)

    files = [(t.file.file_path, t.file.file_size_in_bytes) for t in tasks]
    per_file = FOOTERS.leaves(files, read)
    held = {leaves: _footer_schema(schema, leaves, tasks[0].former_names) for leaves in set(per_file)}
    return {path: held[leaves] for (path, _), leaves in zip(files, per_file)}


def _footer_schema(schema: Schema, leaves: Leaves, former_names: dict[int, tuple[str, ...]] | None = None
                   ) -> Schema:
    """The fields of `schema` a Parquet file holds, by the field ids of its footer's leaf columns
    (a leaf without one, of a file written without ids, by its path under the current names or
    `former_names`: `parquet_node_ids`), under the file's names and at its physical types."""
    by_path = parquet_node_ids(schema, former_names) if any(leaf[0] is None for leaf in leaves) else {}
    by_id = {(leaf[0] if leaf[0] is not None else by_path.get(leaf[1])): leaf for leaf in leaves}

    def held(t: it.IcebergType, node_id: int, depth: int) -> tuple[it.IcebergType, tuple[str, ...]] | None:
        """`t` (the node `node_id`, named at `depth` of its paths) as the file holds it, and one of
        its leaves' paths; None where the file holds none of it."""
        if isinstance(t, it.StructType):
            kids = [(f, k) for f in t.fields if (k := held(f.type, f.field_id, depth + 1)) is not None]
            if not kids:
                return None
            return it.StructType(tuple(dataclasses.replace(f, name=k[1][depth + 1], type=k[0]) for f, k in kids)), \
                kids[0][1][1]
        if isinstance(t, it.ListType):  # <name>/list/element
            element = held(t.element, t.element_id, depth + 2)
            return None if element is None else (dataclasses.replace(t, element=element[0]), element[1])
        if isinstance(t, it.MapType):  # <name>/key_value/key, value
            key, value = held(t.key, t.key_id, depth + 2), held(t.value, t.value_id, depth + 2)
            if key is None and value is None:
                return None
            return (dataclasses.replace(t, key=key[0] if key else t.key, value=value[0] if value else t.value),
                    (key or value)[1])
        leaf = by_id.get(node_id)
        if leaf is None or len(leaf[1]) != depth + 1:
            return None
        return _held_type(t, leaf), leaf[1]

    fields = tuple(dataclasses.replace(f, name=h[1][0], type=h[0])
                   for f in schema.fields if (h := held(f.type, f.field_id, 0)) is not None)
    return Schema(fields, schema.schema_id, schema.identifier_field_ids)


def _held_type(t: it.IcebergType, leaf: Leaf) -> it.IcebergType:
    """The Iceberg type a Parquet leaf column holds a promotable column `t` at (int for long on
    INT32, float for double on FLOAT, its own decimal precision); else `t`."""
    _, _, physical, logical = leaf
    if t == it.LONG and physical == "INT32":
        return it.INT
    if t == it.DOUBLE and physical == "FLOAT":
        return it.FLOAT
    if isinstance(t, it.DecimalType) and logical.startswith("DECIMAL("):
        precision, scale = (int(x) for x in logical[len("DECIMAL("):-1].split(","))
        return it.DecimalType(precision, scale)
    return t


def _as_current(read: it.NestedField, f: it.NestedField) -> Column:
    """Column `read` (a field of `_file_read_schema`) as the table's field `f`: its name, its type
    widened, its nested fields renamed (a cast between structs goes by position)."""
    col = F.col(quote(read.name))
    if read.type != f.type:
        col = col.cast(to_spark_type(f.type, with_ids=False))
    return col.alias(f.name)


def read_position_deletes(spark: SparkSession, delete_files: list[DataFile]) -> DataFrame:
    """The (file_path, pos) rows of position delete files, as columns `_file`, `_pos`."""
    rows = _read_parquet(spark, T.StructType([DELETE_FILE_PATH, DELETE_POS]), [d.file_path for d in delete_files])
    return rows.select(F.col("file_path").alias(FILE_COL), F.col("pos").alias(POS_COL))


def _apply_position_deletes(spark: SparkSession, data: DataFrame, delete_files: list[DataFile],
                            spellings: dict[str, str], keyed: bool) -> DataFrame:
    """Anti-join on (file, row index). With `keyed` the rows carry their file's `__path_key` and
    the delete rows match on it; otherwise on Spark's spelling of the path: a deletion vector names
    its one data file, so its rows get the spelling straight from `spellings`, and the rows of
    position-delete files through a small broadcast table of the scanned files (which also drops
    rows aimed at files outside this scan)."""
    from pyice_sql.spark.read.deletion_vectors import is_deletion_vector, read_deletion_vector_rows
    dvs = [d for d in delete_files if is_deletion_vector(d)]
    files = [d for d in delete_files if not is_deletion_vector(d)]
    key = _KEY if keyed else _SPARK_PATH
    names = {p: local_key(p) for p in spellings} if keyed else spellings
    frames = [read_deletion_vector_rows(spark, dvs, names, key)] if dvs else []
    if files:
        rows = read_position_deletes(spark, files).select(manifest_path_key(F.col(FILE_COL)).alias(_KEY), POS_COL)
        if not keyed:
            targets = local_rows(spark, sorted({(local_key(p), s) for p, s in spellings.items()}), T.StructType(
                [T.StructField(_KEY, T.StringType()), T.StructField(_SPARK_PATH, T.StringType())]))
            rows = rows.join(F.broadcast(targets), _KEY).select(_SPARK_PATH, POS_COL)
        frames.append(rows)
    rows = functools.reduce(DataFrame.union, frames)
    width = max(len(s) for s in spellings.values()) + 40  # bytes per row in the broadcast hash table
    if sum(d.record_count for d in delete_files) * width <= _BROADCAST_DELETES_BYTES:
        rows = F.broadcast(rows)
    return data.join(rows, [key, POS_COL], "left_anti")


def _apply_equality_deletes(spark: SparkSession, schema: Schema, data: DataFrame,
                            delete_entries: list[ManifestEntry]) -> DataFrame:
    """Anti-join per distinct set of equality ids, restricted to older data of the same partition."""
    groups: dict[tuple[int, ...], list[ManifestEntry]] = {}
    for d in delete_entries:
        groups.setdefault(tuple(d.data_file.equality_ids or ()), []).append(d)
    top_level = {f.field_id: f for f in schema.fields}
    for ids, entries in groups.items():
        if any(i not in top_level for i in ids):
            raise UnsupportedError(f"equality deletes on nested or dropped columns (ids {list(ids)}) "
                                   f"are not supported: {entries[0].data_file.file_path}")
        fields = [top_level[i] for i in ids]
        rows = _read_parquet(spark, schema_to_spark(Schema(tuple(fields))),
                             [d.data_file.file_path for d in entries])
        info = spark.createDataFrame(
            [(d.data_file.file_path, d.sequence_number or 0, d.data_file.spec_id, partition_key(d.data_file),
              not d.data_file.partition) for d in entries],
            "__dpath string, __dseq long, __dspec int, __dpart string, __dglobal boolean")
        rows = rows.withColumn(_KEY, spark_path_key(F.col("_metadata.file_path")))
        rows = rows.join(F.broadcast(info.withColumn(_KEY, manifest_path_key(F.col("__dpath")))), _KEY)
        renamed = rows.select(*[F.col(f"`{f.name}`").alias(f"__d_{i}") for i, f in enumerate(fields)],
                              "__dseq", "__dspec", "__dpart", "__dglobal")
        cond = [data[f"`{f.name}`"].eqNullSafe(renamed[f"__d_{i}"]) for i, f in enumerate(fields)]
        cond.append(data[SEQ_COL] < renamed["__dseq"])
        cond.append(renamed["__dglobal"] | ((data[SPEC_COL] == renamed["__dspec"])
                                            & (data[PARTITION_COL] == renamed["__dpart"])))
        joined = cond[0]
        for c in cond[1:]:
            joined = joined & c
        data = data.join(renamed, joined, "left_anti")
    return data
