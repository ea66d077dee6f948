"""The JVM shim's stand-in where no JVM is reachable (Spark Connect), built from DataFrame operations.

A Spark Connect client has no py4j gateway, so `jvm/bridge.py` cannot load the shim. `ConnectBackend`
offers the parts of ShimHandle's face that statements need, with Python on the executors:
  - Parquet footer summaries (the same dicts as FooterStats.java) read with pyarrow, which every
    Spark Connect client has: a few on the client, more in one Spark job (`mapInArrow` over paths);
  - `pyice_bucket(n, value)` as a Python UDF hashing with core/model/hashing (Iceberg's murmur3);
  - `pyice_dv_positions` / `pyice_dv_serialize` (deletion vectors) as Python UDFs over
    core/format/deletion_vector;
  - many files listed / deleted / manifests read in one Spark job for the maintenance procedures;
  - the questions asked of a DataFrame's query execution (is it deterministic, its plan text, the
    temp views and caches over a table), answered from the JVM on a classic session and from the
    plan Spark Connect explains otherwise (`analyzed_deterministic`, `plan_text`, `temp_views`).
Table metadata is read and written by the client (core/format/fileio), so on Spark Connect the
warehouse must be a filesystem the client reaches too (local or mounted); object stores need a
classic session. Slower than the shim (a Python UDF, a Python worker stage), never different.
"""
from __future__ import annotations

import json
import os
import re
import struct
from typing import Any, Callable, Iterable, Iterator

from pyice_sql.core.format.fileio import local_path
from pyice_sql.core.plan.rules.expression_placement import NONDETERMINISTIC
from pyice_sql.spark.jvm.bridge import DRIVER_FOOTER_LIMIT, ListedFile

_PACK = {"BOOLEAN": "<?", "INT32": "<i", "INT64": "<q", "FLOAT": "<f", "DOUBLE": "<d"}


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect session (no py4j gateway behind it)."""
    return getattr(spark, "_jsparkSession", None) is None


def shuffle_partitions(spark: Any) -> int:
    """The session's `spark.sql.shuffle.partitions` (Spark's default 200 where unset)."""
    return int(str(spark.conf.get("spark.sql.shuffle.partitions", "200")).strip())


def conf_enabled(spark: Any, key: str, default: bool) -> bool:
    """A boolean Spark setting read as Spark reads it (trimmed, any case): `spark.conf` gives the
    text as set, so "TRUE" would otherwise read as false."""
    return str(spark.conf.get(key, str(default).lower())).strip().lower() == "true"


def analyzed_deterministic(df: Any) -> bool:
    """Whether Spark's analysis finds `df` deterministic. On Spark Connect this is read from the
    analyzed plan's text: Spark's non-deterministic functions, by name."""
    if not is_connect(df.sparkSession):
        return bool(df._jdf.queryExecution().analyzed().deterministic())
    analyzed = _section(df._explain_string(extended=True), "Analyzed Logical Plan")
    return re.search(r"\b(" + "|".join(sorted(NONDETERMINISTIC)) + r")\(", analyzed, re.IGNORECASE) is None


def plan_text(df: Any) -> str:
    """Spark's parsed, analyzed, optimized and physical plans of `df` (EXPLAIN EXTENDED's text)."""
    if not is_connect(df.sparkSession):
        return str(df._jdf.queryExecution().toString())
    return df._explain_string(extended=True)


def analyzed_text(df: Any) -> str:
    if not is_connect(df.sparkSession):
        return str(df._jdf.queryExecution().analyzed().toString())
    return _section(df._explain_string(extended=True), "Analyzed Logical Plan")


def is_local_data(df: Any) -> bool:
    """Whether `df` optimizes to data held in the plan itself (a LocalRelation: SQL VALUES, for one):
    Spark then evaluates it, and projections and filters of it, with no job, so caching it would
    only add one."""
    if not is_connect(df.sparkSession):
        return str(df._jdf.queryExecution().optimizedPlan().nodeName()) == "LocalRelation"
    optimized = _section(df._explain_string(extended=True), "Optimized Logical Plan")
    return optimized.lstrip().startswith("LocalRelation")


def reads_cached_data(df: Any) -> bool:
    """Whether `df` optimizes to rows Spark already caches: an InMemoryRelation under projections
    and filters only. Each read of it reads that cache, so caching it again would only add a job
    copying the rows into a second cache."""
    if not is_connect(df.sparkSession):
        node = df._jdf.queryExecution().optimizedPlan()
        while str(node.nodeName()) in _PASSING_NODES:
            node = node.children().head()
        return str(node.nodeName()) == "InMemoryRelation"
    optimized = _section(df._explain_string(extended=True), "Optimized Logical Plan").splitlines()[1:]
    for line in optimized:
        name = line.lstrip(" :+-|").split(" ", 1)[0]
        if name not in _PASSING_NODES:
            return name == "InMemoryRelation"
    return False


_PASSING_NODES = ("Project", "Filter")

_UNITS = {"": 0, "B": 0, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}


def within_broadcast_threshold(df: Any) -> bool:
    """Whether Spark would broadcast `df` as a join side by its size: its optimized plan's size
    estimate within `spark.sql.autoBroadcastJoinThreshold` (-1 turns broadcasting off). On Spark
    Connect the setting is read as text; text that does not read as a size answers no (the plain
    join is kept)."""
    spark = df.sparkSession
    if not is_connect(spark):
        threshold = int(spark._jsparkSession.sessionState().conf().autoBroadcastJoinThreshold())
    else:
        threshold = size_setting(spark, "spark.sql.autoBroadcastJoinThreshold", "10MB")
        if threshold is None:
            return False
    size = _size_estimate(df)
    return size is not None and 0 <= size <= threshold


def size_setting(spark: Any, key: str, default: str) -> int | None:
    """A byte-size Spark setting ("10MB", "1048576", "-1") in bytes, read from its text as Spark
    reads it (units of 1024, case ignored); None for text that does not read as a size."""
    setting = re.fullmatch(r"\s*(-?[0-9]+)\s*([kmgtpe]?)b?\s*", str(spark.conf.get(key, default)).lower())
    if setting is None:
        return None
    return int(setting.group(1)) * 1024 ** _UNITS[setting.group(2).upper()]


_EXBIBYTE = 2 ** 60


def size_at_most(df: Any, limit: int) -> bool:
    """Whether Spark's size estimate of `df` is known and at most `limit` bytes."""
    size = _size_estimate(df)
    return size is not None and size <= limit


def size_unknown(df: Any) -> bool:
    """Whether Spark has no size estimate for `df` (rows from Python's `createDataFrame` or an RDD):
    it then assumes `spark.sql.defaultSizeInBytes` (the largest size there is, by default), scaled
    by the projections above, until the rows are cached and counted. An estimate of an exbibyte or
    more is no relation's real size either."""
    size = _size_estimate(df)
    limit = _EXBIBYTE
    if not is_connect(df.sparkSession):
        limit = min(limit, int(df.sparkSession._jsparkSession.sessionState().conf().defaultSizeInBytes()))
    return size is not None and size >= limit


def fill_cache(df: Any) -> None:
    """Compute a persisted `df` into its cache (`df` planned after the persist: a plan computed
    before reads around the cache). On a classic session its plan's rows are counted, without the
    aggregate and shuffle of Spark's `count()` (AQE: the cache's stage, then one job, not three)."""
    if is_connect(df.sparkSession):
        df.count()
    else:
        df._jdf.queryExecution().toRdd().count()


def row_count_estimate(df: Any) -> int | None:
    """The rows Spark's statistics say `df` holds, where they know (a cache filled, a range, rows
    held in the plan); None where they do not (files, most projections of joins). On Spark Connect
    read from the plan's cost explain."""
    if not is_connect(df.sparkSession):
        count = df._jdf.queryExecution().optimizedPlan().stats().rowCount()
        return int(str(count.get())) if count.isDefined() else None
    found = re.search(r"Statistics\(sizeInBytes=[^,)]*, rowCount=([0-9.E+]+)",
                      _section(df._explain_string(mode="cost"), "Optimized Logical Plan"))
    return None if found is None else int(float(found.group(1)))


def _size_estimate(df: Any) -> float | None:
    """Spark's size estimate of `df`'s optimized plan in bytes; on Spark Connect read from the
    plan's cost explain (to its one decimal), None when that text does not read as a size."""
    if not is_connect(df.sparkSession):
        return int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    found = re.search(r"Statistics\(sizeInBytes=([0-9.]+) ?([KMGTPE]?)i?B",
                      _section(df._explain_string(mode="cost"), "Optimized Logical Plan"))
    return None if found is None else float(found.group(1)) * 1024 ** _UNITS[found.group(2)]


def temp_views(spark: Any) -> list[str]:
    """The session's local temp views."""
    if not is_connect(spark):
        views = spark._jsparkSession.sessionState().catalog().listLocalTempViews("*")
        return [views.apply(i).table() for i in range(views.size())]
    return [t.name for t in spark.catalog.listTables() if t.isTemporary and not t.namespace]


def drop_own_view(spark: Any, name: str) -> None:
    """Drops a temp view pyice_sql registered for one statement (never cached by name). On a classic
    session straight from the session catalog: `spark.catalog.dropTempView` first analyses the
    view's plan again and compares it with every cached plan, uncaching the equal ones (2-11 ms a
    view, warm, with two cached frames; more with more), which could drop a user's cache of the
    same rows."""
    if is_connect(spark):
        spark.catalog.dropTempView(name)
    else:
        spark._jsparkSession.sessionState().catalog().dropTempView(name)


def _section(explained: str, title: str) -> str:
    start = explained.find(f"== {title} ==")
    if start < 0:
        return explained
    end = explained.find("\n== ", start + 1)
    return explained[start:] if end < 0 else explained[start:end]


class ConnectBackend:
    """ShimHandle's face on Spark Connect (see the module docstring)."""

    mode = "spark-connect"
    version = "dataframe-only"

    def __init__(self, spark: Any) -> None:
        self._spark = spark

    def footer_stats(self, paths: Iterable[str]) -> list[dict]:
        """One FooterStats.java-shaped summary per Parquet file, in input order."""
        paths = list(paths)
        if len(paths) <= DRIVER_FOOTER_LIMIT:
            return [footer_summary(p) for p in paths]
        by_path = {f["path"]: f for f in map(json.loads, self._run(paths, _footer_json, "footers"))}
        return [by_path[p] for p in paths]

    def register_bucket_udf(self) -> None:
        from pyspark.sql.types import IntegerType

        self._spark.udf.register("pyice_bucket", bucket, IntegerType())

    def register_deletion_vector_udfs(self) -> None:
        """DeletionVectors.java's SQL functions as Python UDFs of the same names, types and errors."""
        from pyspark.sql.types import ArrayType, BinaryType, LongType

        self._spark.udf.register("pyice_dv_positions", dv_positions, ArrayType(LongType()))
        self._spark.udf.register("pyice_dv_serialize", dv_serialize, BinaryType())

    def list_many(self, directories: Iterable[str]) -> list[ListedFile]:
        return [ListedFile(*json.loads(r)) for r in self._run(list(directories), _list_json, "list files")]

    def live_entries(self, manifests: Iterable[str]) -> list[tuple[str, int]]:
        return [tuple(json.loads(r)) for r in self._run(list(manifests), _live_entries_json, "read manifests")]

    def delete_many(self, paths: Iterable[str]) -> list[tuple[str, str]]:
        return [tuple(json.loads(r)) for r in self._run(list(paths), _delete_json, "delete files")]

    def _run(self, items: list[str], per_item: Callable[[str], Iterator[str]], what: str) -> list[str]:
        """`per_item` over `items` on the executors, one Spark job; JSON strings back."""
        if not items:
            return []
        slices = max(1, min(len(items), 2 * shuffle_partitions(self._spark)))
        df = self._spark.createDataFrame([(p,) for p in items], "item string").repartition(slices)
        out = df.mapInArrow(_over_items(per_item), "out string")
        return [r.out for r in out.collect()]


def _over_items(per_item: Callable[[str], Iterator[str]]) -> Callable:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            out = [s for item in batch.column(0).to_pylist() for s in per_item(item)]
            yield pa.RecordBatch.from_arrays([pa.array(out, pa.string())], ["out"])
    return run


def bucket(n: int | None, value: Any) -> int | None:
    """Iceberg's bucket of a BIGINT, STRING, BINARY or DECIMAL value (partition_sql's argument forms)."""
    from pyice_sql.core.model.hashing import bucket_bytes, murmur3_32

    if n is None or value is None:
        return None
    return (murmur3_32(bucket_bytes(bytes(value) if isinstance(value, bytearray) else value)) & 0x7FFFFFFF) % n


def dv_positions(content: bytes | None, offset: int | None, length: int | None, cardinality: int | None,
                 path: str) -> list[int] | None:
    """`pyice_dv_positions`: the sorted positions of the deletion-vector blob at content[offset:offset+length]
    of the Puffin file `path`, checked against `cardinality` (unless null); errors name `path`."""
    from pyice_sql.core.format.deletion_vector import DeletionVectorError, deserialize_positions

    if content is None:
        return None
    if offset is None or length is None:
        raise DeletionVectorError("deletion vector entry lacks content_offset or content_size_in_bytes", path)
    if offset < 0 or length < 0 or offset + length > len(content):
        raise DeletionVectorError(f"deletion vector at offset {offset} length {length} runs past the end of the "
                                  f"file ({len(content)} bytes)", path)
    positions = deserialize_positions(bytes(content[offset:offset + length]), path)
    if cardinality is not None and len(positions) != cardinality:
        raise DeletionVectorError(f"deletion vector at offset {offset} holds {len(positions)} positions but its "
                                  f"manifest entry says {cardinality}", path)
    return positions.tolist()


def dv_serialize(positions: list[int] | None) -> bytes | None:
    """`pyice_dv_serialize`: the deletion-vector-v1 blob of the set of `positions` (any order, repeats)."""
    from pyice_sql.core.format.deletion_vector import serialize_positions

    if positions is None:
        return None
    if any(p is None for p in positions):
        raise ValueError("a deletion vector cannot hold a null row position")
    return serialize_positions(positions)


# -- work done per item on an executor (module-level: pickled by reference) ---------------------------------


def _footer_json(path: str) -> Iterator[str]:
    yield json.dumps(footer_summary(path))


def _list_json(directory: str) -> Iterator[str]:
    for root, _, names in os.walk(local_path(directory)):
        for name in names:
            st = os.stat(os.path.join(root, name))
            yield json.dumps([f"file:{os.path.join(root, name)}", st.st_size, int(st.st_mtime * 1000), False])


def _live_entries_json(manifest: str) -> Iterator[str]:
    import fastavro

    with open(local_path(manifest), "rb") as f:
        for entry in fastavro.reader(f):
            if entry["status"] != 2:  # 2: DELETED
                yield json.dumps([entry["data_file"]["file_path"], entry["data_file"].get("content", 0)])


def _delete_json(path: str) -> Iterator[str]:
    try:
        os.remove(local_path(path))
    except FileNotFoundError:
        pass
    except OSError as e:
        yield json.dumps([path, str(e)])


# -- Parquet footers ----------------------------------------------------------------------------------------


def footer_summary(path: str) -> dict:
    """FooterStats.java's summary of one Parquet file, from pyarrow's reading of the footer."""
    import pyarrow.parquet as pq

    local = local_path(path)
    meta = pq.ParquetFile(local).metadata
    leaves = _leaves(meta.schema.to_arrow_schema())
    columns = [_Column(meta.schema.column(j), *leaves[j]) for j in range(meta.num_columns)]
    splits = []
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        starts = []
        for j in range(group.num_columns):
            chunk = group.column(j)
            columns[j].add(chunk)
            data, dictionary = chunk.data_page_offset, chunk.dictionary_page_offset
            starts.append(dictionary if dictionary is not None and 0 < dictionary < data else data)
        if starts:
            splits.append(min(starts))
    return {"path": path, "length": os.path.getsize(local), "rowCount": meta.num_rows,
            "rowGroups": meta.num_row_groups, "splitOffsets": sorted(splits),
            "columns": [c.summary() for c in columns]}


def _leaves(schema: Any) -> list[tuple[list[str], int | None]]:
    """(name path, field id or None) of every Parquet leaf column in order, as FooterStats.java
    reports them."""
    import pyarrow as pa

    out: list[tuple[list[str], int | None]] = []

    def visit(field: Any, prefix: list[str]) -> None:
        path, t = prefix + [field.name], field.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                visit(t.field(i), path)
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            visit(t.value_field, path + ["list"])
        elif pa.types.is_map(t):
            visit(t.key_field, path + ["key_value"])
            visit(t.item_field, path + ["key_value"])
        else:
            raw = (field.metadata or {}).get(b"PARQUET:field_id")
            out.append((path, int(raw) if raw is not None else None))

    for f in schema:
        visit(f, [])
    return out


class _Column:
    """One leaf's statistics merged over row groups, as FooterStats.Column does."""

    def __init__(self, desc: Any, path: list[str], field_id: int | None) -> None:
        self.physical = desc.physical_type
        self.name = "BINARY" if self.physical == "BYTE_ARRAY" else self.physical  # parquet-mr's name
        self.path, self.field_id = path, field_id
        self.compressed = self.values = self.nulls = 0
        self.nulls_unknown = self.bounds_unknown = False
        self.low: tuple[Any, bytes] | None = None
        self.high: tuple[Any, bytes] | None = None

    def add(self, chunk: Any) -> None:
        self.compressed += chunk.total_compressed_size
        self.values += chunk.num_values
        s = chunk.statistics
        if s is None:
            self.nulls_unknown = self.bounds_unknown = True
            return
        if s.has_null_count:
            self.nulls += s.null_count
        else:
            self.nulls_unknown = True
        if s.has_min_max:
            try:
                low, high = _bound(self.physical, s.min, s.min_raw, -0.0), _bound(self.physical, s.max, s.max_raw, 0.0)
            except (TypeError, ValueError, struct.error):  # INT96 and NaN: no usable bounds, as in parquet-mr
                self.bounds_unknown = True
                return
            self.low = low if self.low is None or low[0] < self.low[0] else self.low
            self.high = high if self.high is None or high[0] > self.high[0] else self.high
        elif not s.has_null_count or s.null_count < chunk.num_values:
            self.bounds_unknown = True  # non-null values exist but min/max were not kept

    def summary(self) -> dict:
        bounds = not self.bounds_unknown and self.low is not None
        return {"path": self.path, "fieldId": self.field_id, "physicalType": self.name,
                "compressedSize": self.compressed, "valueCount": self.values,
                "nullCount": None if self.nulls_unknown else self.nulls,
                "min": self.low[1].hex() if bounds else None, "max": self.high[1].hex() if bounds else None}


def _bound(physical: str, value: Any, raw: Any, zero: float) -> tuple[Any, bytes]:
    """(comparable value, Parquet's plain encoding) of a min or max, as parquet-mr keeps it: a float
    zero bound is -0.0 as a min and +0.0 as a max, a NaN bound is no bound."""
    if physical in ("FLOAT", "DOUBLE"):
        if value != value:
            raise ValueError("NaN bound")
        if value == 0:
            value = raw = zero
    return value, _raw(physical, raw)


def _raw(physical: str, value: Any) -> bytes:
    """Parquet's plain encoding of a statistic (what FooterStats.java hands over as getMinBytes)."""
    if physical in _PACK:
        return struct.pack(_PACK[physical], value)
    if physical in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
        return value.encode("utf-8") if isinstance(value, str) else bytes(value)
    raise TypeError(f"no plain encoding for {physical} statistics")
