"""Maintenance procedures against Iceberg Java: the same CALL on twin tables, then compared.

pyice writes two identical tables (`t_ice`, `t_java`: same statements, so the same files and
sizes), tags their first snapshot, and then, step by step, pyice runs a procedure on `t_ice`
while Iceberg Java (1.10.2, one warm background JVM, catalog `ref` on the same warehouse) runs
the same CALL on `t_java`. After each step: the result rows must be equal (bytes written by
each engine excepted), Java must read both tables and find the rows pyice reads, Java's
metadata tables (live files per content, snapshot operations) must agree, and no file any
remaining snapshot references may be missing on disk. For expiry, Java's own `all_*` metadata
tables (before minus after) are the truth for what each engine had to delete. PyIceberg and
DuckDB read the final table once.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import pyice_sql
from pyice_sql.core.catalog.base import TableIdentifier
from pyice_sql.core.commit.producer import publish_metadata
from pyice_sql.core.format.fileio import local_path
from pyice_sql.core.model.snapshots import SnapshotRef
from tests.interop.engines import assert_peers_read, ice_rows, sort_rows
from tests.interop.ref_batch import ReferenceBatch

pytestmark = pytest.mark.interop

TABLES = ("t_ice", "t_java")
FUTURE = "TIMESTAMP '2999-01-01 00:00:00'"
REFRESH = "REFRESH TABLE ref.db.{t}"  # Java's catalog caches tables; pyice changed them meanwhile
SETUP = [
    "CREATE TABLE {t} (id bigint, v string, p string) USING iceberg PARTITIONED BY (p) "
    "TBLPROPERTIES ('write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read')",
    *[f"INSERT INTO {{t}} VALUES ({i}, 'v{i}', 'a'), ({i + 20}, 'w{i}', 'a')"
      + (f", ({i + 10}, 'x{i}', 'b'), ({i + 30}, 'y{i}', 'b')" if i < 2 else "") for i in range(3)],
    "DELETE FROM {t} WHERE id IN (1, 11, 22)",
    "UPDATE {t} SET v = 'upd' WHERE id IN (3, 30)",
]


class Chain:
    """The shared state of the step-by-step comparison."""

    def __init__(self, ice, java: ReferenceBatch, warehouse: Path) -> None:
        self.ice, self.ref, self.warehouse = ice, java, warehouse

    def table(self, name: str):
        return self.ice.load("local", TableIdentifier(("db",), name))

    def call(self, template: str) -> tuple[list, list]:
        """Run `template` (with {cat} and {t}) on t_ice with pyice and on t_java with Java."""
        ours = [tuple(r) for r in self.ice.sql(template.format(cat="local", t="db.t_ice")).collect()]
        _, theirs = self.ref.run_more([REFRESH.format(t="t_java"), template.format(cat="ref", t="db.t_java")])
        assert "error" not in theirs, theirs["error"]
        return ours, [tuple(r) for r in theirs["rows"]]

    def java(self, *sql: str) -> list[list]:
        out = []
        refreshed = self.ref.run_more([REFRESH.format(t=t) for t in TABLES] + list(sql))[len(TABLES):]
        for r in refreshed:
            assert "error" not in r, r["error"]
            out.append(sort_rows(r["rows"]))
        return out

    def compare_tables(self, live_files: tuple[list, list] | None = None) -> None:
        """Both tables: same rows for pyice and Java, same live files and operations in Java's eyes
        (or the given (t_ice, t_java) live file counts per content, where the engines differ)."""
        expected = ice_rows(self.ice.sql("SELECT * FROM local.db.t_ice"))
        queries = []
        for t in TABLES:
            queries += [f"SELECT * FROM ref.db.{t}",
                        f"SELECT content, count(*) FROM ref.db.{t}.files GROUP BY content",
                        f"SELECT operation FROM ref.db.{t}.snapshots ORDER BY committed_at"]
        ice_read, ice_files, ice_ops, java_read, java_files, java_ops = self.java(*queries)
        assert ice_read == expected, "Iceberg Java reads t_ice differently from pyice"
        assert java_read == expected, "the reference engine's procedure changed the rows differently"
        if live_files:
            assert (ice_files, java_files) == live_files
        else:
            assert ice_files == java_files
        assert sorted(ice_ops) == sorted(java_ops)
        for t in TABLES:
            missing = self.referenced(t) - self.on_disk(t)
            assert not missing, f"{t}: referenced files are missing: {sorted(missing)[:3]}"

    def root(self, t: str) -> Path:
        return self.warehouse / "db" / t

    def on_disk(self, t: str) -> set[str]:
        """Files below the table folder, without checksums and Spark's _SUCCESS markers."""
        return {str(p.relative_to(self.root(t))) for p in self.root(t).rglob("*")
                if p.is_file() and not p.name.startswith((".", "_"))}

    def referenced(self, t: str) -> set[str]:
        """Files Java's metadata tables say the table references (all snapshots)."""
        rows = self.java(f"SELECT file_path FROM ref.db.{t}.all_files",
                         f"SELECT path FROM ref.db.{t}.all_manifests",
                         f"SELECT manifest_list FROM ref.db.{t}.snapshots")
        root = str(self.root(t)) + "/"
        return {local_path(r[0])[len(root):] for group in rows for r in group}


@pytest.fixture(scope="module")
def chain(spark, tmp_path_factory):
    work = tmp_path_factory.mktemp("maintenance")
    warehouse = work / "warehouse"
    java = ReferenceBatch(warehouse, ["SELECT 1"], work / "ref")  # the JVM boots while pyice sets up
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "2")
    ice = pyice_sql.connect(spark, warehouse=str(warehouse))
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    for t in TABLES:
        for sql in SETUP:
            ice.sql(sql.format(t=f"local.db.{t}"))
        table = ice.load("local", TableIdentifier(("db",), t))
        first = table.metadata.snapshots[0].snapshot_id
        publish_metadata(table, table.metadata.set_ref("first", SnapshotRef(first, "tag")))
    yield Chain(ice, java, warehouse)
    spark.conf.set("spark.sql.shuffle.partitions", old)
    java.close()


def test_rewrite_manifests(chain):
    # first, while both tables hold the same pyice-written manifests
    ours, theirs = chain.call("CALL {cat}.system.rewrite_manifests('{t}')")
    assert ours == theirs and ours[0][0] > 1, (ours, theirs)
    chain.compare_tables()


def test_rewrite_data_files(chain):
    before = ice_rows(chain.ice.sql("SELECT * FROM local.db.t_ice"))
    ours, theirs = chain.call("CALL {cat}.system.rewrite_data_files(table => '{t}', options => "
                              "map('min-input-files', '2', 'remove-dangling-deletes', 'false'))")
    assert ours == theirs and ours[0][0] > 0, (ours, theirs)
    assert ice_rows(chain.ice.sql("SELECT * FROM local.db.t_ice")) == before
    # every delete file's targets were rewritten: both engines drop all five (pyice because their
    # targets are gone, Java because they are older than every live data file)
    chain.compare_tables()


def test_rewrite_position_delete_files(chain):
    for t in TABLES:  # fresh deletes on the compacted files, beside the dangling older ones
        chain.ice.sql(f"DELETE FROM local.db.{t} WHERE id IN (0, 10)")
    ours, theirs = chain.call("CALL {cat}.system.rewrite_position_delete_files(table => '{t}', "
                              "options => map('rewrite-all', 'true'))")
    # both engines write one file per partition's delete rows; bytes differ: t_java's rows name
    # Java-written data files (other path lengths)
    assert ours[0][:2] == theirs[0][:2] == (2, 2), (ours, theirs)
    chain.compare_tables()


def _all_counts(chain, t):
    counts = chain.java(f"SELECT count(DISTINCT file_path) FROM ref.db.{t}.all_data_files",
                        f"SELECT content, count(DISTINCT file_path) FROM ref.db.{t}.all_delete_files GROUP BY content",
                        f"SELECT count(DISTINCT path) FROM ref.db.{t}.all_manifests",
                        f"SELECT count(*) FROM ref.db.{t}.snapshots")
    deletes = dict((c, n) for c, n in counts[1])
    return (counts[0][0][0], deletes.get(1, 0), deletes.get(2, 0), counts[2][0][0], counts[3][0][0])


def test_expire_snapshots(chain):
    dry = [tuple(r) for r in chain.ice.sql("CALL local.system.expire_snapshots(table => 'db.t_ice', "
                                           f"older_than => {FUTURE}, retain_last => 2, dry_run => true)").collect()]
    before = {t: _all_counts(chain, t) for t in TABLES}
    disk = chain.on_disk("t_ice")
    ours, theirs = chain.call(f"CALL {{cat}}.system.expire_snapshots(table => '{{t}}', older_than => {FUTURE}, "
                              "retain_last => 2)")
    assert dry == ours
    after = {t: _all_counts(chain, t) for t in TABLES}
    for t, result in (("t_ice", ours[0]), ("t_java", theirs[0])):
        truth = tuple(b - a for b, a in zip(before[t], after[t])) + (0,)  # no statistics files
        assert result == truth, f"{t}: deleted counts {result}, Java's all_* tables say {truth}"
    assert ours[0][:3] == theirs[0][:3]  # same data and delete files expired in both
    assert len(disk - chain.on_disk("t_ice")) == sum(ours[0])
    snaps = chain.java(*(f"SELECT count(*) FROM ref.db.{t}.snapshots" for t in TABLES),
                       *(f"SELECT * FROM ref.db.{t} VERSION AS OF 'first'" for t in TABLES))
    assert snaps[0] == snaps[1] == [[3]]  # the two newest on main, and the tagged first one
    assert snaps[2] == snaps[3] and len(snaps[2]) == 4  # the first INSERT's rows
    chain.compare_tables()


def test_remove_orphan_files(chain):
    for t in TABLES:
        root = chain.root(t)
        (root / "data" / "stray").mkdir(parents=True, exist_ok=True)
        for rel in ("data/stray/a.parquet", "metadata/junk.avro", "notes.txt"):
            (root / rel).write_text("x")
        old = time.time() - 10 * 86400
        for p in root.rglob("*"):
            if p.is_file():
                os.utime(p, (old, old))
        (root / "data" / "stray" / "young.parquet").write_text("x")
    def rel(rows, t):
        return sorted(local_path(r[0])[len(str(chain.root(t))) + 1:] for r in rows)
    ours, theirs = chain.call("CALL {cat}.system.remove_orphan_files(table => '{t}', dry_run => true)")
    assert rel(ours, "t_ice") == rel(theirs, "t_java") == ["data/stray/a.parquet", "metadata/junk.avro", "notes.txt"]
    ours, theirs = chain.call("CALL {cat}.system.remove_orphan_files(table => '{t}')")
    assert rel(ours, "t_ice") == rel(theirs, "t_java")
    for t in TABLES:
        assert not (chain.root(t) / "notes.txt").exists() and (chain.root(t) / "data/stray/young.parquet").exists()
    chain.compare_tables()
    assert_peers_read(chain.root("t_ice"), ice_rows(chain.ice.sql("SELECT * FROM local.db.t_ice")))
