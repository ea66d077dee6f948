"""py4j bridge to the small Java shim (sources: pyice_sql/spark/jvm/shim_src/pyice/shim/*.java).

The shim is never shipped as a binary. `shim_jar()` compiles the sources with the local JDK's javac
against the jars of the installed Spark (pyspark/jars, or $SPARK_HOME/jars) on first use, and caches
the jar as `~/.cache/pyice_sql/shim-<sha1>.jar` (sha1 of the sources and of the Spark jar names).

`load_shim(spark)` returns a ShimHandle, in one of two modes:
  * "classpath": the session was started with `spark.jars` containing the jar (see `spark_jars_conf()`),
    so `spark._jvm.pyice.shim.*` resolves directly. Preferred whenever it works.
  * "loader": the session already runs without the jar. The classes are loaded on the driver through a
    `java.net.URLClassLoader` (parent: the py4j thread's context class loader), static methods are called
    by reflection, and `addJar` ships the jar to the executors so that task closures (footer reading, the
    bucket UDF) deserialize there.
Either way the handshake compares `Shim.version()` with the version of the sources shipped here.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import weakref
import zipfile
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from pyice_sql.core.format.fileio import is_local

SHIM_API = "1"  # must equal pyice.shim.Shim.API
DRIVER_FOOTER_LIMIT = 8  # up to this many footers are read on the driver, no Spark job
LOCAL_DRIVER_FOOTER_LIMIT = 512  # as many of local files (a read is ~1 ms)
DRIVER_FOOTER_THREADS = 8
SRC_DIR = Path(__file__).resolve().parent / "shim_src"
_JAVA_PACKAGE = "pyice.shim"
_BUILD_ID_ENTRY = "pyice/shim/build-id.txt"
# Bytecode for Java 8 runs on every JVM Spark 3.5+ supports; fall back if this javac refuses it.
_JAVAC_TARGETS: tuple[tuple[str, ...], ...] = (("--release", "8"), ("--release", "11"), ())
_build_lock = threading.Lock()
_load_lock = threading.Lock()


class ShimError(RuntimeError):
    """The JVM shim cannot be built or loaded."""


class ShimBuildError(ShimError):
    pass


class ShimVersionError(ShimError):
    pass


class ListedFile(NamedTuple):
    path: str
    length: int
    modified_ms: int
    is_dir: bool


# ---------------------------------------------------------------------------------------------------------
# Building the jar


def shim_sources() -> list[Path]:
    srcs = sorted(SRC_DIR.glob("pyice/shim/*.java"))
    if not srcs:
        raise ShimBuildError(f"no Java sources under {SRC_DIR}")
    return srcs


def source_digest() -> str:
    """sha1 of the shim's Java sources (names and contents)."""
    h = hashlib.sha1()
    for src in shim_sources():
        h.update(src.relative_to(SRC_DIR).as_posix().encode() + b"\0")
        h.update(src.read_bytes() + b"\0")
    return h.hexdigest()


def shim_version() -> str:
    """The version string the jar built from these sources reports through `Shim.version()`."""
    return f"{SHIM_API}+{source_digest()[:16]}"


def spark_jars_dir() -> Path:
    """The jars of the Spark that pyspark runs: $SPARK_HOME/jars if set, else pyspark's bundled jars."""
    candidates = []
    if os.environ.get("SPARK_HOME"):
        candidates.append(Path(os.environ["SPARK_HOME"]) / "jars")
    import pyspark

    candidates.append(Path(pyspark.__file__).resolve().parent / "jars")
    for c in candidates:
        if c.is_dir() and any(c.glob("spark-core*.jar")):
            return c
    raise ShimBuildError(f"no Spark jars found in {', '.join(map(str, candidates))}")


def default_cache_dir() -> Path:
    if os.environ.get("PYICE_SQL_CACHE_DIR"):
        return Path(os.environ["PYICE_SQL_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pyice_sql"


def _javac() -> str:
    exe = "javac.exe" if os.name == "nt" else "javac"
    if os.environ.get("JAVA_HOME"):
        cand = Path(os.environ["JAVA_HOME"]) / "bin" / exe
        if cand.is_file():
            return str(cand)
    found = shutil.which("javac")
    if not found:
        raise ShimBuildError("javac not found: pyice_sql compiles its JVM shim on first use and needs a JDK "
                             "(not only a JRE) on PATH or in JAVA_HOME")
    return found


def shim_jar(cache_dir: str | os.PathLike | None = None) -> str:
    """Path of the shim jar, compiling it first if it is not cached yet.

    The name hashes the sources and the Spark jar names, so a different Spark gets its own build.
    Builds happen in a temporary directory and are published with an atomic rename.
    """
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    jars = spark_jars_dir()
    digest = source_digest()
    key = hashlib.sha1((digest + "\n" + "\n".join(sorted(p.name for p in jars.glob("*.jar")))).encode())
    jar = cache / f"shim-{key.hexdigest()}.jar"
    if jar.is_file():
        return str(jar)
    with _build_lock:
        if jar.is_file():
            return str(jar)
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=".build-", dir=cache) as tmp:
            classes = Path(tmp) / "classes"
            errors = []
            for target in _JAVAC_TARGETS:
                shutil.rmtree(classes, ignore_errors=True)
                classes.mkdir()
                cmd = [_javac(), *target, "-nowarn", "-encoding", "UTF-8", "-cp", str(jars / "*"),
                       "-d", str(classes), *map(str, shim_sources())]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode == 0:
                    break
                errors.append(f"$ javac {' '.join(target)} ...\n{proc.stdout}{proc.stderr}")
            else:
                raise ShimBuildError("compiling the JVM shim failed:\n" + "\n".join(errors))
            staged = Path(tmp) / jar.name
            _write_jar(classes, staged, shim_version())
            os.replace(staged, jar)
    return str(jar)


def _write_jar(classes: Path, out: Path, build_id: str) -> None:
    """A plain jar (zip), with fixed timestamps so identical inputs give identical bytes."""
    def add(z: zipfile.ZipFile, name: str, data: bytes) -> None:
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = 0o644 << 16
        z.writestr(info, data)

    with zipfile.ZipFile(out, "w") as z:
        add(z, "META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\nCreated-By: pyice_sql\r\n\r\n")
        for f in sorted(classes.rglob("*.class")):
            add(z, f.relative_to(classes).as_posix(), f.read_bytes())
        add(z, _BUILD_ID_ENTRY, build_id.split("+", 1)[1].encode())


def spark_jars_conf(existing: str | None = None) -> str:
    """Value for `spark.jars` that includes the shim jar (appended to `existing`, comma-separated)."""
    jar = shim_jar()
    parts = [p for p in (existing or "").split(",") if p.strip()]
    return ",".join(parts + ([jar] if jar not in parts else []))


# ---------------------------------------------------------------------------------------------------------
# Loading it into a Spark JVM


class _Core:
    """Per-SparkContext state: how shim classes are reached."""

    def __init__(self, sc: Any, mode: str, jar: str | None, loader: Any = None) -> None:
        self.sc = sc
        self.mode = mode
        self.jar = jar
        self.loader = loader
        self._methods: dict[tuple[str, str, int], Any] = {}
        self._statics: dict[tuple[str, str], Any] = {}
        self._lock = threading.Lock()
        self._object_class = sc._jvm.java.lang.Object
        self.version = str(self.call("Shim", "version"))

    def call(self, cls: str, name: str, *args: Any) -> Any:
        from py4j.protocol import Py4JJavaError

        try:
            if self.mode == "classpath":
                return self._static(cls, name)(*args)
            return self._method(cls, name, len(args)).invoke(None, self._objects(args))
        except Py4JJavaError as e:
            raise _translate(e) from e

    def call_text(self, cls: str, name: str, *args: Any) -> str | None:
        """`call` of a method returning a String, read in pieces that each fit one py4j answer (Text.java:
        a longer answer waits ~40 ms for a delayed TCP acknowledgement)."""
        return _read_pieces(self.call("Text", "call", cls, name, self._objects(args)))

    def call_bytes(self, cls: str, name: str, *args: Any) -> bytes | None:
        """`call` of a method returning a byte[], read as `call_text` reads a String."""
        got = self.call("Text", "callBytes", cls, name, self._objects(args))
        if got is None or isinstance(got, (bytes, bytearray)):
            return None if got is None else bytes(got)
        return base64.b64decode(_read_pieces(got))

    def _static(self, cls: str, name: str) -> Any:
        """A shim class's static method as a py4j member, looked up once: each step of
        `jvm.pyice.shim.Cls.name` is a round trip to the JVM."""
        member = self._statics.get((cls, name))
        if member is None:
            member = self._statics[(cls, name)] = getattr(getattr(self.sc._jvm.pyice.shim, cls), name)
        return member

    def _objects(self, args: tuple) -> Any:
        arr = self.sc._gateway.new_array(self._object_class, len(args))
        for i, a in enumerate(args):
            arr[i] = a
        return arr

    def _method(self, cls: str, name: str, arity: int) -> Any:
        key = (cls, name, arity)
        with self._lock:
            if key not in self._methods:
                jvm = self.sc._jvm
                klass = jvm.java.lang.Class.forName(f"{_JAVA_PACKAGE}.{cls}", True, self.loader)
                for m in klass.getMethods():
                    if jvm.java.lang.reflect.Modifier.isStatic(m.getModifiers()):
                        self._methods.setdefault((cls, m.getName(), m.getParameterCount()), m)
                if key not in self._methods:
                    raise ShimError(f"no static method {cls}.{name} with {arity} parameters in the shim")
            return self._methods[key]


def _read_pieces(text: Any) -> str | None:
    """A String a Text.java method returned: itself, or a Text read piece by piece."""
    if text is None or isinstance(text, str):
        return text
    pieces = []
    while (piece := text.next()) is not None:
        pieces.append(piece)
    return "".join(pieces)


def java_string_list(jvm: Any, items: Iterable[str]) -> Any:
    """`items` as a java.util.List in a fixed number of py4j round trips.

    py4j converts a Python list one `add` call per element (measured: 0.3 s for 5,000 paths, so
    ~6 s for a 100,000-file scan before any Spark work). The strings travel
    instead as one text joined by U+0000, split in the JVM (an empty string, or one holding U+0000,
    keeps py4j's conversion).
    """
    items = list(items)
    if not items or not all(items) or any("\0" in i for i in items):  # a split drops trailing empties
        return java_list(jvm, items)
    pattern, to_list = _splitter(jvm)
    return pattern.splitAsStream("\0".join(items)).collect(to_list)


def java_list(jvm: Any, items: Iterable[Any]) -> Any:
    """`items` (JVM objects or py4j-convertible values) as a java.util.ArrayList: one round trip
    per item and one more. py4j's ListConverter also looks `java.util.ArrayList` up each time, a
    round trip per package step."""
    out = _java_class(jvm, "java.util.ArrayList")()
    for item in items:
        out.add(item)
    return out


def java_map(jvm: Any, items: dict[str, Any]) -> Any:
    """`items` as a java.util.LinkedHashMap (insertion order kept), as `java_list` builds a list."""
    out = _java_class(jvm, "java.util.LinkedHashMap")()
    for key, value in items.items():
        out.put(key, value)
    return out


def scala_seq(jvm: Any, items: Iterable[Any]) -> Any:
    """`items` as a Scala Seq (the varargs of Spark's Scala API), as `java_list` builds a list."""
    return seq_of(jvm, java_list(jvm, items))


def seq_of(jvm: Any, jlist: Any) -> Any:
    """The java.util.List `jlist` as a Scala Seq, in one round trip (`jvm.PythonUtils.toSeq` is three)."""
    return java_static(jvm, "org.apache.spark.api.python.PythonUtils", "toSeq")(jlist)


_CLASSES: "weakref.WeakKeyDictionary[Any, dict[tuple[str, str | None], Any]]" = weakref.WeakKeyDictionary()


def _java_class(jvm: Any, name: str) -> Any:
    """The JVM class `name` (fully qualified), looked up once per gateway: one round trip, where
    `jvm.java.util.X` is one per package step."""
    return _looked_up(jvm, name, None)


def java_static(jvm: Any, class_name: str, member: str) -> Any:
    """The static method `member` of the JVM class `class_name`, looked up once per gateway (each
    `jvm.Cls.member` is a round trip to find the class, or several, and one to find the member)."""
    return _looked_up(jvm, class_name, member)


def _looked_up(jvm: Any, class_name: str, member: str | None) -> Any:
    found = _CLASSES.setdefault(jvm._gateway_client, {})
    key = (class_name, member)
    if key not in found:
        klass = found.get((class_name, None))
        if klass is None:
            klass = found[(class_name, None)] = getattr(jvm, class_name)
        found[key] = klass if member is None else getattr(klass, member)
    return found[key]


_SPLITTERS: "weakref.WeakKeyDictionary[Any, tuple[Any, Any]]" = weakref.WeakKeyDictionary()


def _splitter(jvm: Any) -> tuple[Any, Any]:
    """The pattern and collector `java_string_list` uses, made once per gateway (reaching
    `jvm.java.util.regex.Pattern` alone is four round trips)."""
    client = jvm._gateway_client
    found = _SPLITTERS.get(client)
    if found is None:
        found = _SPLITTERS[client] = (jvm.java.util.regex.Pattern.compile("\0"),
                                      jvm.java.util.stream.Collectors.toList())
    return found


def _translate(e: Exception) -> Exception:
    """Java exceptions that have a natural Python equivalent become that; others are returned unchanged."""
    jt = getattr(e, "java_exception", None)
    seen = 0
    while jt is not None and seen < 10:
        name = jt.getClass().getName()
        if name == "java.lang.reflect.InvocationTargetException":
            jt, seen = jt.getCause(), seen + 1
            continue
        msg = str(jt.getMessage())
        if name in ("java.io.FileNotFoundException", "java.nio.file.NoSuchFileException"):
            return FileNotFoundError(msg)
        if name in ("org.apache.hadoop.fs.FileAlreadyExistsException", "java.nio.file.FileAlreadyExistsException"):
            return FileExistsError(msg)
        break
    return e


def _spark_context(spark: Any) -> Any:
    sc = getattr(spark, "sparkContext", spark)
    if getattr(sc, "_jvm", None) is None or getattr(sc, "_jsc", None) is None:
        raise ShimError("the JVM shim needs a classic, running SparkSession (py4j); Spark Connect is not supported")
    return sc


# Classes pyspark reaches by simple name on every call (`jvm.functions` for each `F.col`, `F.lit`,
# ...). py4j resolves a simple name by trying each of pyspark's package imports in turn, a failed
# class lookup over the whole class path each (~0.2 ms): five for `functions`. Imported by full
# name they resolve at once; the names mean the classes they meant.
_HOT_CLASSES = ("org.apache.spark.sql.functions", "org.apache.spark.sql.SparkSession",
                "org.apache.spark.api.python.PythonUtils")


def _new_core(sc: Any) -> _Core:
    from py4j.java_gateway import JavaClass, java_import

    expected = shim_version()
    jvm = sc._jvm
    for name in _HOT_CLASSES:
        java_import(jvm, name)
    if isinstance(jvm.pyice.shim.Shim, JavaClass):
        core = _Core(sc, "classpath", None)
        if core.version != expected:
            raise ShimVersionError(
                f"the Spark classpath holds a pyice shim of version {core.version}, but this pyice_sql needs "
                f"{expected}: start the session with spark.jars=pyice_sql.spark.jvm.bridge.spark_jars_conf()")
        return core
    jar = shim_jar()
    urls = sc._gateway.new_array(jvm.java.net.URL, 1)
    urls[0] = jvm.java.io.File(jar).toURI().toURL()
    parent = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    loader = jvm.java.net.URLClassLoader(urls, parent)
    core = _Core(sc, "loader", jar, loader)
    if core.version != expected:
        raise ShimVersionError(f"loaded shim reports {core.version}, expected {expected} (stale class on the "
                               "driver classpath?)")
    sc._jsc.addJar(jar)  # executors fetch it, so task closures using shim classes deserialize there
    return core


def load_shim(spark: Any) -> "ShimHandle":
    """A ShimHandle for this SparkSession (the class loading is done once per SparkContext)."""
    sc = _spark_context(spark)
    with _load_lock:
        core = getattr(sc, "_pyice_shim_core", None)
        if core is None or core.sc._jsc is None:
            core = _new_core(sc)
            sc._pyice_shim_core = core
    return ShimHandle(spark, core)


class ShimHandle:
    """Python face of the shim; file paths are Hadoop URIs (or plain local paths)."""

    def __init__(self, spark: Any, core: _Core) -> None:
        self._spark = spark
        self._core = core

    @property
    def mode(self) -> str:
        """"classpath" (jar on spark.jars) or "loader" (loaded reflectively into a running session)."""
        return self._core.mode

    @property
    def version(self) -> str:
        return self._core.version

    def _conf(self) -> Any:
        return self._core.sc._jsc.hadoopConfiguration()

    def _call(self, cls: str, name: str, *args: Any) -> Any:
        return self._core.call(cls, name, *args)

    def _map(self, items: dict[str, str]) -> Any:
        """`items` as a java.util.Map, or null when empty (no round trips)."""
        return java_map(self._core.sc._jvm, items) if items else None

    def _call_text(self, cls: str, name: str, *args: Any) -> str | None:
        return self._core.call_text(cls, name, *args)

    def _call_json(self, cls: str, name: str, *args: Any) -> Any:
        """A shim method's JSON text answer, parsed."""
        return json.loads(self._call_text(cls, name, *args))

    def schema_json(self, frame: Any) -> str:
        """The JSON of the JVM Dataset `frame`'s schema, fetched without py4j's wait on long answers."""
        return _read_pieces(self._call("Text", "schemaJson", frame))

    def with_field_metadata(self, frame: Any, schema_json: str) -> Any:
        """The JVM Dataset `frame`'s columns named by the fields of `schema_json`, renamed and given
        their metadata (field ids), built in one call (Frames.java)."""
        return self._call("Frames", "withFieldMetadata", frame, schema_json)

    def select_with(self, frame: Any, exprs: Any, extra: list[Any]) -> Any:
        """The JVM Dataset `frame`'s projection of the SQL expressions `exprs` (a java.util.List) and then
        of the JVM columns `extra`, in one analysis (Frames.java)."""
        return self._call("Frames", "selectWith", frame, exprs, extra)

    def joined(self, items: Any, separator: str) -> str:
        """The JVM String[] `items` joined by `separator`, fetched without py4j's wait on long answers."""
        return _read_pieces(self._call("Text", "joined", items, separator))

    # -- Parquet footers ------------------------------------------------------------------------------------
    def footer_stats(self, paths: Iterable[str]) -> list[dict]:
        """One summary dict per Parquet file (see FooterStats.java).

        A few files, or up to LOCAL_DRIVER_FOOTER_LIMIT files on a local disk, are read from the
        driver, DRIVER_FOOTER_THREADS at a time (a Spark job costs more than those reads: ~0.1 s per
        merge-on-read statement writing a delete file per touched data file); more, or remote ones,
        are read on the executors in one job, so the driver never opens many remote files.
        """
        paths = list(paths)
        if not paths:
            return []
        sc = self._core.sc
        jpaths = java_string_list(sc._jvm, paths)
        if len(paths) <= DRIVER_FOOTER_LIMIT or (len(paths) <= LOCAL_DRIVER_FOOTER_LIMIT and all(map(is_local, paths))):
            return self._call_json("FooterStats", "footerStatsOnDriver", jpaths, self._conf(),
                                   DRIVER_FOOTER_THREADS)
        return self._call_json("FooterStats", "footerStats", sc._jsc, jpaths, self._conf())

    # -- bucket transform -----------------------------------------------------------------------------------
    def register_bucket_udf(self) -> None:
        """Registers SQL `pyice_bucket(n, value)` (Iceberg bucket transform) in this session."""
        self._call("Bucket", "register", self._spark._jsparkSession)

    # -- deletion vectors -----------------------------------------------------------------------------------
    def register_deletion_vector_udfs(self) -> None:
        """Registers SQL `pyice_dv_positions(content, offset, length, cardinality, path)` and
        `pyice_dv_serialize(positions)` (the deletion-vector-v1 codec, DeletionVectors.java) in this session."""
        self._call("DeletionVectors", "register", self._spark._jsparkSession)

    # -- position deletes in the scan tasks ------------------------------------------------------------------
    def file_keys(self, spellings: str) -> str | None:
        """PositionDeleteFilter.fileKeys: the 64-bit keys of the U+0000-separated paths, comma-separated,
        or None when two collide (see read/file_keys.py)."""
        return self._call_text("PositionDeleteFilter", "fileKeys", spellings)

    def live_rows(self, spec: str, key: Any, pos: Any) -> Any:
        """The JVM Column of PositionDeleteFilter.liveRows over the JVM columns `key` (the row's file key)
        and `pos` (see read/file_keys.py for `spec`)."""
        return self._call("PositionDeleteFilter", "liveRows", self._spark._jsparkSession, spec, self._conf(),
                          key, pos)

    def key_range(self, lo: int, hi: int) -> str | None:
        """KeyRange.register: the name of a SQL function of one bigint, true within [lo, hi], whose
        bounds stay out of Spark's generated code; None where Spark cannot load the shim's catalog."""
        return self._call_text("KeyRange", "register", self._spark._jsparkSession, lo, hi)

    def file_changes(self, rows: Any) -> list[list]:
        """FileChanges.perFile: per data file ordinal of the JVM Dataset `rows` (ordinal, pos, updates,
        deletes, inserts, matched), `[ordinal, updated, deleted, inserted, pairs]`, counted in its tasks."""
        return self._call_json("FileChanges", "perFile", rows)

    def file_changes_matching(self, rows: Any) -> tuple[list[list], Any]:
        """`file_changes` of rows with a seventh column, their source row id; and the JVM object of
        those changes, for `unmatched_sources`."""
        changes = self._call("FileChanges", "count", rows)
        return json.loads(self._call_text("FileChanges", "perFileOf", changes)), changes

    def unmatched_sources(self, changes: Any, source_row: str) -> str | None:
        """SQL text true where no matched pair of `changes` had the source row whose id is in the column
        named `source_row` (the shim's `unmatched_sources` function); None where Spark cannot load the
        shim's function catalog (`unmatched_sources_column`)."""
        name = self._call_text("FileChanges", "unmatchedSourcesFunction", self._spark._jsparkSession, changes)
        return f"{name}({source_row})" if name else None

    def unmatched_sources_column(self, changes: Any, source_row: Any) -> Any:
        """`unmatched_sources` as a JVM column (a UDF) over the JVM column `source_row`."""
        return self._call("FileChanges", "unmatchedSourcesColumn", changes, source_row)

    def file_facts(self, table: str, types: list[str], key: Any) -> list[Any]:
        """FileFacts.columns: one JVM Column per fact of `table`, typed by `types` (see
        read/file_keys.py), over the JVM column `key`."""
        columns = self._call("FileFacts", "columns", self._spark._jsparkSession, table, ",".join(types), key)
        # one round trip per column: py4j's own indexing asks the array's length before each element
        get = java_static(self._spark._jvm, "java.lang.reflect.Array", "get")
        return [get(columns, i) for i in range(len(types))]

    def write_position_delete_files(self, rows: Any, targets: str, previous: str | None, codec: str,
                                    layout: dict[str, str]) -> str:
        """PositionDeleteWriter.write: writes the delete files of the JVM Dataset `rows` in its tasks and
        returns their footer summaries, a JSON array (see write/delete_writer.py). `layout`: parquet-mr's
        row group, page and dictionary settings and zstd level by their Hadoop names (unset ones: its
        defaults)."""
        return self._call_text("PositionDeleteWriter", "write", rows, targets, previous, self._conf(), codec,
                               self._map(layout))

    def position_delete_files_along(self, rows: Any, targets: str, previous: str | None, codec: str,
                                    layout: dict[str, str], on_repeat: str | None) -> Any:
        """PositionDeleteWriter.along: the JVM Dataset of the rows of `rows` that go on to a data file write,
        whose tasks write the delete files; read their summaries with `delete_file_summaries` after it. A
        position's second row fails its task with the message `on_repeat`, or is dropped where it is None."""
        return self._call("PositionDeleteWriter", "along", rows, targets, previous, self._conf(), codec,
                          self._map(layout), on_repeat)

    def write_deletion_vectors(self, rows: Any, targets: str, previous: str | None) -> str:
        """PositionDeleteWriter.writeVectors: `write_position_delete_files` for a format v3 table, whose
        tasks return each data file's deletion vector blob (a JSON array, see write/delete_writer.py)."""
        return self._call_text("PositionDeleteWriter", "writeVectors", rows, targets, previous, self._conf())

    def deletion_vectors_along(self, rows: Any, targets: str, previous: str | None, on_repeat: str | None) -> Any:
        """PositionDeleteWriter.alongVectors: `position_delete_files_along` for a format v3 table; its
        tasks leave deletion vector blobs, read with `delete_file_summaries`."""
        return self._call("PositionDeleteWriter", "alongVectors", rows, targets, previous, self._conf(), on_repeat)

    def delete_file_summaries(self, along: Any) -> str:
        """The footer summaries (a JSON array) of the delete files written along a data file write (or
        their deletion vector blobs)."""
        return self._call_text("PositionDeleteWriter", "summaries", along)

    def along_counts(self, along: Any) -> dict[str, int]:
        """PositionDeleteWriter.counts: the rows updated, deleted and inserted that went by the filter of
        `along` in the tasks of the data file write, once it has run."""
        return self._call_json("PositionDeleteWriter", "counts", along)

    def deleted_positions(self, spec: str, path: Any) -> Any:
        """The JVM Column of PositionDeleteFilter.deletedPositions over the JVM column `path` (see
        read/file_keys.py for `spec`)."""
        return self._call("PositionDeleteFilter", "deletedPositions", self._spark._jsparkSession, spec,
                          self._conf(), path)

    # -- files ----------------------------------------------------------------------------------------------
    def write_new(self, path: str, data: bytes) -> bool:
        """Create `path` with `data`; False if it already exists (never overwrites)."""
        return bool(self._call("FileOps", "writeNew", path, bytes(data), self._conf()))

    def rename_no_overwrite(self, src: str, dst: str) -> bool:
        """Rename; False (src untouched) if `dst` exists."""
        return bool(self._call("FileOps", "renameNoOverwrite", src, dst, self._conf()))

    def read_all(self, path: str) -> bytes:
        return self._core.call_bytes("FileOps", "readAll", path, self._conf())

    def exists(self, path: str) -> bool:
        return bool(self._call("FileOps", "exists", path, self._conf()))

    def is_dir(self, path: str) -> bool:
        return bool(self._call("FileOps", "isDir", path, self._conf()))

    def mkdirs(self, path: str) -> bool:
        return bool(self._call("FileOps", "mkdirs", path, self._conf()))

    def delete(self, path: str, recursive: bool = False) -> bool:
        return bool(self._call("FileOps", "delete", path, bool(recursive), self._conf()))

    def file_length(self, path: str) -> int:
        return int(self._call("FileOps", "fileLength", path, self._conf()))

    def list(self, directory: str, recursive: bool = False) -> list[ListedFile]:
        """Files below `directory` (recursive: files only), or its children incl. directories; [] if missing."""
        raw = self._call_json("FileOps", "list", directory, bool(recursive), self._conf())
        return [ListedFile(e["path"], int(e["length"]), int(e["modified"]), bool(e["dir"])) for e in raw]

    # -- many files at once (one Spark job each) -------------------------------------------------------------
    def _java_list(self, items: Iterable[str]):
        return java_string_list(self._core.sc._jvm, items)

    def list_many(self, directories: Iterable[str]) -> list[ListedFile]:
        """Every file below each directory, listed on the executors in one Spark job."""
        raw = self._call_json("BulkFiles", "list", self._core.sc._jsc, self._java_list(directories),
                              self._conf())
        return [ListedFile(e["path"], int(e["length"]), int(e["modified"]), bool(e["dir"])) for e in raw]

    def live_entries(self, manifests: Iterable[str]) -> list[tuple[str, int]]:
        """(file_path, content) of the live entries of Iceberg manifests, read in one Spark job."""
        raw = self._call_json("BulkFiles", "liveEntries", self._core.sc._jsc, self._java_list(manifests),
                              self._conf())
        return [(p, int(c)) for p, c in raw]

    def delete_many(self, paths: Iterable[str]) -> list[tuple[str, str]]:
        """Delete files on the executors in one Spark job; (path, error) of those not deleted."""
        raw = self._call_json("BulkFiles", "delete", self._core.sc._jsc, self._java_list(paths),
                              self._conf())
        return [(p, e) for p, e in raw]
