"""A table's `write.parquet.*` layout properties shape the data files pyice writes, and its
`write.delete.parquet.*` ones (else the data files') its position delete files, as they shape
Iceberg Java's: row group size and dictionary size, read back from the files' footers, and the
zstd level (Spark 4 only), told by the files' sizes."""
from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from pyice_sql.core.errors import ValidationError

pytestmark = pytest.mark.spark

ROWS = "SELECT id, concat('value-', id % 1000, '-', sha1(cast(id AS string))) AS s FROM range(0, 100000, 1, 1)"


def _footers(ice, table: str, content: int = 0) -> list:
    paths = [r.file_path for r in ice.sql(f"SELECT file_path FROM {table}.files WHERE content = {content}").collect()]
    return [pq.ParquetFile(p.removeprefix("file:")).metadata for p in paths]


def _table(ice, name: str, properties: str = "") -> str:
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    extra = f"TBLPROPERTIES ({properties})" if properties else ""
    ice.sql(f"CREATE TABLE local.db.{name} (id bigint, s string) USING iceberg {extra}")
    ice.sql(f"INSERT INTO local.db.{name} {ROWS}")
    return f"local.db.{name}"


def test_row_group_size_is_honoured_by_inserts_and_rewrites(ice):
    plain = _table(ice, "plain")
    small = _table(ice, "small", "'write.parquet.row-group-size-bytes'='262144'")
    assert [m.num_row_groups for m in _footers(ice, plain)] == [1]
    (written,) = _footers(ice, small)
    # ~5.5 MB of column data before compression: 262,144-byte row groups make a score of them
    assert written.num_row_groups >= 10
    assert sum(written.row_group(i).num_rows for i in range(written.num_row_groups)) == 100000
    ice.sql(f"UPDATE {small} SET s = 'x' WHERE id = 5")  # copy-on-write: the file is rewritten
    (rewritten,) = _footers(ice, small)
    assert rewritten.num_row_groups >= 10
    assert ice.sql(f"SELECT count(*), count_if(s = 'x') FROM {small}").collect()[0] == (100000, 1)


def test_dictionary_size_decides_the_fallback_to_plain(ice):
    # the 1,000 distinct prefixes of `s` are unique per row with the hash: a column of 100,000
    # distinct strings overflows any dictionary, so test `id % 1000` as a string instead
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    for name, props in (("d_default", ""), ("d_small", "TBLPROPERTIES ('write.parquet.dict-size-bytes'='1024')")):
        ice.sql(f"CREATE TABLE local.db.{name} (id bigint, s string) USING iceberg {props}")
        ice.sql(f"INSERT INTO local.db.{name} SELECT id, concat('category-', id % 1000) FROM range(0, 100000, 1, 1)")
    encodings = {name: set(_footers(ice, f"local.db.{name}")[0].row_group(0).column(1).encodings)
                 for name in ("d_default", "d_small")}
    # ~16 KB of dictionary: kept under parquet-mr's 1 MB default, given up past 1 KB
    assert "PLAIN" not in encodings["d_default"]
    assert "PLAIN" in encodings["d_small"]


MOR = "'format-version'='2', 'write.delete.mode'='merge-on-read'"


def _deleted_half(ice, name: str, properties: str) -> list[int]:
    """The row groups of each delete file a merge-on-read DELETE of 50,000 of 100,000 rows leaves."""
    table = _table(ice, name, f"{MOR}, {properties}" if properties else MOR)
    ice.sql(f"DELETE FROM {table} WHERE id % 2 = 0")
    assert ice.sql(f"SELECT count(*), count_if(id % 2 = 0) FROM {table}").collect()[0] == (50000, 0)
    return [m.num_row_groups for m in _footers(ice, table, content=1)]


def test_delete_files_take_their_own_layout_else_the_data_files(ice):
    # 50,000 positions, ~400 KB before compression: one row group by default, several of 64 KB
    assert _deleted_half(ice, "del_default", "") == [1]
    (own,) = _deleted_half(ice, "del_own", "'write.delete.parquet.row-group-size-bytes'='65536'")
    assert own >= 3
    (inherited,) = _deleted_half(ice, "del_inherited", "'write.parquet.row-group-size-bytes'='65536'")
    assert inherited >= 3
    # the delete files' own property wins over the data files'
    assert _deleted_half(ice, "del_both", "'write.parquet.row-group-size-bytes'='65536', "
                                          "'write.delete.parquet.row-group-size-bytes'='134217728'") == [1]


def test_delete_files_written_by_spark_take_the_layout_too(ice, monkeypatch):
    """Without the shim's in-task writer (Spark Connect, speculative execution), Spark's own."""
    from pyice_sql.spark.rowlevel import merge_on_read

    monkeypatch.setattr(merge_on_read, "in_task_targets", lambda *args, **kwargs: None)
    (own,) = _deleted_half(ice, "del_spark", "'write.delete.parquet.row-group-size-bytes'='65536'")
    assert own >= 3


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1.5", "\u00b2", "2147483648"])
def test_a_bad_layout_property_is_named(ice, value):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.bad (id bigint) USING iceberg "
            f"TBLPROPERTIES ('write.parquet.row-group-size-bytes'='{value}')")
    with pytest.raises(ValidationError, match=r"write\.parquet\.row-group-size-bytes = '.*' of the table at .*bad"):
        ice.sql("INSERT INTO local.db.bad VALUES (1)")
    assert ice.sql("SELECT count(*) FROM local.db.bad").collect()[0][0] == 0


def test_a_bad_delete_layout_property_is_named(ice):
    table = _table(ice, "bad_delete", f"{MOR}, 'write.delete.parquet.page-size-bytes'='0'")
    with pytest.raises(ValidationError, match=r"write\.delete\.parquet\.page-size-bytes = '0' of the table at "):
        ice.sql(f"DELETE FROM {table} WHERE id < 10")
    assert ice.sql(f"SELECT count(*) FROM {table}").collect()[0][0] == 100000


def _bytes(ice, table: str) -> int:
    return ice.sql(f"SELECT sum(file_size_in_bytes) FROM {table}.files").collect()[0][0]


def test_zstd_level_is_honoured_from_spark_4_and_never_leaks(ice, spark):
    before = _bytes(ice, _table(ice, "z_before"))
    fast = _bytes(ice, _table(ice, "z_fast", "'write.parquet.compression-level'='1'"))
    best = _bytes(ice, _table(ice, "z_best", "'write.parquet.compression-level'='19'"))
    after = _bytes(ice, _table(ice, "z_after"))
    assert before == after  # a table without a level is written at zstd's default after the others
    if int(spark.version.split(".")[0]) >= 4:
        # three different sizes, level 19's the smallest (parquet-mr 1.17 wrote 2.20 MB at 19,
        # 2.41 at 1, 2.62 at its default)
        assert best < min(before, fast) and before != fast, (best, before, fast)
    else:  # Spark 3.5's Parquet library: one zstd codec per JVM, so the level is not applied
        assert best == before == fast, (best, before, fast)


def test_a_bad_compression_level_is_named(ice):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql("CREATE TABLE local.db.bad_level (id bigint) USING iceberg "
            "TBLPROPERTIES ('write.parquet.compression-level'='high')")
    with pytest.raises(ValidationError, match=r"compression-level = 'high' of the table at .*bad_level"):
        ice.sql("INSERT INTO local.db.bad_level VALUES (1)")
    assert ice.sql("SELECT count(*) FROM local.db.bad_level").collect()[0][0] == 0


def _delete_bytes(ice, name: str, properties: str) -> int:
    """The bytes of the delete files of `_deleted_half` (table names of one length, so the data
    file paths they hold differ by a few bytes at most: their task numbers)."""
    table = _table(ice, name, f"{MOR}, {properties}" if properties else MOR)
    ice.sql(f"DELETE FROM {table} WHERE id % 2 = 0")
    return ice.sql(f"SELECT sum(file_size_in_bytes) FROM {table}.files WHERE content = 1").collect()[0][0]


def test_delete_files_take_the_zstd_level_from_spark_4(ice, spark):
    default = _delete_bytes(ice, "zd_dflt", "")
    own = _delete_bytes(ice, "zd_own1", "'write.delete.parquet.compression-level'='19'")
    inherited = _delete_bytes(ice, "zd_inh1", "'write.parquet.compression-level'='19'")
    again = _delete_bytes(ice, "zd_agai", "")

    def same(a: int, b: int) -> bool:  # within a few bytes: the data file names in them differ in length
        return abs(a - b) <= 16

    assert same(default, again)  # the level does not leak into later deletes
    if int(spark.version.split(".")[0]) >= 4:
        # Spark 4.3: 48,904 bytes at level 19 against 59,809 at the default
        assert same(own, inherited) and own < 0.9 * default, (own, inherited, default)
    else:  # Spark 3.5: not applied (README)
        assert same(own, default) and same(inherited, default), (own, inherited, default)
