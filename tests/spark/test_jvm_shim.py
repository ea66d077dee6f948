"""The JVM shim: Parquet footer stats, Iceberg bucket UDF, no-clobber file operations, both load paths."""
from __future__ import annotations

import datetime as dt
import json
import math
import os
import struct
import subprocess
import sys
import textwrap
import zipfile
from decimal import Decimal
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
MASK = 0x7FFFFFFF


@pytest.fixture(scope="module")
def shim(spark):
    from pyice_sql.spark.jvm.bridge import load_shim

    handle = load_shim(spark)
    handle.register_bucket_udf()
    return handle


def _jar_on_driver_classpath(spark) -> bool:
    """The shim jar among the URLs of the driver's class loader (spark-submit puts `spark.jars` there
    when it launches the JVM; a later session in the same JVM only ships them to executors)."""
    from pyice_sql.spark.jvm.bridge import shim_jar

    jvm = spark.sparkContext._jvm
    loader, urls = jvm.java.lang.Thread.currentThread().getContextClassLoader(), []
    while loader is not None:
        if loader.getClass().getName().endswith("URLClassLoader"):
            urls += [str(u.toString()) for u in loader.getURLs()]
        loader = loader.getParent()
    return any(u.endswith(Path(shim_jar()).name) for u in urls)


def test_handshake_and_mode(spark, shim):
    from pyice_sql.spark.jvm.bridge import load_shim, shim_version

    # The shared session (tests/conftest.py) normally has the jar on spark.jars; either way the mode must
    # follow the driver's class path, and the other load path is covered by test_load_path_in_fresh_jvm.
    assert shim.mode == ("classpath" if _jar_on_driver_classpath(spark) else "loader")
    assert shim.version == shim_version()
    assert load_shim(spark)._core is shim._core  # loaded once per SparkContext


def test_jar_is_built_once_and_cached(tmp_path):
    from pyice_sql.spark.jvm.bridge import shim_jar, shim_version

    jar = shim_jar(cache_dir=tmp_path)
    assert shim_jar(cache_dir=tmp_path) == jar
    assert [p.name for p in tmp_path.iterdir()] == [Path(jar).name]  # temp build dir cleaned up
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
        assert {"pyice/shim/FooterStats.class", "pyice/shim/Bucket.class", "pyice/shim/BucketUDF.class",
                "pyice/shim/FileOps.class", "pyice/shim/Shim.class"} <= names
        assert z.read("pyice/shim/build-id.txt").decode() == shim_version().split("+")[1]


# ---------------------------------------------------------------------------------------------------------
# Footer stats against pyarrow's reading of the same file


def _footer_fixture(spark, out: Path) -> str:
    from pyspark.sql.types import (BinaryType, BooleanType, DecimalType, DoubleType, IntegerType, LongType,
                                   StringType, StructField, StructType, TimestampType)

    def f(name, typ, fid):
        return StructField(name, typ, True, {"parquet.field.id": fid})

    schema = StructType([
        f("id", LongType(), 1), f("name", StringType(), 2), f("price", DecimalType(10, 2), 3),
        f("flag", BooleanType(), 4), f("score", DoubleType(), 5), f("ts", TimestampType(), 6),
        f("raw", BinaryType(), 7), f("sparse", StringType(), 8),
        f("nested", StructType([f("a", IntegerType(), 10), f("b", StringType(), 11)]), 9),
        f("small", IntegerType(), 12), f("big", StringType(), 13),
        f("fnan", DoubleType(), 14),
    ])
    base = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
    names = ["alpha", "Zulu", "é-accent", "😀 emoji", "", "zz\u00ff"]
    rows = []
    for i in range(1200):
        rows.append((
            i * 3 - 500,
            None if i % 7 == 0 else f"{names[i % len(names)]}{i}",
            Decimal(i * 17 - 9000) / 100,
            i % 3 == 0,
            None if i % 11 == 0 else (i - 600) / 7.0,
            base + dt.timedelta(seconds=i * 3607),
            bytes([(i * 37) % 256, 255 - i % 256, 0]),
            None if i < 700 else f"s{i % 97}",
            (i - 50 if i % 5 else None, f"n{i % 13}"),
            -(i % 301) if i % 2 else i % 257,
            "b" * 5000 if i == 1000 else f"b{i}",  # parquet-mr keeps no min/max above 4 KiB
            float("nan") if i == 0 else i / 2,  # NaN first: the chunk's min/max are NaN
        ))
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    (spark.createDataFrame(rows, schema).coalesce(1).write
     .option("parquet.block.size", 4096).option("compression", "snappy").parquet(str(out)))
    files = sorted(out.glob("*.parquet"))
    assert len(files) == 1
    return str(files[0])


def _decode(physical: str, hexval: str):
    raw = bytes.fromhex(hexval)
    return {"INT32": lambda: struct.unpack("<i", raw)[0], "INT64": lambda: struct.unpack("<q", raw)[0],
            "FLOAT": lambda: struct.unpack("<f", raw)[0], "DOUBLE": lambda: struct.unpack("<d", raw)[0],
            "BOOLEAN": lambda: raw != b"\x00"}.get(physical, lambda: raw)()


def _arrow_field_id(arrow_schema, path: list[str]) -> int | None:
    field = arrow_schema.field(path[0])
    for name in path[1:]:
        field = field.type.field(name)
    md = field.metadata or {}
    return int(md[b"PARQUET:field_id"]) if b"PARQUET:field_id" in md else None


def _lacks_bounds(s) -> bool:
    return not s.has_min_max or any(isinstance(v, float) and math.isnan(v) for v in (s.min_raw, s.max_raw))


def test_footer_stats_match_pyarrow(spark, shim, tmp_path):
    import pyarrow.parquet as pq

    path = _footer_fixture(spark, tmp_path / "t")
    [stats] = shim.footer_stats([path])
    pf = pq.ParquetFile(path)
    md = pf.metadata
    assert md.num_row_groups > 1, "fixture should span several row groups"

    assert stats["path"] == path
    assert stats["length"] == os.path.getsize(path)
    assert stats["rowCount"] == md.num_rows == 1200
    assert stats["rowGroups"] == md.num_row_groups

    def start(c):
        d = c.dictionary_page_offset
        return d if c.has_dictionary_page and d is not None and 0 < d < c.data_page_offset else c.data_page_offset

    rgs = [md.row_group(r) for r in range(md.num_row_groups)]
    assert stats["splitOffsets"] == sorted(min(start(rg.column(j)) for j in range(rg.num_columns)) for rg in rgs)

    cols = stats["columns"]
    assert [".".join(c["path"]) for c in cols] == [md.schema.column(j).path for j in range(md.num_columns)]
    for j, col in enumerate(cols):
        chunks = [rg.column(j) for rg in rgs]
        where = col["path"]
        assert col["fieldId"] == _arrow_field_id(pf.schema_arrow, col["path"]), where
        assert {"BINARY": "BYTE_ARRAY"}.get(col["physicalType"], col["physicalType"]) == chunks[0].physical_type
        assert col["compressedSize"] == sum(c.total_compressed_size for c in chunks), where
        assert col["valueCount"] == sum(c.num_values for c in chunks), where
        sts = [c.statistics for c in chunks]
        if not all(s is not None and s.has_null_count for s in sts):  # a chunk without statistics
            assert col["nullCount"] is None and col["min"] is None and col["max"] is None, where
            continue
        assert col["nullCount"] == sum(s.null_count for s in sts), where
        with_values = [s for s in sts if s.has_min_max]
        if any(_lacks_bounds(s) and s.null_count < c.num_values for s, c in zip(sts, chunks)):
            assert col["min"] is None and col["max"] is None, where
            continue
        assert with_values, where
        assert _decode(col["physicalType"], col["min"]) == min(s.min_raw for s in with_values), where
        assert _decode(col["physicalType"], col["max"]) == max(s.max_raw for s in with_values), where

    by_name = {".".join(c["path"]): c for c in cols}
    assert [by_name[n]["fieldId"] for n in ("id", "nested.a", "nested.b", "small")] == [1, 10, 11, 12]
    assert by_name["name"]["logicalType"] == "STRING"
    assert by_name["price"]["logicalType"] == "DECIMAL(10,2)" and by_name["price"]["physicalType"] == "INT64"
    assert by_name["ts"]["logicalType"] == "TIMESTAMP(MICROS,true)"
    assert by_name["id"]["logicalType"] is None
    # parquet-mr drops a chunk's statistics above 4 KiB: that column gets no bounds and no null count
    assert by_name["big"]["min"] is None and by_name["big"]["max"] is None and by_name["big"]["nullCount"] is None
    assert by_name["big"]["valueCount"] == 1200
    # parquet-mr ignores NaN min/max when reading: the null count stays, the bounds go
    assert by_name["fnan"]["min"] is None and by_name["fnan"]["nullCount"] == 0
    # all-null chunks (sparse is null in the first row groups) do not hide the other chunks' bounds
    sparse = [md.schema.column(j).path for j in range(md.num_columns)].index("sparse")
    assert any(not rg.column(sparse).statistics.has_min_max for rg in rgs)
    assert bytes.fromhex(by_name["sparse"]["min"]) == b"s0"
    # signed ints and unsigned (byte-wise) strings are compared with the column's comparator
    assert _decode("INT32", by_name["small"]["min"]) == -300
    assert bytes.fromhex(by_name["name"]["max"]).decode() == max(
        (r for r in pq.read_table(path, columns=["name"]).column(0).to_pylist() if r is not None),
        key=lambda s: s.encode())


@pytest.mark.parametrize("where", ["driver", "executors"])
def test_footer_stats_many_files_keep_order(spark, shim, tmp_path, monkeypatch, where):
    """Local files are read by the driver's threads (no Spark job) up to LOCAL_DRIVER_FOOTER_LIMIT,
    beyond it (or remote) in one job: both keep the input order."""
    from pyice_sql.spark.jvm import bridge

    out = tmp_path / "many"
    spark.range(0, 50, 1, 12).selectExpr("id", "id * 2 AS twice").write.parquet(str(out))
    files = sorted(str(p) for p in out.glob("*.parquet"))
    uris = ["file://" + files[0]] + files[1:]
    if where == "executors":
        monkeypatch.setattr(bridge, "LOCAL_DRIVER_FOOTER_LIMIT", 0)
    group = f"footers-{where}"
    spark.sparkContext.setJobGroup(group, group)
    try:
        stats = shim.footer_stats(uris)
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    assert len(spark.sparkContext.statusTracker().getJobIdsForGroup(group)) == (where == "executors")
    assert len(uris) > bridge.DRIVER_FOOTER_LIMIT
    assert [s["path"] for s in stats] == uris
    assert sum(s["rowCount"] for s in stats) == 50
    assert all(c["fieldId"] is None for s in stats for c in s["columns"])
    assert shim.footer_stats([]) == []


@pytest.mark.parametrize("items", [
    [f"/w/db/t/data/p=ä b%20/{i:05d}-ünï code.parquet" for i in range(3000)] + ["s3://b/k\nnew line", "z"],
    ["a\0b", "c"],  # a string holding the separator keeps py4j's own conversion
    ["x", "", "y", ""],  # as does an empty one
    [],
])
def test_java_string_list_keeps_every_string_in_order(spark, items):
    """The list reaches the JVM exactly as given, in a few py4j round trips whatever its length."""
    from py4j import clientserver

    from pyice_sql.spark.jvm.bridge import java_string_list

    jvm = spark.sparkContext._jvm
    sent = []
    original = clientserver.ClientServerConnection.send_command

    def counting(self, command):
        sent.append(command)
        return original(self, command)

    clientserver.ClientServerConnection.send_command = counting
    try:
        jlist = java_string_list(jvm, items)
    finally:
        clientserver.ClientServerConnection.send_command = original
    if len(items) > 100:
        assert len(sent) < 25  # resolving the JVM classes, then one call each
    joined = jvm.java.lang.String.join("\1", jlist)  # one string back: no per-element calls
    assert jlist.size() == len(items)
    assert (joined.split("\1") if items else []) == items


def _answers(calls):
    """Runs `calls()` and returns (its result, the length of every py4j answer it received)."""
    from py4j import clientserver

    lengths = []
    original = clientserver.ClientServerConnection.send_command

    def recording(self, command):
        answer = original(self, command)
        lengths.append(len(answer.encode("utf-8")))
        return answer

    clientserver.ClientServerConnection.send_command = recording
    try:
        return calls(), lengths
    finally:
        clientserver.ClientServerConnection.send_command = original


# py4j writes a longer answer in several socket writes, and the last waits ~40 ms for a delayed TCP ack
PY4J_ONE_WRITE = 8192


@pytest.mark.parametrize("size", [0, 1, 6000, 6001, 40_000, 300_000])
def test_long_file_reads_arrive_whole_in_one_write_answers(shim, tmp_path, size):
    """read_all of any size returns the file's bytes exactly; up to Text.java's limit of pieces, no
    py4j answer is longer than one socket write."""
    data = os.urandom(size)
    path = str(tmp_path / "blob")
    shim.write_new(path, data)
    got, lengths = _answers(lambda: shim.read_all(path))
    assert got == data
    if size <= 64 * 6000:
        assert max(lengths) <= PY4J_ONE_WRITE


@pytest.mark.parametrize("texts", [
    ["x" * 100],
    [f"file:/w/db/t/data/{i:05d}-ünï code.parquet" for i in range(800)],
    ["a\\b\n\r" * 700, "\U0001F600" * 3000],  # escapes and surrogate pairs across the pieces' bounds
    ["é" * 2699 + "\U0001F600" + "z" * 5000],
    ["y" * 400_000],  # beyond the pieces' limit: whole
])
def test_joined_texts_arrive_whole_in_one_write_answers(spark, shim, texts):
    gateway = spark.sparkContext._gateway
    items = gateway.new_array(gateway.jvm.java.lang.String, len(texts))
    for i, t in enumerate(texts):
        items[i] = t
    got, lengths = _answers(lambda: shim.joined(items, "\n"))
    assert got == "\n".join(texts)
    if len(got) <= 64 * 2700:
        assert max(lengths) <= PY4J_ONE_WRITE


@pytest.mark.parametrize("width", [3, 400])
def test_frame_schema_equals_pyspark_in_one_write_answers(spark, width):
    """A wide frame's schema (its JSON passes 8 KB) arrives whole, metadata and nesting included."""
    from pyspark.sql import functions as F

    from pyice_sql.spark.schema import frame_schema

    frame = spark.range(1).select(
        F.struct(F.col("id").alias("inner"), F.lit("ü").alias("ünï")).alias("nested"),
        *[(F.col("id") + i).alias(f"column_number_{i}", metadata={"parquet.field.id": i}) for i in range(width)])
    got, lengths = _answers(lambda: frame_schema(frame))
    assert got == frame.schema and got.fields[1].metadata == {"parquet.field.id": 0}
    assert max(lengths) <= PY4J_ONE_WRITE


def test_footer_stats_missing_file_fails(shim, tmp_path):
    with pytest.raises(Exception, match="no-such.parquet"):
        shim.footer_stats([str(tmp_path / "no-such.parquet")])


def test_list_and_map_files_carry_every_field_id(ice, shim, warehouse):
    """Spark puts no ids on list elements or map keys/values; the shim's DataFileParquetFormat does,
    on every column of each file (the ids as the table's schema assigned them). Where Spark cannot
    look that format up by name (the shim loaded into a running session), no column has an id:
    never a partial set."""
    from pyice_sql.core.catalog.base import TableIdentifier

    ice.sql("CREATE TABLE local.db.nested (id int, arr array<int>, `m,=/%` map<string, struct<z: int>>) USING iceberg")
    ice.sql("INSERT INTO local.db.nested VALUES (1, array(1), map('k', named_struct('z', 2))), (2, NULL, NULL)")
    table = ice.load("local", TableIdentifier(("db",), "nested"))
    schema = table.metadata.schema()
    arr, m = schema.fields[1].type, schema.fields[2].type
    expected = {("id",): schema.fields[0].field_id, ("arr", "list", "element"): arr.element_id,
                ("m,=/%", "key_value", "key"): m.key_id, ("m,=/%", "key_value", "value", "z"): m.value.fields[0].field_id}
    if shim.mode != "classpath":
        expected = dict.fromkeys(expected)
    files = [str(p) for p in Path(warehouse, "db", "nested", "data").rglob("*.parquet")]
    assert files
    for stats in shim.footer_stats(files):
        assert {tuple(c["path"]): c["fieldId"] for c in stats["columns"]} == expected


def _property_keys(conf) -> set[str]:
    found, it = set(), conf.iterator()
    while it.hasNext():
        found.add(it.next().getKey())
    return found


def test_data_file_writes_leave_yarn_defaults_out_of_their_tasks(spark, shim):
    """DataFileParquetFormat.withoutYarnDefaults, on a write job's Hadoop configuration as Spark
    builds it: every property whose only source is YARN's defaults goes; a YARN property the user
    set stays, and so does every other default. Truth: the sources Hadoop records for each."""
    jvm = spark._jvm
    conf = jvm.org.apache.hadoop.mapreduce.Job.getInstance(
        spark._jsparkSession.sessionState().newHadoopConf()).getConfiguration()
    conf.set("yarn.resourcemanager.hostname", "rm.example")  # one of YARN's defaults, set by the user
    before = _property_keys(conf)
    yarn_only = {k for k in before if list(conf.getPropertySources(k) or []) == ["yarn-default.xml"]}
    assert len(yarn_only) > 100 and "yarn.resourcemanager.hostname" not in yarn_only
    assert jvm.pyice.shim.DataFileParquetFormat.withoutYarnDefaults(conf) == len(yarn_only)
    assert _property_keys(conf) == before - yarn_only
    assert conf.get("yarn.resourcemanager.hostname") == "rm.example" and conf.get("fs.defaultFS") is not None


def test_scans_copy_a_configuration_without_yarn_and_mapreduce_defaults(spark, shim):
    """DataFileParquetFormat.forScan, on a scan's Hadoop configuration as Spark builds it: the
    properties whose only source is YARN's or MapReduce's defaults go (Spark's reader copies the
    rest for every file it opens); one the user set stays, and so does every core default; local
    files are opened through Hadoop's raw local file system. Truth: the sources Hadoop records."""
    jvm = spark._jvm
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    conf.set("mapreduce.job.queuename", "etl")  # one of MapReduce's defaults, set by the user
    before = _property_keys(conf)
    defaults = {k for k in before
                if list(conf.getPropertySources(k) or []) in (["yarn-default.xml"], ["mapred-default.xml"])}
    core = {k for k in before if list(conf.getPropertySources(k) or []) == ["core-default.xml"]}
    assert len(defaults) > 300 and core and "mapreduce.job.queuename" not in defaults
    scan = jvm.pyice.shim.DataFileParquetFormat.forScan(conf)
    assert _property_keys(scan) == (before - defaults) | {"fs.file.impl", "fs.file.impl.disable.cache"}
    assert all(scan.getRaw(k) == conf.getRaw(k) for k in before - defaults)
    assert scan.get("mapreduce.job.queuename") == "etl" and scan.get("fs.file.impl.disable.cache") == "true"
    assert scan.get("fs.file.impl") == "org.apache.hadoop.fs.RawLocalFileSystem"


def test_table_scans_go_through_the_shims_format(spark, ice, shim, warehouse):
    """Where Spark can load it by name, a table's files are read through DataFileParquetFormat, so
    through Hadoop's raw local file system: a data file given a `.crc` side file that does not
    match it fails Spark's own Parquet read (the checksummed file system checks it) and reads
    through pyice. Elsewhere pyice reads through Spark's own source and fails the same way."""
    ice.sql("CREATE TABLE local.db.scanned (id bigint, s string) USING iceberg")
    ice.sql("INSERT INTO local.db.scanned SELECT * FROM VALUES (1, 'a'), (2, 'b') AS v(id, s) WHERE id = 1")
    [data] = [p for p in Path(warehouse, "db", "scanned", "data").rglob("*.parquet")]
    crc = data.with_name(f".{data.name}.crc")
    assert not crc.exists()  # pyice writes none
    crc.write_bytes(b"crc\0" + (512).to_bytes(4, "big") + b"\0" * 4 * (data.stat().st_size // 512 + 1))
    with pytest.raises(Exception, match="(?i)checksum"):
        spark.read.parquet(str(data)).collect()
    if shim.mode == "classpath":
        assert ice.sql("SELECT * FROM local.db.scanned").collect() == [(1, "a")]
    else:
        with pytest.raises(Exception, match="(?i)checksum"):
            ice.sql("SELECT * FROM local.db.scanned").collect()


def test_data_files_are_written_through_the_shims_format(spark, ice, shim):
    """Every data file write goes through DataFileParquetFormat where Spark can load it by name
    (a table without list or map columns too), else through Spark's own Parquet source: read from
    the write command of the INSERT's SQL execution, as Spark's status store describes it."""
    ice.sql("CREATE TABLE local.db.flat (id bigint, s string) USING iceberg")
    store = spark._jsparkSession.sharedState().statusStore()

    def executions():  # the store keeps the newest (1,000 by default): by id, not by position
        found = store.executionsList()
        return [found.apply(i) for i in range(found.size())]
    last = max((e.executionId() for e in executions()), default=-1)
    ice.sql("INSERT INTO local.db.flat VALUES (1, 'a')")
    plans = [e.physicalPlanDescription() for e in executions() if e.executionId() > last]
    writes = [p for p in plans if "InsertIntoHadoopFsRelationCommand" in p]
    assert len(writes) == 1
    assert ("Parquet (pyice data files)" in writes[0]) == (shim.mode == "classpath")
    assert ice.sql("SELECT * FROM local.db.flat").collect() == [(1, "a")]

# ---------------------------------------------------------------------------------------------------------
# Bucket UDF against the spec's vectors

SPEC_VECTORS = [  # (Spark SQL expression, Iceberg bucket hash from the spec)
    ("34", 2017239379),
    ("CAST(34 AS BIGINT)", 2017239379),
    ("'iceberg'", 1210000089),
    ("CAST('14.20' AS DECIMAL(9,2))", -500754589),
    ("14.20BD", -500754589),
    ("X'00010203'", -188683207),
    ("DATE'2017-11-16'", -653330422),
    ("unix_date(DATE'2017-11-16')", -653330422),
    ("TIMESTAMP'2017-11-16 22:31:08'", -2047944441),
    ("unix_micros(TIMESTAMP'2017-11-16 22:31:08')", -2047944441),
    ("unix_micros(TIMESTAMP'2017-11-16 22:31:08.000001')", -1207196810),
]
COUNTS = [1, 7, 16, 1000, 2147483647]


def test_file_changes_merge_what_each_task_counted(spark, shim):
    """FileChanges.perFile: each task keeps its files' positions, the driver merges them, so a
    position paired in two tasks is a cardinality violation, and a position updated in both counts
    once. Truth: counted by hand from the rows below."""
    columns = {"ordinal": "bigint", "pos": "bigint", "updates": "boolean", "deletes": "boolean", "inserts": "boolean",
               "matched": "boolean"}
    tasks = [
        [(0, 1, True, False, False, True), (0, 2, False, True, False, True), (1, 5, True, False, False, True),
         (None, None, False, False, True, False)],
        [(0, 1, True, False, False, True), (1, 6, False, False, False, True), (None, None, False, False, True, False),
         (2, 9, False, True, False, False)],  # an UPDATE/DELETE's row: no pair
    ]
    flat = tasks[0] + tasks[1]

    def literal(value, sql_type):
        return f"CAST(NULL AS {sql_type})" if value is None else str(value).lower()
    # a range of two slices: rows 0-3 in one task, 4-7 in the other
    rows = spark.range(0, len(flat), 1, 2).selectExpr(*[
        f"element_at(array({', '.join(literal(r[i], t) for r in flat)}), CAST(id AS int) + 1) AS {name}"
        for i, (name, t) in enumerate(columns.items())])
    assert [len(p) for p in rows.rdd.glom().collect()] == [4, 4]  # two tasks: position 1 of file 0 in both
    assert shim.file_changes(rows._jdf) == [
        [None, 0, 0, 2, 0],  # inserted rows
        [0, 1, 1, 0, 2],  # position 1 updated (once) and paired twice; position 2 deleted
        [1, 1, 0, 0, 1],
        [2, 0, 1, 0, 0],
    ]
    assert shim.file_changes(rows.where("false")._jdf) == []


def test_bucket_udf_spec_vectors(spark, shim):
    exprs = [f"pyice_bucket({n}, {e})" for e, _ in SPEC_VECTORS for n in COUNTS]
    row = spark.sql("SELECT " + ", ".join(exprs)).collect()[0]
    expected = [(h & MASK) % n for _, h in SPEC_VECTORS for n in COUNTS]
    assert list(row) == expected


def test_bucket_udf_on_executors(spark, shim):
    # Values derived from a range column cannot be constant-folded: the UDF runs in executor tasks.
    row = spark.range(0, 1, 1, 1).selectExpr(
        "pyice_bucket(16, id + 34)", "pyice_bucket(16, concat('iceberg', repeat('x', id)))",
        "pyice_bucket(16, CAST(id AS DECIMAL(9,2)) + CAST('14.20' AS DECIMAL(9,2)))",
        "pyice_bucket(16, unhex(concat('0001020', CAST(id + 3 AS STRING))))",
        "pyice_bucket(16, IF(id = 0, NULL, 'x'))", "pyice_bucket(CAST(NULL AS INT), id)",
    ).collect()[0]
    assert list(row) == [(2017239379 & MASK) % 16, (1210000089 & MASK) % 16, (-500754589 & MASK) % 16,
                         (-188683207 & MASK) % 16, None, None]


def test_bucket_udf_matches_mmh3(spark, shim):
    import mmh3  # a pyiceberg dependency (test extra): an independent murmur3

    longs = [0, 1, -1, 2**31, -(2**63), 2**63 - 1, 123456789012]
    strings = ["", "a", "ab", "abc", "abcd", "héllo wörld", "😀"]
    exprs = [f"pyice_bucket(2147483647, CAST({v} AS BIGINT))" for v in longs]
    exprs += [f"pyice_bucket(2147483647, '{s}')" for s in strings]
    row = spark.sql("SELECT " + ", ".join(exprs)).collect()[0]
    want = [mmh3.hash(struct.pack("<q", v), 0, signed=True) & MASK for v in longs]
    want += [mmh3.hash(s.encode(), 0, signed=True) & MASK for s in strings]
    assert list(row) == want


# ---------------------------------------------------------------------------------------------------------
# File operations


@pytest.mark.parametrize("uri", [False, True], ids=["path", "file-uri"])
def test_write_new_refuses_to_overwrite(shim, tmp_path, uri):
    target = ("file://" if uri else "") + str(tmp_path / "sub" / "dir" / "v1.metadata.json")
    assert shim.write_new(target, b"first")
    assert not shim.write_new(target, b"second")
    assert shim.read_all(target) == b"first"
    assert shim.file_length(target) == 5
    assert os.listdir(tmp_path / "sub" / "dir") == ["v1.metadata.json"]  # no temp files left behind


def test_rename_no_overwrite_refuses_to_clobber(shim, tmp_path):
    a, b, c = (str(tmp_path / n) for n in ("a", "b", "c"))
    assert shim.write_new(a, b"A") and shim.write_new(c, b"C")
    assert shim.rename_no_overwrite(a, b)
    assert not shim.exists(a) and shim.read_all(b) == b"A"
    assert not shim.rename_no_overwrite(c, b)
    assert shim.read_all(b) == b"A" and shim.read_all(c) == b"C"
    with pytest.raises(FileNotFoundError):
        shim.rename_no_overwrite(a, str(tmp_path / "d"))


def test_tasks_read_the_hadoop_configuration_as_it_is_now(spark, shim, tmp_path):
    """Jobs share one broadcast of the Hadoop configuration while its properties stay the same
    (FooterStats.ship): a property changed since must still reach the tasks. Truth: listing a
    scheme-less path on the executors fails once fs.defaultFS names an unknown scheme, and works
    again once it is back."""
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.bin").write_bytes(b"x")
    folder = str(tmp_path / "d")  # no scheme: resolved against fs.defaultFS in the task
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    before = conf.get("fs.defaultFS")
    assert [Path(e.path).name for e in shim.list_many([folder])] == ["f.bin"]
    try:
        conf.set("fs.defaultFS", "pyicebogus:///")
        with pytest.raises(Exception, match="pyicebogus"):
            shim.list_many([folder])
    finally:
        conf.set("fs.defaultFS", before)
    assert [Path(e.path).name for e in shim.list_many([folder])] == ["f.bin"]


def test_file_helpers(shim, tmp_path):
    root = str(tmp_path / "tree")
    assert shim.list(root) == [] and not shim.exists(root)
    assert shim.mkdirs(root + "/empty") and shim.is_dir(root)
    shim.write_new(root + "/x.bin", b"\x00\xff" * 10)
    shim.write_new(root + "/d/y.bin", b"y")
    top = {Path(e.path).name: e for e in shim.list(root)}
    assert set(top) == {"empty", "x.bin", "d"}
    assert top["x.bin"].length == 20 and not top["x.bin"].is_dir and top["d"].is_dir
    assert top["x.bin"].modified_ms > 0
    deep = shim.list(root, recursive=True)
    assert sorted(Path(e.path).name for e in deep) == ["x.bin", "y.bin"]
    assert all(e.path.startswith("file:") for e in deep)
    assert shim.read_all(root + "/x.bin") == b"\x00\xff" * 10
    with pytest.raises(FileNotFoundError):
        shim.read_all(root + "/missing")
    assert shim.delete(root + "/x.bin") and not shim.exists(root + "/x.bin")
    assert not shim.delete(root + "/x.bin")
    assert shim.delete(root, recursive=True) and not shim.exists(root)


# ---------------------------------------------------------------------------------------------------------
# Each load path in a fresh JVM: "loader" (session already running without the jar: URLClassLoader +
# reflection + addJar) and "classpath" (session built with spark.jars). The mode the shared session uses is
# already covered in-process above, so only the other one is run here.

_FRESH_JVM_SCRIPT = textwrap.dedent("""
    import json, sys
    from pyspark.sql import SparkSession
    from pyice_sql.spark.jvm.bridge import load_shim, spark_jars_conf
    mode, out = sys.argv[1], sys.argv[2]
    builder = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false"))
    if mode == "classpath":
        builder = builder.config("spark.jars", spark_jars_conf())
    spark = builder.getOrCreate()
    spark.range(0, 10, 1, 1).write.parquet(out + "/pq")  # the session is running before the shim loads
    shim = load_shim(spark)
    shim.register_bucket_udf()
    files = [f.path for f in shim.list(out + "/pq") if f.path.endswith(".parquet")]
    [stats] = shim.footer_stats(files)
    row = spark.range(0, 1, 1, 1).selectExpr("pyice_bucket(16, id + 34)", "pyice_bucket(16, 'iceberg')").collect()[0]
    shim.register_deletion_vector_udfs()
    dv = (spark.range(0, 1, 1, 1).selectExpr("pyice_dv_serialize(array(id + 6, id + 1, id + 4)) b")
          .selectExpr("hex(b) b", "pyice_dv_positions(b, 0, length(b), 3, 'x.puffin') p").collect()[0])
    direct = type(spark._jvm.pyice.shim.Shim).__name__ == "JavaClass"
    import pyice_sql
    ice = pyice_sql.connect(spark, warehouse=out + "/wh")
    ice.sql("CREATE TABLE local.db.t (id bigint) USING iceberg "
            "TBLPROPERTIES ('write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')")
    ice.sql("INSERT INTO local.db.t SELECT id FROM range(0, 20)")
    ice.sql("DELETE FROM local.db.t WHERE id % 3 = 0")
    scan = ice.sql("SELECT id FROM local.db.t")
    plan = scan._jdf.queryExecution().optimizedPlan().toString()
    live = sorted(r.id for r in scan.collect())
    # the delete files written along the data file write (PositionDeleteWriter.along's filter)
    ice.sql("UPDATE local.db.t SET id = id + 100 WHERE id % 3 = 1")
    updated = sorted(r.id for r in ice.sql("SELECT id FROM local.db.t").collect())
    print("RESULT " + json.dumps({
        "mode": shim.mode, "direct": direct, "rows": stats["rowCount"], "buckets": list(row),
        "live": live, "updated": updated,
        "filter": "function" if ".invoke" in plan else "udf" if "UDF" in plan else plan,
        "dv": [dv.b.lower(), dv.p],
        "write": [shim.write_new(out + "/f", b"1"), shim.write_new(out + "/f", b"2")],
        "rename": [shim.write_new(out + "/g", b"3"), shim.rename_no_overwrite(out + "/g", out + "/f")],
        "long": [shim.write_new(out + "/h", bytes(range(256)) * 200), shim.read_all(out + "/h") == bytes(range(256)) * 200],
    }))
    spark.stop()
""")


def test_other_load_path_in_fresh_jvm(spark, shim, tmp_path):
    """The shared session covers one way of loading the shim; a fresh JVM covers the other."""
    from pyice_sql.core.format.deletion_vector import serialize_positions

    mode = "classpath" if shim.mode == "loader" else "loader"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-c", _FRESH_JVM_SCRIPT, mode, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-4000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert result == {"mode": mode, "direct": mode == "classpath", "rows": 10,
                      "buckets": [(2017239379 & MASK) % 16, (1210000089 & MASK) % 16],
                      # the position-delete filter: Spark loads the shim's function catalog by name
                      # only when the jar is on its class path; a loaded shim keeps the UDF
                      "live": [i for i in range(20) if i % 3], "filter": "function" if mode == "classpath" else "udf",
                      "updated": sorted(i + 100 if i % 3 == 1 else i for i in range(20) if i % 3),
                      "dv": [serialize_positions([1, 4, 6]).hex(), [1, 4, 6]],
                      "write": [True, False], "rename": [True, False], "long": [True, True]}
