"""Crash safety: a writer killed by SIGKILL at each step of a commit leaves a usable table.

For each fault point (pyice_sql/core/faults.py) and both catalogs, a child process runs a
merge-on-read MERGE (new data files + position deletes + manifests + manifest list + metadata)
with PYICE_FAULT set and dies there. Then, in this process: the table loads and holds exactly
the rows before the MERGE (or after it, for a kill after the pointer swap); the files the dead
writer left are exactly the kinds it had written by then and nothing the table references;
remove_orphan_files lists and removes exactly them (Iceberg skips hidden names such as a
`.tmp`) and the table does not notice; the table takes a further commit; Iceberg Java reads it.
"""
from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pyice_sql.core.faults import POINTS
from pyice_sql.core.format.fileio import local_path
from tests.interop.engines import java_sql, sort_rows
from tests.reliability.tablefiles import kind, leftovers

pytestmark = [pytest.mark.reliability, pytest.mark.interop]

REPO = Path(__file__).resolve().parents[2]
CATALOGS = ("hadoop", "sql")
# The steps up to the manifest list are the catalog-independent producer: killed there once, on
# the filesystem catalog. The metadata and swap steps are each catalog's own code: killed on both.
CASES = [(c, p) for p in POINTS for c in CATALOGS if c == "hadoop" or p in ("metadata-written", "swapped")]
BEFORE = [[1, "a"], [2, "b"], [3, "c"], [4, "d"]]
AFTER = [[1, "u1"], [2, "b"], [3, "u3"], [4, "d"], [10, "n10"]]
LATER = [99, "later"]
MERGE = ("MERGE INTO local.db.{t} t USING (SELECT * FROM VALUES (1, 'u1'), (3, 'u3'), (10, 'n10') AS v(id, s)) s "
         "ON t.id = s.id WHEN MATCHED THEN UPDATE SET s = s.s WHEN NOT MATCHED THEN INSERT *")
# Kinds of files the writer has written (and not yet made part of the table) when killed there.
# This MERGE's source is small, so merge-on-read writes its delete files and data files in one job
# (rowlevel/merge_on_read.py): both are there when the driver describes the delete files.
LEFT = {
    "delete-files": {"data", "deletes"},
    "data-files": {"data", "deletes"},
    "manifests": {"data", "deletes", "manifest"},
    "manifest-list": {"data", "deletes", "manifest", "manifest-list"},
    "metadata-written": {"data", "deletes", "manifest", "manifest-list", "temp|metadata"},
    "swapped": set(),
}


def _soon() -> str:
    """A minute from now (UTC): every file written so far is older than that."""
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=1)).strftime("%Y-%m-%d %H:%M:%S")


def _name(point: str) -> str:
    return "t_" + point.replace("-", "_")


def _kill(warehouse: str, catalog_type: str, point: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYICE_FAULT": point, "TZ": "UTC"}
    return subprocess.run([sys.executable, "-m", "tests.reliability.children", "run", warehouse, catalog_type,
                           MERGE.format(t=_name(point))],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def crashed(spark, tmp_path_factory):
    """Per catalog: (session, warehouse); every table killed at its point, kill results kept."""
    import pyice_sql

    worlds, jobs = {}, []
    for catalog_type in CATALOGS:
        warehouse = str(tmp_path_factory.mktemp(f"crash-{catalog_type}") / "warehouse")
        ice = pyice_sql.connect(spark, warehouse=warehouse, catalog_type=catalog_type)
        ice.sql("CREATE DATABASE local.db")
        for point in [p for c, p in CASES if c == catalog_type]:
            t = _name(point)
            ice.sql(f"CREATE TABLE local.db.{t} (id bigint, s string) USING iceberg PARTITIONED BY (bucket(2, id)) "
                    "TBLPROPERTIES ('write.merge.mode' = 'merge-on-read')")
            ice.sql(f"INSERT INTO local.db.{t} VALUES (1, 'a'), (2, 'b')")
            ice.sql(f"INSERT INTO local.db.{t} VALUES (3, 'c'), (4, 'd')")
            jobs.append((catalog_type, point, warehouse))
        worlds[catalog_type] = (ice, warehouse)
    before = {(c, p): worlds[c][0].load("local", _ident(p)).metadata_location for c, p, _ in jobs}
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip([(c, p) for c, p, _ in jobs], pool.map(lambda j: _kill(j[2], j[0], j[1]), jobs)))
    return worlds, done, before


def _ident(point: str):
    from pyice_sql.core.catalog.base import TableIdentifier

    return TableIdentifier(("db",), _name(point))


@pytest.mark.parametrize("catalog_type,point", CASES)
def test_killed_at(crashed, catalog_type, point):
    worlds, done, before = crashed
    ice, _ = worlds[catalog_type]
    result = done[(catalog_type, point)]
    assert result.returncode == -9, (f"the writer was not killed at {point} (exit {result.returncode}):\n"
                                     f"{result.stderr[-3000:]}")
    t = _name(point)
    table = ice.load("local", _ident(point))
    expected = sort_rows(AFTER if point == "swapped" else BEFORE)
    assert sort_rows(ice.sql(f"SELECT * FROM local.db.{t}").collect()) == expected
    if point == "swapped":
        assert table.metadata_location != before[(catalog_type, point)]
    else:
        assert table.metadata_location == before[(catalog_type, point)]
    if catalog_type == "hadoop" and point == "swapped":  # killed before the hint update: stale hint
        hint = Path(table.metadata_location.removeprefix("file:")).parent / "version-hint.text"
        assert hint.read_text().strip() == str(table.extras["version"] - 1)

    left = leftovers(table)
    kinds = {kind(p) for p in left}
    wanted = {k for k in LEFT[point] if "|" not in k}
    either = [k for k in LEFT[point] if "|" in k]
    if either:  # Hadoop: a temp file not yet linked; SQL: the new metadata file never swapped in
        wanted.add("temp" if catalog_type == "hadoop" else "metadata")
    assert kinds == wanted, f"leftovers after a kill at {point}: {sorted(left)}"

    # remove_orphan_files lists exactly the leftovers (bar hidden names: a Hadoop `.tmp`, skipped as
    # Iceberg skips them) and removes them; the table does not notice.
    visible = {p for p in left if not os.path.basename(p).startswith((".", "_"))}
    call = f"CALL local.system.remove_orphan_files(table => 'db.{t}', older_than => TIMESTAMP '{_soon()}'"
    assert {local_path(r[0]) for r in ice.sql(call + ", dry_run => true)").collect()} == visible
    aged = time.time() - 4 * 86400  # older than the default older_than (3 days): really removed
    for path in visible:
        os.utime(path, (aged, aged))
    removed = ice.sql(f"CALL local.system.remove_orphan_files(table => 'db.{t}')").collect()
    assert {local_path(r[0]) for r in removed} == visible
    assert leftovers(table) == left - visible
    for path in left - visible:
        os.remove(path)
    assert sort_rows(ice.sql(f"SELECT * FROM local.db.{t}").collect()) == expected
    ice.sql(f"INSERT INTO local.db.{t} VALUES ({LATER[0]}, '{LATER[1]}')")
    assert sort_rows(ice.sql(f"SELECT * FROM local.db.{t}").collect()) == sort_rows(expected + [LATER])
    assert leftovers(ice.load("local", _ident(point))) == set()


def test_java_reads_every_crashed_table(crashed, tmp_path):
    """After the checks above (tables then hold the expected rows plus LATER), Java reads them all.

    Java's catalog is a Hadoop one: SQL-catalog tables are read through a Hadoop-layout copy of
    their current metadata file (which names the same manifests and data files)."""
    worlds, _, _ = crashed
    _, warehouse = worlds["hadoop"]
    statements, expected = [], []
    for catalog_type, point in CASES:
        rows = sort_rows((AFTER if point == "swapped" else BEFORE) + [LATER])
        table = worlds[catalog_type][0].load("local", _ident(point))
        if table.metadata.current_snapshot().summary.get("added-records") != "1":
            pytest.fail(f"run test_killed_at first ({catalog_type} table {_name(point)} has no later commit)")
        expected.append(rows)
        if catalog_type == "hadoop":
            statements.append(f"SELECT * FROM ref.db.{_name(point)}")
            continue
        copy = Path(warehouse) / "db_sqlcopy" / _name(point) / "metadata"
        copy.mkdir(parents=True, exist_ok=True)
        src = table.metadata_location.removeprefix("file:")
        shutil.copy(src, copy / "v1.metadata.json")
        (copy / "version-hint.text").write_text("1")
        statements.append(f"SELECT * FROM ref.db_sqlcopy.{_name(point)}")
    assert java_sql(warehouse, *statements) == expected
