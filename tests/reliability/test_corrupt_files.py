"""Damaged tables on disk: torn metadata and bad version hints are recovered as Iceberg's Hadoop
catalog does; everything else is a CorruptTableError naming the file, never a Spark trace.
"""
from __future__ import annotations

import glob
import json
import os

import pytest

from pyice_sql.core.errors import CorruptTableError
from tests.interop.engines import sort_rows

pytestmark = [pytest.mark.reliability, pytest.mark.spark]

ROWS_V2 = [[1, "a"], [2, "b"]]
ROWS_V3 = ROWS_V2 + [[3, "c"]]


@pytest.fixture
def table(ice, warehouse):
    """local.db.t with versions v1 (create), v2 (1, 2), v3 (+3); returns its metadata folder."""
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, s string) USING iceberg")
    ice.sql("INSERT INTO local.db.t VALUES (1, 'a'), (2, 'b')")
    ice.sql("INSERT INTO local.db.t VALUES (3, 'c')")
    return os.path.join(warehouse, "db", "t", "metadata")


def rows(ice):
    return sort_rows(ice.sql("SELECT * FROM local.db.t").collect())


def tear(path: str) -> None:
    """Cut a file in half, as a writer killed while writing it in place would leave it."""
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2])


def hint(mdir: str, text: str) -> None:
    with open(os.path.join(mdir, "version-hint.text"), "w") as f:
        f.write(text)


def test_torn_newest_metadata_is_never_current(ice, table):
    tear(os.path.join(table, "v3.metadata.json"))
    assert rows(ice) == sort_rows(ROWS_V2)
    ice.sql("INSERT INTO local.db.t VALUES (4, 'd')")  # the next commit goes past the torn v3
    assert os.path.exists(os.path.join(table, "v4.metadata.json"))
    assert rows(ice) == sort_rows(ROWS_V2 + [[4, "d"]])


@pytest.mark.parametrize("text", ["9", "0", "abc", "", "\x00\xff", "2"])
def test_bad_version_hint_is_recovered_from_the_newest_metadata(ice, table, text):
    hint(table, text)  # missing version, garbage, empty, binary, stale
    assert rows(ice) == sort_rows(ROWS_V3)


def test_hint_pointing_at_torn_file_falls_back_to_newest_whole_one(ice, table):
    tear(os.path.join(table, "v3.metadata.json"))
    hint(table, "3")
    assert rows(ice) == sort_rows(ROWS_V2)


def test_missing_hint_is_recovered_by_listing(ice, table):
    os.remove(os.path.join(table, "version-hint.text"))
    assert rows(ice) == sort_rows(ROWS_V3)


def test_newer_format_version_is_never_skipped(ice, table):
    """A whole file from a newer engine is a real commit: refusing is right, falling back is not."""
    path = os.path.join(table, "v3.metadata.json")
    obj = json.load(open(path))
    obj["format-version"] = 4
    json.dump(obj, open(path, "w"))
    with pytest.raises(CorruptTableError) as e:
        ice.sql("SELECT * FROM local.db.t")
    assert "v3.metadata.json" in str(e.value) and "format-version 4" in str(e.value)


def test_sql_catalog_pointer_to_torn_metadata_is_named(spark, tmp_path):
    import pyice_sql

    ice = pyice_sql.connect(spark, warehouse=str(tmp_path / "wh"), catalog_type="sql")
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint) USING iceberg")
    ice.sql("INSERT INTO local.db.t VALUES (1)")
    current = max(glob.glob(str(tmp_path / "wh" / "db" / "t" / "metadata" / "*.metadata.json")))
    tear(current)
    with pytest.raises(CorruptTableError) as e:
        ice.sql("SELECT * FROM local.db.t")
    assert os.path.basename(current) in str(e.value)


def test_garbage_manifest_is_named(ice, table):
    manifest = sorted(glob.glob(os.path.join(table, "*-m0.avro")))[0]
    with open(manifest, "wb") as f:
        f.write(b"Obj\x01 this is not avro" * 10)
    with pytest.raises(CorruptTableError) as e:
        ice.sql("SELECT * FROM local.db.t").collect()
    assert os.path.basename(manifest) in str(e.value)


def test_garbage_manifest_list_is_named(ice, table):
    snap = max(glob.glob(os.path.join(table, "snap-*.avro")), key=os.path.getmtime)
    with open(snap, "wb") as f:
        f.write(os.urandom(300))
    with pytest.raises(CorruptTableError) as e:
        ice.sql("DELETE FROM local.db.t WHERE id = 1")
    assert os.path.basename(snap) in str(e.value)


def test_missing_data_file_is_named_on_write(ice, table, warehouse):
    victim = sorted(glob.glob(os.path.join(warehouse, "db", "t", "data", "**", "*.parquet"), recursive=True))[0]
    os.remove(victim)
    with pytest.raises(CorruptTableError) as e:
        ice.sql("UPDATE local.db.t SET s = 'z'")
    assert os.path.basename(victim) in str(e.value)


def test_truncated_parquet_is_named(ice, table, warehouse):
    from pyice_sql.spark.errors import translate

    victim = sorted(glob.glob(os.path.join(warehouse, "db", "t", "data", "**", "*.parquet"), recursive=True))[0]
    tear(victim)
    with pytest.raises(CorruptTableError) as e:  # a write runs its Spark jobs inside ice.sql
        ice.sql("UPDATE local.db.t SET s = 'z'")
    assert os.path.basename(victim) in str(e.value), str(e.value)[:500]
    # a SELECT is lazy: Spark fails at collect(), outside ice.sql; the same translation names the file
    with pytest.raises(Exception) as raw:
        ice.sql("SELECT * FROM local.db.t").collect()
    named = translate(raw.value)
    assert isinstance(named, CorruptTableError) and os.path.basename(victim) in str(named)


def test_unknown_table_properties_are_kept_and_harmless(ice, table):
    path = os.path.join(table, "v3.metadata.json")
    obj = json.load(open(path))
    obj["properties"].update({"vendor.x.flag": "on", "write.some-future-option": "42"})
    obj["some-future-field"] = {"kept": True}
    json.dump(obj, open(path, "w"))
    ice.sql("UPDATE local.db.t SET s = 'z' WHERE id = 3")
    assert rows(ice) == sort_rows(ROWS_V2 + [[3, "z"]])
    newest = json.load(open(os.path.join(table, "v4.metadata.json")))
    assert newest["properties"]["vendor.x.flag"] == "on" and newest["some-future-field"] == {"kept": True}
