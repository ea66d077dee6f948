"""Merge-on-read UPDATE, MERGE without INSERT and MERGE over a small source write their delete
files and data files from the same tasks, in one write job (rowlevel/merge_on_read.py); a MERGE
whose source is too large to bound its inserts keeps a data write of its own. Truth: hand-computed rows and counts, the files themselves read back
with Spark's own Parquet reader, and the table folder's file list before and after a failure."""
from __future__ import annotations

import uuid

import pytest

from pyice_sql.core.errors import PyIceError
from tests.reliability.tablefiles import files_under

pytestmark = pytest.mark.spark

MOR = ("'format-version' = '2', 'write.update.mode' = 'merge-on-read', "
       "'write.merge.mode' = 'merge-on-read', 'write.delete.mode' = 'merge-on-read'")


def _table(ice, columns: str = "id bigint, p int, v string", partitioned: str = "PARTITIONED BY (p)"):
    ice.sql("CREATE DATABASE local.db")
    ice.sql(f"CREATE TABLE local.db.t ({columns}) USING iceberg {partitioned} TBLPROPERTIES ({MOR})")
    ice.sql("INSERT INTO local.db.t SELECT id, CAST(id % 3 AS int), concat('r', id) FROM range(0, 300)")
    from pyice_sql.core.catalog.base import TableIdentifier
    return ice.catalogs["local"].load_table(TableIdentifier(("db",), "t")).metadata.location


def _jobs(ice, sql: str):
    sc = ice.spark.sparkContext
    group = f"pyice-one-job-{uuid.uuid4().hex}"
    sc.setJobGroup(group, group)
    try:
        row = ice.sql(sql).collect()[0]
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return len(sc.statusTracker().getJobIdsForGroup(group)), row


def _rows(ice):
    return {(r.id, r.p, r.v) for r in ice.sql("SELECT id, p, v FROM local.db.t").collect()}


def test_update_moving_rows_across_partitions_writes_both_kinds_of_file_in_one_job(ice):
    _table(ice)
    before_files = {r.file_path for r in ice.sql("SELECT file_path FROM local.db.t.data_files").collect()}
    jobs, out = _jobs(ice, "UPDATE local.db.t SET p = (p + 1) % 3, v = 'moved' WHERE id % 10 = 1")
    assert out.num_updated_rows == 30 and out.num_added_delete_files == 3
    assert jobs <= 2  # the shuffle that groups rows by data file, and the write (Iceberg Java: 2)
    changed = {i for i in range(300) if i % 10 == 1}
    assert _rows(ice) == {(i, (i % 3 + 1) % 3 if i in changed else i % 3, "moved" if i in changed else f"r{i}")
                          for i in range(300)}
    # every new data file holds rows of its own partition only, as its manifest entry says
    new = [r for r in ice.sql("SELECT file_path, partition.p AS p, record_count FROM local.db.t.data_files")
           .collect() if r.file_path not in before_files]
    assert sum(r.record_count for r in new) == 30
    for r in new:
        assert {x.p for x in ice.spark.read.parquet(r.file_path).select("p").collect()} == {r.p}
    # every delete file names its one data file, at the positions of the rows changed in it
    for d in ice.sql("SELECT file_path, referenced_data_file FROM local.db.t.delete_files").collect():
        raw = ice.spark.read.parquet(d.referenced_data_file).select("_metadata.row_index", "id").collect()
        written = [(x.file_path, x.pos) for x in ice.spark.read.parquet(d.file_path).collect()]
        assert written == [(d.referenced_data_file, x.row_index) for x in sorted(raw) if x.id in changed]


def test_merge_without_insert_deletes_and_updates_in_one_job_folding_earlier_deletes(ice):
    _table(ice, partitioned="")
    ice.sql("DELETE FROM local.db.t WHERE id % 10 = 0")  # earlier deletes, folded into the new files
    ice.spark.createDataFrame([(i, "d" if i % 4 == 0 else "u") for i in range(0, 300, 2)], "id long, k string") \
        .createOrReplaceTempView("src")
    jobs, out = _jobs(ice, "MERGE INTO local.db.t t USING src s ON t.id = s.id "
                           "WHEN MATCHED AND s.k = 'd' THEN DELETE WHEN MATCHED THEN UPDATE SET v = 'u'")
    live_even = [i for i in range(0, 300, 2) if i % 10 != 0]
    assert (out.num_deleted_rows, out.num_updated_rows) == (sum(1 for i in live_even if i % 4 == 0),
                                                           sum(1 for i in live_even if i % 4 != 0))
    assert _rows(ice) == {(i, i % 3, "u" if i % 2 == 0 else f"r{i}") for i in range(300)
                          if i % 10 != 0 and i % 4 != 0}
    deletes = ice.sql("SELECT referenced_data_file FROM local.db.t.delete_files").collect()
    assert len(deletes) == len({d.referenced_data_file for d in deletes})  # one delete file per data file
    assert jobs <= 6  # 8 when the delete files and data files were written by two jobs


UPSERT = ("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED AND s.k = 'd' THEN DELETE "
          "WHEN MATCHED THEN UPDATE SET v = 'u' WHEN NOT MATCHED THEN INSERT (id, p, v) VALUES (s.id, s.p, 'new')")


def _upsert_source(ice):
    """Updates and deletes of every fifth id below 300 (all partitions), inserts of 1000-1039 into
    partitions 0-3 (3 is new); built from ranges, so Spark knows its size (a small source)."""
    ice.spark.range(0, 300, 5).selectExpr("id", "CASE WHEN id % 4 = 0 THEN 'd' ELSE 'u' END AS k", "0 AS p").union(
        ice.spark.range(1000, 1040).selectExpr("id", "'i' AS k", "CAST(id % 4 AS int) AS p")) \
        .createOrReplaceTempView("src")


def _upserted(ice):
    """The table's rows after UPSERT over `_upsert_source`, computed by hand."""
    kept = {(i, i % 3, "u" if i % 5 == 0 else f"r{i}") for i in range(300) if not (i % 5 == 0 and i % 4 == 0)}
    return kept | {(i, i % 4, "new") for i in range(1000, 1040)}


def test_merge_over_a_small_source_inserts_with_the_deletes_in_one_job(ice):
    _table(ice)
    before_files = {r.file_path for r in ice.sql("SELECT file_path FROM local.db.t.data_files").collect()}
    _upsert_source(ice)
    jobs, out = _jobs(ice, UPSERT)
    updated = sum(1 for i in range(0, 300, 5) if i % 4 != 0)
    assert (out.num_updated_rows, out.num_deleted_rows, out.num_inserted_rows) == (updated, 60 - updated, 40)
    assert _rows(ice) == _upserted(ice)
    assert jobs <= 4  # 7 with a data write of its own (next test)
    # the inserted rows (partitions 0-3, one of them new) land in files of their own partition
    new = [r for r in ice.sql("SELECT file_path, partition.p AS p, record_count FROM local.db.t.data_files")
           .collect() if r.file_path not in before_files]
    assert sum(r.record_count for r in new) == updated + 40 and {r.p for r in new} == {0, 1, 2, 3}
    for r in new:
        assert {x.p for x in ice.spark.read.parquet(r.file_path).select("p").collect()} == {r.p}
    deletes = ice.sql("SELECT referenced_data_file FROM local.db.t.delete_files").collect()
    assert len(deletes) == len({d.referenced_data_file for d in deletes}) == 3  # one per partition's file


def test_merge_over_a_large_source_writes_its_inserts_apart_with_the_same_rows(ice):
    _table(ice)
    _upsert_source(ice)
    before = ice.spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    ice.spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")  # every source counts as large
    try:
        jobs, out = _jobs(ice, UPSERT)
    finally:
        ice.spark.conf.set("spark.sql.autoBroadcastJoinThreshold", before)
    assert out.num_inserted_rows == 40 and _rows(ice) == _upserted(ice)
    assert jobs > 4  # the delete write, then a data write of its own


@pytest.mark.parametrize("sql", [
    "UPDATE local.db.t SET id = CASE WHEN id = 7 THEN NULL ELSE id END WHERE id % 2 = 1",
    "MERGE INTO local.db.t t USING (SELECT 5L AS id UNION ALL SELECT 5L) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = 'twice'",
    "MERGE INTO local.db.t t USING (SELECT 4L AS id UNION ALL SELECT CAST(NULL AS BIGINT)) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = 'u' WHEN NOT MATCHED THEN INSERT (id, p, v) VALUES (s.id, 0, 'n')",
    "MERGE INTO local.db.t t USING (SELECT 5L AS id UNION ALL SELECT 5L UNION ALL SELECT 1000L) s "
    "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'twice' WHEN NOT MATCHED THEN INSERT (id, p, v) "
    "VALUES (s.id, 0, 'n')",
])
def test_a_failing_one_job_write_leaves_the_table_and_its_folder_as_they_were(ice, sql):
    location = _table(ice, "id bigint NOT NULL, p int, v string")
    files, rows = files_under(location), _rows(ice)
    with pytest.raises(PyIceError):
        ice.sql(sql).collect()
    assert files_under(location) == files and _rows(ice) == rows


def _final_tree(plan: str) -> list[str]:
    """The lines of a formatted physical plan's tree (the final plan when adaptive)."""
    return plan.split("== Final Plan ==")[-1].split("== Initial Plan ==")[0].split("\n\n")[0].splitlines()


def _ancestors(tree: list[str], at: int) -> list[str]:
    """The nodes above line `at` of a plan tree, nearest first, up to the root."""
    indent, way = len(tree[at]) - len(tree[at].lstrip(" +-:")), []
    for above in reversed(tree[:at]):
        node = above.lstrip(" +-:")
        start = len(above) - len(node)
        if node and start < indent:
            indent = start
            way.append(node)
    return way


def _scan_stages(plan: str) -> list[list[str]]:
    """Each table scan's way up to its shuffle in a formatted physical plan (the final plan when
    adaptive): the nodes above the scan, nearest first, up to the exchange."""
    tree = _final_tree(plan)
    ways = []
    for i, line in enumerate(tree):
        if "Scan parquet" not in line:
            continue
        way = []
        for node in _ancestors(tree, i):
            if node.startswith(("Exchange", "ShuffleQueryStage", "BroadcastExchange")):
                break
            way.append(node)
        ways.append(way)
    return ways


def _last_execution(ice) -> int:
    executions = ice.spark._jsparkSession.sharedState().statusStore().executionsList()
    return executions.apply(executions.size() - 1).executionId() if executions.size() else -1


def _plans_since(ice, last: int) -> list[str]:
    """The physical plans of the SQL executions after execution `last`, newest first."""
    executions = ice.spark._jsparkSession.sharedState().statusStore().executionsList()
    plans = []
    for i in range(executions.size() - 1, -1, -1):
        e = executions.apply(i)
        if e.executionId() <= last:
            break
        plans.append(e.physicalPlanDescription())
    return plans


@pytest.mark.parametrize("sql", [
    "UPDATE local.db.t SET v = 'u' WHERE id % 10 = 1",
    "DELETE FROM local.db.t WHERE id % 10 = 2",
    "MERGE INTO local.db.t t USING (SELECT id FROM range(0, 300, 7)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'm'",
])
def test_the_scan_runs_in_one_generated_stage_up_to_its_shuffle(ice, sql):
    """The statement's counts are observed after the shuffle: Spark cannot generate code through
    an observation (CollectMetrics), which split the scan's stage in two or three, each compiled
    (and evicted from Spark's 100-class cache by a mixed workload) on its own. A DELETE has no
    shuffle (its scan's tasks write: merge_on_read's read straight) and no observation (the delete
    writer's filter counts): scan, filter, projections and the writer are one generated stage."""
    from pyice_sql.spark.connect_backend import is_connect
    if is_connect(ice.spark):
        pytest.skip("Spark Connect: no shim, and the plans are the server's")
    _table(ice, partitioned="")
    before = _last_execution(ice)
    out = ice.sql(sql).collect()[0]
    plans = _plans_since(ice, before)
    ways = [way for p in plans for way in _scan_stages(p)]
    assert ways, plans
    for way in ways:  # every node between the scan and its shuffle is in the generated stage (`*`)
        if sql.startswith("DELETE"):
            assert not any(k in p for p in plans for k in ("Exchange", "ShuffleQueryStage", "CollectMetrics")), plans
        assert way and all(node.startswith("* ") for node in way), way
    hit = {"UPDATE": range(1, 300, 10), "DELETE": range(2, 300, 10), "MERGE": range(0, 300, 7)}[sql.split()[0]]
    assert out.num_affected_rows == len(hit)
    expected = {i: "u" if sql.startswith("UPDATE") else "m" for i in hit} if not sql.startswith("DELETE") else {}
    assert _rows(ice) == {(i, i % 3, expected.get(i, f"r{i}")) for i in range(300)
                          if not (sql.startswith("DELETE") and i in hit)}


def _way_to_the_write(plan: str, marker: str) -> list[str]:
    """The nodes of a formatted physical plan's final tree from the node whose details hold
    `marker` up to the root, nearest first (that node included)."""
    tree = _final_tree(plan)
    details = [block for block in plan.split("\n\n") if marker in block]
    assert details, plan
    node_id = details[0].split()[0]  # "(11)"
    at = next(i for i, line in enumerate(tree) if line.rstrip().endswith(node_id) or f"{node_id}," in line)
    return [tree[at].lstrip(" +-:"), *_ancestors(tree, at)]


@pytest.mark.parametrize("sql", [
    "UPDATE local.db.t SET v = 'u' WHERE id % 10 = 1",
    "MERGE INTO local.db.t t USING (SELECT id FROM range(0, 300, 7)) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = 'm'",
    "MERGE INTO local.db.t t USING (SELECT id FROM range(290, 310)) s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = 'm' WHEN NOT MATCHED THEN INSERT (id, p, v) VALUES (s.id, 0, 'n')",
])
def test_the_delete_files_are_written_by_the_tasks_that_write_the_data_files(ice, sql):
    """The delete files of a one-job write come from a filter in the data write's plan
    (PositionDeleteWriter.AlongDeletes, one instance per task): no exchange may sit between it and
    the data write, or a map stage computed again (a lost shuffle file) would write its delete files
    a second time beside a data write that never saw them. One such filter per statement."""
    from pyice_sql.spark.connect_backend import is_connect
    if is_connect(ice.spark):
        pytest.skip("Spark Connect: no shim, and the plans are the server's")
    _table(ice)
    before = _last_execution(ice)
    ice.sql(sql).collect()
    plans = [p for p in _plans_since(ice, before) if "AlongDeletes" in p]
    assert len(plans) == 1, plans
    way = _way_to_the_write(plans[0], "AlongDeletes")
    names = [node.lstrip("* ").split()[0] for node in way]
    assert names[0] == "Filter" and "WriteFiles" in names, way
    between = names[:names.index("WriteFiles")]
    assert not any(n in ("Exchange", "ShuffleQueryStage", "AQEShuffleRead", "BroadcastExchange") for n in between), way


def test_local_files_are_written_without_hadoop_side_files_at_hadoops_permissions(ice):
    """The data and delete files of a statement go through the shim's java.nio writers on a local
    table (LocalOutputFile, NioLocalFileSystem): Hadoop's checksummed local file system would leave
    a `.crc` beside each and start a `chmod` process per file and folder. The permissions are the
    ones Hadoop sets: 0666 and 0777 under its default umask 022."""
    import os
    import stat

    from pyice_sql.spark.jvm.bridge import load_shim

    assert load_shim(ice.spark).mode == "classpath"  # the test session loads the shim as users do
    location = _table(ice)
    root = location.removeprefix("file:")
    before = {os.path.join(d, n) for d, _, ns in os.walk(root) for n in ns}
    _, out = _jobs(ice, "UPDATE local.db.t SET v = 'x' WHERE id % 10 = 1")
    assert out.num_updated_rows == 30 and out.num_added_delete_files == 3
    new = {os.path.join(d, n) for d, _, ns in os.walk(root) for n in ns} - before
    written = [f for f in new if f.endswith(".parquet") and "/data/" in f]
    assert any(f.endswith("-deletes.parquet") for f in written)
    assert any(not f.endswith("-deletes.parquet") for f in written)
    assert not [f for f in new if f.endswith(".crc")]
    assert {stat.S_IMODE(os.stat(f).st_mode) for f in written} == {0o644}
    assert _rows(ice) == {(i, i % 3, "x" if i % 10 == 1 else f"r{i}") for i in range(300)}


def test_local_files_follow_hadoops_umask_not_the_processes(ice):
    """Both kinds of file take Hadoop's `fs.permissions.umask-mode`, as Hadoop's local file system
    would set them; the JVM's own umask (022 here as in CI) would leave 0644 on the delete files."""
    import os
    import stat

    conf = ice.spark.sparkContext._jsc.hadoopConfiguration()
    location = _table(ice)
    root = location.removeprefix("file:")
    before = {os.path.join(d, n) for d, _, ns in os.walk(root) for n in ns}
    conf.set("fs.permissions.umask-mode", "077")
    try:
        _, out = _jobs(ice, "UPDATE local.db.t SET v = 'x' WHERE id % 10 = 1")
    finally:
        conf.unset("fs.permissions.umask-mode")
    assert out.num_added_delete_files == 3
    new = {os.path.join(d, n) for d, _, ns in os.walk(root) for n in ns} - before
    written = [f for f in new if f.endswith(".parquet") and "/data/" in f]
    deletes = [f for f in written if f.endswith("-deletes.parquet")]
    assert len(deletes) == 3 and len(written) > 3
    assert {f: stat.S_IMODE(os.stat(f).st_mode) for f in written} == {f: 0o600 for f in written}


@pytest.fixture
def small_splits(ice):
    """Settings under which Spark cuts a 2 MB file into several splits at its row groups (256 KB
    row groups, splits of 512 KB, no cost added per file), the user's split size to restore."""
    conf = ice.spark.sparkContext._jsc.hadoopConfiguration()
    conf.set("parquet.block.size", str(256 * 1024))
    ice.spark.conf.set("spark.sql.files.openCostInBytes", "1")
    ice.spark.conf.set("spark.sql.files.maxPartitionBytes", str(512 * 1024))
    try:
        ice.sql("CREATE DATABASE local.db")
        ice.sql(f"CREATE TABLE local.db.t (id bigint, v string) USING iceberg TBLPROPERTIES ({MOR})")
        for lo in (0, 100000):
            ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ id, sha2(CAST(id AS string), 256) "
                    f"FROM range({lo}, {lo + 100000})")
        sizes = [r[0] for r in ice.sql("SELECT file_size_in_bytes FROM local.db.t.files").collect()]
        assert len(sizes) == 2 and min(sizes) > 4 * 512 * 1024
        from pyice_sql.core.catalog.base import TableIdentifier
        yield ice.catalogs["local"].load_table(TableIdentifier(("db",), "t")).metadata.location
    finally:
        conf.unset("parquet.block.size")
        ice.spark.conf.unset("spark.sql.files.openCostInBytes")
        ice.spark.conf.unset("spark.sql.files.maxPartitionBytes")


def test_a_delete_of_files_longer_than_a_split_keeps_its_shuffle(ice, small_splits):
    """A file Spark would cut is not read whole by one task (that would slow the scan more than the
    shuffle costs): the DELETE groups its rows by a shuffle, and still writes one delete file per
    data file, holding all 100 of its positions."""
    jobs, out = _jobs(ice, "DELETE FROM local.db.t WHERE id % 1000 = 5")
    assert jobs == 2 and out.num_deleted_rows == 200 and out.num_added_delete_files == 2
    deletes = ice.sql("SELECT referenced_data_file, record_count FROM local.db.t.delete_files").collect()
    assert sorted(r.record_count for r in deletes) == [100, 100] and len({r.referenced_data_file for r in deletes}) == 2
    assert tuple(ice.sql("SELECT count(*), count_if(id % 1000 = 5) FROM local.db.t").collect()[0]) == (199800, 0)
    assert ice.spark.conf.get("spark.sql.files.maxPartitionBytes") == str(512 * 1024)


def test_a_data_file_whose_deletes_two_tasks_wrote_fails_the_statement(ice, small_splits, monkeypatch):
    """Were a file cut between scan tasks of a DELETE read straight after all, each task would write
    part of its positions to the file's one delete file: the statement fails and leaves the table
    and its folder as they were (the guard of delete_writer's summaries), never commits part of
    them. (Forced here: the files taken for uncut, and Spark's own splits left to cut them.)"""
    import contextlib

    import pyice_sql.spark.rowlevel.merge_on_read as merge_on_read

    monkeypatch.setattr(merge_on_read, "split_size", lambda spark, read: 1 << 40)
    monkeypatch.setattr(merge_on_read, "files_read_whole", lambda spark, read: contextlib.nullcontext())
    files, rows = files_under(small_splits), ice.sql("SELECT count(*) FROM local.db.t").collect()[0][0]
    with pytest.raises(Exception, match="written by two tasks"):
        ice.sql("DELETE FROM local.db.t WHERE id % 1000 = 5").collect()
    assert files_under(small_splits) == files and ice.sql("SELECT count(*) FROM local.db.t").collect()[0][0] == rows


def test_a_delete_read_straight_writes_each_files_positions_from_one_task(ice):
    """Files within Spark's split size: the scan's tasks write the delete files (one job), each
    data file's positions complete in its one delete file, and the split settings come back."""
    _table(ice, partitioned="")
    for lo in (300, 600):
        ice.sql(f"INSERT INTO local.db.t SELECT id, CAST(id % 3 AS int), concat('r', id) FROM range({lo}, {lo + 300})")
    data_files = ice.sql("SELECT file_path FROM local.db.t.data_files").collect()
    jobs, out = _jobs(ice, "DELETE FROM local.db.t WHERE id % 7 = 2")
    hit = [i for i in range(900) if i % 7 == 2]
    assert jobs == 1 and out.num_deleted_rows == len(hit)
    deletes = ice.sql("SELECT referenced_data_file, record_count FROM local.db.t.delete_files").collect()
    assert len({r.referenced_data_file for r in deletes}) == len(deletes) == len(data_files)
    for d in deletes:  # each data file's deleted ids, all in its one delete file
        ids = [r.id for r in ice.spark.read.parquet(d.referenced_data_file).select("id").collect()]
        assert d.record_count == sum(1 for i in ids if i % 7 == 2)
    assert {r.id for r in ice.sql("SELECT id FROM local.db.t").collect()} == set(range(900)) - set(hit)
    assert ice.spark.conf.get("spark.sql.files.minPartitionNum", None) is None


@pytest.mark.parametrize("inline_chars", ["0", "1000000"])
def test_specs_reach_the_tasks_inline_or_as_broadcasts_alike(ice, inline_chars):
    """The shim ships each statement's specs (targets, file facts, previous deletes) inside the tasks
    when small, as broadcast variables when large (Shipped.java): both reach the same rows."""
    system = ice.spark._jvm.java.lang.System
    system.setProperty("pyice.shim.inlineSpecChars", inline_chars)
    try:
        _table(ice, partitioned="")
        ice.sql("DELETE FROM local.db.t WHERE id % 10 = 0")
        ice.sql("UPDATE local.db.t SET v = 'u' WHERE id % 10 = 1")  # folds the DELETE's positions
        ice.spark.createDataFrame([(i,) for i in range(0, 300, 4)], "id long").createOrReplaceTempView("src")
        out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN DELETE").collect()[0]
    finally:
        system.clearProperty("pyice.shim.inlineSpecChars")
    assert out.num_deleted_rows == sum(1 for i in range(0, 300, 4) if i % 10 != 0)
    assert _rows(ice) == {(i, i % 3, "u" if i % 10 == 1 else f"r{i}") for i in range(300)
                          if i % 10 != 0 and i % 4 != 0}
    deletes = ice.sql("SELECT referenced_data_file FROM local.db.t.delete_files").collect()
    assert len(deletes) == len({d.referenced_data_file for d in deletes})  # earlier positions folded in
