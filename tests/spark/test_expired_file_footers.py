"""Files whose snapshot expired are read by the names and types their footers give, each footer read once.

After two columns swapped names, a file written before the swap holds `a`'s values under the name
`b`; once its snapshot has expired, only its footer says so (`reader._held_schemas`). A session
keeps what footers say (`core/format/footer_cache.py`): a table with 100,000 such files would
otherwise read 100,000 footers per statement.
"""
from __future__ import annotations

import pytest

from pyice_sql.core.format.footer_cache import FooterCache
from pyice_sql.spark.read import reader

pytestmark = pytest.mark.spark


def test_expired_files_read_by_footer_names_once(ice, monkeypatch):
    t = "local.db.expired_footers"
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE {t} (id int, a int, b int) USING iceberg")
    ice.sql(f"INSERT INTO {t} VALUES (1, 10, NULL), (2, NULL, 20)")
    before_swap = [r[0] for r in ice.sql(f"SELECT file_path FROM {t}.files").collect()]
    for old, new in (("a", "tmp"), ("b", "a"), ("tmp", "b")):
        ice.sql(f"ALTER TABLE {t} RENAME COLUMN {old} TO {new}")
    ice.sql(f"INSERT INTO {t} VALUES (3, 30, 31)")  # columns now id, b (was a), a (was b)
    ice.sql(f"CALL local.system.expire_snapshots(table => '{t}', "
            "older_than => TIMESTAMP '2999-01-01 00:00:00+00:00', retain_last => 1)").collect()

    read_paths: list[str] = []
    cache = FooterCache()
    leaves = cache.leaves
    monkeypatch.setattr(cache, "leaves", lambda files, read: leaves(
        files, lambda paths: read_paths.extend(paths) or read(paths)))
    monkeypatch.setattr(reader, "FOOTERS", cache)

    def ids(where: str) -> list[int]:
        return sorted(r[0] for r in ice.sql(f"SELECT id FROM {t} WHERE {where}").collect())

    # by hand: a now names the old b (NULL, 20, 31), b the old a (10, NULL, 30)
    for _ in range(2):
        assert ids("a IS NULL") == [1]
        assert ids("b = 10") == [1]
        assert ids("a = 20 OR b = 30") == [2, 3]
        # each file of the first INSERT had its footer read once (a scan pruned by statistics reads
        # fewer), none again in the second round
        assert sorted(read_paths) == sorted(before_swap)


@pytest.mark.parametrize("widen", [True, False], ids=["renamed-and-widened", "renamed"])
@pytest.mark.parametrize("file_ids", [True, False], ids=["files-with-ids", "files-without-ids"])
def test_expired_files_of_a_table_with_a_list_and_a_map(ice, monkeypatch, file_ids, widen):
    """A table with list/map columns (Spark reads it by names), `v` renamed to `w` and `id` maybe
    widened to bigint after the first INSERT, whose snapshot then expired. Its files hold `id` as
    INT32, which Spark cannot read as bigint (the scan failed: "Parquet column cannot be
    converted"), and `w` under the name `v` (read by the current name: NULL). Files written
    without ids (over Spark Connect, or before the shim wrote them) are matched by every name a
    field had, as Iceberg Java matches them through the table's name mapping."""
    from pyice_sql.spark.write import data_writer

    if not file_ids:
        monkeypatch.setattr(data_writer, "parquet_field_ids", lambda spark, schema: None)
    t = "local.db.expired_nested"
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE {t} (id int, v string, arr array<int>, m map<string, struct<z: int>>) USING iceberg")
    ice.sql(f"INSERT INTO {t} VALUES (1, 'a', array(1, 2), map('k', named_struct('z', 5))), (2, 'b', NULL, NULL)")
    if widen:
        ice.sql(f"ALTER TABLE {t} ALTER COLUMN id TYPE bigint")
    ice.sql(f"ALTER TABLE {t} RENAME COLUMN v TO w")
    ice.sql(f"INSERT INTO {t} VALUES (3, 'c', array(3), map())")
    ice.sql(f"CALL local.system.expire_snapshots(table => '{t}', "
            "older_than => TIMESTAMP '2999-01-01 00:00:00+00:00', retain_last => 1)").collect()
    got = sorted(tuple(r) for r in ice.sql(f"SELECT id, w, arr, m['k'].z FROM {t}").collect())
    assert got == [(1, "a", [1, 2], 5), (2, "b", None, None), (3, "c", [3], None)]
    assert sorted(r[0] for r in ice.sql(f"SELECT id FROM {t} WHERE w = 'a' OR array_contains(arr, 3)").collect()) \
        == [1, 3]
