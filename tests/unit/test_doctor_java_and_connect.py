"""`pyice-sql doctor`'s Java check per Spark line, and what changes for a Spark Connect client."""
from __future__ import annotations

import stat

import pyspark
import pytest

from pyice_sql import doctor

SPARK4 = int(pyspark.__version__.split(".")[0]) >= 4


def _fake_jdk(root, version: str) -> str:
    """A JAVA_HOME whose java prints `version` as `java -version` does (on stderr)."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for tool in ("java", "javac"):
        path = bin_dir / tool
        path.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2023-01-17' >&2\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(root)


@pytest.mark.parametrize("version,ok_on_35,ok_on_4", [
    ("1.8.0_392", True, False), ("11.0.21", True, False), ("17.0.9", True, True), ("21.0.1", True, True),
])
def test_java_versions_are_checked_against_the_installed_spark_line(tmp_path, monkeypatch, version, ok_on_35,
                                                                    ok_on_4):
    monkeypatch.setenv("JAVA_HOME", _fake_jdk(tmp_path, version))
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    report = doctor.Report()
    assert doctor._java(report) is True
    ok = ok_on_4 if SPARK4 else ok_on_35
    if ok:
        assert report.problems == []
    else:
        assert report.problems == [f"Java {version}: Spark 4 runs on Java 17 or 21 (Spark 4 needs Java 17 or "
                                   "later: set JAVA_HOME to a JDK 17 or 21)"]


def test_a_remote_connect_client_needs_no_local_java(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("SPARK_REMOTE", "sc://spark.example:15002")
    report = doctor.Report()
    assert doctor._java(report) is True and report.problems == []
    monkeypatch.setenv("SPARK_REMOTE", "local[2]")  # a server this process starts runs here: Java needed
    assert doctor._java(report) is False and len(report.problems) == 1


def test_connect_client_packages_are_named_when_missing(monkeypatch):
    try:
        import pyspark.sql.connect.utils as connect_utils
    except ImportError as e:  # pyspark 4.2+ checks the connect extras as the module loads
        pytest.skip(f"no Spark Connect client to check here: {e}")

    def missing() -> None:
        raise ImportError("[PACKAGE_NOT_INSTALLED] grpcio >= 1.48.1 must be installed; however, it was not found.")
    # the other packages present, whatever this venv has (doctor checks them in name order)
    for name in dir(connect_utils):
        if name.startswith("require_minimum_"):
            monkeypatch.setattr(connect_utils, name, lambda: None)
    monkeypatch.setattr(connect_utils, "require_minimum_grpc_version", missing)
    report = doctor.Report()
    assert doctor._connect_session(report, "sc://spark.example:15002") is None
    assert any("grpcio >= 1.48.1 must be installed" in p and "pyspark[connect]" in p for p in report.problems), \
        report.problems
