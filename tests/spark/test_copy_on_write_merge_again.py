"""A copy-on-write MERGE rewrites its files by MergeRows again (copy_on_write.py): the
matched side first, uncached, for the files to rewrite, the counts and the cardinality check; then
the files with a matched row joined with the source once more, target rows kept. A file whose
matched rows no clause changes is read (a source row matching it is not NOT MATCHED) but not
rewritten. Five shapes of the second pass: a small source broadcast, its unmatched rows those
whose ids the first pass did not find in a matched pair (as over a large target scan, or with
many shuffle partitions per core, where Spark's shim is loaded); the same without those ids (as
over a large target scan: the unmatched rows by an anti-join of ids), a small source over a small target scan (with
a NOT MATCHED clause: both sides shuffled by key and sorted, Java's shape), the same with the
source's rows hashed in each task (as over a large read: `join_type.hash_join_source`), and a
source Spark will not broadcast. Format v2, and v3 in all five shapes for the lineage its copies
keep. Truth: hand-computed rows, counts and lineage, and the table's data file list before and
after."""
from __future__ import annotations

import re

import pytest

import pyice_sql.spark.rowlevel.copy_on_write as cow
from pyice_sql.core.plan.rules import join_type
from pyice_sql.core.errors import CardinalityError
from pyice_sql.spark.read.file_keys import ordinal_filter_prunes_files

pytestmark = pytest.mark.spark

COW = ("'write.update.mode' = 'copy-on-write', "
       "'write.merge.mode' = 'copy-on-write', 'write.delete.mode' = 'copy-on-write'")
SHAPES = ["ids", "broadcast", "small", "hashed", "large"]


@pytest.fixture(params=SHAPES)
def table(ice, request, monkeypatch):
    """Three data files (ids 0-99, 100-199, 200-299); a source Spark broadcasts, or not."""
    return _table(ice, request, monkeypatch, request.param, 2)


def _table(ice, request, monkeypatch, shape: str, version: int):
    if shape == "ids":  # the shape over a large target scan, or with many shuffle partitions
        monkeypatch.setattr(join_type, "MATCHED_SOURCES_MIN_TARGET_BYTES", 0)
    if shape == "broadcast":  # the shape kept over a large target scan without the shim
        monkeypatch.setattr(join_type, "BROADCAST_MIN_TARGET_BYTES", 0)
    if shape == "hashed":  # the shape over a large read
        monkeypatch.setattr(join_type, "HASH_JOIN_MIN_TARGET_BYTES", 0)
    if shape == "large":
        before = ice.spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
        ice.spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
        request.addfinalizer(lambda: ice.spark.conf.set("spark.sql.autoBroadcastJoinThreshold", before))
    ice.sql("CREATE DATABASE local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, v string) USING iceberg "
            f"TBLPROPERTIES ('format-version' = '{version}', {COW})")
    for lo in (0, 100, 200):
        ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ id, concat('r', id) FROM range({lo}, {lo + 100})")
    calls = []
    original = cow._merge_again
    monkeypatch.setattr(cow, "_merge_again", lambda *a: calls.append(1) or original(*a))
    return ice, calls


def _src(ice, rows):
    src = ice.spark.createDataFrame(rows, "id long, v string").cache()
    src.count()  # cached: Spark knows its size
    return src


def _files(ice) -> dict[str, set[int]]:
    """Each data file's ids, read with Spark's own Parquet reader."""
    paths = [r.file_path for r in ice.sql("SELECT file_path FROM local.db.t.data_files").collect()]
    return {p: {r.id for r in ice.spark.read.parquet(p).select("id").collect()} for p in paths}


def _rows(ice) -> set[tuple]:
    return {(r.id, r.v) for r in ice.sql("SELECT id, v FROM local.db.t").collect()}


def test_files_whose_matched_rows_stay_are_read_but_not_rewritten(table):
    ice, calls = table
    before = _files(ice)
    assert len(before) == 3
    # 5 is updated (file 1), 150 deleted (file 2); 250 matches in file 3 but no clause fires, so it
    # is neither changed nor inserted; 400 and 401 match nothing and are inserted
    src = _src(ice, [(5, "m5"), (150, "del"), (250, "skip"), (400, "n400"), (401, "n401")])
    out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id "
                  "WHEN MATCHED AND s.v = 'del' THEN DELETE "
                  "WHEN MATCHED AND s.v <> 'skip' THEN UPDATE SET v = s.v "
                  "WHEN NOT MATCHED THEN INSERT *", src=src).collect()[0]
    assert calls == [1]
    assert (out.num_updated_rows, out.num_deleted_rows, out.num_inserted_rows) == (1, 1, 2)
    assert out.num_removed_data_files == 2
    expected = {(i, "m5" if i == 5 else f"r{i}") for i in range(300) if i != 150}
    assert _rows(ice) == expected | {(400, "n400"), (401, "n401")}
    after = _files(ice)
    third = next(p for p, ids in before.items() if 250 in ids)
    assert after[third] == before[third]  # the same file, untouched
    assert all(p not in after for p, ids in before.items() if p != third)


@pytest.mark.parametrize("shape", SHAPES)
def test_format_v3_copies_keep_their_lineage(ice, request, monkeypatch, shape):
    """Format v3 (copy_on_write_v3.py): the rewritten file's copies keep their `_row_id` and
    `_last_updated_sequence_number`, an updated row its id and the commit's sequence number (4:
    after three inserts), an inserted row a fresh id. Each insert wrote one file, so row ids are
    the ids."""
    ice, calls = _table(ice, request, monkeypatch, shape, 3)
    src = _src(ice, [(5, "m5"), (150, "del"), (400, "n400")])
    out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED AND s.v = 'del' THEN DELETE "
                  "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *", src=src).collect()[0]
    assert calls == [1]
    assert (out.num_updated_rows, out.num_deleted_rows, out.num_inserted_rows, out.num_removed_data_files) == (
        1, 1, 1, 2)
    rows = {r.id: (r.v, r._row_id, r._last_updated_sequence_number) for r in ice.sql(
        "SELECT id, v, _row_id, _last_updated_sequence_number FROM local.db.t").collect()}
    inserted = rows.pop(400)
    assert rows == {i: ("m5" if i == 5 else f"r{i}", i, 4 if i == 5 else 1 + i // 100) for i in range(300) if i != 150}
    assert inserted[0] == "n400" and inserted[1] >= 300 and inserted[2] == 4


def test_format_v3_rewrite_by_the_changed_rows_keeps_lineage(ice, request, monkeypatch):
    """A MERGE with no WHEN MATCHED clause and a NOT MATCHED BY SOURCE one does not merge again
    (`dml._merges_again`): it joins the files' rows with the changed ones, the copies' lineage
    read with them."""
    ice, calls = _table(ice, request, monkeypatch, "small", 3)
    src = _src(ice, [(5, "x"), (400, "n400")])
    out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN NOT MATCHED THEN INSERT * "
                  "WHEN NOT MATCHED BY SOURCE AND t.id >= 290 THEN UPDATE SET v = 'gone'", src=src).collect()[0]
    assert calls == []
    assert (out.num_updated_rows, out.num_inserted_rows, out.num_removed_data_files) == (10, 1, 1)
    rows = {r.id: (r.v, r._row_id, r._last_updated_sequence_number) for r in ice.sql(
        "SELECT id, v, _row_id, _last_updated_sequence_number FROM local.db.t").collect()}
    inserted = rows.pop(400)
    assert rows == {i: ("gone" if i >= 290 else f"r{i}", i, 4 if i >= 290 else 1 + i // 100) for i in range(300)}
    assert inserted[0] == "n400" and inserted[1] >= 300 and inserted[2] == 4


def test_not_matched_by_source_clauses_rewrite_with_the_target_kept(table):
    ice, calls = table
    src = _src(ice, [(i, f"m{i}") for i in range(0, 100, 2)] + [(900, "new")])
    out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id "
                  "WHEN MATCHED AND t.id < 20 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
                  "WHEN NOT MATCHED THEN INSERT * "
                  "WHEN NOT MATCHED BY SOURCE AND t.id >= 290 THEN UPDATE SET v = 'gone'", src=src).collect()[0]
    assert calls == [1]
    assert (out.num_updated_rows, out.num_deleted_rows, out.num_inserted_rows) == (40 + 10, 10, 1)
    expected = {(i, f"m{i}" if i < 100 and i % 2 == 0 else ("gone" if i >= 290 else f"r{i}"))
                for i in range(300) if not (i < 20 and i % 2 == 0)}
    assert _rows(ice) == expected | {(900, "new")}


def test_a_merge_that_only_inserts_rewrites_nothing(table):
    ice, calls = table
    before = _files(ice)
    src = _src(ice, [(7, "x"), (500, "y")])
    out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED AND s.v = 'no' THEN DELETE "
                  "WHEN NOT MATCHED THEN INSERT *", src=src).collect()[0]
    assert (out.num_affected_rows, out.num_inserted_rows, out.num_removed_data_files) == (1, 1, 0)
    after = _files(ice)
    assert all(after[p] == ids for p, ids in before.items())
    assert _rows(ice) == {(i, f"r{i}") for i in range(300)} | {(500, "y")}


def test_a_target_row_matched_twice_fails_and_writes_nothing(table):
    ice, calls = table
    before = _files(ice)
    src = _src(ice, [(7, "x"), (7, "y"), (900, "z")])
    with pytest.raises(CardinalityError, match="id=7"):
        ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
                "WHEN NOT MATCHED THEN INSERT *", src=src).collect()
    assert calls == []  # failed on the matched side, before any rewrite
    assert _files(ice) == before


def test_pairs_of_one_target_row_in_two_tasks_are_caught(table, monkeypatch):
    """The matched side is counted in the tasks that join (FileChanges.java): a target row whose two
    source rows sit in different source partitions, hence maybe in different tasks, still fails
    the cardinality check, and a clean MERGE's counts stay exact."""
    from pyice_sql.spark.jvm.bridge import ShimHandle

    ice, calls = table
    counted = []
    for name in ("file_changes", "file_changes_matching"):
        monkeypatch.setattr(ShimHandle, name, lambda self, rows, original=getattr(ShimHandle, name):
                            counted.append(1) or original(self, rows))
    before = _files(ice)

    def src(rows_per_partition):
        parts = [ice.spark.createDataFrame(rows, "id long, v string").coalesce(1) for rows in rows_per_partition]
        frame = parts[0].union(parts[1]).cache()
        frame.count()
        return frame
    with pytest.raises(CardinalityError, match="id=7"):
        ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v",
                src=src([[(7, "x"), (150, "p")], [(7, "y"), (250, "q")]])).collect()
    assert _files(ice) == before and counted == [1]
    out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED AND s.v = 'del' THEN DELETE "
                  "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *",
                  src=src([[(7, "x"), (150, "del"), (900, "n")], [(8, "y"), (250, "del"), (901, "m")]])).collect()[0]
    assert (out.num_updated_rows, out.num_deleted_rows, out.num_inserted_rows, out.num_removed_data_files) == (2, 2, 2, 3)
    changed = {7: "x", 8: "y", 900: "n", 901: "m"}
    assert _rows(ice) == {(i, changed.get(i, f"r{i}")) for i in range(300) if i not in (150, 250)} | {
        (900, "n"), (901, "m")}
    assert counted == [1, 1]


@pytest.mark.parametrize("constant", ["MATCHED_SOURCES_MIN_TARGET_BYTES", "BROADCAST_MIN_TARGET_BYTES"])
def test_a_broadcast_merge_writes_the_rows_in_the_tasks_that_read_them(ice, monkeypatch, constant):
    """With the source broadcast (the shapes kept over a large target scan) the scan's tasks write
    the rows they read, as a copy-on-write UPDATE's do: each rewritten file's rows together and in
    order, and no rebalance of every copied row (one job fewer: 10 before); the inserted row comes
    from the tasks of the unmatched source rows."""
    monkeypatch.setattr(join_type, constant, 0)
    ice.sql("CREATE DATABASE local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, v string) USING iceberg TBLPROPERTIES ({COW})")
    ranges = [range(lo, lo + 1000) for lo in range(0, 4000, 1000)]
    for r in ranges:  # one file each, ids ascending
        ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ id, 'old' FROM range({r.start}, {r.stop})")
    src = _src(ice, [(i, "new") for i in range(0, 4000, 10)] + [(5000, "ins")])
    sc = ice.spark.sparkContext
    group = f"broadcast-merge-{constant}"  # a session's job groups keep their jobs
    sc.setJobGroup(group, group)
    try:
        out = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
                      "WHEN NOT MATCHED THEN INSERT *", src=src).collect()[0]
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert len(sc.statusTracker().getJobIdsForGroup(group)) <= 9
    assert (out.num_updated_rows, out.num_inserted_rows, out.num_removed_data_files) == (400, 1, 4)
    ids_by_file = [[r.id for r in ice.spark.read.parquet(p).select("id").collect()] for p in _files(ice)]
    for r in ranges:
        holding = [ids for ids in ids_by_file if any(i in r for i in ids)]
        assert len(holding) == 1, f"the rows of ids {r.start}-{r.stop - 1} were split over {len(holding)} files"
        assert [i for i in holding[0] if i in r] == list(r)  # together and in their order
    assert _rows(ice) == {(i, "new" if i % 10 == 0 else "old") for i in range(4000)} | {(5000, "ins")}


@pytest.mark.parametrize("hashed", [False, True])
def test_a_small_source_over_a_large_read_is_hashed_not_sorted(ice, monkeypatch, hashed):
    """The second pass's shuffled join sorts both sides (a sort-merge join) unless the read reaches
    `HASH_JOIN_MIN_TARGET_BYTES`: then the source's rows are hashed in each task (a shuffled hash
    join) and the target's are not sorted. Same rows and counts either way. Truth: Spark's plans
    of the statement's queries, and hand-computed rows."""
    if hashed:
        monkeypatch.setattr(join_type, "HASH_JOIN_MIN_TARGET_BYTES", 0)
    ice.sql("CREATE DATABASE local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, v string) USING iceberg TBLPROPERTIES ({COW})")
    ice.sql("INSERT INTO local.db.t SELECT id, concat('r', id) FROM range(0, 300)")
    src = _src(ice, [(5, "m5"), (150, "m150"), (400, "n400")])
    out, executions = _recorded(ice, _UPSERT, src)
    plans = "\n".join(e.physicalPlanDescription() for e in executions)
    assert "Join" in plans, "the statement's queries were not found in the SQL status store"
    assert ("ShuffledHashJoin" in plans) == hashed
    assert ("SortMergeJoin" in plans) != hashed
    assert (out.num_updated_rows, out.num_inserted_rows) == (2, 1)
    changed = {5: "m5", 150: "m150"}
    assert _rows(ice) == {(i, changed.get(i, f"r{i}")) for i in range(300)} | {(400, "n400")}


@pytest.mark.parametrize("shape", ["shuffled", "broadcast", "ids"])
def test_the_second_pass_reads_only_the_files_with_a_matched_row(ice, monkeypatch, shape):
    """The second pass reuses the first pass's scan (no second listing of the files), filtered to
    the files with a matched row by their ordinal, a filter of file metadata only: Spark applies
    it to the file listing, so the other planned files are not opened again (Spark 4.2+ keeps that
    filter above the scan: there the second pass scans its files on its own). Truth: the scans in
    Spark's SQL status store (their file index and files read), and hand-computed rows."""
    if shape != "shuffled":
        monkeypatch.setattr(join_type, "BROADCAST_MIN_TARGET_BYTES" if shape == "broadcast"
                            else "MATCHED_SOURCES_MIN_TARGET_BYTES", 0)
    ice.sql("CREATE DATABASE local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, v string) USING iceberg TBLPROPERTIES ({COW})")
    for lo in (0, 200):  # even ids: an odd key inside a file's range is planned but matches nothing
        ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ id, concat('r', id) "
                f"FROM range({lo}, {lo + 200}, 2)")
    src = _src(ice, [(5, "odd"), (250, "m250"), (401, "n401")])
    out, executions = _recorded(ice, _UPSERT, src)
    assert ice.last_plan.metrics.data_files_total == 2 and len(ice.last_plan.tasks) == 2
    store = ice.spark._jsparkSession.sharedState().statusStore()
    scans = [scan for e in executions for scan in _scans(store, e.executionId())]
    # (paths in the scan's file index, files it read): the first pass reads both planned files; the
    # second pass scans the same index (or, where Spark would not prune it so, its own) and reads
    # one (broadcast without the first pass's ids: its matched side twice, once for the union and
    # once for the unmatched source rows' anti-join)
    again = (2 if ordinal_filter_prunes_files(ice.spark) else 1, 1)
    assert scans == ([(2, 2), again, again] if shape == "broadcast" else [(2, 2), again])
    assert (out.num_updated_rows, out.num_inserted_rows, out.num_removed_data_files) == (1, 2, 1)
    assert _rows(ice) == ({(i, "m250" if i == 250 else f"r{i}") for i in range(0, 400, 2)}
                          | {(5, "odd"), (401, "n401")})


@pytest.mark.parametrize("partitions", [8, 200])
def test_many_shuffle_partitions_per_core_take_the_matched_source_ids(ice, monkeypatch, partitions):
    """Over a small target scan the second pass shuffles both sides by key, unless the session's
    shuffles have 8 or more partitions per core (Spark's default 200 does, on up to 25 cores):
    then the first pass keeps the matched pairs' source row ids and the second broadcasts the
    source, with no shuffle. Truth: Spark's plans of the statement's queries, the shim call, and
    hand-computed rows."""
    from pyice_sql.spark.jvm.bridge import ShimHandle

    used = []
    original = ShimHandle.file_changes_matching
    monkeypatch.setattr(ShimHandle, "file_changes_matching", lambda self, rows: used.append(1) or original(self, rows))
    before = ice.spark.conf.get("spark.sql.shuffle.partitions")
    ice.spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    try:
        ice.sql("CREATE DATABASE local.db")
        ice.sql(f"CREATE TABLE local.db.t (id bigint, v string) USING iceberg TBLPROPERTIES ({COW})")
        ice.sql("INSERT INTO local.db.t SELECT id, concat('r', id) FROM range(0, 300)")
        src = _src(ice, [(5, "m5"), (150, "m150"), (400, "n400"), (401, "n401")])
        out, executions = _recorded(ice, _UPSERT, src)
    finally:
        ice.spark.conf.set("spark.sql.shuffle.partitions", before)
    many = partitions >= 8 * ice.spark.sparkContext.defaultParallelism
    plans = "\n".join(e.physicalPlanDescription() for e in executions)
    assert ("SortMergeJoin" in plans) != many and used == ([1] if many else [])
    assert (out.num_updated_rows, out.num_inserted_rows) == (2, 2)
    changed = {5: "m5", 150: "m150"}
    assert _rows(ice) == {(i, changed.get(i, f"r{i}")) for i in range(300)} | {(400, "n400"), (401, "n401")}


_UPSERT = ("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
           "WHEN NOT MATCHED THEN INSERT *")


def _recorded(ice, sql: str, src) -> tuple:
    """Run `sql` over `src`: its result row, and the SQL executions it ran from Spark's SQL status
    store, once the listener bus has told the store of them. The store keeps only the newest
    executions (1,000 by default), so they are found by id, not by place."""
    store = ice.spark._jsparkSession.sharedState().statusStore()

    def executions() -> list:
        found = store.executionsList()
        return [found.apply(i) for i in range(found.size())]
    before = max((e.executionId() for e in executions()), default=-1)
    out = ice.sql(sql, src=src).collect()[0]
    ice.spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    return out, [e for e in executions() if e.executionId() > before]


def _scans(store, execution_id: int) -> list[tuple[int | None, int]]:
    """Each Parquet scan of one SQL execution, in plan order: the paths its file index holds (from
    the node's description, `InMemoryFileIndex(N paths)`), and its "number of files read"."""
    values = store.executionMetrics(execution_id)
    nodes = store.planGraph(execution_id).allNodes()
    found = []
    for node in (nodes.apply(i) for i in range(nodes.size())):
        if not node.name().startswith("Scan parquet"):
            continue
        paths = re.search(r"InMemoryFileIndex\((\d+) paths?\)", node.desc())
        metrics = node.metrics()
        for m in (metrics.apply(i) for i in range(metrics.size())):
            value = values.get(m.accumulatorId())
            if m.name() == "number of files read" and value.isDefined():
                found.append((int(paths.group(1)) if paths else None, int(value.get().replace(",", ""))))
    return found


@pytest.mark.parametrize("shim_function", [True, False])
def test_unmatched_source_rows_from_many_source_partitions_make_one_file(ice, monkeypatch, shim_function):
    """With the source broadcast and its unmatched rows known from the first pass, the rewritten
    files' rows are written by the tasks that read them (small files packed together), and the
    inserted rows, whatever the source's partitions, by one task: one file of their own. The
    unmatched rows are tested in the MergeRows text by the shim's registered function or, where
    Spark cannot load the shim's function catalog, by a UDF over the source's frame. Truth: the new
    snapshot's files and hand-computed rows."""
    from pyice_sql.spark.jvm.bridge import ShimHandle

    tests, original = [], ShimHandle.unmatched_sources

    def recorded(self, changes, column):  # None: as where the shim's function catalog cannot load
        tests.append(original(self, changes, column) if shim_function else None)
        return tests[-1]
    monkeypatch.setattr(ShimHandle, "unmatched_sources", recorded)
    monkeypatch.setattr(join_type, "MATCHED_SOURCES_MIN_TARGET_BYTES", 0)
    ice.sql("CREATE DATABASE local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, v string) USING iceberg TBLPROPERTIES ({COW})")
    for lo in (0, 100):
        ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ id, 'old' FROM range({lo}, {lo + 100})")
    src = ice.spark.createDataFrame([(i, "new") for i in (5, 150)] + [(1000 + i, "ins") for i in range(40)],
                                    "id long, v string").repartition(4).cache()
    assert src.count() == 42 and src.rdd.getNumPartitions() == 4
    out = ice.sql(_UPSERT, src=src).collect()[0]
    assert (out.num_updated_rows, out.num_inserted_rows, out.num_removed_data_files) == (2, 40, 2)
    inserted = [ids for ids in _files(ice).values() if any(i >= 1000 for i in ids)]
    assert inserted == [{1000 + i for i in range(40)}]
    assert _rows(ice) == ({(i, "new" if i in (5, 150) else "old") for i in range(200)}
                          | {(1000 + i, "ins") for i in range(40)})
    assert len(tests) == 1 and (tests[0] or "").startswith("pyice_shim.functions.unmatched_sources_") == shim_function
