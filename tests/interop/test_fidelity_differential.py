"""On-disk fidelity against Iceberg Java 1.10.2: what the reference writes for the same SQL, and
what each engine reads of the other's files.

  * partition folders and file names (PartitionSpec.partitionToPath, OutputFileFactory), for
    every transform, NULLs and strings with '/', '=', spaces and non-ASCII; delete files;
    `write.data.path`; `write.object-storage.enabled` (Java's own file locations recomputed);
  * dates and timestamps before 1582 (proleptic Gregorian), whatever the session's rebase mode;
  * ALTER TABLE ... WRITE ORDERED BY / DISTRIBUTED BY PARTITION / UNORDERED and
    SET TBLPROPERTIES ('k' 'v'): the same metadata as Java's, and sorted files recording the order;
  * CREATE TABLE in a namespace never created, on the filesystem (hadoop) catalog;
  * `write.parquet.row-group-size-bytes` and `write.parquet.dict-size-bytes`: files laid out as Java's.

The reference runs twice: once writing its tables (prefetched, while pyice works), once reading ours.
"""
from __future__ import annotations

import glob
import json
import os
import re

import pyarrow.parquet as pq
import pytest

import pyice_sql
from pyice_sql.core.errors import NoSuchNamespaceError
from pyice_sql.core.format.locations import new_file_location
from tests.interop.engines import ice_rows, java_sql, prefetch, scratch_dir, sort_rows

pytestmark = pytest.mark.interop

MOR = "'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read'"
LAYOUT_COLUMNS = "id int, s string, ts timestamp, th timestamp_ntz, d date, dy date, n decimal(10,2)"
LAYOUT_PARTITIONS = "s, bucket(4, id), truncate(2, s), days(ts), hours(th), months(d), years(dy), truncate(10, n)"
LAYOUT_ROWS = ("(1, 'a/b=c d', TIMESTAMP '2024-01-02 10:11:12', TIMESTAMP_NTZ '2024-01-02 10:11:12', "
               "DATE '2024-03-04', DATE '2024-03-04', 12.34), "
               "(2, NULL, NULL, NULL, NULL, NULL, NULL), "
               "(3, 'ü%+#?', TIMESTAMP '0100-03-01 00:00:00', TIMESTAMP_NTZ '0100-03-01 00:00:00', "
               "DATE '0001-01-01', DATE '0001-01-01', -1.5)")
ANCIENT_ROWS = ("(1, DATE '0001-01-01', TIMESTAMP '0100-03-01 00:00:00', TIMESTAMP_NTZ '1000-06-15 12:34:56.123456'), "
                "(2, DATE '1582-10-04', TIMESTAMP '1582-10-15 01:02:03', TIMESTAMP_NTZ '0001-01-01 00:00:00'), "
                "(3, DATE '2024-02-29', TIMESTAMP '1899-12-31 23:59:59.999999', NULL)")
ANCIENT_READ = "SELECT id, cast(d AS string), cast(ts AS string), cast(tn AS string) FROM {t}"
ORDER_DDL = [
    "ALTER TABLE {t} SET TBLPROPERTIES ('k' 'v', 'write.target-file-size-bytes' '100000000')",
    "ALTER TABLE {t} WRITE ORDERED BY id DESC NULLS FIRST, bucket(4, s), truncate(s, 2) ASC NULLS LAST",
    "ALTER TABLE {t} WRITE LOCALLY ORDERED BY days(ts), id",
    "ALTER TABLE {t} WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY s DESC",
    "ALTER TABLE {t} WRITE UNORDERED",
    "ALTER TABLE {t} WRITE DISTRIBUTED BY PARTITION",
    "ALTER TABLE {t} WRITE ORDERED BY id DESC NULLS FIRST, bucket(4, s), truncate(s, 2) ASC NULLS LAST",
]
ORDER_INSERT = "INSERT INTO {t} SELECT id, cast(id % 7 AS string), TIMESTAMP '2024-01-01 00:00:00' FROM range(200)"
PARQUET_LAYOUT = "'write.parquet.row-group-size-bytes'='262144', 'write.parquet.dict-size-bytes'='1024'"
# one file (one task) of 100,000 rows whose 1,000 strings make a ~16 KB dictionary
PARQUET_INSERT = "INSERT INTO {t} SELECT id, concat('category-', id % 1000) FROM range(0, 100000, 1, 1)"
PARQUET_READ = "SELECT count(*), sum(id), count(DISTINCT s) FROM {t}"
# the delete files' own row group size, under the data files' larger one
DELETE_LAYOUT = (f"'format-version'='2', {MOR}, 'write.parquet.row-group-size-bytes'='262144', "
                 "'write.delete.parquet.row-group-size-bytes'='65536'")
DELETE_HALF = "DELETE FROM {t} WHERE id % 2 = 0"
UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
FILE_NAME = re.compile(rf"^\d{{5}}-\d+-{UUID}(-0-\d{{5}}|-\d{{5}}-deletes)\.parquet$")


def java_side(wh: str) -> list[str]:
    """The reference's own tables: the same statements we run on ours."""
    order = [ddl.format(t="ref.ord.j") for ddl in ORDER_DDL]
    return [
        f"CREATE TABLE ref.lay.j ({LAYOUT_COLUMNS}) USING iceberg PARTITIONED BY ({LAYOUT_PARTITIONS})",
        f"INSERT INTO ref.lay.j VALUES {LAYOUT_ROWS}",
        f"CREATE TABLE ref.lay.jd (id int, p string) USING iceberg PARTITIONED BY (p) TBLPROPERTIES ({MOR})",
        "INSERT INTO ref.lay.jd VALUES (1, 'x y/z'), (2, 'x y/z'), (3, NULL), (4, NULL)",
        "DELETE FROM ref.lay.jd WHERE id IN (1, 3)",
        "CREATE TABLE ref.lay.jo (id int, p string) USING iceberg PARTITIONED BY (p) "
        "TBLPROPERTIES ('write.object-storage.enabled'='true')",
        "INSERT INTO ref.lay.jo VALUES (1, 'a'), (2, 'b b'), (3, NULL)",
        "CREATE TABLE ref.lay.jn (id int, p string) USING iceberg PARTITIONED BY (p) "
        "TBLPROPERTIES ('write.object-storage.enabled'='true', 'write.object-storage.partitioned-paths'='false')",
        "INSERT INTO ref.lay.jn VALUES (1, 'a'), (2, 'b')",
        f"CREATE TABLE ref.lay.jp (id int, p string) USING iceberg PARTITIONED BY (p) "
        f"TBLPROPERTIES ('write.data.path'='{wh}/elsewhere/jp')",
        "INSERT INTO ref.lay.jp VALUES (1, 'a')",
        "CREATE TABLE ref.anc.j (id int, d date, ts timestamp, tn timestamp_ntz) USING iceberg",
        f"INSERT INTO ref.anc.j VALUES {ANCIENT_ROWS}",
        "CREATE TABLE ref.ord.j (id int, s string, ts timestamp) USING iceberg PARTITIONED BY (days(ts))",
        *order,
        ORDER_INSERT.format(t="ref.ord.j"),
        "CREATE TABLE ref.newns.j (id int) USING iceberg",
        "INSERT INTO ref.newns.j VALUES (1)",
        f"CREATE TABLE ref.pq.j (id bigint, s string) USING iceberg TBLPROPERTIES ({PARQUET_LAYOUT})",
        PARQUET_INSERT.format(t="ref.pq.j"),
        f"CREATE TABLE ref.pq.jd (id bigint, s string) USING iceberg TBLPROPERTIES ({DELETE_LAYOUT})",
        PARQUET_INSERT.format(t="ref.pq.jd"),
        DELETE_HALF.format(t="ref.pq.jd"),
    ]


def _java_tables():
    wh = scratch_dir("fidelity")
    return wh, java_sql(wh, *java_side(wh))


def prefetch_java():
    return prefetch("fidelity", _java_tables)


@pytest.fixture(scope="module")
def world(spark):
    """The reference's tables and ours, side by side in one warehouse."""
    wh, _ = prefetch_java().result()
    ice = pyice_sql.connect(spark, warehouse=wh, quiet=True)
    conf = {k: spark.conf.get(k, None) for k in ("spark.sql.parquet.datetimeRebaseModeInWrite",
                                                 "spark.sql.parquet.datetimeRebaseModeInRead")}
    for k in conf:  # the user's session rebases: our reads and writes must not
        spark.conf.set(k, "LEGACY")
    try:
        ice.sql(f"CREATE TABLE local.lay.p ({LAYOUT_COLUMNS}) USING iceberg PARTITIONED BY ({LAYOUT_PARTITIONS})")
        ice.sql(f"INSERT INTO local.lay.p VALUES {LAYOUT_ROWS}")
        ice.sql(f"CREATE TABLE local.lay.pd (id int, p string) USING iceberg PARTITIONED BY (p) TBLPROPERTIES ({MOR})")
        ice.sql("INSERT INTO local.lay.pd VALUES (1, 'x y/z'), (2, 'x y/z'), (3, NULL), (4, NULL)")
        ice.sql("DELETE FROM local.lay.pd WHERE id IN (1, 3)")
        ice.sql("CREATE TABLE local.lay.po (id int, p string) USING iceberg PARTITIONED BY (p) "
                "TBLPROPERTIES ('write.object-storage.enabled'='true')")
        ice.sql("INSERT INTO local.lay.po VALUES (1, 'a'), (2, 'b b'), (3, NULL)")
        ice.sql(f"CREATE TABLE local.lay.pp (id int, p string) USING iceberg PARTITIONED BY (p) "
                f"TBLPROPERTIES ('write.data.path'='{wh}/elsewhere/pp')")
        ice.sql("INSERT INTO local.lay.pp VALUES (1, 'a')")
        ice.sql("CREATE TABLE local.anc.p (id int, d date, ts timestamp, tn timestamp_ntz) USING iceberg")
        ice.sql(f"INSERT INTO local.anc.p VALUES {ANCIENT_ROWS}")
        ice.sql("CREATE TABLE local.ord.p (id int, s string, ts timestamp) USING iceberg PARTITIONED BY (days(ts))")
        for ddl in ORDER_DDL:
            ice.sql(ddl.format(t="local.ord.p"))
        ice.sql(ORDER_INSERT.format(t="local.ord.p"))
        ice.sql("CREATE TABLE local.newns.p (id int) USING iceberg")
        ice.sql("INSERT INTO local.newns.p VALUES (1)")
        ice.sql(f"CREATE TABLE local.pq.p (id bigint, s string) USING iceberg TBLPROPERTIES ({PARQUET_LAYOUT})")
        ice.sql(PARQUET_INSERT.format(t="local.pq.p"))
        ice.sql(f"CREATE TABLE local.pq.pd (id bigint, s string) USING iceberg TBLPROPERTIES ({DELETE_LAYOUT})")
        ice.sql(PARQUET_INSERT.format(t="local.pq.pd"))
        ice.sql(DELETE_HALF.format(t="local.pq.pd"))
        ours = {"ancient_java": sorted(tuple(r) for r in ice.sql(ANCIENT_READ.format(t="local.anc.j")).collect()),
                "ancient_ours": sorted(tuple(r) for r in ice.sql(ANCIENT_READ.format(t="local.anc.p")).collect())}
        session_conf = {k: spark.conf.get(k, None) for k in conf}
    finally:
        for k, v in conf.items():
            spark.conf.unset(k) if v is None else spark.conf.set(k, v)
    reads = java_sql(wh, "SELECT * FROM ref.lay.p", "SELECT * FROM ref.lay.pd", "SELECT * FROM ref.lay.po",
                     "SELECT * FROM ref.lay.pp", ANCIENT_READ.format(t="ref.anc.p"),
                     "SELECT count(*) FROM ref.ord.p", "SELECT * FROM ref.newns.p",
                     PARQUET_READ.format(t="ref.pq.p"), PARQUET_READ.format(t="ref.pq.pd"))
    return {"wh": wh, "ice": ice, "ours": ours, "session_conf": session_conf, "java_reads": reads}


def data_files(ice, table: str, content: int = 0) -> list[str]:
    return [r.file_path for r in ice.sql(f"SELECT file_path FROM {table}.files WHERE content = {content}").collect()]


def relative(path: str) -> str:
    return path.split("/data/", 1)[1]


def latest_metadata(wh: str, ns: str, table: str) -> dict:
    files = glob.glob(os.path.join(wh, ns, table, "metadata", "v*.metadata.json"))
    newest = max(files, key=lambda p: int(re.search(r"v(\d+)\.metadata", p).group(1)))
    with open(newest) as f:
        return json.load(f)


def test_partition_folders_and_names_are_icebergs(world):
    ice = world["ice"]
    for java, ours, content in (("lay.j", "lay.p", 0), ("lay.jd", "lay.pd", 0), ("lay.jd", "lay.pd", 1)):
        java_paths = data_files(ice, f"local.{java}", content)
        our_paths = data_files(ice, f"local.{ours}", content)
        assert java_paths and our_paths
        folders = sorted(relative(p).rsplit("/", 1)[0] for p in our_paths)
        assert folders == sorted(relative(p).rsplit("/", 1)[0] for p in java_paths), (java, content)
        for path in our_paths + java_paths:  # the reference's names have the same shape
            assert FILE_NAME.match(path.rsplit("/", 1)[1]), path
            assert os.path.exists(path.replace("file://", "", 1)), path
            assert path.endswith("-deletes.parquet") == (content == 1), path
    # a folder name is the URL-encoded human string: literal on disk, as Java's
    assert any("s=a%2Fb%3Dc+d/" in p for p in data_files(ice, "local.lay.p"))
    table_dir = os.path.join(world["wh"], "lay", "p", "data")
    assert not [d for d in os.listdir(table_dir) if d.startswith("pyice-staging")]  # nothing left behind


def test_object_storage_and_data_path_locations(world):
    ice = world["ice"]
    for table, props in (("lay.jo", {"write.object-storage.enabled": "true"}),
                         ("lay.jn", {"write.object-storage.enabled": "true",
                                     "write.object-storage.partitioned-paths": "false"})):
        location = ice.load("local", ice._resolve_name(f"local.{table}")[1]).metadata.location
        rows = ice.sql(f"SELECT file_path, partition.p AS p FROM local.{table}.files").collect()
        assert rows
        for r in rows:  # Java's own locations, recomputed from each file's partition and name
            name = re.sub(r"^[01]{8}-", "", r.file_path.rsplit("/", 1)[1])  # hash tail, when not a folder
            part = "p=" + ("null" if r.p is None else r.p.replace(" ", "+"))
            assert new_file_location(location, props, part, name) == r.file_path
    ours = data_files(ice, "local.lay.po")
    assert all(re.search(r"/data/[01]{4}/[01]{4}/[01]{4}/[01]{8}/p=[^/]+/[^/]+\.parquet$", p) for p in ours), ours
    java_jp = data_files(ice, "local.lay.jp")
    assert [p.split("/elsewhere/jp/", 1)[1].split("/")[0] for p in java_jp] == ["p=a"]
    ours_pp = data_files(ice, "local.lay.pp")
    assert [p.split("/elsewhere/pp/", 1)[1].split("/")[0] for p in ours_pp] == ["p=a"]


def test_java_reads_our_partitioned_files(world):
    ice = world["ice"]
    lay, lay_d, lay_o, lay_p = world["java_reads"][:4]
    assert lay == sorted_rows(ice, "SELECT * FROM local.lay.p") == sorted_rows(ice, "SELECT * FROM local.lay.j")
    assert lay_d == sorted_rows(ice, "SELECT * FROM local.lay.jd") == [[2, "x y/z"], [4, None]]
    assert lay_o == [[1, "a"], [2, "b b"], [3, None]]
    assert lay_p == [[1, "a"]]


def sorted_rows(ice, sql: str) -> list:
    return ice_rows(ice.sql(sql))


def test_ancient_dates_and_timestamps_round_trip(world):
    expected = [(1, "0001-01-01", "0100-03-01 00:00:00", "1000-06-15 12:34:56.123456"),
                (2, "1582-10-04", "1582-10-15 01:02:03", "0001-01-01 00:00:00"),
                (3, "2024-02-29", "1899-12-31 23:59:59.999999", None)]
    assert world["ours"]["ancient_java"] == expected  # we read Java's files exactly
    assert world["ours"]["ancient_ours"] == expected
    assert world["java_reads"][4] == sort_rows(expected)  # Java reads ours exactly
    # the session's own rebase settings are left as the user set them
    assert set(world["session_conf"].values()) == {"LEGACY"}


def test_write_order_ddl_matches_reference_metadata(world):
    wh = world["wh"]
    java, ours = latest_metadata(wh, "ord", "j"), latest_metadata(wh, "ord", "p")
    assert ours["sort-orders"] == java["sort-orders"]
    assert ours["default-sort-order-id"] == java["default-sort-order-id"]
    keys = ("k", "write.target-file-size-bytes", "write.distribution-mode")
    assert {k: ours["properties"].get(k) for k in keys} == {k: java["properties"].get(k) for k in keys}


def test_writes_honour_the_sort_order(world):
    """Files are sorted by the table's order and record its id. Iceberg Java 1.10.2 stamps 0
    (unsorted) on every file Spark writes, sorted or not; 1.11 records the order the write
    used, as the spec defines the field: we follow the spec and 1.11."""
    ice, spark = world["ice"], world["ice"].spark
    java_order = latest_metadata(world["wh"], "ord", "j")["default-sort-order-id"]
    files = ice.sql("SELECT file_path, sort_order_id FROM local.ord.p.files").collect()
    assert java_order != 0 and {f.sort_order_id for f in files} == {java_order}
    assert world["java_reads"][5] == [[200]]
    for f in files:  # each file sorted: id DESC (nulls first), then bucket and truncate of s
        ids = [r.id for r in spark.read.parquet(f.file_path).collect()]
        assert ids == sorted(ids, reverse=True), f.file_path


def test_create_table_in_a_namespace_never_created(world, spark, tmp_path):
    assert world["java_reads"][6] == [[1]]
    sql_catalog = pyice_sql.connect(spark, warehouse=str(tmp_path / "sqlwh"), catalog_type="sql", quiet=True)
    with pytest.raises(NoSuchNamespaceError):  # the SQL catalog, as Iceberg's JDBC catalog, requires it
        sql_catalog.sql("CREATE TABLE local.nowhere.t (id int) USING iceberg")


def test_parquet_layout_properties_as_javas(world):
    ice = world["ice"]
    (java_file,), (our_file,) = data_files(ice, "local.pq.j"), data_files(ice, "local.pq.p")
    java, ours = (pq.ParquetFile(p.replace("file:", "", 1)).metadata for p in (java_file, our_file))
    # 262,144-byte row groups: Java's writer and Spark's (parquet-mr) check their size at different
    # rows, so the counts may differ a little; with the default 128 MB both write one
    assert java.num_row_groups >= 5 and abs(ours.num_row_groups - java.num_row_groups) <= 2, \
        (ours.num_row_groups, java.num_row_groups)
    # past a 1 KB dictionary both fall back to plain pages for `s`
    assert "PLAIN" in java.row_group(0).column(1).encodings
    assert "PLAIN" in ours.row_group(0).column(1).encodings
    assert world["java_reads"][7] == [[100000, 4999950000, 1000]]  # Java reads ours


def test_delete_file_layout_properties_as_javas(world):
    ice = world["ice"]
    (java_file,), (our_file,) = data_files(ice, "local.pq.jd", content=1), data_files(ice, "local.pq.pd", content=1)
    java, ours = (pq.ParquetFile(p.replace("file:", "", 1)).metadata for p in (java_file, our_file))
    # 50,000 positions in 65,536-byte row groups (not the data files' 262,144, which make a few):
    # scores of them, their counts within a quarter of each other (the writers measure and check
    # their buffered size differently: 98 against Java's 80 when written)
    assert java.num_row_groups >= 40 and 0.75 <= ours.num_row_groups / java.num_row_groups <= 1.33, \
        (ours.num_row_groups, java.num_row_groups)
    # Java reads ours: the odd ids left, 1 + 3 + ... + 99,999, and 500 of the 1,000 strings
    assert world["java_reads"][8] == [[50000, 2500000000, 500]]
