"""Tables pyice_sql writes are read by Iceberg Java, PyIceberg and DuckDB with exactly our rows.

Every table is written through `ice.sql` in several INSERTs (so there are several data files
and manifests to prune), then:
  - Iceberg Java reads all rows, and runs WHERE queries that its partition and metrics pruning
    answer from our manifests: a wrong partition tuple or column bound makes Java skip a file
    that has matching rows, so each answer must equal the same filter applied by plain Spark to
    the full, unpruned rows (and pyice's own pruned answer must equal it too);
  - Java's `_partition` metadata column (the tuple we recorded for the row's file) must equal
    the partition Java's own transform functions compute from the row;
  - PyIceberg and DuckDB read exactly our rows.

Also, Java INSERTs into, DELETEs from and UPDATEs (merge-on-read) a table we created, so its
commits and position deletes land on our metadata and data files: we must then read Java's rows,
PyIceberg and DuckDB must agree, and so after we append on top of Java's commits.

To pay the JVM start once, the module fixture builds every table first and then runs all of
Java's statements in one reference-engine run; each test then checks its own table. A table
whose build failed fails only its own test.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from tests.interop.engines import (
    assert_peers_read, assert_same_rows, ice_answers, ice_rows, java_sql, java_sql_each, rows_or_raise, sort_rows,
)

pytestmark = pytest.mark.interop


@dataclass
class Scenario:
    table: str
    build: Callable[[Any], Any]
    wheres: list[str]
    extra_java: list[str] | Callable[[Any], list[str]] = field(default_factory=list)  # or f(built)
    peers: tuple[str, ...] = ("pyiceberg", "duckdb")
    aggregates: list[str] = field(default_factory=list)  # columns for MIN/MAX (Java may answer from metrics)
    java_wheres: dict[str, str] = field(default_factory=dict)  # WHERE -> Java's answer where it is not SQL's
    built: Any = None  # what build returned
    error: BaseException | None = None
    java: list = field(default_factory=list)  # results of java_statements()

    def java_statements(self) -> list[str]:
        reads = [f"SELECT * FROM ref.db.{self.table}", self.aggregate_sql("ref")] if self.wheres is not None else []
        extra = self.extra_java(self.built) if callable(self.extra_java) else self.extra_java
        return reads + [f"SELECT * FROM ref.db.{self.table} WHERE {w}" for w in self.wheres or []] + list(extra)

    def aggregate_sql(self, source: str) -> str:
        """COUNT(*) and MIN/MAX: Iceberg Java answers these from manifest record counts and bounds."""
        table = f"ref.db.{self.table}" if source == "ref" else source
        return "SELECT " + ", ".join(["count(*)"] + [f"{f}({c})" for c in self.aggregates for f in ("min", "max")]
                                     ) + f" FROM {table}"


SCENARIOS: dict[str, Scenario] = {}


def scenario(table: str, wheres: list[str] | None, extra_java: list[str] | Callable[[Any], list[str]] = (),
             peers: tuple[str, ...] = ("pyiceberg", "duckdb"), aggregates: list[str] = (),
             java_wheres: dict[str, str] | None = None):
    """Register a table build; Java reads it and answers `wheres` (None: only runs `extra_java`),
    each as Spark does unless `java_wheres` gives the condition Java's answer is (its own semantics)."""
    def register(build):
        SCENARIOS[table] = Scenario(table, build, wheres, extra_java, peers, list(aggregates), dict(java_wheres or {}))
        return build
    return register


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory):
    import pyice_sql

    warehouse = str(tmp_path_factory.mktemp("written_by_pyice") / "warehouse")
    ice = pyice_sql.connect(spark, warehouse=warehouse)
    ice.sql("CREATE DATABASE local.db")
    for sc in SCENARIOS.values():
        try:
            sc.built = sc.build(ice)
        except Exception as e:  # reported by the scenario's own test
            sc.error = e
    ready = [sc for sc in SCENARIOS.values() if sc.error is None]
    statements = [q for sc in ready for q in sc.java_statements()]
    results = java_sql_each(warehouse, statements) if statements else []
    for sc in ready:
        n = len(sc.java_statements())
        sc.java, results = results[:n], results[n:]
    return ice, warehouse


def check_readers(world, table: str) -> Scenario:
    """Java and the peers read `local.db.<table>` as we do; each WHERE gives Spark's unpruned answer."""
    ice, warehouse = world
    sc = SCENARIOS[table]
    if sc.error is not None:
        raise AssertionError(f"pyice_sql failed to build db.{table}: {sc.error!r}") from sc.error
    ours = ice_rows(ice.sql(f"SELECT * FROM local.db.{table}"))
    assert ours, "the table is empty: nothing would be compared"
    # ground truth for each WHERE: one unpruned pass, one boolean column per condition (then per
    # condition of Java's answer)
    java_wheres = [sc.java_wheres.get(w, w) for w in sc.wheres]
    flags = ", ".join(f"coalesce({w}, false) AS `__w{i}`" for i, w in enumerate(sc.wheres + java_wheres))
    ice.table(f"local.db.{table}").createOrReplaceTempView("__all_rows")
    try:
        full = ice.spark.sql(f"SELECT *, {flags} FROM __all_rows").collect()
        aggregates = ice_rows(ice.spark.sql(sc.aggregate_sql("__all_rows")))
    finally:
        ice.spark.catalog.dropTempView("__all_rows")
    width = len(full[0]) - 2 * len(sc.wheres)
    expected, java_expected = (
        [sort_rows(list(r)[:width] for r in full if r[width + i]) for i in range(k, k + len(sc.wheres))]
        for k in (0, len(sc.wheres)))
    assert_same_rows(ours, sort_rows(list(r)[:width] for r in full), "pyice's table() vs its SQL read")
    pruned = ice_answers(ice, [f"SELECT * FROM local.db.{table} WHERE {w}" for w in sc.wheres])
    for w, exp, got in zip(sc.wheres, expected, pruned):
        assert exp, f"WHERE {w} matches no row: a pruning check needs matches"
        assert len(exp) < len(ours), f"WHERE {w} matches every row: a pruning check needs misses"
        assert_same_rows(exp, got, f"pyice's pruned answer to WHERE {w}")
    assert_same_rows(ours, rows_or_raise(sc.java[0]), f"Iceberg Java reading db.{table}")
    assert_same_rows(aggregates, rows_or_raise(sc.java[1]), f"Iceberg Java's {sc.aggregate_sql('ref')}")
    for w, exp, got in zip(sc.wheres, java_expected, sc.java[2:]):
        assert_same_rows(exp, rows_or_raise(got), f"Iceberg Java's answer to WHERE {w} on db.{table}")
    assert_peers_read(f"{warehouse}/db/{table}", ours, sc.peers)
    return sc


def extra_results(sc: Scenario) -> list:
    return [rows_or_raise(r) for r in sc.java[2 + len(sc.wheres):]]


def assert_partitions_match_transforms(rows: list, what: str) -> None:
    """Rows of `SELECT _partition, <transform exprs...>`: the recorded tuple equals the computed one."""
    assert rows
    bad = [r for r in rows if r[0] != r[1:]]
    assert not bad, f"{what}: recorded partition != Java's transform of the row (first 10): {bad[:10]}"


def _lit(v: str | None) -> str:
    return "NULL" if v is None else "'" + v.replace("'", "''") + "'"


def _insert(ice, table: str, batches: list[str]) -> None:
    for values in batches:
        ice.sql(f"INSERT INTO local.db.{table} VALUES {values}")


# ------------------------------------------------------------------------------ types

TYPES_ROWS = [
    # id, b, i, l, f, d, d1, d2, s, dt, ts, tsn, bin, st
    """(1, true, 1, 10000000000, 1.5, 2.25, 12.34, 1234567890123.123456, 'héllo', DATE'2024-01-02',
        TIMESTAMP'2024-01-02 03:04:05.123456', TIMESTAMP_NTZ'2024-01-02 03:04:05.5', X'DEADBEEF',
        named_struct('a', 1, 'b', 'x', 'c', named_struct('x', 0.5))),
       (2, false, -2147483648, -9223372036854775808, -0.25, -1e300, -99999999.99,
        -99999999999999999999999999999999.999999, '', DATE'1969-12-31', TIMESTAMP'1969-12-31 23:59:59.999999',
        TIMESTAMP_NTZ'1900-01-01 00:00:00', X'', named_struct('a', NULL, 'b', NULL, 'c', NULL))""",
    """(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
       (4, true, 2147483647, 9223372036854775807, 3.0, double('NaN'), 0.01, 0.000001,
        'a string well past the sixteen characters of truncated bounds', DATE'9999-12-31',
        TIMESTAMP'2262-04-11 23:47:16.854775', TIMESTAMP_NTZ'2024-06-30 23:59:59.999999', X'00FF',
        named_struct('a', 7, 'b', 'zz', 'c', named_struct('x', NULL)))""",
    """(5, false, 5, 5, 5.0, 5.5, 5.55, 5.000005, '日本語テキスト', DATE'2000-02-29',
        TIMESTAMP'2000-02-29 12:00:00', TIMESTAMP_NTZ'2000-02-29 12:00:00', X'0102030405',
        named_struct('a', 5, 'b', 'five', 'c', named_struct('x', -5.0)))""",
    "(6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",  # untyped NULLs only
    # bounds past 16 characters / bytes are truncated; an upper bound that cannot be incremented is dropped
    f"""(7, true, 7, 7, -0.0, -0.0, 7.00, 7.000000, '{"长字符串" * 5}', DATE'2007-07-07', NULL, NULL,
        X'{"".join(f"{i:02X}" for i in range(20))}', NULL),
       (8, true, 8, 8, 8.0, 8.0, 8.00, 8.000000, 'z{chr(0x10FFFF) * 17}', DATE'2008-08-08', NULL, NULL,
        X'{"FF" * 20}', NULL)""",
]


@scenario("types", wheres=[
    "l > 5000000000", "i = 5", "f < 0", "d > 5", "d1 < 0", "d2 = 0.000001", "s = 'héllo'",
    "s > 'a string well past the sixteen'", "dt < DATE'1970-01-01'", "dt = DATE'9999-12-31'",
    "ts >= TIMESTAMP'2262-01-01'", "ts < TIMESTAMP'1970-01-01'", "tsn = TIMESTAMP_NTZ'2024-01-02 03:04:05.5'",
    "bin = X'0102030405'", "st.a = 7", "st.c.x < 0", "b IS NULL", "isnan(d)",
    f"s = '{'长字符串' * 5}'", f"s = 'z{chr(0x10FFFF) * 17}'", f"s > 'z{chr(0x10FFFF) * 16}'",
    f"bin = X'{'FF' * 20}'", f"bin > X'{'FF' * 16}'", f"bin = X'{''.join(f'{i:02X}' for i in range(20))}'",
    "d = 0", "f = 0"],
    aggregates=["b", "i", "l", "f", "d", "d1", "d2", "s", "dt", "ts", "tsn", "bin"],
    # Spark sorts NaN above every double; Iceberg Java's metrics pruning takes a comparison with NaN
    # as false and skips a file whose d is NaN in every row (its NaN count equals its value count),
    # as row 4's file is: Java's answer then lacks row 4, on its own tables too
    # (test_java_skips_a_file_of_nans_on_its_own_table)
    java_wheres={"d > 5": "d > 5 AND NOT isnan(d)"})
def build_types(ice):
    ice.sql("""CREATE TABLE local.db.types (
      id int, b boolean, i int, l bigint, f float, d double, d1 decimal(10,2), d2 decimal(38,6), s string,
      dt date, ts timestamp, tsn timestamp_ntz, bin binary, st struct<a: int, b: string, c: struct<x: double>>
    ) USING iceberg""")
    _insert(ice, "types", TYPES_ROWS)


def test_unpartitioned_all_types(world):
    check_readers(world, "types")
    ice, _ = world
    # row 4, the only NaN, is alone in its file (java_wheres): its NaN count is exact, as Java's are
    files = ice.sql("SELECT value_counts[6] AS n, nan_value_counts[6] AS nan, upper_bounds[6] AS hi "
                    "FROM local.db.types.files WHERE nan_value_counts[6] > 0").collect()
    assert [(f.n, f.nan, f.hi) for f in files] == [(1, 1, None)]


def test_java_skips_a_file_of_nans_on_its_own_table(tmp_path):
    """The reference for `java_wheres` of db.types: Java's answer to `d > 5` over its own files."""
    answers = java_sql(tmp_path, "CREATE TABLE ref.db.t (id int, d double) USING iceberg",
                       "INSERT INTO ref.db.t VALUES (4, double('NaN'))", "INSERT INTO ref.db.t VALUES (5, 5.5)",
                       "SELECT id FROM ref.db.t WHERE d > 5", "SELECT id FROM ref.db.t WHERE isnan(d) OR d > 5")
    assert answers[3:] == [[[5]], [[4], [5]]]


def test_nan_count_maps_as_java_writes_them(world, tmp_path):
    """Each engine writes the same statements to a table of its own: a data file's NaN counts name
    its float columns with metrics, an empty map where it has none (no float column, or only one
    whose metrics mode is `none`); a position delete file has no map."""
    ice, _ = world
    statements = [
        "CREATE TABLE {db}.nan_none (id bigint, s string) USING iceberg",
        "CREATE TABLE {db}.nan_off (id bigint, d double) USING iceberg "
        "TBLPROPERTIES ('write.metadata.metrics.column.d' = 'none')",
        "CREATE TABLE {db}.nan_some (id bigint, d double) USING iceberg "
        "TBLPROPERTIES ('format-version' = '2', 'write.delete.mode' = 'merge-on-read')",
        "INSERT INTO {db}.nan_none VALUES (1, 'a')",
        "INSERT INTO {db}.nan_off VALUES (1, double('NaN'))",
        "INSERT INTO {db}.nan_some SELECT /*+ COALESCE(1) */ * FROM VALUES (1L, 1.0D), (2L, double('NaN')) AS v(id, d)",
        "DELETE FROM {db}.nan_some WHERE id = 1",
    ]
    queries = [f"SELECT content, to_json(nan_value_counts) AS nan FROM {{db}}.{t}.files"
               for t in ("nan_none", "nan_off", "nan_some")]
    java = java_sql(tmp_path, *[q.format(db="ref.db") for q in statements + queries])[len(statements):]
    for q in statements:
        ice.sql(q.format(db="local.db"))
    ours = ice_answers(ice, [q.format(db="local.db") for q in queries])
    assert java == [[[0, "{}"]], [[0, "{}"]], [[0, '{"2":1}'], [1, None]]]
    assert ours == java


@scenario("nested", wheres=[
    "get(arr, 0) = 10", "m['k2'] = 2.5", "get(st.x, 1) = 'q'", "st.y[7].z = 9", "get(arrst, 0).b = 'x'",
    "size(arr) = 0"],
    peers=("duckdb",))  # PyIceberg 0.12 reads a NULL list<struct> or NULL map as [] (Java's files too)
def build_nested(ice):
    """Lists and maps: their files carry an id on every node, list elements and map keys/values too."""
    ice.sql("""CREATE TABLE local.db.nested (id int, arr array<int>, m map<string, double>,
                 st struct<x: array<string>, y: map<int, struct<z: int>>>, arrst array<struct<a: int, b: string>>)
               USING iceberg""")
    _insert(ice, "nested", [
        "(1, array(10, 2, NULL), map('k1', 1.5, 'k2', NULL), named_struct('x', array('p', 'q'), "
        "'y', map(7, named_struct('z', 9))), array(named_struct('a', 1, 'b', 'x'))), (2, NULL, NULL, NULL, NULL)",
        "(3, array(), map(), named_struct('x', NULL, 'y', NULL), array()), "
        "(4, array(4), map('k2', 2.5), named_struct('x', array('r'), 'y', map()), array(NULL))",
    ])


def test_lists_and_maps(world):
    check_readers(world, "nested")


@scenario("readded", wheres=["c = 'new'", "c IS NULL", "get(arr, 0) = 3"], peers=("duckdb",))  # PyIceberg: as "nested"
def build_readded(ice):
    """A column of a table with a list and a map, dropped and added again under its name: the old
    files' values are not the new column's. Readers that match columns by name (the name mapping
    of a file without ids) would show them; by id, the new column is NULL in the old files."""
    ice.sql("""CREATE TABLE local.db.readded (id int, c string, arr array<int>,
                 `m/x,y=%` map<string, struct<z: int, w: array<string>>>) USING iceberg""")
    ice.sql("INSERT INTO local.db.readded VALUES (1, 'old', array(1, 2), map('k', named_struct('z', 5, 'w', array('x'))))")
    ice.sql("ALTER TABLE local.db.readded DROP COLUMN c")
    ice.sql("ALTER TABLE local.db.readded ADD COLUMN c string")
    ice.sql("INSERT INTO local.db.readded VALUES (2, array(3), NULL, 'new')")


@scenario("evolved_nested", wheres=["array_contains(arr, 2)", "get(arrst, 0).bb = 'y'", "m[2] > 1"],
          peers=("duckdb",))  # PyIceberg 0.12 reads a map as a list of pairs
def build_evolved_nested(ice):
    """Columns inside lists and maps evolved: an element and a map value widened (also inside a
    struct in a list, a list in a map), a field added to and one renamed in a list's struct; the
    first INSERT's snapshot then expired, so its files are read as their footers say."""
    ice.sql("""CREATE TABLE local.db.evolved_nested (id int, arr array<int>, m map<int, int>,
                 arrst array<struct<a: int, b: string>>, mm map<string, array<int>>) USING iceberg""")
    ice.sql("INSERT INTO local.db.evolved_nested VALUES (1, array(1, 2), map(1, 1), "
            "array(named_struct('a', 1, 'b', 'x')), map('k', array(7)))")
    for change in ("ALTER COLUMN arr.element TYPE bigint", "ALTER COLUMN m.value TYPE bigint",
                   "ALTER COLUMN arrst.element.a TYPE bigint", "ALTER COLUMN mm.value.element TYPE bigint",
                   "ADD COLUMN arrst.element.c int", "RENAME COLUMN arrst.element.b TO bb"):
        ice.sql(f"ALTER TABLE local.db.evolved_nested {change}")
    ice.sql("INSERT INTO local.db.evolved_nested VALUES (2, array(3000000000), map(2, 5000000000), "
            "array(named_struct('a', 4000000000, 'bb', 'y', 'c', 3)), map('q', array(6000000000)))")
    ice.sql("CALL local.system.expire_snapshots(table => 'local.db.evolved_nested', "
            "older_than => TIMESTAMP '2999-01-01 00:00:00+00:00', retain_last => 1)").collect()


def test_columns_evolved_inside_lists_and_maps(world):
    check_readers(world, "evolved_nested")
    ice, _ = world
    assert ice_rows(ice.sql("SELECT * FROM local.db.evolved_nested")) == [  # by hand (maps: their values)
        [1, [1, 2], [1], [[1, "x", None]], [[7]]],
        [2, [3000000000], [5000000000], [[4000000000, "y", 3]], [[6000000000]]]]


def test_dropped_and_readded_column_of_a_table_with_lists_and_maps(world):
    check_readers(world, "readded")
    ice, _ = world
    # by hand: row 1 was written before `c` was added again
    assert ice_rows(ice.sql("SELECT id, c FROM local.db.readded")) == [[1, None], [2, "new"]]


@scenario("idents", wheres=[
    "dt = DATE'2024-01-02'", "dt IS NULL", "ts > TIMESTAMP'2000-01-01'", "tsn = TIMESTAMP_NTZ'1960-01-01 00:00:00'",
    "d = -1.5", "f > 1", "bin = X'00FF'", "l = 9223372036854775807", "s = 'x/y z=%'"],
    extra_java=["SELECT _partition, dt, ts, tsn, d, f, bin, l, s FROM ref.db.idents"])
def build_idents(ice):
    """Identity partitions on every kind of value (their folder names and manifest values)."""
    ice.sql("""CREATE TABLE local.db.idents (id int, dt date, ts timestamp, tsn timestamp_ntz, d decimal(7,3),
                 f double, bin binary, l bigint, s string)
               USING iceberg PARTITIONED BY (dt, ts, tsn, d, f, bin, l, s)""")
    _insert(ice, "idents", [
        "(1, DATE'2024-01-02', TIMESTAMP'2024-01-02 03:04:05.6', TIMESTAMP_NTZ'2024-01-02 03:04:05', -1.5, -0.5, "
        "X'00FF', -5, 'x/y z=%'), (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
        "(3, DATE'1960-01-01', TIMESTAMP'1960-01-01 00:00:00', TIMESTAMP_NTZ'1960-01-01 00:00:00', 0.001, 1e300, "
        "X'', 9223372036854775807, '')",
    ])


def test_identity_partitions_of_every_type(world):
    (partitions,) = extra_results(check_readers(world, "idents"))
    assert_partitions_match_transforms(partitions, "db.idents")


@scenario("v1", wheres=["cat = 'a'", "id = 12", "ts >= TIMESTAMP'2024-01-03'", "cat IS NULL"])
def build_v1(ice):
    """A format v1 table (v1 manifests and manifest list; pyice refuses partition evolution on v1)."""
    ice.sql("""CREATE TABLE local.db.v1 (id bigint, cat string, ts timestamp) USING iceberg
               PARTITIONED BY (cat, days(ts)) TBLPROPERTIES ('format-version'='1')""")
    ice.sql("INSERT INTO local.db.v1 VALUES (1, 'a', TIMESTAMP'2024-01-01 00:00:00'), (2, 'b', NULL), (3, NULL, NULL)")
    ice.sql("INSERT INTO local.db.v1 VALUES (11, 'a', TIMESTAMP'2024-01-03 00:00:00'), (12, 'c', TIMESTAMP'2024-01-04 00:00:00')")


def test_format_v1_table(world):
    from pyice_sql.core.catalog.base import TableIdentifier

    ice, _ = world
    check_readers(world, "v1")
    assert ice.load("local", TableIdentifier(("db",), "v1")).metadata.format_version == 1


# ------------------------------------------------------------------------------ partition transforms

@scenario("parts", wheres=[
    "p = 'a'", "p IS NULL", "p = 'é x/y=z'", "id = 105", "id IN (3, 207)", "ts >= TIMESTAMP'2024-03-01'",
    "ts < TIMESTAMP'1970-01-01'", "ts IS NULL", "s = 'abcdef'", "s LIKE 'abcd%'", "s IS NULL",
    "p = 'b' AND id = 201"],
    extra_java=["SELECT _partition, p, ref.system.bucket(16, id), ref.system.days(ts), "
                "ref.system.truncate(4, s) FROM ref.db.parts"],
    aggregates=["id", "p", "ts", "s"])
def build_parts(ice):
    ice.sql("""CREATE TABLE local.db.parts (id bigint, p string, ts timestamp, s string, v int)
               USING iceberg PARTITIONED BY (p, bucket(16, id), days(ts), truncate(4, s))""")
    batches = []
    for k in range(3):
        batch = []
        for i in range(12):
            n = k * 100 + i
            p = ["a", "b", "é x/y=z", None][i % 4]
            ts = None if n % 11 == 0 else f"TIMESTAMP'2024-0{1 + k}-{1 + i % 5:02d} {i:02d}:30:00'"
            s = None if n % 7 == 3 else ["abcdef", "abc", "abcdxyz", "zz top", "ñandú"][i % 5]
            batch.append(f"({n}, {_lit(p)}, {ts or 'NULL'}, {_lit(s)}, {i})")
        batches.append(", ".join(batch))
    batches.append("(-1, 'a', TIMESTAMP'1969-12-31 23:00:00', 'abcd', 0)")  # negative day and bucket input
    _insert(ice, "parts", batches)


def test_partitioned_identity_bucket_days_truncate(world):
    (partitions,) = extra_results(check_readers(world, "parts"))
    assert_partitions_match_transforms(partitions, "db.parts")


@scenario("times", wheres=[
    "ts < TIMESTAMP'1970-01-01'", "ts >= TIMESTAMP'2024-06-01'", "dt = DATE'2021-03-03'", "dt >= DATE'2022-10-01'",
    "tsn = TIMESTAMP_NTZ'2024-05-02 04:15:00'", "tsn < TIMESTAMP_NTZ'2024-05-01 05:00:00'", "amount < -20",
    "amount = 3.25", "n = 23757", "flag", "flag IS NULL", "ts IS NULL"],
    extra_java=["SELECT _partition, ref.system.years(ts), ref.system.months(dt), ref.system.hours(tsn), "
                "ref.system.truncate(10, amount), ref.system.bucket(4, n), flag FROM ref.db.times"])
def build_times(ice):
    ice.sql("""CREATE TABLE local.db.times (id bigint, ts timestamp, dt date, tsn timestamp_ntz, amount decimal(9,2),
                 n bigint, flag boolean)
               USING iceberg PARTITIONED BY (years(ts), months(dt), hours(tsn), truncate(10, amount),
                 bucket(4, n), flag)""")
    batches = []
    for k in range(3):
        batch = []
        for i in range(10):
            n = k * 10 + i
            ts = f"TIMESTAMP'{1968 + 28 * k + i % 3}-0{1 + i % 9}-15 10:00:00'"
            dt = f"DATE'{2020 + k}-{1 + i:02d}-0{1 + i % 9}'"
            tsn = f"TIMESTAMP_NTZ'2024-05-0{1 + k} {i * 2:02d}:15:00'"
            amount = f"{(n - 12) * 3.25:.2f}"
            flag = ["true", "false", "NULL"][i % 3]
            batch.append(f"({n}, {ts}, {dt}, {tsn}, {amount}, {n * 7919 if n % 4 else 'NULL'}, {flag})")
        batches.append(", ".join(batch))
    batches.append("(100, NULL, NULL, NULL, NULL, NULL, NULL)")
    _insert(ice, "times", batches)


def test_partitioned_years_months_hours(world):
    (partitions,) = extra_results(check_readers(world, "times"))
    assert_partitions_match_transforms(partitions, "db.times")


@scenario("hashes", wheres=["s = 'ñandú'", "d = -7.25", "dt = DATE'1969-12-31'", "ts = TIMESTAMP'2024-01-01 00:00:01'",
                            "bin = X'CAFE'", "i = -11", "i IS NULL", "st = '日本語テ'"],
          extra_java=["SELECT _partition, ref.system.bucket(5, s), ref.system.bucket(3, d), ref.system.bucket(7, dt), "
                      "ref.system.bucket(4, ts), ref.system.bucket(6, bin), ref.system.truncate(10, i), "
                      "ref.system.truncate(3, bin), ref.system.truncate(2, st), ref.system.truncate(100, l) "
                      "FROM ref.db.hashes"])
def build_hashes(ice):
    """bucket on string/decimal/date/timestamp/binary, truncate on int/binary/multibyte string/bigint."""
    ice.sql("""CREATE TABLE local.db.hashes (s string, d decimal(9,2), dt date, ts timestamp, bin binary, i int,
                 st string, l bigint)
               USING iceberg PARTITIONED BY (bucket(5, s), bucket(3, d), bucket(7, dt), bucket(4, ts), bucket(6, bin),
                 truncate(10, i), truncate(3, bin), truncate(2, st), truncate(100, l))""")
    _insert(ice, "hashes", [
        "('ñandú', -7.25, DATE'1969-12-31', TIMESTAMP'2024-01-01 00:00:01', X'CAFE', -11, '日本語テ', -101), "
        "('abc', 0.00, DATE'2024-02-29', TIMESTAMP'1969-12-31 23:59:59.999999', X'', 0, 'ab', 99), "
        "(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
        "('', 12345.67, DATE'2000-01-01', TIMESTAMP'2000-01-01 00:00:00', X'0001020304', 9, 'x', -1)",
    ])


def test_bucket_and_truncate_on_more_types(world):
    (partitions,) = extra_results(check_readers(world, "hashes"))
    assert_partitions_match_transforms(partitions, "db.hashes")


# ------------------------------------------------------------------------------ schema evolution

EVO_EXPECTED = [
    [1, "one", 10, 0.5, "1.25", None, None], [2, "two", 20, None, "-2.50", None, None],
    [3, "three", 30, 3.25, "3.75", "d3", None], [4, None, None, 4.0, None, None, None],
    [5, "five", 50, 5.5, "5.00", "d5", None], [6, "six", 60, 6.0, "6.50", "d6", None],
    [7000000000, "seven", 70, 0.1, "123456789012345678.99", "d7", None],
    [8, "eight", 80, 8.0, "8.00", "d8", "new b"]]


def _evo_time_travel(snapshot_ids: list[int]) -> list[str]:
    return [f"SELECT * FROM ref.db.evo VERSION AS OF {s}" for s in snapshot_ids]


@scenario("evo", wheres=[
    "a2 = 'three'", "a2 IS NULL", "id > 3000000000", "id = 2", "b = 'new b'", "b IS NULL AND id < 3", "d >= 'd5'",
    "c < 25", "f > 5", "m > 1000", "m < 0"], extra_java=_evo_time_travel, aggregates=["id", "a2", "f", "m", "b"])
def build_evo(ice):
    """Rows written before and after each change: add, rename, drop, widen (int, float, decimal), re-add."""
    ice.sql("""CREATE TABLE local.db.evo (id int, a string, b double, c int, f float, m decimal(9,2))
               USING iceberg PARTITIONED BY (bucket(2, id))""")
    ice.sql("INSERT INTO local.db.evo VALUES (1, 'one', 1.5, 10, 0.5, 1.25), (2, 'two', NULL, 20, NULL, -2.5)")
    ice.sql("ALTER TABLE local.db.evo ADD COLUMN d string")
    ice.sql("INSERT INTO local.db.evo VALUES (3, 'three', 3.5, 30, 3.25, 3.75, 'd3'), (4, NULL, 4.5, NULL, 4.0, NULL, NULL)")
    ice.sql("ALTER TABLE local.db.evo RENAME COLUMN a TO a2")
    ice.sql("INSERT INTO local.db.evo VALUES (5, 'five', 5.5, 50, 5.5, 5.0, 'd5')")
    ice.sql("ALTER TABLE local.db.evo DROP COLUMN b")
    ice.sql("INSERT INTO local.db.evo VALUES (6, 'six', 60, 6.0, 6.5, 'd6')")
    ice.sql("ALTER TABLE local.db.evo ALTER COLUMN id TYPE bigint")
    ice.sql("ALTER TABLE local.db.evo ALTER COLUMN f TYPE double")
    ice.sql("ALTER TABLE local.db.evo ALTER COLUMN m TYPE decimal(20,2)")
    ice.sql("INSERT INTO local.db.evo VALUES (7000000000, 'seven', 70, 0.1, 123456789012345678.99, 'd7')")
    ice.sql("ALTER TABLE local.db.evo ADD COLUMN b string")  # same name as the dropped column, new id
    ice.sql("INSERT INTO local.db.evo VALUES (8, 'eight', 80, 8.0, 8.0, 'd8', 'new b')")
    from pyice_sql.core.catalog.base import TableIdentifier

    md = ice.load("local", TableIdentifier(("db",), "evo")).metadata
    return [s.snapshot_id for s in sorted(md.snapshots, key=lambda s: s.sequence_number)]


def test_schema_evolution(world):
    ice, _ = world
    if SCENARIOS["evo"].error is None:
        ours = sorted(ice_rows(ice.sql("SELECT * FROM local.db.evo")), key=lambda r: r[0])
        assert ours == sorted(EVO_EXPECTED, key=lambda r: r[0]), "pyice's own read after schema evolution"
    sc = check_readers(world, "evo")
    # time travel to every snapshot: each is read with its own schema (before/after each change)
    snapshot_ids = sc.built
    assert len(snapshot_ids) == 6
    ours = [ice_rows(ice.sql(f"SELECT * FROM local.db.evo VERSION AS OF {s}")) for s in snapshot_ids]
    for snapshot_id, mine, java in zip(snapshot_ids, ours, extra_results(sc)):
        assert_same_rows(java, mine, f"VERSION AS OF {snapshot_id} on the evolved table (Java vs pyice)")


# ------------------------------------------------------------------------------ partition evolution

PEVO_STAGES = [  # (ALTER before the stage's insert, rows)
    (None, "(1, 'a', TIMESTAMP'2024-01-01 01:00:00'), (2, 'b', TIMESTAMP'2024-01-02 02:00:00'), (3, NULL, NULL)"),
    ("ADD PARTITION FIELD days(ts)",
     "(11, 'a', TIMESTAMP'2024-02-01 01:00:00'), (12, 'b', TIMESTAMP'2024-02-02 02:00:00'), (13, 'a', NULL)"),
    ("DROP PARTITION FIELD cat", "(21, 'a', TIMESTAMP'2024-03-01 01:00:00'), (22, 'c', TIMESTAMP'2024-03-05 02:00:00')"),
    ("REPLACE PARTITION FIELD ts_day WITH bucket(4, id)",
     "(31, 'a', TIMESTAMP'2024-04-01 01:00:00'), (32, 'b', TIMESTAMP'2024-04-02 02:00:00'), (33, 'c', NULL)"),
]


@scenario("pevo", wheres=[
    "cat = 'b'", "cat = 'a'", "cat IS NULL", "ts >= TIMESTAMP'2024-02-02'", "ts < TIMESTAMP'2024-02-01 12:00:00'",
    "id = 32", "id IN (1, 22, 31)", "ts IS NULL"],
    extra_java=["SELECT id, _spec_id FROM ref.db.pevo",
                "SELECT spec_id, count(*) FROM ref.db.pevo.files GROUP BY spec_id"])
def build_pevo(ice):
    """identity(cat) → + days(ts) → − cat → days replaced by bucket(4, id); rows on every spec."""
    from pyice_sql.core.catalog.base import TableIdentifier

    ice.sql("CREATE TABLE local.db.pevo (id bigint, cat string, ts timestamp) USING iceberg PARTITIONED BY (cat)")
    spec_of_stage = []
    for alter, rows in PEVO_STAGES:
        if alter:
            ice.sql(f"ALTER TABLE local.db.pevo {alter}")
        spec_of_stage.append(ice.load("local", TableIdentifier(("db",), "pevo")).metadata.default_spec_id)
        ice.sql(f"INSERT INTO local.db.pevo VALUES {rows}")
    return spec_of_stage


def test_partition_evolution(world):
    from pyice_sql.core.catalog.base import TableIdentifier

    ice, _ = world
    sc = check_readers(world, "pevo")
    spec_of_stage = sc.built
    md = ice.load("local", TableIdentifier(("db",), "pevo")).metadata
    # Iceberg Java makes exactly one new spec per ALTER (REPLACE included)
    assert sorted(s.spec_id for s in md.specs) == [0, 1, 2, 3] == spec_of_stage, [str(s) for s in md.specs]
    # pyice's own pruning on each spec: cat = 'b' skips the other cat files of specs 0 and 1
    ice.sql("SELECT * FROM local.db.pevo WHERE cat = 'b'").collect()
    assert ice.last_plan.metrics.skipped_by_partition == 4, ice.last_plan.metrics
    spec_rows, files_per_spec = extra_results(sc)
    expected = sort_rows([int(values.split(",")[0].strip("( ")), spec_of_stage[stage]]
                         for stage, (_, rows) in enumerate(PEVO_STAGES) for values in rows.split("), "))
    assert spec_rows == expected, "old files must stay on the spec they were written with"
    assert [r[0] for r in files_per_spec] == [0, 1, 2, 3]


# ------------------------------------------------------------------------------ Java writes into ours

MOR = ("'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")
JAVA_CHANGES_OURS = [
    "INSERT INTO ref.db.ours VALUES (100, 'java', TIMESTAMP'2024-01-01 05:00:00', 1.00), "
    "(101, 'java', TIMESTAMP'2024-01-03 05:00:00', 2.00)",
    "DELETE FROM ref.db.ours WHERE id IN (2, 100)",
    "UPDATE ref.db.ours SET s = 'updated by java', d = d + 0.5 WHERE id = 5",
    "SELECT * FROM ref.db.ours",
    "SELECT content, count(*) FROM ref.db.ours.files GROUP BY content",
]


@scenario("ours", wheres=None, extra_java=JAVA_CHANGES_OURS)
def build_ours(ice):
    ice.sql(f"""CREATE TABLE local.db.ours (id bigint, s string, ts timestamp, d decimal(10,2))
                USING iceberg PARTITIONED BY (bucket(8, id), days(ts)) TBLPROPERTIES ({MOR})""")
    ice.sql("INSERT INTO local.db.ours VALUES " + ", ".join(
        f"({i}, 's{i}', TIMESTAMP'2024-01-0{1 + i % 3} 0{i % 10}:00:00', {i}.25)" for i in range(1, 9)))
    ice.sql("INSERT INTO local.db.ours VALUES (9, NULL, NULL, NULL), (10, 'ten', TIMESTAMP'2024-01-02 00:00:00', 10)")


def test_java_writes_into_our_table(world):
    ice, warehouse = world
    sc = SCENARIOS["ours"]
    if sc.error is not None:
        raise AssertionError(f"pyice_sql failed to build db.ours: {sc.error!r}") from sc.error
    *_, java_rows, files = [rows_or_raise(r) for r in sc.java]
    assert dict(files).get(1, 0) >= 1, f"Java's merge-on-read DELETE/UPDATE should have written position deletes: {files}"
    assert sorted(r[0] for r in java_rows) == [1, 3, 4, 5, 6, 7, 8, 9, 10, 101], java_rows
    assert [r for r in java_rows if r[0] == 5] == [[5, "updated by java", "2024-01-03T05:00:00.000000", "5.75"]]
    ours = ice_rows(ice.sql("SELECT * FROM local.db.ours"))
    assert_same_rows(java_rows, ours, "pyice reading its table after Java's INSERT, DELETE and UPDATE")
    assert_same_rows([r for r in java_rows if r[0] in (1, 9)],
                     ice_rows(ice.sql("SELECT * FROM local.db.ours WHERE id IN (1, 9, 2)")),
                     "pyice's pruned read after Java's changes")
    assert_peers_read(f"{warehouse}/db/ours", ours)
    # our commit on top of Java's
    ice.sql("INSERT INTO local.db.ours VALUES (200, 'pyice again', TIMESTAMP'2024-01-04 00:00:00', 200)")
    after = ice_rows(ice.sql("SELECT * FROM local.db.ours"))
    assert_same_rows(sort_rows(ours + [[200, "pyice again", "2024-01-04T00:00:00.000000", "200.00"]]), after,
                     "pyice append after Java's commits")
    assert_peers_read(f"{warehouse}/db/ours", after)


@scenario("replaced", wheres=["id = 3", "x = '4'", "y IS NULL"])
def build_replaced(ice):
    """CREATE OR REPLACE TABLE AS SELECT: new schema (reused and new column ids) and a new spec."""
    ice.sql("CREATE TABLE local.db.replaced (id bigint, s string, x int) USING iceberg PARTITIONED BY (s)")
    ice.sql("INSERT INTO local.db.replaced VALUES (1, 'a', 1), (2, 'b', 2), (3, 'a', 3), (4, 'c', 4)")
    ice.sql("CREATE OR REPLACE TABLE local.db.replaced USING iceberg PARTITIONED BY (bucket(2, id)) AS "
            "SELECT id, CAST(x AS string) AS x, IF(id = 2, NULL, 'n') AS y FROM local.db.replaced")


def test_replaced_table(world):
    check_readers(world, "replaced")
