"""DDL, DataFrame API and time travel through IceSession (answers computed by hand)."""
from __future__ import annotations

import re

import pytest

from pyice_sql.core.errors import AnalysisError, NoSuchNamespaceError

pytestmark = pytest.mark.spark


def rows(df):
    return sorted(tuple(r) for r in df.collect())


def test_ctas_alter_and_evolved_reads(ice):
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.src_t USING iceberg PARTITIONED BY (k) AS "
            "SELECT CAST(id AS int) AS n, CAST(id % 2 AS string) AS k FROM range(4)")
    assert rows(ice.sql("SELECT * FROM local.db.src_t")) == [(0, "0"), (1, "1"), (2, "0"), (3, "1")]
    ice.sql("ALTER TABLE local.db.src_t ADD COLUMNS (note string)")
    ice.sql("ALTER TABLE local.db.src_t RENAME COLUMN n TO num")
    ice.sql("ALTER TABLE local.db.src_t ALTER COLUMN num TYPE bigint")
    ice.sql("INSERT INTO local.db.src_t VALUES (10, '0', 'new')")
    ice.sql("ALTER TABLE local.db.src_t DROP COLUMN note")
    ice.sql("ALTER TABLE local.db.src_t ADD COLUMNS (note string)")  # a new id: old values stay invisible
    got = rows(ice.sql("SELECT num, k, note FROM local.db.src_t"))
    assert got == [(0, "0", None), (1, "1", None), (2, "0", None), (3, "1", None), (10, "0", None)]
    desc = {r.col_name: r.data_type for r in ice.sql("DESCRIBE local.db.src_t").collect()}
    assert desc["num"] == "bigint" and desc["note"] == "string"  # Spark's type names, as Iceberg Java shows


def test_partition_evolution_keeps_old_files_readable_and_prunable(ice):
    ice.sql("CREATE DATABASE local.pe")
    ice.sql("CREATE TABLE local.pe.t (id bigint, p string) USING iceberg PARTITIONED BY (p)")
    ice.sql("INSERT INTO local.pe.t VALUES (1, 'a'), (2, 'b')")
    ice.sql("ALTER TABLE local.pe.t ADD PARTITION FIELD bucket(4, id)")
    ice.sql("ALTER TABLE local.pe.t DROP PARTITION FIELD p")
    ice.sql("INSERT INTO local.pe.t VALUES (3, 'a'), (4, 'c')")
    assert rows(ice.sql("SELECT * FROM local.pe.t")) == [(1, "a"), (2, "b"), (3, "a"), (4, "c")]
    assert rows(ice.sql("SELECT id FROM local.pe.t WHERE p = 'a'")) == [(1,), (3,)]
    m = ice.last_plan.metrics
    assert m.skipped_by_partition + m.skipped_by_metrics >= 1  # the old-spec 'b' file is skipped
    specs = rows(ice.sql("SELECT DISTINCT spec_id FROM local.pe.t.files"))
    assert specs == [(0,), (2,)]  # spec 1 (p + bucket) never received files


def test_time_travel_and_dataframe_api(ice):
    ice.sql("CREATE DATABASE local.tt")
    ice.sql("CREATE TABLE local.tt.t (id bigint, s string) USING iceberg")
    ice.append("local.tt.t", ice.spark.createDataFrame([(1, "a")], "id bigint, s string"))
    first = ice.sql("SELECT snapshot_id FROM local.tt.t.snapshots").collect()[0][0]
    ice.append("local.tt.t", ice.spark.createDataFrame([("b", 2)], "s string, id bigint"))  # by name
    assert rows(ice.table("local.tt.t")) == [(1, "a"), (2, "b")]
    assert rows(ice.sql(f"SELECT * FROM local.tt.t VERSION AS OF {first}")) == [(1, "a")]
    with pytest.raises(AnalysisError):
        ice.sql("SELECT * FROM local.tt.t VERSION AS OF 42")
    with pytest.raises(AnalysisError):
        ice.append("local.tt.t", ice.spark.createDataFrame([(1, "x")], "id bigint, nope string"))


def test_namespaces_and_show(ice):
    ice.sql("CREATE NAMESPACE local.n1")
    ice.sql("CREATE NAMESPACE IF NOT EXISTS local.n1")
    assert ("n1",) in rows(ice.sql("SHOW NAMESPACES IN local"))
    ice.sql("CREATE TABLE local.n1.a (x int) USING iceberg")
    assert [r.tableName for r in ice.sql("SHOW TABLES IN local.n1").collect()] == ["a"]
    ice.sql("DROP TABLE local.n1.a")
    ice.sql("DROP NAMESPACE local.n1")
    with pytest.raises(NoSuchNamespaceError):
        ice.sql("SHOW TABLES IN local.n1")
    # as Iceberg Java's HadoopCatalog: a table in a namespace never created makes its folders
    ice.sql("CREATE TABLE local.n1.b (x int) USING iceberg")
    assert ("n1",) in rows(ice.sql("SHOW NAMESPACES IN local"))


def test_insert_overwrite_static_partition(ice):
    ice.sql("CREATE DATABASE local.ow")
    ice.sql("CREATE TABLE local.ow.t (id bigint, p string) USING iceberg PARTITIONED BY (p)")
    ice.sql("INSERT INTO local.ow.t VALUES (1, 'a'), (2, 'b')")
    ice.sql("INSERT OVERWRITE local.ow.t PARTITION (p = 'a') SELECT 9")
    assert rows(ice.sql("SELECT * FROM local.ow.t")) == [(2, "b"), (9, "a")]
    ice.sql("INSERT OVERWRITE local.ow.t VALUES (5, 'z')")
    assert rows(ice.sql("SELECT * FROM local.ow.t")) == [(5, "z")]


def test_partition_clause_names_identity_partition_columns_only(ice):
    """As Spark (and so Iceberg Java) refuse, before writing anything: checked against the reference
    engine, which answers [NON_PARTITION_COLUMN] for each of these."""
    from pyice_sql.core.errors import AnalysisError

    ice.sql("CREATE DATABASE local.pc")
    ice.sql("CREATE TABLE local.pc.t (id bigint, p string, ts timestamp) USING iceberg PARTITIONED BY (p, days(ts))")
    ice.sql("INSERT INTO local.pc.t VALUES (1, 'a', TIMESTAMP '2024-01-01 00:00:00')")
    for sql in ("INSERT OVERWRITE local.pc.t PARTITION (ts = TIMESTAMP '2024-01-01 05:00:00') SELECT 4, 'a'",
                "INSERT OVERWRITE local.pc.t PARTITION (id = 1) SELECT 'a', TIMESTAMP '2024-01-01 05:00:00'",
                "INSERT INTO local.pc.t PARTITION (id = 1) SELECT 'a', TIMESTAMP '2024-01-01 05:00:00'",
                # columns given no value are checked alike
                "INSERT INTO local.pc.t PARTITION (ts) SELECT 4, 'a', TIMESTAMP '2024-01-01 05:00:00'",
                "INSERT INTO local.pc.t PARTITION (p = 'a', id) SELECT 3, TIMESTAMP '2024-01-01 05:00:00'"):
        with pytest.raises(AnalysisError, match=r"\[NON_PARTITION_COLUMN\].*`(ts|id)`") as e:
            ice.sql(sql)
        assert e.value.position is not None
    assert rows(ice.sql("SELECT id, p FROM local.pc.t")) == [(1, "a")]
    ice.sql("INSERT INTO local.pc.t PARTITION (p) SELECT 3, 'b', TIMESTAMP '2024-01-01 05:00:00'")
    assert rows(ice.sql("SELECT id, p FROM local.pc.t")) == [(1, "a"), (3, "b")]
    ice.sql("INSERT OVERWRITE local.pc.t PARTITION (p = 'a') SELECT 2, TIMESTAMP '2024-01-01 05:00:00'")
    assert rows(ice.sql("SELECT id, p FROM local.pc.t")) == [(2, "a"), (3, "b")]


def test_insert_select_maps_by_position_even_with_repeated_names(ice):
    ice.sql("CREATE DATABASE local.ins")
    ice.sql("CREATE TABLE local.ins.t (a bigint, b bigint, s string) USING iceberg")
    ice.sql("INSERT INTO local.ins.t SELECT 1, 1, 'x'")  # two output columns named `1`
    ice.sql("INSERT INTO local.ins.t SELECT NULL, NULL, 'y'")
    assert sorted(ice.sql("SELECT * FROM local.ins.t").collect(), key=str) == [(1, 1, "x"), (None, None, "y")]


def test_insert_store_assignment_refuses_and_checks_like_spark(ice):
    from pyice_sql.core.errors import AnalysisError

    ice.sql("CREATE DATABASE local.sa")
    ice.sql("CREATE TABLE local.sa.t (id bigint, d decimal(5,2)) USING iceberg")
    with pytest.raises(AnalysisError, match="cannot safely cast 'id': string to bigint") as e:
        ice.sql("INSERT INTO local.sa.t VALUES ('one', 1.0)")
    assert e.value.position is not None
    with pytest.raises(AnalysisError, match="value out of range for column id"):
        ice.sql("INSERT INTO local.sa.t VALUES (9223372036854775808, 1.0)")  # wrapped to -2^63 before
    with pytest.raises(AnalysisError, match="value out of range for column d"):
        ice.sql("INSERT INTO local.sa.t VALUES (1, 1234.5)")
    ice.sql("INSERT INTO local.sa.t VALUES (7, 123.45)")
    assert [tuple(r) for r in ice.sql("SELECT id, CAST(d AS string) FROM local.sa.t").collect()] == [(7, "123.45")]


def test_what_cannot_change_inside_lists_and_maps(ice):
    """A list's element and a map's value may be widened (tests/interop/test_written_by_pyice.py
    evolves them, Java reading); Iceberg Java refuses a map key's change and dropping an element,
    and so does pyice, naming the column; Spark cannot rename an element. pyice also refuses a
    comment on one (Java takes it; pyice's schema has nowhere to keep it)."""
    ice.sql("CREATE DATABASE local.nest")
    ice.sql("CREATE TABLE local.nest.t (id int, arr array<int>, m map<int, int>) USING iceberg")
    for change, message in (("ALTER COLUMN m.key TYPE bigint", "m.key: a map's keys cannot be updated"),
                            ("DROP COLUMN arr.element", "cannot drop arr.element"),
                            ("RENAME COLUMN arr.element TO x", "cannot rename arr.element"),
                            ("ALTER COLUMN arr.element COMMENT 'c'", "cannot comment on arr.element"),
                            ("ALTER COLUMN arr.elem TYPE bigint", "'arr.elem' does not exist"),
                            ("ALTER COLUMN id.x TYPE bigint", "not inside a struct, list or map")):
        with pytest.raises(AnalysisError, match=re.escape(message)):
            ice.sql(f"ALTER TABLE local.nest.t {change}")
    ice.sql("ALTER TABLE local.nest.t ALTER COLUMN m.value TYPE bigint")
    assert [tuple(r)[:2] for r in ice.sql("DESCRIBE local.nest.t").collect()] == [
        ("id", "int"), ("arr", "array<int>"), ("m", "map<int,bigint>")]


def test_time_columns_are_refused_not_made_timestamps(ice):
    """Iceberg Java on Spark 3.5 refuses a `time` column ([UNSUPPORTED_DATATYPE]); pyice's SQL
    writer once turned it into `timestamp`, creating a table of another type."""
    ice.sql("CREATE DATABASE local.tm")
    for ddl in ("CREATE TABLE local.tm.t (id int, c time) USING iceberg",
                "CREATE TABLE local.tm.t USING iceberg AS SELECT 1 AS id, CAST(NULL AS time) AS c"):
        with pytest.raises(Exception, match=r"(?i)\btime\b"):
            ice.sql(ddl)
        assert ice.sql("SHOW TABLES IN local.tm").collect() == []
