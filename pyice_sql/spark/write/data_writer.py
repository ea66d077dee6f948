"""Write a DataFrame as Iceberg data files: a Spark job, then one footer pass for metrics.

How a write works:
  1. The rows are cast to the table schema; every column carries its Iceberg field id as
     Parquet field-id metadata. Spark cannot put ids on list elements or map keys/values (and a
     partial set of ids makes Java read those columns as NULL), so tables with list/map columns
     are written with every node of the file schema given its id (`parquet_field_ids`) by the
     shim's DataFileParquetFormat, through which every write goes where Spark can load it by
     name (`data_file_format`: it also keeps YARN's defaults out of each task); where it
     cannot, with no ids at all, read through the name mapping.
  2. For a partitioned spec, one extra column per partition field holds the transformed value
     (computed in Spark SQL, bucket by the shim's Java UDF), rows are clustered by them and
     Spark's `partitionBy` writes one folder per partition tuple. The folder value is a tagged
     text form of the internal partition value that we decode exactly (`v<text>` when the text
     is path-safe, `x<hex>` otherwise), so no separate pass is needed to learn partitions.
  3. The job writes under a staging folder unique to this write, so listing it afterwards
     yields exactly the committed task outputs of this write and nothing else. Each file is
     then moved to where Iceberg Java would put it (`write/locations.py`: partition folders
     such as `ts_day=2024-01-02`, names `<task>-0-<operation id>-<count>.parquet`) and the
     staging folder is removed; so is the folder of a Spark job that fails. A write that fails
     later leaves only files no snapshot references, under the table's data folder: orphans
     that remove_orphan_files deletes.
  4. The footers of those files are read on the executors by the shim (no pass over data)
     and turned into DataFiles with exact sizes and column metrics. Parquet's statistics have no
     NaN counts: each task writing through DataFileParquetFormat counts its file's NaNs per
     float/double column and keeps them in the file's footer (NanCounts.java), so every file's
     counts are exact, as Iceberg Java's are. Through Spark's own Parquet source the job counts
     them instead (a Spark observation, same pass): a write with no NaN records 0 for every
     file, a one-file write gets the exact count, otherwise the count is left unknown (absent),
     as the spec allows.
"""
from __future__ import annotations

import re
import threading
import uuid
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any, Callable, Iterator, Sequence

from pyspark.sql import Column, DataFrame, Observation, SparkSession, functions as F, types as T

from pyice_sql.core import properties as props
from pyice_sql.core.commit.cleanup import staging_removed_on_failure
from pyice_sql.core.errors import ValidationError
from pyice_sql.core.faults import fault_point
from pyice_sql.core.format.fileio import FileIO
from pyice_sql.core.model import types as it
from pyice_sql.core.model.manifest import DataFile, FileContent
from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.sort_order import DESC, NULLS_FIRST, UNSORTED, SortOrder
from pyice_sql.spark.connect_backend import is_connect, size_setting
from pyice_sql.spark.frames import select_sql
from pyice_sql.spark.jvm.bridge import load_shim
from pyice_sql.spark.jvm.file_format import DATA_FILE_FORMAT, data_file_format
from pyice_sql.spark.observations import observe, observed_metrics
from pyice_sql.spark.schema import FIELD_ID_KEY, frame_schema, parquet_node_ids, to_spark_type
from pyice_sql.core.format.locations import data_location, file_name, new_file_location, new_operation_id, partition_to_path
from pyice_sql.spark.write.partition_sql import transform_sql
from pyice_sql.spark.write.stats import data_file_from_footer, float_leaves
from pyice_sql.core.sql.dialect import quote_identifier as quote

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
DEFAULT_BYTES_PER_ROW = 64
_SAFE = "^[A-Za-z0-9_.-]*$"
_FOLDER = re.compile(r"^(?P<name>[^=]+)=(?P<value>.*)$")


@dataclass(frozen=True)
class WriteContext:
    """What a writer needs of the table, and how to reach its files."""

    schema: Schema
    spec: PartitionSpec
    location: str
    properties: dict[str, str]
    io: FileIO
    footer_stats: Callable[[list[str]], list[dict]]
    bytes_per_row: float = DEFAULT_BYTES_PER_ROW
    specs: tuple[PartitionSpec, ...] = ()  # every spec of the table (delete files follow their data file's)
    sort_order: SortOrder = UNSORTED  # the table's write order: files are sorted by it and record its id


def to_table_columns(df: DataFrame, fields: tuple[it.NestedField, ...], with_ids: bool) -> DataFrame:
    """`df`'s columns of the Iceberg fields, cast to their Spark types and tagged with field ids.
    Where every column has its field's type already and none is a struct (whose fields carry ids
    of their own), as in row-level writes, the projection is built in one step: by the shim, or
    as SQL text without ids (spark/frames.py), not several round trips per column."""
    types = {f.name.lower(): f.dataType for f in frame_schema(df).fields}
    if all(f.name.lower() in types and not isinstance(types[f.name.lower()], T.StructType)
           and _nullable(types[f.name.lower()]) == _nullable(to_spark_type(f.type, with_ids=False)) for f in fields):
        if not with_ids:
            return select_sql(df, [f"{quote(f.name)} AS {quote(f.name)}" for f in fields])
        if not is_connect(df.sparkSession):
            target = T.StructType([T.StructField(f.name, to_spark_type(f.type), True, {FIELD_ID_KEY: f.field_id})
                                   for f in fields])
            shim = load_shim(df.sparkSession)
            return type(df)(shim.with_field_metadata(df._jdf, target.json()), df.sparkSession)
    return df.select(*cast_to_schema(df, fields, with_ids, types))


def cast_to_schema(df: DataFrame, fields: tuple[it.NestedField, ...], with_ids: bool,
                   types: dict[str, T.DataType] | None = None) -> list[Column]:
    """Columns of `df` cast to the Iceberg fields' Spark types, tagged with field ids (`types`:
    `df`'s column types by lower-case name, when the caller has them)."""
    if types is None:
        types = {f.name.lower(): f.dataType for f in frame_schema(df).fields}
    out = []
    for f in fields:
        col = _cast_value(F.col(quote(f.name)), f.type, with_ids, types.get(f.name.lower()))
        meta = {FIELD_ID_KEY: f.field_id} if with_ids else {}
        out.append(col.alias(f.name, metadata=meta))
    return out


def _cast_value(col: Column, t: it.IcebergType, with_ids: bool, source: T.DataType | None = None) -> Column:
    if isinstance(t, it.StructType):
        # an untyped NULL (a VALUES column of only NULLs) has no fields to take: build them as NULLs
        untyped = isinstance(source, T.NullType)
        nested = {f.name.lower(): f.dataType for f in source.fields} if isinstance(source, T.StructType) else {}
        return F.when(col.isNull(), F.lit(None)).otherwise(F.struct(*[
            _cast_value(F.lit(None) if untyped else col.getField(f.name), f.type, with_ids,
                        source if untyped else nested.get(f.name.lower())).alias(
                f.name, metadata={FIELD_ID_KEY: f.field_id} if with_ids else {})
            for f in t.fields]))
    # nullable all the way down: a cast may not turn a nullable nested field into a NOT NULL one
    # (Spark refuses it); NULLs in required fields are enforce_not_null's errors
    return col.cast(_nullable(to_spark_type(t, with_ids=False)))


def _nullable(t: T.DataType) -> T.DataType:
    """`t` with every level nullable, struct fields without metadata."""
    if isinstance(t, T.StructType):
        return T.StructType([T.StructField(f.name, _nullable(f.dataType), True) for f in t.fields])
    if isinstance(t, T.ArrayType):
        return T.ArrayType(_nullable(t.elementType), True)
    if isinstance(t, T.MapType):
        return T.MapType(_nullable(t.keyType), _nullable(t.valueType), True)
    return t


def enforce_not_null(table, df: DataFrame) -> DataFrame:
    """Fail the write job on a NULL in a required column or required nested field (struct field,
    list element, map value, at any depth): checked inline, no extra pass, values left as they are.
    Only the columns with a rule are replaced; the others (and v3 row lineage) pass through."""
    replaced = {}
    for f in table.metadata.schema().fields:
        rules = ([((f.name,), _is_null)] if f.required else []) + _null_rules(f.type, (f.name,))
        if rules:
            c = F.col(quote(f.name))
            checked = None
            for path, violated in rules:
                what = "column" if len(path) == 1 else "field"
                error = F.raise_error(F.lit(
                    f"NOT NULL violation: NULL value for required {what} {'.'.join(path)} of {table.full_name}"))
                checked = F.when(violated(c), error) if checked is None else checked.when(violated(c), error)
            replaced[f.name] = checked.otherwise(c)
    return df.withColumns(replaced) if replaced else df


def _null_rules(t: it.IcebergType, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], Callable[[Column], Column]]]:
    """(path, test) per required field below a value of type `t`: the test is true on a value
    holding NULL there (a NULL struct, list or map itself holds no field to violate). Tests are
    one-argument functions, as Spark's higher-order functions take them."""
    rules: list[tuple[tuple[str, ...], Callable[[Column], Column]]] = []
    if isinstance(t, it.StructType):
        for f in t.fields:
            sub = path + (f.name,)
            if f.required:
                rules.append((sub, _field_test(f.name, _is_null)))
            rules += [(p, _field_test(f.name, test)) for p, test in _null_rules(f.type, sub)]
    elif isinstance(t, (it.ListType, it.MapType)):
        is_list = isinstance(t, it.ListType)
        inner, required = (t.element, t.element_required) if is_list else (t.value, t.value_required)
        sub = path + ("element" if is_list else "value",)
        per_item = ([(sub, _is_null)] if required else []) + _null_rules(inner, sub)
        rules += [(p, _any_item(test, is_list)) for p, test in per_item]
    return rules


def _is_null(c: Column) -> Column:
    return c.isNull()


def _field_test(name: str, test: Callable[[Column], Column]) -> Callable[[Column], Column]:
    return lambda c: c.isNotNull() & test(c[name])


def _any_item(test: Callable[[Column], Column], is_list: bool) -> Callable[[Column], Column]:
    return lambda c: F.exists(c if is_list else F.map_values(c), test)


def partition_folder_sql(spec: PartitionSpec, schema: Schema) -> list[tuple[str, str, it.IcebergType]]:
    """(folder column name, Spark SQL of its tagged text value, partition result type) per field."""
    taken = {f.name.lower() for f in schema.fields}
    out = []
    for pf in spec.fields:
        src = schema.find_field(pf.source_id)
        path = schema.field_path(pf.source_id)
        if src is None or path is None:
            raise ValueError(f"partition field {pf.name} refers to a dropped column (id {pf.source_id})")
        value_sql = transform_sql(pf.transform, ".".join(quote(p) for p in path), src.type)
        result_type = pf.transform.result_type(src.type)
        name = pf.name if pf.name.lower() not in taken else pf.name + "_part"
        if result_type == it.BINARY or isinstance(result_type, it.FixedType):
            text = f"concat('x', hex({value_sql}))"
        else:
            s = f"cast({value_sql} as string)"
            text = f"CASE WHEN {s} RLIKE '{_SAFE}' THEN concat('v', {s}) ELSE concat('x', hex({s})) END"
        out.append((name, text, result_type))
    return out


def decode_folder_value(text: str, t: it.IcebergType) -> Any:
    """Inverse of the tagged folder text: the internal partition value."""
    if text == NULL_PARTITION:
        return None
    tag, body = text[0], text[1:]
    if tag == "x":
        raw = bytes.fromhex(body)
        if t == it.BINARY or isinstance(t, it.FixedType):
            return raw
        body = raw.decode("utf-8")
    if isinstance(t, it.PrimitiveType):
        if t.name in ("int", "long", "date", "time", "timestamp", "timestamptz"):
            return int(body)
        if t.name in ("float", "double"):
            return float(body)
        if t.name == "boolean":
            return body == "true"
        if t.name == "string":
            return body
    if isinstance(t, it.DecimalType):
        return Decimal(body)
    raise ValueError(f"cannot decode partition folder value {text!r} as {t}")


def _unescape(segment: str) -> str:
    """Undo Spark's escaping of partition folder names (%XX for a few ASCII characters)."""
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), segment)


ROW_LEVEL_FILE_SIZE = 64 * 1024 * 1024
"""The bytes of data files a rewrite's task reads (and so writes) at most where one task per core
would take more: the size of file Iceberg Java's row-level writes leave. Java sizes their tasks by
adaptive execution at 384 MiB of shuffled rows (its expected 128 MB file times an assumed 3x from
Spark's lz4 shuffle to zstd Parquet); the real ratio is nearer 6x (a 136 MB file was 877 MiB in
the shuffle), so its files come out at about 60 MB, not the 512 MB target. A later statement
touching a few rows then rewrites a file of that size."""


@contextmanager
def _whole_file_splits(spark: SparkSession, target_file_size: int, read: Sequence[DataFile]) -> Iterator[None]:
    """Scan splits of up to a target file's worth for a write that goes out as it was read: Spark
    sizes them by the session's `spark.sql.files.maxPartitionBytes` (128 MB by default, and no
    per-read option), packing small files into one split and cutting larger ones at row groups,
    no larger than the bytes read (each file's length and open cost) over
    `spark.sql.files.minPartitionNum`, set here to `_rewrite_tasks`.
    Set for the write and then restored, as the calendar below: a query another thread plans
    meanwhile on the same session sees the larger splits (its speed, not its result)."""
    splits = {_MAX_PARTITION_BYTES: str(max(target_file_size, 1))}
    read_bytes = sum(f.file_size_in_bytes for f in read)
    tasks = min(len(read), read_bytes // max(size_setting(spark, _MIN_PARTITION_SIZE, "1MB") or 1, 1))
    if not is_connect(spark):  # Spark's own default is the cores
        open_cost = size_setting(spark, _OPEN_COST, "4MB") or 0
        splits[_MIN_PARTITION_NUM] = str(_rewrite_tasks(read, tasks, spark.sparkContext.defaultParallelism, open_cost))
    elif tasks <= 1:  # (Spark Connect has no SparkContext to ask for them: Spark's default, the cores)
        splits[_MIN_PARTITION_NUM] = "1"
    with _session_conf(spark, splits, widest=True):
        yield


def _rewrite_tasks(read: Sequence[DataFile], most: int, cores: int, open_cost: int) -> int:
    """How many tasks rewrite the files `read`: one per core, or more where those would each write
    over `ROW_LEVEL_FILE_SIZE` (a multiple of the cores, so the rounds of tasks stay full and a full
    rewrite takes about as long as with one task per core), and never more than `most` (one per file,
    as Java's clustering by file gives each at most one task, and at least 1 MB each, as adaptive
    execution sizes Java's write tasks) nor so many that a split is smaller than the largest file
    (which would then be cut at row groups into smaller files). Spark packs files into about that
    many splits: files just over half a split each get one of their own (8 files of ~30 MB asked
    into 4 splits made 8), which only makes the files smaller."""
    read_bytes = sum(f.file_size_in_bytes for f in read)
    sized = cores * -(-read_bytes // (cores * ROW_LEVEL_FILE_SIZE))
    largest = max((f.file_size_in_bytes for f in read), default=0) + open_cost
    uncut = (read_bytes + len(read) * open_cost) // max(largest, 1)
    return max(1, min(cores, most), min(sized, most, uncut))


def split_size(spark: SparkSession, read: Sequence[DataFile]) -> int:
    """The size Spark cuts the files of a scan of `read` at, and packs its splits up to, under the
    session's settings (a classic session: the cores come from its SparkContext): `min(maxPartitionBytes,
    max(openCostInBytes, bytes read / minPartitionNum))`, a file's bytes read being its length and
    the open cost."""
    open_cost = size_setting(spark, _OPEN_COST, "4MB") or 0
    default_num = spark.conf.get(_MIN_PARTITION_NUM, None) or spark.conf.get(_LEAF_PARALLELISM, None)
    cores = max(1, int(default_num) if default_num else spark.sparkContext.defaultParallelism)
    read_bytes = sum(f.file_size_in_bytes + open_cost for f in read)
    return min(size_setting(spark, _MAX_PARTITION_BYTES, "128MB") or 0, max(open_cost, read_bytes // cores))


@contextmanager
def files_read_whole(spark: SparkSession, read: Sequence[DataFile]) -> Iterator[None]:
    """Scan splits that never cut a file of `read`, for a job whose tasks write something per file
    they read (the merge-on-read delete files of a DELETE read straight from the scan:
    merge_on_read.py), packed as Spark would pack them otherwise (`split_size`). With
    `minPartitionNum` = 1 the bytes read (every file's length and open cost) bound Spark's split
    size from below, so `maxPartitionBytes` alone sets it: that size, or the largest file (and its
    open cost) where that is larger. Overlapping writes of one session keep the larger splits
    (`_session_conf`'s `widest`), which cut nothing that either would not."""
    open_cost = size_setting(spark, _OPEN_COST, "4MB") or 0
    largest = max((f.file_size_in_bytes for f in read), default=0) + open_cost
    with _session_conf(spark, {_MAX_PARTITION_BYTES: str(max(split_size(spark, read), largest, 1)),
                               _MIN_PARTITION_NUM: "1"}, widest=True):
        yield


_MAX_PARTITION_BYTES = "spark.sql.files.maxPartitionBytes"
_MIN_PARTITION_NUM = "spark.sql.files.minPartitionNum"
_MIN_PARTITION_SIZE = "spark.sql.adaptive.coalescePartitions.minPartitionSize"
_OPEN_COST = "spark.sql.files.openCostInBytes"
_LEAF_PARALLELISM = "spark.sql.leafNodeDefaultParallelism"
_REBASE_IN_WRITE = ("spark.sql.parquet.datetimeRebaseModeInWrite", "spark.sql.parquet.int96RebaseModeInWrite")


@contextmanager
def proleptic_calendar(spark: SparkSession) -> Iterator[None]:
    """Write dates and timestamps as they are (Iceberg's proleptic Gregorian calendar), also before
    1582, whatever the session's rebase mode. Spark's Parquet writer takes the mode only from the
    session conf (no per-write option), so it is set for the write and then restored."""
    with _session_conf(spark, dict.fromkeys(_REBASE_IN_WRITE, "CORRECTED")):
        yield


# (session, key) -> [writes setting it now, the value before the first]: statements writing at
# once from threads of one session restore the user's value when the last one ends (each
# restoring what it found would leave an earlier write's value set for good)
_OVERRIDDEN: dict[tuple[int, str], list] = {}
_OVERRIDES = threading.Lock()


@contextmanager
def _session_conf(spark: SparkSession, values: dict[str, str], widest: bool = False) -> Iterator[None]:
    """The session conf with `values` set, the user's values restored afterwards. `widest` (split
    settings: `maxPartitionBytes`, `minPartitionNum`): where another write of the session holds a
    key now, the value giving the larger splits stays (the larger size, the smaller number)."""
    conf = spark.conf
    with _OVERRIDES:
        for k, v in values.items():
            held = _OVERRIDDEN.setdefault((id(spark), k), [0, None])
            if held[0] == 0:
                held[1] = conf.get(k, None)
            elif widest:
                now = int(conf.get(k))
                v = str(max(now, int(v)) if k == _MAX_PARTITION_BYTES else min(now, int(v)))
            held[0] += 1
            conf.set(k, v)
    try:
        yield
    finally:
        with _OVERRIDES:
            for k in values:
                held = _OVERRIDDEN[(id(spark), k)]
                held[0] -= 1
                if held[0] == 0:
                    del _OVERRIDDEN[(id(spark), k)]
                    if held[1] is None:
                        conf.unset(k)
                    else:
                        conf.set(k, held[1])


_NAN_COUNTS = "nan_counts"  # the write's observed metric: NaN values per float column

# Spark's `_SUCCESS` file would sit in the table's data folder referenced by nothing (an orphan).
NO_SUCCESS_MARKER = {"mapreduce.fileoutputcommitter.marksuccessfuljobs": "false"}


def write_options(spark: SparkSession) -> dict[str, str]:
    """The Hadoop options of pyice's Spark file writes (a writer's options are its job's Hadoop conf):
    no `_SUCCESS` marker, and local files through the shim's NioLocalFileSystem, which sets their
    permissions without starting a `chmod` process per file and folder (NioLocalFileSystem.java).
    Only where the shim's classes are on Spark's classpath, so Hadoop can load it by name."""
    if is_connect(spark) or load_shim(spark).mode != "classpath":
        return dict(NO_SUCCESS_MARKER)
    return {**NO_SUCCESS_MARKER, "fs.file.impl": "pyice.shim.NioLocalFileSystem", "fs.file.impl.disable.cache": "true"}


# Iceberg's Parquet layout properties (data files', delete files'), and the parquet-mr settings Spark's
# Parquet writer reads for them from its job's Hadoop conf (which a writer's options are).
_PARQUET_LAYOUT = (
    (props.PARQUET_ROW_GROUP_SIZE_BYTES, props.DELETE_PARQUET_ROW_GROUP_SIZE_BYTES, "parquet.block.size"),
    (props.PARQUET_PAGE_SIZE_BYTES, props.DELETE_PARQUET_PAGE_SIZE_BYTES, "parquet.page.size"),
    (props.PARQUET_PAGE_ROW_LIMIT, props.DELETE_PARQUET_PAGE_ROW_LIMIT, "parquet.page.row.count.limit"),
    (props.PARQUET_DICT_SIZE_BYTES, props.DELETE_PARQUET_DICT_SIZE_BYTES, "parquet.dictionary.page.size"),
)
_INT_MAX = 2 ** 31 - 1  # Iceberg reads each as an int


def _governing(properties: dict[str, str], data_name: str, delete_name: str, deletes: bool) -> str:
    """The property that governs a file: for delete files their `write.delete.*` one when set (else
    the data files'), as Iceberg's Parquet delete context reads them."""
    return delete_name if deletes and delete_name in properties else data_name


def parquet_codec(properties: dict[str, str], deletes: bool = False) -> str:
    """The Parquet compression codec (lower case) of a table's data or delete files."""
    name = _governing(properties, props.PARQUET_COMPRESSION, props.DELETE_PARQUET_COMPRESSION, deletes)
    return properties.get(name, props.PARQUET_COMPRESSION_DEFAULT).lower()


def zstd_level_options(spark: SparkSession, properties: dict[str, str], location: str,
                       deletes: bool = False) -> dict[str, str]:
    """The writer option for a zstd table's `write.parquet.compression-level` (delete files:
    `write.delete.parquet.compression-level`), the conf key Iceberg Java sets. Only from Spark 4 on:
    the Parquet library of Spark 3.5 (parquet-mr 1.13) keeps one zstd codec per JVM, made with the
    first write's level, so a level there would leak into every later write (PARQUET-2336 keyed that
    cache by level in 1.14). A level that is not a whole number fails on both."""
    name = _governing(properties, props.PARQUET_COMPRESSION_LEVEL, props.DELETE_PARQUET_COMPRESSION_LEVEL, deletes)
    if name not in properties or parquet_codec(properties, deletes) != "zstd":
        return {}
    text = properties[name].strip()
    if not re.fullmatch(r"-?[0-9]+", text):
        raise ValidationError(f"table property {name} = {properties[name]!r} of the table at {location} "
                              "must be a whole number (a zstd level)")
    return {"parquet.compression.codec.zstd.level": text} if int(spark.version.split(".")[0]) >= 4 else {}


def parquet_layout_options(properties: dict[str, str], location: str, deletes: bool = False) -> dict[str, str]:
    """The writer options for a table's `write.parquet.*` layout properties (row group, page and
    dictionary sizes, the page row limit), so its data files are laid out as Iceberg Java lays
    them out under the same properties. Unset ones keep the writer's defaults. `deletes`: for its
    delete files, where each `write.delete.parquet.*` property, when set, takes the place of its
    data file one."""
    out = {}
    for data_name, delete_name, option in _PARQUET_LAYOUT:
        name = _governing(properties, data_name, delete_name, deletes)
        if name in properties:
            text = properties[name].strip()
            if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= _INT_MAX:
                raise ValidationError(f"table property {name} = {properties[name]!r} of the table at {location} "
                                      f"must be a whole number from 1 to {_INT_MAX}")
            out[option] = text
    return out


FIELD_IDS_OPTION = "pyice.parquet.field-ids"  # DataFileWriteSupport.IDS
NAN_FIELDS_OPTION = "pyice.parquet.nan-fields"  # NanCounts.FIELDS


def parquet_field_ids(spark: SparkSession, schema: Schema) -> str | None:
    """The field ids of a table with list/map columns, for the shim's DataFileParquetFormat: one
    `path=id` entry per node of the Parquet schema Spark writes for it (`parquet_node_ids`; names
    with `%`, `/`, `,` or `=` escaped), so its files carry an id on every node, as Iceberg Java's
    do. None where that format cannot be
    used (`data_file_format` is Spark's own; `spark.sql.parquet.writeLegacyFormat`, whose other
    node names these paths do not spell): the files are then written with no ids at all, read
    through the table's name mapping."""
    if data_file_format(spark) != DATA_FILE_FORMAT \
            or spark.conf.get("spark.sql.parquet.writeLegacyFormat", "false").lower() == "true":
        return None
    return _option_entries(parquet_node_ids(schema))


def _option_entries(ids: dict[tuple[str, ...], int]) -> str:
    """`path=id` entries as the shim's write options take them: names with `%`, `/`, `,` or `=`
    percent-encoded, joined by `/`; entries by `,`."""
    return ",".join("/".join("".join(f"%{ord(c):02X}" if c in "%/,=" else c for c in name) for name in path)
                    + f"={field_id}" for path, field_id in ids.items())


def write_data_files(df: DataFrame, ctx: WriteContext, content: FileContent = FileContent.DATA,
                     rebalance: bool = False, known_rows: int | None = None, in_place: bool = False,
                     read_straight: Sequence[DataFile] = ()) -> list[DataFile]:
    """Write `df` (columns named as the table's) into new data files and describe them.

    `rebalance` (row-level writes, whose rows come scattered over a join's shuffle partitions):
    let adaptive execution regroup an unpartitioned table's rows into advisory-size tasks, so a
    MERGE touching a few rows writes one file, not one per shuffle partition (partitioned tables
    are clustered by partition below, which coalesces the same way).
    `known_rows`: the rows `df` holds, when the caller counted them already (cheaply, upstream);
    at most one file's worth is then written by one task without a shuffle (one Spark job fewer,
    and the same files: one per partition, sorted).
    `in_place`: each task writes the rows it holds, only sorted (they come grouped by data file
    from a merge-on-read delta write, whose tasks also write the delete files: see
    delete_writer.write_position_deletes_along).
    `read_straight` (the data files the rows are read straight from, with no shuffle in
    between, as a rewrite reads them; none: not so): an unpartitioned table's rows are
    written by the scan task that read them, with no shuffle. Iceberg Java's copy-on-write UPDATE
    and DELETE cluster them by `_file` through a shuffle for the same end: each file's rows stay
    together and in order, so a table clustered by a column stays clustered. Here the scan's
    splits are sized for it instead (`_whole_file_splits`): a task reads small files packed
    together or one file's row groups up to the target file size, and writes them as one file;
    no hash of paths decides how many tasks write (Java's layout depends on it: two files hashed
    to one task are written by one core).
    """
    schema, spec = ctx.schema, ctx.spec
    with_ids = not schema.has_list_or_map()
    out = to_table_columns(df, schema.fields, with_ids)
    folders = partition_folder_sql(spec, schema)
    for name, text_sql, _ in folders:
        out = out.withColumn(name, F.expr(text_sql))
    target = int(ctx.properties.get(props.WRITE_TARGET_FILE_SIZE_BYTES, props.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT))
    max_records = max(1, int(target / max(ctx.bytes_per_row, 1.0)))
    out = _distribute_and_sort(out, ctx, [F.col(quote(n)) for n, _, _ in folders], rebalance,
                               one_task=known_rows is not None and known_rows <= max_records, in_place=in_place,
                               as_read=bool(read_straight))
    nan_columns = float_leaves(schema, ctx.properties)
    file_format = data_file_format(df.sparkSession)
    observation = None
    if nan_columns and file_format != DATA_FILE_FORMAT:
        # the writer cannot count them per file: one array of the job's counts, in `nan_columns`'
        # order, as SQL text (a fixed number of round trips to the JVM, spark/frames.py)
        observation = Observation(f"pyice_nan_{uuid.uuid4().hex}")
        counts = ", ".join(f"sum(CASE WHEN isnan({'.'.join(quote(p) for p in path)}) THEN 1 ELSE 0 END)"
                           for path in nan_columns.values())
        out = observe(out, observation, F.expr(f"array({counts}) AS {_NAN_COUNTS}"))
    codec = parquet_codec(ctx.properties)
    operation_id = new_operation_id()
    write_dir = f"{data_location(ctx.location, ctx.properties)}/pyice-staging-{operation_id}"
    writer = (out.write.mode("error").option("maxRecordsPerFile", max_records).options(**write_options(df.sparkSession))
              .options(**parquet_layout_options(ctx.properties, ctx.location))
              .option("compression", "none" if codec == "uncompressed" else codec)
              .options(**zstd_level_options(df.sparkSession, ctx.properties, ctx.location)))
    if folders:
        writer = writer.partitionBy(*[n for n, _, _ in folders])
    splits = (_whole_file_splits(df.sparkSession, target, read_straight) if read_straight and not folders
              else nullcontext())
    nested_ids = None if with_ids else parquet_field_ids(df.sparkSession, schema)
    writer = writer.format(file_format)
    if nested_ids is not None:
        writer = writer.option(FIELD_IDS_OPTION, nested_ids)
    if nan_columns and file_format == DATA_FILE_FORMAT:
        writer = writer.option(NAN_FIELDS_OPTION, _option_entries({p: fid for fid, p in nan_columns.items()}))
    with proleptic_calendar(df.sparkSession), splits, staging_removed_on_failure(ctx.io, write_dir):
        writer.save(write_dir)
    described = describe_written_files(ctx, write_dir, folders, operation_id, content)
    if observation is not None:
        described = _with_nan_counts(described, observed_metrics(observation), nan_columns)
    fault_point("data-files")
    return described


def _distribute_and_sort(out: DataFrame, ctx: WriteContext, folders: list[Column], rebalance: bool,
                         one_task: bool = False, in_place: bool = False, as_read: bool = False) -> DataFrame:
    """Rows to tasks by `write.distribution-mode` (`hash`: by partition, the default for a
    partitioned table; `range`: by partition and sort order; `none`: as they come; an
    unpartitioned table's `as_read`, or rebalanced), or all to one task
    (`one_task`: every mode's layout for rows that fit one file), or left in their tasks
    (`in_place`), then each task sorts its rows by partition and the table's sort order, so every
    file is sorted by it."""
    keys = [_sort_key(f, ctx.schema) for f in ctx.sort_order.fields]
    mode = ctx.properties.get(props.WRITE_DISTRIBUTION_MODE, "").lower()
    if in_place:
        distributed = out
    elif one_task:
        distributed = out.coalesce(1)
    elif mode == "range" and (folders or keys):
        distributed = out.repartitionByRange(*folders, *keys)
    elif folders and mode != "none":
        distributed = out.repartition(*folders)
    elif as_read and not folders:
        distributed = out  # written by the task that read them: write_data_files' `read_straight`
    elif rebalance and not folders and mode != "none":
        distributed = out.hint("rebalance")
    else:
        distributed = out
    return distributed.sortWithinPartitions(*folders, *keys) if folders or keys else distributed


def _sort_key(field, schema: Schema) -> Column:
    path = schema.field_path(field.source_id)
    source = schema.find_field(field.source_id)
    if path is None or source is None:
        raise ValueError(f"sort field {field.transform} refers to a dropped column (id {field.source_id})")
    col = F.expr(transform_sql(field.transform, ".".join(quote(p) for p in path), source.type))
    if field.direction == DESC:
        return col.desc_nulls_first() if field.null_order == NULLS_FIRST else col.desc_nulls_last()
    return col.asc_nulls_first() if field.null_order == NULLS_FIRST else col.asc_nulls_last()


def _with_nan_counts(files: list[DataFile], totals: dict, columns: dict[int, tuple[str, ...]]) -> list[DataFile]:
    """NaN counts per file from the job's totals (an array in `columns`' order) where they are
    exact: all zero, or one file (a write through Spark's own Parquet source, which cannot count
    them per file)."""
    known = {fid: int(n or 0) for fid, n in zip(columns, totals.get(_NAN_COUNTS) or ())}
    nan_counts = known if len(files) == 1 else {fid: 0 for fid, n in known.items() if n == 0}
    return [replace(f, nan_value_counts=dict(nan_counts)) for f in files] if nan_counts else files


def written_files(ctx: WriteContext, write_dir: str) -> list[tuple[str, dict]]:
    """(path, footer summary) of each non-empty Parquet file a write job committed under `write_dir`.

    Spark writes a schema-only file for an empty input; such files are deleted, never committed.
    """
    files = [f.path for f in ctx.io.list(write_dir, recursive=True)
             if f.path.endswith(".parquet") and "/_temporary/" not in f.path and "/." not in f.path]
    out = []
    for path, footer in zip(files, ctx.footer_stats(files) if files else []):
        if int(footer["rowCount"]) == 0:
            ctx.io.delete(path)
        else:
            out.append((path, footer))
    return out


def describe_written_files(ctx: WriteContext, write_dir: str, folders: list[tuple[str, str, it.IcebergType]],
                           operation_id: str, content: FileContent = FileContent.DATA) -> list[DataFile]:
    """Move each staged file to its Iceberg location and describe it there."""
    staged = [(path, footer, _partition_of(path, write_dir, folders)) for path, footer in written_files(ctx, write_dir)]
    out = []
    paths = [(p, partition_to_path(ctx.spec, ctx.schema, part) if folders else "") for p, _, part in staged]
    for (path, footer, partition), final in zip(staged, final_locations(ctx, paths, operation_id)):
        ctx.io.move(path, final)
        out.append(replace(data_file_from_footer(footer, ctx.schema, ctx.properties, final, partition,
                                                 ctx.spec.spec_id, content), sort_order_id=ctx.sort_order.order_id))
    ctx.io.delete_tree(write_dir)
    return out


_SPARK_FILE = re.compile(r"part-(\d+)-.*[.-]c(\d+)")


def final_locations(ctx: WriteContext, staged: list[tuple[str, str]], operation_id: str,
                    deletes: bool = False) -> list[str]:
    """Iceberg's location for each (staged path, partition path) of one write: files are numbered
    per Spark task (the partition id in Spark's file name), in the order that task wrote them."""
    order = sorted(range(len(staged)), key=lambda i: _task_and_count(staged[i][0]) + (staged[i][0],))
    counts: dict[int, int] = {}
    out = [""] * len(staged)
    for i in order:
        task = _task_and_count(staged[i][0])[0]
        counts[task] = counts.get(task, 0) + 1
        name = file_name(task, 0, operation_id, counts[task], deletes)
        out[i] = new_file_location(ctx.location, ctx.properties, staged[i][1], name)
    return out


def _task_and_count(path: str) -> tuple[int, int]:
    m = _SPARK_FILE.search(path.rsplit("/", 1)[-1])
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _partition_of(path: str, write_dir: str, folders: list[tuple[str, str, it.IcebergType]]) -> tuple:
    if not folders:
        return ()
    rel = path[len(write_dir):].strip("/").split("/")[:-1]
    values = {}
    for seg in rel:
        m = _FOLDER.match(seg)
        if m:
            values[_unescape(m.group("name"))] = _unescape(m.group("value"))
    return tuple(decode_folder_value(values[name], t) for name, _, t in folders)
