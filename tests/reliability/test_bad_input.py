"""The bad-input corpus (bad_sql.py, 300+ statements) through `ice.sql`, and a sample through the CLI.

Each statement must raise a PyIceError subclass with a short message (and a SQL position where
the fault is in the text), and change nothing on disk: both tables keep their metadata file and
exactly their files (a failed write deletes what it wrote). The CLI prints no traceback and
exits 1 naming the script line.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyice_sql.core.errors import PyIceError
from tests.reliability.bad_sql import SETUP, TABLES, corpus
from pyice_sql.core.format.fileio import local_path
from tests.reliability.tablefiles import files_under

pytestmark = [pytest.mark.reliability, pytest.mark.spark]

REPO = Path(__file__).resolve().parents[2]
CASES = list(dict.fromkeys(corpus()))  # de-duplicated, in order
MAX_MESSAGE = 2000


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory):
    import pyice_sql

    warehouse = str(tmp_path_factory.mktemp("bad-input") / "warehouse")
    ice = pyice_sql.connect(spark, warehouse=warehouse)
    for sql in SETUP:
        ice.sql(sql)
    return ice, warehouse


def _state(ice) -> dict:
    from pyice_sql.core.catalog.base import TableIdentifier

    out = {}
    for name in TABLES:
        table = ice.load("local", TableIdentifier(("db",), name))
        out[name] = (table.metadata_location, files_under(table.metadata.location))
    return out


def _hints(warehouse: str) -> dict[Path, str]:
    return {p: p.read_text() for p in Path(warehouse).glob("db/*/metadata/version-hint.text")}


def _restore(before: dict, hints: dict[Path, str]) -> None:
    """Put the tables back as they were: drop every file written since, rewrite the hints."""
    for metadata_location, files in before.values():
        root = Path(local_path(metadata_location)).parent.parent
        for path in {str(p) for p in root.rglob("*") if p.is_file() and not p.name.endswith(".crc")} - files:
            os.remove(path)
    for path, text in hints.items():
        path.write_text(text)


def test_corpus_size():
    assert len(CASES) >= 300


@pytest.mark.parametrize("category,sql,positioned", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_bad_statement(world, category, sql, positioned):
    ice, warehouse = world
    before = _state(ice)
    hints = _hints(warehouse)
    try:
        ice.sql(sql).collect()
    except PyIceError as e:
        error = e
    except Exception as e:  # noqa: BLE001 - the point: anything else is a bug
        pytest.fail(f"{type(e).__name__} (not a pyice_sql error) for {sql[:300]!r}: {str(e)[:1500]}")
    else:
        pytest.fail(f"no error for {sql[:300]!r}")
    finally:
        _restore(before, hints)  # a wrongly accepted statement must not spoil the cases after it
    assert error.message.strip(), "empty error message"
    assert len(str(error)) <= MAX_MESSAGE, f"{len(str(error))}-character message: {str(error)[:300]}..."
    if positioned:
        assert error.position is not None, f"{type(error).__name__} without a position: {error}"
    assert _state(ice) == before, f"{sql[:200]!r} changed the tables on disk"


CLI_SCRIPTS = {
    "syntax": ("SELECT count(*) FROM local.db.t;\nUPDATE local.db.t SET s = 'x' WHERE;\n", 2),
    "unknown-column": ("\n\nDELETE FROM local.db.t\n  WHERE nope = 1;\n", 4),  # the name, line 4
    "cardinality": ("MERGE INTO local.db.t t USING local.db.u s ON t.id = s.id\n"
                    "WHEN MATCHED THEN UPDATE SET s = s.s;\n", 1),
}


def test_cli_reports_bad_statements_without_traceback(world, tmp_path):
    ice, warehouse = world
    before = _state(ice)
    procs = {}
    for name, (text, _) in CLI_SCRIPTS.items():
        script = tmp_path / f"{name}.sql"
        script.write_text(text)
        procs[name] = subprocess.Popen(
            [sys.executable, "-m", "pyice_sql", "run", str(script), "--warehouse", warehouse, "--quiet"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "TZ": "UTC", "PYICE_SPARK_MASTER": "local[1]"})
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        line = CLI_SCRIPTS[name][1]
        assert proc.returncode == 1, f"{name}: exit {proc.returncode}\n{err[-2000:]}"
        assert "Traceback" not in out + err, f"{name}: traceback printed\n{err[-3000:]}"
        assert "internal error" not in err, f"{name}: {err[-2000:]}"
        assert f"{name}.sql:{line}:" in err, f"{name}: no script:line in {err[-2000:]}"
    assert _state(ice) == before
