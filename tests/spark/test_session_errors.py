"""Bad input and failure on the pyice path: named errors with positions, nothing half-committed."""
from __future__ import annotations

import glob
import os

import pytest

from pyice_sql.core.errors import (
    AnalysisError, CardinalityError, CorruptTableError, NoSuchTableError, NotNullViolationError, ParseError,
    TableAlreadyExistsError,
)

pytestmark = pytest.mark.spark


@pytest.fixture
def table(ice):
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint NOT NULL, s string) USING iceberg PARTITIONED BY (bucket(2, id))")
    ice.sql("INSERT INTO local.db.t VALUES (1, 'a'), (2, 'b')")
    return "local.db.t"


def metadata_files(warehouse):
    return sorted(glob.glob(os.path.join(warehouse, "db", "t", "metadata", "v*.metadata.json")))


def rows(ice, table):
    return sorted(tuple(r) for r in ice.sql(f"SELECT * FROM {table}").collect())


def test_unknown_table_has_position(ice, table):
    with pytest.raises(NoSuchTableError) as e:
        ice.sql("SELECT *\nFROM local.db.nope")
    assert "nope" in str(e.value) and e.value.position is not None and e.value.position.line == 2


def test_duplicate_create(ice, table):
    with pytest.raises(TableAlreadyExistsError):
        ice.sql("CREATE TABLE local.db.t (x int) USING iceberg")
    ice.sql("CREATE TABLE IF NOT EXISTS local.db.t (x int) USING iceberg")  # no error


def test_unsupported_transform_and_bad_type(ice, table):
    with pytest.raises(ParseError, match="(?i)unknown partition transform frobnicate") as e:
        ice.sql("CREATE TABLE local.db.u (x int) USING iceberg PARTITIONED BY (frobnicate(x))")
    assert e.value.position is not None
    with pytest.raises(AnalysisError, match="cannot change column"):
        ice.sql("ALTER TABLE local.db.t ALTER COLUMN s TYPE int")


def test_syntax_error_names_line_and_column(ice, table):
    with pytest.raises(ParseError) as e:
        ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN INSERT *")
    assert e.value.position is not None


def test_not_null_violation_leaves_table_unchanged(ice, table, warehouse):
    before = metadata_files(warehouse)
    with pytest.raises(Exception, match="NOT NULL"):
        ice.sql("INSERT INTO local.db.t VALUES (NULL, 'x')")
    assert metadata_files(warehouse) == before
    assert rows(ice, table) == [(1, "a"), (2, "b")]


def test_failed_write_job_leaves_no_staging_folder(ice, warehouse):
    """Rows Spark cannot check on the driver fail the write job itself, after its output committer
    made the staging folder (an unpartitioned table's): the folder goes with the job."""
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint NOT NULL, s string) USING iceberg")
    ice.sql("INSERT INTO local.db.t VALUES (1, 'a')")
    before = metadata_files(warehouse)
    with pytest.raises(NotNullViolationError, match="id"):
        ice.sql("INSERT INTO local.db.t SELECT IF(id > 0, NULL, id), 'y' FROM range(2)")
    assert metadata_files(warehouse) == before
    assert [f for f in os.listdir(os.path.join(warehouse, "db", "t", "data")) if not f.endswith(".parquet")] == []


def test_cardinality_violation_names_keys_and_commits_nothing(ice, table, warehouse):
    before = metadata_files(warehouse)
    ice.spark.createDataFrame([(1, "x"), (1, "y")], "id bigint, s string").createOrReplaceTempView("dups")
    with pytest.raises(CardinalityError) as e:
        ice.sql("MERGE INTO local.db.t t USING dups d ON t.id = d.id WHEN MATCHED THEN UPDATE SET s = d.s")
    assert "id=1" in str(e.value) and "2 source rows" in str(e.value)
    assert metadata_files(warehouse) == before


def test_duplicate_source_rows_that_only_insert_are_fine(ice, table):
    ice.spark.createDataFrame([(7, "x"), (7, "x")], "id bigint, s string").createOrReplaceTempView("ins")
    out = ice.sql("MERGE INTO local.db.t t USING ins i ON t.id = i.id WHEN NOT MATCHED THEN INSERT *").collect()[0]
    assert out.num_inserted_rows == 2
    assert rows(ice, table) == [(1, "a"), (2, "b"), (7, "x"), (7, "x")]


def test_statement_that_changes_nothing_makes_no_snapshot(ice, table, warehouse):
    before = metadata_files(warehouse)
    out = ice.sql("UPDATE local.db.t SET s = 'z' WHERE id = 99").collect()[0]
    assert out.num_affected_rows == 0 and metadata_files(warehouse) == before
    ice.spark.createDataFrame([(1, "q")], "id bigint, s string").createOrReplaceTempView("src1")
    out = ice.sql("MERGE INTO local.db.t t USING src1 s ON t.id = s.id WHEN MATCHED AND 1 > 2 THEN DELETE").collect()[0]
    assert out.num_affected_rows == 0 and metadata_files(warehouse) == before


def test_corrupt_metadata_file_is_named(ice, table, warehouse):
    # a torn newest file alone is skipped (tests/reliability/test_corrupt_files.py); all torn is an error
    latest = metadata_files(warehouse)[-1]
    for path in metadata_files(warehouse):
        with open(path, "w") as f:
            f.write('{"format-version": 2, "table-uu')
    with pytest.raises(CorruptTableError) as e:
        ice.sql("SELECT * FROM local.db.t")
    assert os.path.basename(latest) in str(e.value)


def test_missing_manifest_is_named(ice, table, warehouse):
    for m in glob.glob(os.path.join(warehouse, "db", "t", "metadata", "*-m0.avro")):
        os.remove(m)
    with pytest.raises(CorruptTableError, match="manifest"):
        ice.sql("SELECT * FROM local.db.t").collect()


def test_newer_format_version_is_refused_with_the_file(ice, table, warehouse):
    latest = metadata_files(warehouse)[-1]
    text = open(latest).read().replace('"format-version": 2', '"format-version": 4', 1)
    with open(latest, "w") as f:
        f.write(text)
    with pytest.raises(CorruptTableError, match="format-version 4"):
        ice.sql("SELECT * FROM local.db.t")


def test_missing_data_file_is_named(ice, table, warehouse):
    victim = sorted(glob.glob(os.path.join(warehouse, "db", "t", "data", "**", "*.parquet"), recursive=True))[0]
    os.remove(victim)
    with pytest.raises(CorruptTableError) as e:
        ice.sql("SELECT * FROM local.db.t").collect()
    assert os.path.basename(victim) in str(e.value)


def test_not_null_violation_inside_a_merge_is_named(ice, table, warehouse):
    from pyice_sql.core.errors import NotNullViolationError

    before = metadata_files(warehouse)
    ice.spark.createDataFrame([(5, "x")], "k bigint, s string").createOrReplaceTempView("nn")
    with pytest.raises(NotNullViolationError, match="id"):
        ice.sql("MERGE INTO local.db.t t USING nn ON t.id = nn.k WHEN NOT MATCHED THEN INSERT (s) VALUES (nn.s)")
    assert metadata_files(warehouse) == before


def test_store_assignment_refuses_string_into_bigint(ice, table):
    with pytest.raises(AnalysisError, match="cannot safely cast 'id': string to bigint"):
        ice.sql("UPDATE local.db.t SET id = 'x' WHERE s = 'a'")


def test_store_assignment_overflow_fails_at_run_time(ice, warehouse):
    ice.sql("CREATE DATABASE local.o")
    ice.sql("CREATE TABLE local.o.t (i int, s string) USING iceberg")
    ice.sql("INSERT INTO local.o.t VALUES (1, 'a')")
    with pytest.raises(Exception, match="out of range"):
        ice.sql("UPDATE local.o.t SET i = 3000000000L")
    assert [tuple(r) for r in ice.sql("SELECT * FROM local.o.t").collect()] == [(1, "a")]
