"""Position deletes and deletion vectors applied inside the scan tasks (PositionDeleteFilter.java).

A merge-on-read DELETE leaves delete files (v2: Parquet position delete files, v3: deletion
vectors); the scan then filters rows with the shim's function (or UDF) instead of joining them
with the delete rows. Rows name their file by its size where no other scanned file has that size, else by the
hash of its path (file_keys.py); both are checked, and the string joins the reader falls back to.
Checked against hand-computed row sets, on the
plan (no anti-join), and on failures: a damaged delete file fails the read naming the file, a
manifest size that disagrees with the file fails it too, and two planned files sharing a 64-bit
key make the shim decline (the reader then joins, which is exact).
"""
from __future__ import annotations

import glob
import os

import pytest

pytestmark = pytest.mark.spark


def _mor(version: int) -> str:
    return (f"'format-version'='{version}', 'write.delete.mode'='merge-on-read', "
            "'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'")


@pytest.fixture(params=[2, 3])
def table(ice, request):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, data string) USING iceberg TBLPROPERTIES ({_mor(request.param)})")
    for lo in (0, 100):  # two files per INSERT (range's two partitions): four data files
        ice.sql(f"INSERT INTO local.db.t SELECT id, concat('r', cast(id as string)) FROM range({lo}, {lo + 100})")
    ice.sql("DELETE FROM local.db.t WHERE id % 10 = 3")
    ice.sql("UPDATE local.db.t SET data = 'u' WHERE id % 10 = 4")  # a second generation of deletes
    return ice


@pytest.fixture(params=["size", "join"])
def file_key_kind(request, monkeypatch):
    """Each test runs with rows keyed by file size (the fixture's sizes are distinct, as
    `_assert_sizes_distinct` checks) and with the string joins (keys declined, as when two are
    equal or on Spark Connect)."""
    if request.param == "join":
        monkeypatch.setattr("pyice_sql.spark.read.reader.scan_keys", lambda *args: None)
    return request.param


def _tasks(ice):
    from pyice_sql.core.catalog.base import TableIdentifier
    from pyice_sql.core.scan.planner import plan_files

    t = ice.catalogs["local"].load_table(TableIdentifier(("db",), "t"))
    return plan_files(t.metadata, t.io, t.metadata.current_snapshot()).tasks


def _assert_sizes_distinct(ice):
    sizes = [t.file.file_size_in_bytes for t in _tasks(ice)]
    assert len(set(sizes)) == len(sizes), f"the fixture's data files must differ in size: {sizes}"


def _plan_text(df) -> str:
    """The optimized plan with every expression in full: a function called through the shim's
    catalog prints as `target.invoke`, without its arguments, in the plan's own string."""
    nodes, texts = [df._jdf.queryExecution().optimizedPlan()], []
    while nodes:
        node = nodes.pop()
        texts.append(node.simpleString(100))
        exprs, children = node.expressions(), node.children()
        texts += [exprs.apply(i).treeString() for i in range(exprs.size())]
        nodes += [children.apply(i) for i in range(children.size())]
    return "\n".join(texts)


def _assert_keyed_by(kind: str, plan: str) -> None:
    if kind == "size":
        assert "file_size" in plan and "xxhash64" not in plan and "file_path" not in plan
    elif kind == "size and path":
        assert "file_size" in plan and "xxhash64(_metadata" in plan
    else:
        assert "UDF" not in plan and "Join" in plan


def test_rows_removed_by_position_deletes_stay_removed(table, file_key_kind):
    ice = table
    rows = {(r.id, r.data) for r in ice.sql("SELECT id, data FROM local.db.t").collect()}
    expected = {(i, "u" if i % 10 == 4 else f"r{i}") for i in range(200) if i % 10 != 3}
    assert rows == expected
    deletes = ice.sql("SELECT count(*) FROM local.db.t.delete_files").first()[0]
    assert deletes > 0


def test_the_scan_filters_in_its_tasks_instead_of_joining(table):
    _assert_sizes_distinct(table)
    plan = _plan_text(table.sql("SELECT id FROM local.db.t"))
    assert "LeftAnti" not in plan
    _assert_keyed_by("size", plan)
    # called with primitive arguments through the shim's function catalog, not as a (boxing) UDF;
    # a shim loaded into a running session keeps the UDF (test_jvm_shim's fresh-JVM test)
    assert "PositionDeleteFilter" in plan and ".invoke" in plan and "UDF" not in plan


def test_rows_keep_their_file_and_position_under_the_file_key_join(table, file_key_kind):
    """The row-level scan looks up each row's facts by its file key: every live row's
    (`_file`, `_pos`) holds its id when that file is read on its own."""
    from pyice_sql.core.catalog.base import TableIdentifier
    from pyice_sql.spark.read.table_scan import scan

    ice = table
    _assert_sizes_distinct(ice)
    t = ice.catalogs["local"].load_table(TableIdentifier(("db",), "t"))
    rows, plan = scan(ice.spark, t, with_metadata=True)
    _assert_keyed_by(file_key_kind, _plan_text(rows))
    scanned = {(r["_file"], r["_pos"]): r["id"] for r in rows.select("_file", "_pos", "id").collect()}
    physical = {}
    for task in plan.tasks:
        raw = ice.spark.read.parquet(task.file.file_path).select("_metadata.row_index", "id").collect()
        physical.update({(task.file.file_path, r["row_index"]): r["id"] for r in raw})
    assert len(scanned) == ice.sql("SELECT count(*) FROM local.db.t").first()[0]
    assert all(physical[k] == v for k, v in scanned.items())


def test_the_filter_is_exact_whatever_order_positions_come_in(table):
    """The filter walks a data file's sorted deleted positions with a cursor while positions
    ascend (as a scan reads them) and searches again when they do not: rows that come
    descending, shuffled, repeated and interleaved across files keep exactly the live positions.
    Truth: the ids at each position of the data files as Spark reads them on their own (the
    fixture deleted ids ending in 3 and moved those ending in 4 to a new file; the test deletes
    those below 20 too, so the files hold different numbers of deleted positions)."""
    import random

    from pyspark.sql import functions as F

    from pyice_sql.core.catalog.base import TableIdentifier
    from pyice_sql.core.scan.planner import plan_files
    from pyice_sql.spark.read.file_keys import file_keys, live_rows

    ice = table
    ice.sql("DELETE FROM local.db.t WHERE id < 20 AND id % 10 <> 4")  # files with more deletes than others
    t = ice.catalogs["local"].load_table(TableIdentifier(("db",), "t"))
    tasks = plan_files(t.metadata, t.io, t.metadata.current_snapshot()).tasks
    assert any(task.deletes for task in tasks) and not all(task.deletes for task in tasks)
    rows, deleted, spellings = [], set(), []
    for task in tasks:
        raw = ice.spark.read.parquet(task.file.file_path).select("_metadata.file_path", "_metadata.row_index", "id")
        raw = raw.collect()
        spelling = raw[0]["file_path"]
        spellings.append(spelling)
        # the UPDATE's new data file has no deletes; the first files lost their ids ending in 3
        # and 4, and those below 20
        deleted |= {(spelling, r["row_index"]) for r in raw
                    if task.deletes and (r["id"] % 10 in (3, 4) or r["id"] < 20)}
        positions = [r["row_index"] for r in raw]
        shuffled = positions[:]
        random.Random(7).shuffle(shuffled)
        rows += [(spelling, p) for p in sorted(positions, reverse=True) + shuffled + positions[::7]]
    half = rows[len(rows) // 2:]
    random.Random(11).shuffle(half)
    rows[len(rows) // 2:] = half  # the second half interleaves the files
    keys = file_keys(ice.spark, spellings)
    assert keys is not None
    df = ice.spark.createDataFrame(rows, "path string, pos long").coalesce(1)
    live = live_rows(ice.spark, tasks, keys, F.xxhash64("path"), F.col("pos"))
    kept = sorted((r.path, r.pos) for r in df.where(live).collect())
    assert kept == sorted(r for r in rows if r not in deleted)
    assert len(deleted) > 0 and len(kept) < len(rows)


@pytest.mark.parametrize("with_metadata", [False, True])
def test_files_of_equal_size_are_keyed_by_path_and_read_exactly(ice, with_metadata):
    """Two data files with the same rows have the same size: their rows are keyed by the hash of
    the path, the others' by size. Truth: the rows inserted, less the ones deleted, and each
    row's (`_file`, `_pos`) as Spark reads that file on its own."""
    from pyice_sql.core.catalog.base import TableIdentifier
    from pyice_sql.spark.read.table_scan import scan

    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint) USING iceberg TBLPROPERTIES ({_mor(2)})")
    for _ in range(2):
        ice.sql("INSERT INTO local.db.t SELECT id FROM range(0, 50) ORDER BY id")
    ice.sql("INSERT INTO local.db.t VALUES (1000)")
    ice.sql("DELETE FROM local.db.t WHERE id % 7 = 0")
    sizes = [t.file.file_size_in_bytes for t in _tasks(ice)]
    assert len(set(sizes)) < len(sizes) and any(sizes.count(s) == 1 for s in sizes)
    rows, plan = scan(ice.spark, ice.catalogs["local"].load_table(TableIdentifier(("db",), "t")),
                      with_metadata=with_metadata)
    _assert_keyed_by("size and path", _plan_text(rows))
    collected = rows.collect()
    assert sorted(r.id for r in collected) == sorted(2 * [i for i in range(50) if i % 7] + [1000])
    if with_metadata:
        for task in plan.tasks:
            raw = ice.spark.read.parquet(task.file.file_path).select("_metadata.row_index", "id").collect()
            ids = {r["row_index"]: r["id"] for r in raw}
            assert all(ids[r["_pos"]] == r["id"] for r in collected if r["_file"] == task.file.file_path)
        assert {r["_file"] for r in collected} == {t.file.file_path for t in plan.tasks}


def test_the_scan_compiles_once_whatever_sizes_its_files_share(ice):
    """Spark compiles each distinct generated code once per JVM. Two tables whose files share
    different sizes scan with the same code: the shared sizes are not written into it (as an
    `IN` list's literals were, so that every statement after one that wrote two files of one size
    compiled its scan's stage again). Truth: Spark's own count of compilations, and the rows."""
    counter = ice.spark._jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    for name, n in (("a", 50), ("b", 70)):
        ice.sql(f"CREATE TABLE local.db.{name} (id bigint) USING iceberg TBLPROPERTIES ({_mor(2)})")
        for _ in range(2):  # the same rows twice: two files of one size, another per table
            ice.sql(f"INSERT INTO local.db.{name} SELECT id FROM range(0, {n}) ORDER BY id")
        ice.sql(f"DELETE FROM local.db.{name} WHERE id % 7 = 0")
    assert sorted(r.id for r in ice.sql("SELECT id FROM local.db.a").collect()) == sorted(
        2 * [i for i in range(50) if i % 7])
    compiled = counter.getCount()
    rows = ice.sql("SELECT id FROM local.db.b")
    _assert_keyed_by("size and path", _plan_text(rows))
    assert sorted(r.id for r in rows.collect()) == sorted(2 * [i for i in range(70) if i % 7])
    assert counter.getCount() == compiled


def _sizes_one_byte_off(monkeypatch):
    """Every planned size one byte off: as if each file on storage differed from its manifest."""
    from pyice_sql.spark.read import reader

    real = reader.scan_keys

    def off(*args):
        keys, column = real(*args)
        return [k + 1 for k in keys], column
    monkeypatch.setattr(reader, "scan_keys", off)


def test_a_manifest_size_that_disagrees_with_the_file_fails_the_delete_filter(table, monkeypatch):
    """Rows keyed by size find their file's deletes through the manifests' `file_size_in_bytes`;
    a row of a file whose size on storage differs must fail the scan, not read as live."""
    _sizes_one_byte_off(monkeypatch)
    with pytest.raises(Exception) as failure:
        table.sql("SELECT id FROM local.db.t").collect()
    assert "is no planned data file's: a manifest disagrees with the file on storage" in str(failure.value)


def test_a_manifest_size_that_disagrees_with_the_file_fails_the_fact_lookup(ice, monkeypatch):
    """The same for a row-level scan of files without deletes: its per-file facts (`_file`, ...)
    are looked up by size, and a row of no planned size fails rather than take no file."""
    from pyice_sql.core.catalog.base import TableIdentifier
    from pyice_sql.spark.read.table_scan import scan

    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint) USING iceberg TBLPROPERTIES ({_mor(2)})")
    ice.sql("INSERT INTO local.db.t VALUES (1), (2), (3)")
    _assert_sizes_distinct(ice)
    _sizes_one_byte_off(monkeypatch)
    rows, _ = scan(ice.spark, ice.catalogs["local"].load_table(TableIdentifier(("db",), "t")), with_metadata=True)
    with pytest.raises(Exception) as failure:
        rows.select("_file").collect()
    assert "is no planned data file's: a manifest disagrees with the file on storage" in str(failure.value)


def test_a_damaged_position_delete_file_fails_the_read_naming_it(ice, warehouse):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint) USING iceberg TBLPROPERTIES ({_mor(2)})")
    ice.sql("INSERT INTO local.db.t SELECT id FROM range(0, 100)")
    ice.sql("DELETE FROM local.db.t WHERE id = 5")
    (damaged,) = glob.glob(os.path.join(warehouse, "db", "t", "data", "*-deletes.parquet"))
    with open(damaged, "wb") as f:
        f.write(b"not parquet at all")
    with pytest.raises(Exception) as failure:
        ice.sql("SELECT count(*) FROM local.db.t").collect()
    assert "cannot read position delete file" in str(failure.value)
    assert os.path.basename(damaged) in str(failure.value)


def test_the_shim_keys_paths_as_sparks_xxhash64_and_declines_a_shared_key(spark):
    """The driver's keys (XxHash64.java) must be Spark's `xxhash64` of the same strings, which the
    scan computes per row: every length around the algorithm's 4-, 8- and 32-byte steps, and
    multi-byte UTF-8. Keys collide only for equal paths in practice; the check is the same."""
    from pyice_sql.spark.read.file_keys import file_keys

    paths = ["x" * n for n in range(0, 40)] + [f"file:/w/{'y' * n}.parquet" for n in range(0, 70)] + [
        "s3://b/ü/日本/é.parquet"]
    expected = [r[0] for r in spark.createDataFrame([(p,) for p in paths], "p string")
                .selectExpr("xxhash64(p)").collect()]
    assert file_keys(spark, paths) == expected  # Spark's own function, so per-row keys match
    assert file_keys(spark, ["file:/w/a.parquet", "file:/w/a.parquet"]) is None


def test_a_statement_folds_the_previous_deletes_of_the_files_it_changes_only(table):
    """The writers fold a changed data file's previous deletes into its new delete file (v2) or DV
    (v3), read in the write task for that file only (`deleted_positions`); the other files keep
    their delete files as they were. Truth: the positions of the deleted ids in the data file as
    Spark reads it on its own."""
    ice = table
    query = "SELECT referenced_data_file, file_path, content_offset, record_count FROM local.db.t.delete_files"
    before = {tuple(r) for r in ice.sql(query).collect()}
    files = [r[0] for r in ice.sql("SELECT file_path FROM local.db.t.data_files").collect()]
    (target,) = [f for f in files if ice.spark.read.parquet(f).where("id = 5").count()]
    ice.sql("DELETE FROM local.db.t WHERE id = 5")
    after = {tuple(r) for r in ice.sql(query).collect()}
    assert {r for r in before if r[0] != target} == {r for r in after if r[0] != target}
    (new,) = [r for r in after if r[0] == target]
    assert new not in before
    raw = ice.spark.read.parquet(target).select("_metadata.row_index", "id").collect()
    # id % 10 == 4 rows were updated: their old copies in this file are deleted too
    expected = sorted(r["row_index"] for r in raw if r["id"] % 10 in (3, 4) or r["id"] == 5)
    assert new[3] == len(expected)
    if new[1].endswith(".parquet"):  # v2: one position delete file, sorted by position
        written = [(r.file_path, r.pos) for r in ice.spark.read.parquet(new[1]).collect()]
        assert written == [(target, p) for p in expected]
    rows = {r.id for r in ice.sql("SELECT id FROM local.db.t").collect()}
    assert rows == {i for i in range(200) if i % 10 != 3 and i != 5}


def test_a_merge_carries_file_ordinals_through_its_join_and_deletes_the_right_rows(table):
    """A MERGE that inserts shuffles every target row through an outer join: the rows carry their
    file's ordinal in the scan (8 bytes), not its path, and the path is looked up after the join
    (`paths_by_ordinal`). Truth: each new delete names, for every matched id, the data file and
    position where Spark finds that id when it reads the file on its own."""
    import pyice_sql.spark.rowlevel.dml as dml

    ice = table
    seen = []
    write = dml.write_merge_on_read, dml.write_merge_on_read_v3

    def spy(original):
        def run(w):
            seen.append(w.tagged._jdf.queryExecution().optimizedPlan().toString())
            return original(w)
        return run
    dml.write_merge_on_read, dml.write_merge_on_read_v3 = spy(write[0]), spy(write[1])
    try:
        src = ice.spark.createDataFrame([(i, f"m{i}") for i in (5, 17, 150, 500)], "id long, data string")
        out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET data = s.data "
                      "WHEN NOT MATCHED THEN INSERT *", src=src).collect()[0]
    finally:
        dml.write_merge_on_read, dml.write_merge_on_read_v3 = write
    assert (out.num_updated_rows, out.num_inserted_rows) == (3, 1)
    (plan,) = seen
    join = plan[plan.index("RightOuter"):]  # the join (the tagged rows are cached: a physical plan)
    assert "__file_ordinal" in join and "_file#" not in join  # below the join: the ordinal, no path
    rows = {(r.id, r.data) for r in ice.sql("SELECT id, data FROM local.db.t").collect()}
    expected = {(i, "u" if i % 10 == 4 else f"r{i}") for i in range(200) if i % 10 != 3}
    expected = {(i, f"m{i}" if i in (5, 17, 150) else d) for i, d in expected} | {(500, "m500")}
    assert rows == expected
    # every matched id's old copy is deleted at its own file and position
    where = {}
    for f in (r[0] for r in ice.sql("SELECT file_path FROM local.db.t.data_files").collect()):
        for r in ice.spark.read.parquet(f).select("_metadata.row_index", "id", "data").collect():
            if r["id"] in (5, 17, 150) and not r["data"].startswith("m"):
                where[r["id"]] = (f, r["row_index"])
    assert set(where) == {5, 17, 150}
    if ice.sql("SELECT count(*) FROM local.db.t.delete_files WHERE file_path LIKE '%.puffin'").first()[0] == 0:
        written = {(r.file_path, r.pos) for f in (d[0] for d in ice.sql(
            "SELECT file_path FROM local.db.t.delete_files").collect())
            for r in ice.spark.read.parquet(f).collect()}
        assert set(where.values()) <= written


def test_merge_on_read_delete_files_are_keyed_by_file_ordinal_and_hold_their_own_files_rows(table, monkeypatch):
    """The v2 delete writer routes each changed row to its data file's delete file by the file's
    ordinal in the scan, which the rows carry (no hash of the path, no JVM query for the targets'
    keys). Truth: every new delete file holds only rows naming its own referenced data file, at the
    positions where Spark, reading that file on its own, finds the ids deleted or updated in it."""
    import pyice_sql.spark.write.delete_writer as delete_writer

    ice = table
    hashed = []
    original = delete_writer.file_keys
    monkeypatch.setattr(delete_writer, "file_keys", lambda *a: hashed.append(a) or original(*a))
    query = "SELECT referenced_data_file, file_path FROM local.db.t.delete_files"
    before = {tuple(r) for r in ice.sql(query).collect()}
    out = ice.sql("UPDATE local.db.t SET data = 'v' WHERE id % 10 = 6").collect()[0]
    assert out.num_updated_rows == 20 and hashed == []
    rows = {(r.id, r.data) for r in ice.sql("SELECT id, data FROM local.db.t").collect()}
    assert rows == {(i, {4: "u", 6: "v"}.get(i % 10, f"r{i}")) for i in range(200) if i % 10 != 3}
    new = [r for r in (tuple(r) for r in ice.sql(query).collect()) if r not in before]
    if any(p.endswith(".puffin") for _, p in new):
        return  # v3: deletion vectors (written by the DV writer, checked in test_v3_deletion_vectors)
    files = [r[0] for r in ice.sql("SELECT file_path FROM local.db.t.data_files").collect()]
    old_files = {r[0] for r in before}
    assert len(new) == len(old_files) == 4  # every original data file gets a new delete file
    for data_file, delete_file in new:
        assert data_file in files
        raw = ice.spark.read.parquet(data_file).select("_metadata.row_index", "id").collect()
        expected = sorted(r["row_index"] for r in raw if r["id"] % 10 in (3, 4, 6))  # 3, 4 folded
        written = [(r.file_path, r.pos) for r in ice.spark.read.parquet(delete_file).collect()]
        assert written == [(data_file, p) for p in expected]
