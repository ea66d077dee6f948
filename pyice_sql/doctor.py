"""`pyice-sql doctor`: what this machine runs pyice_sql with, and one line per problem found.

Checks in the order things fail for a new user: Python, Java (Spark needs a JVM, the shim a
javac), pyspark and its Scala, building the JVM shim, starting Spark and loading the shim into
it, then the catalogs that Spark conf (`spark.pyice.*`) or the defaults configure.
With SPARK_REMOTE set (a Spark Connect client), the session is the Connect server's instead:
its client packages and the server are checked, and no shim is built (none is needed there);
a remote server needs no local Java, `local...` (a server this process starts) does.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

_JAVA_VERSION = re.compile(r'version "([^"]+)"')
# The Java releases Spark runs on (Spark's docs: 3.5 on 8/11/17, and 21 works; Spark 4 on 17/21)
SUPPORTED_JAVA = {"Spark 3.5": (8, 11, 17, 21), "Spark 4": (17, 21)}


class Report:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def info(self, what: str, text: str) -> None:
        print(f"{what:<10} {text}")

    def problem(self, text: str) -> None:
        self.problems.append(text)


def _spark_line() -> str:
    """The installed pyspark's line, a key of SUPPORTED_JAVA (3.5's when pyspark is missing)."""
    try:
        import pyspark
    except ImportError:
        return "Spark 3.5"
    return "Spark 4" if int(pyspark.__version__.split(".")[0]) >= 4 else "Spark 3.5"


def _remote() -> str | None:
    """The Spark Connect address this process would use (pyspark reads SPARK_REMOTE)."""
    return os.environ.get("SPARK_REMOTE") or None


def _java(report: Report) -> bool:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home and (Path(home) / "bin" / "java").is_file() else shutil.which("java")
    spark = _spark_line()
    supported = SUPPORTED_JAVA[spark]
    names = ", ".join(map(str, supported[:-1])) + f" or {supported[-1]}"
    remote = _remote()
    if not java:
        report.info("java", "not found")
        if remote and not remote.startswith("local"):
            return True  # the Connect server runs the JVM
        report.problem(f"no java on PATH or in JAVA_HOME: {spark} needs Java {names}")
        return False
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    m = _JAVA_VERSION.search(out)
    version = m.group(1) if m else "unknown"
    report.info("java", f"{version} ({java})")
    major = version.split(".")[1] if version.startswith("1.") else version.split(".")[0].split("-")[0]
    if major.isdigit() and int(major) not in supported:
        hint = " (Spark 4 needs Java 17 or later: set JAVA_HOME to a JDK 17 or 21)" if spark == "Spark 4" else ""
        report.problem(f"Java {version}: {spark} runs on Java {names}{hint}")
    javac = str(Path(home) / "bin" / "javac") if home and (Path(home) / "bin" / "javac").is_file() \
        else shutil.which("javac")
    report.info("javac", javac or "not found")
    if not javac:
        report.problem("no javac (a JDK, not only a JRE): pyice_sql compiles its JVM shim on first use")
    return True


def _spark(report: Report) -> bool:
    try:
        import pyspark
    except ImportError:
        report.info("spark", "pyspark not installed")
        report.problem("pyspark is not installed: pip install pyspark (3.5 or 4.x)")
        return False
    report.info("spark", f"{pyspark.__version__} ({Path(pyspark.__file__).parent})")
    if tuple(int(x) for x in re.findall(r"\d+", pyspark.__version__)[:2]) < (3, 5):
        report.problem(f"pyspark {pyspark.__version__} is too old: pyice_sql needs 3.5 or later")
    from pyice_sql.spark.jvm.bridge import spark_jars_dir

    try:
        scala = sorted(spark_jars_dir().glob("scala-library-*.jar"))
    except Exception as e:  # no jars folder: a broken pyspark install
        report.problem(str(e))
        return False
    report.info("scala", scala[0].name[len("scala-library-"):-len(".jar")] if scala else "unknown")
    return True


def _shim_and_session(report: Report):
    from pyice_sql.spark.jvm.bridge import ShimError, load_shim, shim_jar

    try:
        report.info("shim", f"built: {shim_jar()}")
    except ShimError as e:
        report.info("shim", "not built")
        report.problem(f"the JVM shim cannot be built: {str(e).splitlines()[0]}")
        return None
    from pyice_sql.spark.runtime import local_session

    try:
        spark = local_session("pyice-sql-doctor", quiet=True)
        shim = load_shim(spark)
    except Exception as e:
        report.problem(f"Spark with the shim does not start: {(str(e).strip().splitlines() or [type(e).__name__])[0]}")
        return None
    report.info("shim", f"loaded: {shim.mode} mode, version {shim.version}")
    return spark


def _connect_session(report: Report, remote: str):
    """The Spark Connect session at `remote`, after checking the client packages it needs."""
    import pyspark

    if int(pyspark.__version__.split(".")[0]) < 4:
        report.problem(f"pyspark {pyspark.__version__}: pyice_sql runs on Spark Connect from pyspark 4.x")
    try:
        from pyspark.sql.connect import utils as connect_utils
    except ImportError as e:
        report.problem(f"Spark Connect client not available: {e}")
        return None
    for name in sorted(n for n in dir(connect_utils) if n.startswith("require_minimum_")):
        try:
            getattr(connect_utils, name)()
        except ImportError as e:  # pyspark's own message names the package and version
            report.problem(f"Spark Connect client: {str(e).splitlines()[0]} (pip install 'pyspark[connect]')")
            return None
    from pyspark.sql import SparkSession

    try:
        spark = SparkSession.builder.remote(remote).getOrCreate()
        version = spark.version
    except Exception as e:  # noqa: BLE001 - any failure to reach the server is the finding
        report.problem(f"Spark Connect server {remote} does not answer: "
                       f"{(str(e).strip().splitlines() or [type(e).__name__])[0]}")
        return None
    report.info("connect", f"{remote}: Spark {version} server; pyice_sql uses its DataFrame-only backend "
                           "(no jar on the server)")
    return spark


def _catalogs(report: Report, spark) -> None:
    from pyice_sql.spark import config
    from pyice_sql.core.errors import PyIceError
    from pyice_sql.core.format.fileio import is_local, local_path

    try:
        cfg = config.from_conf(config.spark_conf(spark) if spark is not None else {})
    except PyIceError as e:
        report.problem(f"catalog conf: {e}")
        return
    for c in cfg.catalogs:
        default = " (default)" if c.name == cfg.default_catalog else ""
        rest = c.type.lower() == "rest"
        where = os.path.abspath(local_path(c.warehouse)) if not rest and is_local(c.warehouse) else c.warehouse
        uri = f", uri {c.uri}" if c.uri else ""
        report.info("catalog", f"{c.name}{default}: {c.type}, warehouse {where}{uri}")
        if c.type.lower() not in ("hadoop", "sql", "sqlite", "jdbc", "rest"):
            report.problem(f"catalog {c.name}: unknown type {c.type!r} (use hadoop, sql or rest)")
        if rest and not c.uri:
            report.problem(f"catalog {c.name}: a rest catalog needs a uri")
        if not rest and is_local(c.warehouse):
            existing = Path(where)
            while not existing.exists() and existing != existing.parent:
                existing = existing.parent
            if not os.access(existing, os.W_OK):
                report.problem(f"catalog {c.name}: warehouse {where} is not writable")


def run_doctor() -> int:
    """Print the report; exit code 0 when no problem was found, else 1."""
    report = Report()
    report.info("python", f"{sys.version.split()[0]} ({sys.executable})")
    if sys.version_info < (3, 10):
        report.problem("Python 3.10 or later is needed")
    spark = None
    remote = _remote()
    if _java(report) & _spark(report):
        spark = _connect_session(report, remote) if remote else _shim_and_session(report)
    _catalogs(report, spark)
    report.info("submit", f"spark-submit [--conf spark.pyice...] {Path(__file__).with_name('submit.py')} script.sql")
    for p in report.problems:
        print(f"problem: {p}")
    print(f"{len(report.problems)} problem{'s' if len(report.problems) != 1 else ''} found")
    return 1 if report.problems else 0
