"""Copy-on-write UPDATE / DELETE rewrite by predicate: the files holding a matching row are read
again and the statement's condition decides each row there (copy_on_write.py). SQL's three-valued
logic must survive the second evaluation (a row whose condition is NULL is neither deleted nor
updated), files without a match must stay as they are, format v3 rows keep their lineage, and the
statements that cannot be re-evaluated (subquery, non-deterministic, metadata column) still give
the right rows through the join with the changed rows. Rows and lineage are hand-computed."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def _table(ice, version) -> dict[str, str]:
    """Two one-file inserts: file A holds ids 1-3, file B ids 4-5. Returns each file's path."""
    ice.sql("CREATE DATABASE local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, v string) USING iceberg TBLPROPERTIES ('format-version' = "
            f"'{version}', 'write.update.mode' = 'copy-on-write', 'write.delete.mode' = 'copy-on-write')")
    files = {}
    for name, rows in (("A", [(1, "a"), (2, "b"), (3, None)]), ("B", [(4, "a"), (5, None)])):
        ice.append("local.db.t", ice.spark.createDataFrame(rows, "id bigint, v string").coalesce(1))
        files[name], = _files(ice) - set(files.values())
    return files


def _rows(ice):
    return sorted(tuple(r) for r in ice.sql("SELECT id, v FROM local.db.t").collect())


def _files(ice):
    return {r[0] for r in ice.sql("SELECT file_path FROM local.db.t.files").collect()}


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("statement,changed,rewritten,expected", [
    # `v <> 'a'` is NULL for ids 3 and 5: neither deleted nor updated
    ("DELETE FROM local.db.t WHERE v <> 'a'", (0, 1), "A", [(1, "a"), (3, None), (4, "a"), (5, None)]),
    ("UPDATE local.db.t SET v = upper(v) WHERE NOT (v = 'b')", (2, 0), "AB",
     [(1, "A"), (2, "b"), (3, None), (4, "A"), (5, None)]),
    ("UPDATE local.db.t SET v = 'x' WHERE id > 3 AND v IS NULL", (1, 0), "B",
     [(1, "a"), (2, "b"), (3, None), (4, "a"), (5, "x")]),
])
def test_rows_with_a_null_condition_stay_and_only_matching_files_are_rewritten(
        ice, version, statement, changed, rewritten, expected):
    files = _table(ice, version)
    r = ice.sql(statement).collect()[0]
    assert (r.num_updated_rows, r.num_deleted_rows) == changed
    assert r.num_removed_data_files == len(rewritten)
    assert _rows(ice) == expected
    assert _files(ice) & set(files.values()) == {p for name, p in files.items() if name not in rewritten}


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("statement,changed,expected", [
    ("UPDATE local.db.t SET v = 'u' WHERE id = 1", (1, 0), [(1, "u"), (3, None), (4, "a"), (5, None)]),
    ("DELETE FROM local.db.t WHERE id = 3", (0, 1), [(1, "a"), (4, "a"), (5, None)]),
])
def test_rows_deleted_before_stay_deleted_in_a_rewrite(ice, version, statement, changed, expected):
    """The rewrite reads its file through the count of changes' scan, whose rows that position
    deletes (v3: a deletion vector) remove are only flagged there: they must not come back."""
    files = _table(ice, version)
    ice.sql("ALTER TABLE local.db.t SET TBLPROPERTIES ('write.delete.mode' = 'merge-on-read')")
    ice.sql("DELETE FROM local.db.t WHERE id = 2")  # a delete file (or DV) on file A
    ice.sql("ALTER TABLE local.db.t SET TBLPROPERTIES ('write.delete.mode' = 'copy-on-write')")
    r = ice.sql(statement).collect()[0]
    assert (r.num_updated_rows, r.num_deleted_rows, r.num_removed_data_files) == (*changed, 1)
    assert _rows(ice) == expected
    assert _files(ice) & set(files.values()) == {files["B"]}  # only A rewritten
    deletes = ice.sql("SELECT count(*) FROM local.db.t.delete_files").collect()[0][0]
    assert deletes == 0  # A's deletes went with it


def test_v3_rewrite_keeps_row_lineage(ice):
    _table(ice, 3)  # row ids 0-2 (sequence number 1), 3-4 (sequence number 2)
    ice.sql("UPDATE local.db.t SET v = 'u' WHERE id = 2")  # sequence number 3
    ice.sql("DELETE FROM local.db.t WHERE id = 5")  # sequence number 4: file B rewritten, id 4 copied
    got = sorted(tuple(r) for r in ice.sql(
        "SELECT id, v, _row_id, _last_updated_sequence_number FROM local.db.t").collect())
    assert got == [(1, "a", 0, 1), (2, "u", 1, 3), (3, None, 2, 1), (4, "a", 3, 2)]


@pytest.mark.parametrize("statement,expected", [
    # a subquery, a non-deterministic value (`rand() < 2` is always true) and a metadata column:
    # these are rewritten by joining with the changed rows instead
    ("DELETE FROM local.db.t WHERE id IN (SELECT id FROM VALUES (2), (4) AS s(id))",
     [(1, "a"), (3, None), (5, None)]),
    ("UPDATE local.db.t SET v = CAST(rand() < 2 AS STRING) WHERE id = 5",
     [(1, "a"), (2, "b"), (3, None), (4, "a"), (5, "true")]),
    ("DELETE FROM local.db.t WHERE _pos = 0", [(2, "b"), (3, None), (5, None)]),  # first of A and of B
])
def test_statements_rewritten_by_join(ice, statement, expected):
    _table(ice, 2)
    ice.sql(statement)
    assert _rows(ice) == expected


@pytest.mark.parametrize("version", [2, 3])
def test_rewritten_rows_stay_with_the_rows_of_their_file(ice, version):
    """As Iceberg Java's copy-on-write UPDATE clusters by `_file`: a file's copied rows are written
    by one task, in their order, so a table whose files hold ranges of ids keeps them (a later
    statement on one id rewrites one file). Here the scan's task that read them writes them
    (data_writer's `read_straight`; test_job_budget.py counts the shuffle's job it saves)."""
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, v string) USING iceberg TBLPROPERTIES ("
            f"'format-version' = '{version}', 'write.update.mode' = 'copy-on-write', "
            "'write.delete.mode' = 'copy-on-write')")
    ranges = [range(lo, lo + 1000) for lo in range(0, 4000, 1000)]
    for r in ranges:  # one file each, ids ascending
        ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ id, 'old' FROM range({r.start}, {r.stop})")
    out = ice.sql("UPDATE local.db.t SET v = 'new' WHERE id % 10 = 0").collect()[0]
    assert (out.num_updated_rows, out.num_removed_data_files) == (400, 4)
    ids_by_file = [[r.id for r in ice.spark.read.parquet(p).select("id").collect()] for p in _files(ice)]
    for r in ranges:
        holding = [ids for ids in ids_by_file if any(i in r for i in ids)]
        assert len(holding) == 1, f"the rows of ids {r.start}-{r.stop - 1} were split over {len(holding)} files"
        assert [i for i in holding[0] if i in r] == list(r)  # together and in their order
    assert ice.sql("DELETE FROM local.db.t WHERE id = 5").collect()[0].num_removed_data_files == 1
    assert ice.sql("SELECT count(*), count_if(v = 'new') FROM local.db.t").collect()[0][:] == (3999, 400)


@pytest.mark.parametrize("before", [None, "1234567"])
def test_the_rewrites_split_size_is_set_for_its_write_only(ice, before):
    """The rewrite sizes its scan's splits (session confs, no per-read option): the user's
    settings, or their absence, are back after the statement."""
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.minPartitionNum")
    _table(ice, 2)
    if before is not None:
        for key in keys:
            ice.spark.conf.set(key, before)
    try:
        assert ice.sql("UPDATE local.db.t SET v = 'x' WHERE id = 4").collect()[0].num_updated_rows == 1
        assert [ice.spark.conf.get(key, None) for key in keys] == [before, before]
    finally:
        for key in keys:
            ice.spark.conf.unset(key)
    assert _rows(ice) == [(1, "a"), (2, "b"), (3, None), (4, "x"), (5, None)]


def test_a_rewrite_of_small_files_writes_one_file(ice):
    """Small files rewritten together go to one task, one file (Iceberg Java's adaptive
    execution coalesces its write tasks to at least 1 MB the same way); the two files of
    `_table` each hold a changed row."""
    files = _table(ice, 2)
    out = ice.sql("UPDATE local.db.t SET v = 'x' WHERE id IN (1, 4)").collect()[0]
    assert (out.num_updated_rows, out.num_removed_data_files, out.num_added_data_files) == (2, 2, 1)
    assert not set(files.values()) & _files(ice)
    assert _rows(ice) == [(1, "x"), (2, "b"), (3, None), (4, "x"), (5, None)]


def test_a_file_of_many_row_groups_is_rewritten_whole(ice):
    """One file rewritten on two cores stays one file, as Iceberg Java's clustering by file writes
    it back: Spark would cut it into a split per core at row groups (both settings here make that
    visible on a small file: row groups of 256 KB, no cost added per file)."""
    conf = ice.spark.sparkContext._jsc.hadoopConfiguration()
    conf.set("parquet.block.size", str(256 * 1024))
    ice.spark.conf.set("spark.sql.files.openCostInBytes", "1")
    try:
        ice.sql("CREATE DATABASE local.db")
        ice.sql("CREATE TABLE local.db.t (id bigint, v string) USING iceberg TBLPROPERTIES "
                "('write.update.mode' = 'copy-on-write')")
        ice.sql("INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ id, sha2(CAST(id AS string), 256) "
                "FROM range(0, 100000)")
        (size,), = [tuple(r) for r in ice.sql("SELECT file_size_in_bytes FROM local.db.t.files").collect()]
        assert size > 2 * 1024 * 1024  # more than two of Spark's per-core splits' worth of row groups
        out = ice.sql("UPDATE local.db.t SET v = 'x' WHERE id = 5").collect()[0]
    finally:
        conf.unset("parquet.block.size")
        ice.spark.conf.unset("spark.sql.files.openCostInBytes")
    assert (out.num_updated_rows, out.num_removed_data_files, out.num_added_data_files) == (1, 1, 1)
    assert ice.sql("SELECT count(*), count_if(v = 'x') FROM local.db.t").collect()[0][:] == (100000, 1)


def test_a_rewrite_larger_than_a_file_per_core_writes_smaller_files(ice, monkeypatch):
    """A full rewrite on two cores of more than two of Iceberg Java's row-level files' worth writes
    that many files (4 here, a multiple of the cores), not one per core, so a later statement on
    one row rewrites a quarter of the table; each input file's rows stay together and in order.
    The file size is lowered for the test (8 files of ~1.4 MB, 3 MB per written file)."""
    from pyice_sql.spark.write import data_writer

    monkeypatch.setattr(data_writer, "ROW_LEVEL_FILE_SIZE", 3 * 1024 * 1024)
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, v string) USING iceberg TBLPROPERTIES "
            "('write.update.mode' = 'copy-on-write', 'write.delete.mode' = 'copy-on-write')")
    ranges = [range(lo, lo + 40000) for lo in range(0, 320000, 40000)]
    for r in ranges:  # one file each, ids ascending, ~1.4 MB of hex hashes
        ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ id, sha2(CAST(id AS string), 256) "
                f"FROM range({r.start}, {r.stop})")
    sizes = [r[0] for r in ice.sql("SELECT file_size_in_bytes FROM local.db.t.files").collect()]
    assert len(sizes) == 8 and 1024 * 1024 < min(sizes) and sum(sizes) < 4 * 3 * 1024 * 1024
    out = ice.sql("UPDATE local.db.t SET v = 'new' WHERE id % 1000 = 0").collect()[0]
    assert (out.num_updated_rows, out.num_removed_data_files, out.num_added_data_files) == (320, 8, 4)
    ids_by_file = [[r.id for r in ice.spark.read.parquet(p).select("id").collect()] for p in _files(ice)]
    for r in ranges:
        holding = [ids for ids in ids_by_file if any(i in r for i in ids)]
        assert len(holding) == 1 and [i for i in holding[0] if i in r] == list(r)
    assert ice.sql("DELETE FROM local.db.t WHERE id = 5").collect()[0].num_removed_data_files == 1
    assert ice.sql("SELECT count(*), count_if(v = 'new') FROM local.db.t").collect()[0][:] == (319999, 320)


def test_writes_overlapping_in_time_leave_the_users_settings(ice):
    """Two writes of one session that overlap (threads) and set the same confs: the user's values
    come back when the last ends, whichever ends first (each restoring what it found would leave
    the first one's value set for good)."""
    from pyice_sql.spark.write.data_writer import _session_conf

    key = "spark.sql.files.maxPartitionBytes"
    conf = ice.spark.conf
    conf.set(key, "1234567")
    try:
        first, second = _session_conf(ice.spark, {key: "1"}), _session_conf(ice.spark, {key: "2"})
        first.__enter__()
        second.__enter__()
        first.__exit__(None, None, None)
        assert conf.get(key) == "2"  # the second write still runs with its value
        second.__exit__(None, None, None)
        assert conf.get(key) == "1234567"
    finally:
        conf.unset(key)
