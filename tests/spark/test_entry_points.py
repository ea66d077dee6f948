"""Entry points as a user calls them in-process: install() on spark.sql, Spark conf, progress
lines, the CLI's error reporting and `pyice-sql doctor` (subprocess forms: test_cli_subprocess)."""
from __future__ import annotations

import logging
import os
import re
import textwrap

import pyspark
import pytest

import pyice_sql
from pyice_sql import cli
from pyice_sql.core.errors import AnalysisError

pytestmark = pytest.mark.spark


@pytest.fixture
def installed(spark, warehouse):
    ice = pyice_sql.install(spark, warehouse=warehouse)
    yield ice
    pyice_sql.uninstall(spark)


def test_install_routes_pyice_statements_through_spark_sql(spark, installed, warehouse):
    spark.sql("CREATE DATABASE local.db")
    spark.sql("CREATE TABLE local.db.t (id bigint, s string) USING iceberg")
    spark.sql("INSERT INTO local.db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    assert os.path.isdir(os.path.join(warehouse, "db", "t", "metadata"))  # written by pyice, not Spark
    src = spark.createDataFrame([(2, "B"), (4, "d")], "id long, s string")
    merged = spark.sql("MERGE INTO local.db.t t USING {src} s ON t.id = s.id "
                       "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *", src=src).first()
    assert (merged.num_updated_rows, merged.num_inserted_rows, merged.num_deleted_rows) == (1, 1, 0)
    spark.sql("UPDATE local.db.t SET s = :s WHERE id = :id", args={"s": "it's", "id": 3})
    spark.sql("DELETE FROM local.db.t WHERE id = ?", args=[1])
    rows = spark.sql("SELECT id, s FROM local.db.t WHERE id > ? ORDER BY id", args=[0]).collect()
    assert [tuple(r) for r in rows] == [(2, "B"), (3, "it's"), (4, "d")]
    with pytest.raises(AnalysisError, match="unknown procedure system.no_such_procedure"):
        spark.sql("CALL local.system.no_such_procedure()")  # Spark itself cannot parse CALL


def test_everything_else_stays_sparks(spark, installed):
    assert spark.sql("SELECT :a + 1 AS x", args={"a": 1}).first().x == 2
    assert spark.sql("SELECT ? * 2 AS x", args=[21]).first().x == 42
    df = spark.createDataFrame([(1,), (2,)], "v int")
    assert spark.sql("SELECT sum(v) AS total FROM {df} WHERE v > {low}", df=df, low=0).first().total == 3
    spark.sql("CREATE OR REPLACE TEMP VIEW hook_view AS SELECT 7 AS seven")
    assert spark.sql("SELECT seven FROM hook_view").first().seven == 7
    # unqualified names stay in Spark's own catalog, where pyice's namespaces do not exist
    spark.sql("CREATE DATABASE IF NOT EXISTS local.only_pyice")
    assert "only_pyice" not in [r.namespace for r in spark.sql("SHOW DATABASES").collect()]
    spark.catalog.dropTempView("hook_view")


def test_sql_pyice_runs_itself_is_not_routed_again(spark, installed, monkeypatch):
    spark.sql("CREATE DATABASE local.db")
    spark.sql("CREATE TABLE local.db.t (id bigint, s string) USING iceberg")
    spark.sql("INSERT INTO local.db.t VALUES (1, 'a')")
    calls = []
    original = installed.execute  # as install() set it up: its own spark.sql calls go straight to Spark
    monkeypatch.setattr(installed, "execute", lambda sql, position=None: calls.append(sql)
                        or original(sql, position))
    spark.sql("MERGE INTO local.db.t t USING (SELECT 1 AS id, 'z' AS s) u ON t.id = u.id "
              "WHEN MATCHED THEN UPDATE SET s = u.s")
    assert len(calls) == 1  # the MERGE's own Spark queries went straight to Spark
    assert spark.sql("SELECT s FROM local.db.t").first().s == "z"


def test_uninstall_gives_spark_sql_back(spark, warehouse):
    pyice_sql.install(spark, warehouse=warehouse)
    pyice_sql.install(spark, warehouse=warehouse)  # installing twice replaces, never nests
    assert pyice_sql.uninstall(spark) and not pyice_sql.uninstall(spark)
    assert "sql" not in vars(spark)
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException):
        spark.sql("SELECT * FROM local.db.t")


def test_catalogs_come_from_spark_conf(spark, tmp_path):
    keys = {"spark.pyice.catalog": "lake", "spark.pyice.catalog.lake.warehouse": str(tmp_path / "lake"),
            "spark.pyice.catalog.scratch.warehouse": str(tmp_path / "scratch"),
            "spark.pyice.catalog.scratch.type": "sql"}
    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        ice = pyice_sql.connect(spark)
    finally:
        for k in keys:
            spark.conf.unset(k)
    assert ice.current_catalog == "lake" and set(ice.catalogs) == {"lake", "scratch"}
    ice.sql("CREATE DATABASE db; CREATE TABLE db.t (x int) USING iceberg")  # unqualified: the default catalog
    ice.sql("CREATE DATABASE scratch.db; CREATE TABLE scratch.db.u (x int) USING iceberg")
    assert os.path.isfile(tmp_path / "lake" / "db" / "t" / "metadata" / "v1.metadata.json")
    assert os.path.isfile(tmp_path / "scratch" / "catalog.db")  # a SQLite catalog file


def test_progress_lines_per_phase_and_quiet(spark, warehouse, caplog):
    ice = pyice_sql.connect(spark, warehouse=warehouse)
    ice.sql("CREATE DATABASE local.db; CREATE TABLE local.db.t (id bigint, s string) USING iceberg "
            "PARTITIONED BY (bucket(4, id)) TBLPROPERTIES ('write.merge.mode' = 'merge-on-read')")
    ice.sql("INSERT INTO local.db.t SELECT id, 'x' FROM range(40)")
    files = ice.sql("SELECT count(*) AS n FROM local.db.t.files").first().n
    caplog.set_level(logging.INFO, logger="pyice_sql.progress")
    ice.sql("MERGE INTO local.db.t t USING (SELECT 1L AS id UNION ALL SELECT 100L) s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET s = 'y' WHEN NOT MATCHED THEN INSERT (id, s) VALUES (s.id, 'n')")
    lines = [r.getMessage() for r in caplog.records if r.name == "pyice_sql.progress"]
    assert [line.split(": ")[2] for line in lines] == ["planning", "write", "commit"]
    assert lines[0].startswith("pyice: MERGE local.db.t: planning: ")
    assert f"of {files} data files" in lines[0]
    assert "1 files touched" in lines[1] and "1 updated, 0 deleted, 1 inserted" in lines[1]
    assert "1 delete files written" in lines[1]
    snapshot = ice.sql("SELECT snapshot_id FROM local.db.t.snapshots ORDER BY committed_at DESC LIMIT 1").first()[0]
    assert lines[2].startswith(f"pyice: MERGE local.db.t: commit: snapshot {snapshot} ")
    caplog.clear()
    quiet = pyice_sql.connect(spark, warehouse=warehouse, quiet=True)
    quiet.sql("DELETE FROM local.db.t WHERE id = 2")
    assert not [r for r in caplog.records if r.name == "pyice_sql.progress"]


def _run_cli(tmp_path, capsys, script: str, *options: str):
    path = tmp_path / "job.sql"
    path.write_text(textwrap.dedent(script).lstrip())
    code = cli.main(["run", str(path), "--warehouse", str(tmp_path / "wh"), "--quiet", *options])
    out, err = capsys.readouterr()
    return code, out, err, str(path)


def test_cli_stops_at_a_pyice_error_with_script_line_and_column(spark, tmp_path, capsys):
    code, out, err, path = _run_cli(tmp_path, capsys, """
        CREATE DATABASE IF NOT EXISTS local.db;
        CREATE TABLE local.db.t (id bigint) USING iceberg;
        INSERT INTO local.db.t VALUES (${v});
        SELECT id FROM local.db.t;
        DELETE FROM
          local.db.nope WHERE id = 1;
        SELECT 'never reached';
    """, "--var", "v=41")
    assert code == 1
    assert "> line 3: INSERT INTO local.db.t VALUES (${v})" in out and "never reached" not in out
    assert "|41 |" in out  # ${v} substituted
    assert err.strip().splitlines() == [f"pyice-sql: {path}:6:3: NoSuchTableError: " + err.split("NoSuchTableError: ")[1].strip()]
    assert "nope" in err and "Traceback" not in err


def test_cli_reports_sparks_own_errors_in_one_line_at_the_script_position(spark, tmp_path, capsys):
    code, out, err, path = _run_cli(tmp_path, capsys, """
        SELECT 1 AS one;

        SELECT 2 AS two FROM
          spark_catalog.default.no_such_view;
    """)
    assert code == 1 and "| 1 |" in out.replace(" ", "").replace("|1|", "| 1 |")
    assert re.match(rf"pyice-sql: {re.escape(path)}:4:3: Analysis(Exception|Error): \[TABLE_OR_VIEW_NOT_FOUND\]", err)
    assert len(err.strip().splitlines()) == 1
    code, _, err, path = _run_cli(tmp_path, capsys, "SELECT 1;\nSELEC 2;")
    assert code == 1 and re.match(rf"pyice-sql: {re.escape(path)}:2:1: Parse(Exception|Error): \[PARSE_SYNTAX_ERROR\]", err)


def test_cli_usage_errors_exit_2(spark, tmp_path, capsys):
    assert cli.main(["run", str(tmp_path / "missing.sql")]) == 2
    assert "cannot read" in capsys.readouterr().err
    code, _, err, path = _run_cli(tmp_path, capsys, "SELECT '${undefined}'")
    assert code == 1 and err.strip() == f"pyice-sql: {path}:1:9: ParseError: undefined variable 'undefined'"
    code, _, err, path = _run_cli(tmp_path, capsys, "SELECT 'unterminated")
    assert code == 1 and f"{path}:1:8: ParseError: unterminated string literal" in err


def test_doctor_reports_versions_and_catalogs(spark, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    lines = dict(line.split(None, 1) for line in out.splitlines() if line.strip() and " " in line)
    assert lines["scala"] == spark.sparkContext._jvm.scala.util.Properties.versionNumberString()
    assert lines["spark"].startswith(spark.version)
    assert lines["catalog"] == f"local (default): hadoop, warehouse {tmp_path / 'warehouse'}"
    assert "loaded: " in out and out.rstrip().endswith("0 problems found")


def test_doctor_names_each_problem(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("sys.version_info", (3, 9, 0))
    assert cli.main(["doctor"]) == 1
    problems = [line for line in capsys.readouterr().out.splitlines() if line.startswith("problem: ")]
    # Spark's docs: 3.5 runs on Java 8/11/17 (and 21), Spark 4 on Java 17/21
    needs = "Spark 3.5 needs Java 8, 11, 17 or 21" if pyspark.__version__.startswith("3.") \
        else "Spark 4 needs Java 17 or 21"
    assert problems == ["problem: Python 3.10 or later is needed",
                        f"problem: no java on PATH or in JAVA_HOME: {needs}"]


def test_manifests_are_decoded_once_unless_the_cache_is_off(spark, warehouse, monkeypatch):
    from pyice_sql.core.format import avro_codec
    from pyice_sql.core.format.manifest_cache import DEFAULT_MAX_BYTES, MANIFESTS

    decoded: list[str] = []
    real = avro_codec.read_manifest
    monkeypatch.setattr(avro_codec, "read_manifest", lambda data, m: decoded.append(m.manifest_path) or real(data, m))
    ice = pyice_sql.connect(spark, warehouse=warehouse)
    ice.sql("CREATE DATABASE local.db; CREATE TABLE local.db.t (id bigint) USING iceberg")
    ice.sql("INSERT INTO local.db.t VALUES (1)")
    ice.sql("INSERT INTO local.db.t VALUES (2)")
    written = sorted(r.path for r in ice.sql("SELECT path FROM local.db.t.manifests").collect())
    assert len(written) == 2

    def decoded_by_two_selects() -> list[str]:
        decoded.clear()
        for _ in range(2):
            assert sorted(r.id for r in ice.sql("SELECT id FROM local.db.t").collect()) == [1, 2]
        return sorted(decoded)
    assert set(decoded_by_two_selects()) <= set(written) and len(decoded) == len(set(decoded))  # once at most
    spark.conf.set("spark.pyice.manifest-cache.max-total-bytes", "0")
    try:
        ice = pyice_sql.connect(spark, warehouse=warehouse)
        assert decoded_by_two_selects() == sorted(written * 2)
    finally:
        spark.conf.unset("spark.pyice.manifest-cache.max-total-bytes")
        MANIFESTS.resize(DEFAULT_MAX_BYTES)
