"""Metadata tables equal what Iceberg Java (the reference engine) shows for the same table.

One reference-engine run builds the tables and records DESCRIBE and SELECT * of every metadata
table; pyice_sql then loads the same files through its Hadoop catalog and must produce the same
columns, types and rows. The table covers appends, a position delete file (merge-on-read
DELETE), a tag, partition evolution (identity then identity + days) and null partitions; a
second, unpartitioned table covers Java dropping the `partition` column and a rollback (a
snapshot that is no longer a current ancestor).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyice_sql.core.catalog.base import TableIdentifier, read_metadata_file
from pyice_sql.core.catalog.hadoop import HadoopCatalog
from pyice_sql.core.errors import AnalysisError
from pyice_sql.core.format.fileio import LocalFileIO, local_path
from pyice_sql.spark.read.metadata_tables import METADATA_TABLE_NAMES, metadata_table
from tests.counting_io import CountingIO

SHARED = Path(os.environ.get("PYICE_SHARED", Path(__file__).resolve().parents[3] / "shared"))
REFERENCE = SHARED / "iceberg-reference" / "iceberg_ref.py"
REF_PYTHON = os.environ.get("PYICE_REF_PYTHON", sys.executable)  # a pyspark 3.5 one: see interop/engines.py

SETUP = """
CREATE TABLE ref.db.t (id bigint, p string, ts timestamp) USING iceberg PARTITIONED BY (p)
  TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read');
INSERT INTO ref.db.t VALUES (1, 'a', TIMESTAMP'2024-01-01 10:00:00'), (2, 'a', TIMESTAMP'2024-01-02 11:00:00'),
  (3, 'b', NULL);
INSERT INTO ref.db.t VALUES (4, NULL, TIMESTAMP'2024-01-03 00:00:00');
DELETE FROM ref.db.t WHERE id = 1;
ALTER TABLE ref.db.t CREATE TAG t1;
ALTER TABLE ref.db.t ADD PARTITION FIELD days(ts);
INSERT INTO ref.db.t VALUES (5, 'a', TIMESTAMP'2024-01-05 12:00:00'), (6, 'a', NULL);
CREATE TABLE ref.db.u (id bigint) USING iceberg TBLPROPERTIES ('format-version'='2');
INSERT INTO ref.db.u VALUES (1), (2);
ALTER TABLE ref.db.u CREATE TAG t1;
INSERT INTO ref.db.u VALUES (3);
CALL ref.system.set_current_snapshot(table => 'db.u', ref => 't1');
"""
# (table, metadata table, read as of tag t1)
CASES = ([("t", name, False) for name in METADATA_TABLE_NAMES]
         + [("t", name, True) for name in ("files", "data_files", "delete_files", "manifests", "entries",
                                           "partitions")]
         + [("u", name, False) for name in METADATA_TABLE_NAMES])


def _query(table: str, name: str, travel: bool) -> str:
    return f"ref.db.{table}.{name}" + (" VERSION AS OF 't1'" if travel else "")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """Warehouse built by Iceberg Java, the reference module, and every statement's rows by SQL."""
    assert REFERENCE.exists(), f"reference engine not found at {REFERENCE} (tests/run.sh sets it up)"
    warehouse = tmp_path_factory.mktemp("metadata_tables") / "warehouse"
    script = warehouse.parent / "script.sql"
    queries = [f"SELECT * FROM {_query(*case)}" for case in CASES]
    queries += [f"DESCRIBE ref.db.{table}.{name}" for table, name, travel in CASES if not travel]
    script.write_text(SETUP + "".join(q + ";\n" for q in queries))
    # local[1]: one task per insert, so rows 1 and 2 share a file and the DELETE writes a delete file
    env = {**os.environ, "TZ": "UTC", "ICEBERG_REF_MASTER": "local[1]"}
    done = subprocess.run([REF_PYTHON, str(REFERENCE), "--warehouse", str(warehouse), "sql", "-f", str(script)],
                          capture_output=True, text=True, env=env, timeout=600)
    results = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            obj = json.loads(line)
            assert "error" not in obj, obj
            results[" ".join(obj["sql"].split())] = obj["rows"]
    assert all(q in results for q in queries), done.stderr[-3000:]
    module_spec = importlib.util.spec_from_file_location("iceberg_ref", REFERENCE)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return warehouse, module, results


def _load(warehouse: Path, name: str):
    catalog = HadoopCatalog("ref", str(warehouse), io_factory=lambda loc: LocalFileIO())
    return catalog.load_table(TableIdentifier(("db",), name))


def _normalised(rows: list, name: str) -> list:
    """Sorted rows; the current metadata file is spelled by each catalog (file:///x vs /x)."""
    if name == "metadata_log_entries":
        rows = [[row[0], local_path(row[1]), *row[2:]] for row in rows]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True))


@pytest.mark.spark
@pytest.mark.parametrize("table_name,name,travel", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_matches_reference_engine(spark, reference, table_name, name, travel):
    warehouse, ref_module, results = reference
    table = _load(warehouse, table_name)
    snapshot_id = table.metadata.refs["t1"].snapshot_id if travel else None
    df = metadata_table(spark, table, name, snapshot_id)

    described = results[f"DESCRIBE ref.db.{table_name}.{name}"]
    ref_columns = [(col, type_) for col, type_, _ in described]
    skipped = [i for i, (col, _) in enumerate(ref_columns) if col == "readable_metrics"]  # not provided
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == \
        [c for i, c in enumerate(ref_columns) if i not in skipped]

    expected = [[v for i, v in enumerate(row) if i not in skipped]
                for row in results[f"SELECT * FROM {_query(table_name, name, travel)}"]]
    actual = [ref_module.plain(list(row)) for row in df.collect()]
    assert expected or (table_name, name) == ("u", "delete_files"), "only u has no delete files"
    assert _normalised(actual, name) == _normalised(expected, name)


@pytest.mark.spark
def test_unknown_name_and_bad_snapshots(spark, reference):
    table = _load(reference[0], "t")
    with pytest.raises(AnalysisError, match="valid names: snapshots, history, files"):
        metadata_table(spark, table, "fils")
    with pytest.raises(AnalysisError, match="snapshot 42 does not exist"):
        metadata_table(spark, table, "files", 42)
    with pytest.raises(AnalysisError, match="all_manifests"):
        metadata_table(spark, table, "all_manifests", table.metadata.current_snapshot_id)


@pytest.mark.spark
@pytest.mark.parametrize("name", ["files", "entries", "partitions"])
def test_each_manifest_is_read_once(spark, reference, name):
    io = CountingIO()
    table = dataclasses.replace(_load(reference[0], "t"), io=io)
    metadata_table(spark, table, name)
    assert io.reads and len(io.reads) == len(set(io.reads))


@pytest.mark.spark
def test_table_without_snapshots(spark, reference):
    table = _load(reference[0], "t")
    first = table.metadata_location.rsplit("/", 1)[0] + "/v1.metadata.json"
    empty = dataclasses.replace(table, metadata=read_metadata_file(table.io, first), metadata_location=first)
    for name in ("snapshots", "history", "files", "manifests", "all_manifests", "entries", "partitions", "refs"):
        assert metadata_table(spark, empty, name).count() == 0, name
    assert metadata_table(spark, empty, "metadata_log_entries").collect()[0][1:] == (first, None, None, None)
