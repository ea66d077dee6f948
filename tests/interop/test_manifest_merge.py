"""Manifest merging on commit against Iceberg Java: twin tables, the same statements, the same manifests.

Iceberg Java merges a snapshot's manifests once enough of them pile up
(`commit.manifest.min-count-to-merge`, 100 by default; 3 here so a short script merges
several times). pyice writes `m2` (format v2) and `m3` (v3, row lineage), partitioned and
merge-on-read, one small commit per statement; Java runs the same statements on its twins.
Then, per snapshot in order, the manifest lists must have the same shape (content and entry
counts of each manifest), Java's `entries` must show the same live files with the same sequence
numbers, and Java must read our tables (with `_row_id` and `_last_updated_sequence_number` on
v3) exactly as it reads its own; PyIceberg and DuckDB read our merged v2 table's rows too.
"""
from __future__ import annotations

import fastavro
import pytest

import pyice_sql
from tests.interop.engines import assert_peers_read, ice_rows, java_sql
from tests.interop.test_v3_write import MOR, _local, _metadata

pytestmark = pytest.mark.interop

MIN_COUNT = 3
SCRIPT = [
    "CREATE TABLE {t} (id bigint, data string, p string) USING iceberg PARTITIONED BY (p) "
    "TBLPROPERTIES ('format-version'='{v}', " + MOR + f", 'commit.manifest.min-count-to-merge'='{MIN_COUNT}')",
    *[f"INSERT INTO {{t}} VALUES ({i}, 'r{i}', '{'ab'[i % 2]}')" for i in range(6)],
    "DELETE FROM {t} WHERE id = 2",
    "UPDATE {t} SET data = 'u' WHERE id IN (3, 4)",
    "INSERT INTO {t} VALUES (10, 'r10', 'a')",
    "DELETE FROM {t} WHERE id IN (1, 10)",
    "UPDATE {t} SET data = 'w' WHERE id = 0",
]
COLUMNS = {"2": "id, data, p", "3": "id, data, p, _row_id, _last_updated_sequence_number"}
ENTRIES = ("SELECT data_file.content, sequence_number, file_sequence_number, data_file.record_count, "
           "data_file.partition.p FROM ref.db.{n}.entries WHERE status < 2")


def _manifest_shapes(warehouse: str, table: str) -> list[list[tuple]]:
    """Per snapshot (oldest first): its manifests as (content, added, existing, deleted files), in list order."""
    out = []
    for snap in sorted(_metadata(warehouse, table)["snapshots"], key=lambda s: s["sequence-number"]):
        with open(_local(snap["manifest-list"]), "rb") as f:
            out.append([(m["content"], m["added_files_count"], m["existing_files_count"], m["deleted_files_count"])
                        for m in fastavro.reader(f)])
    return out


@pytest.fixture(scope="module")
def twins(spark, tmp_path_factory):
    warehouse = str(tmp_path_factory.mktemp("manifest-merge") / "warehouse")
    ice = pyice_sql.connect(spark, warehouse=warehouse)
    ice.sql("CREATE NAMESPACE IF NOT EXISTS local.db")
    ours, java_script = {}, []
    for v in COLUMNS:
        for sql in SCRIPT:
            ice.sql(sql.format(t=f"local.db.m{v}", v=v)).collect()
        ours[v] = ice_rows(ice.sql(f"SELECT {COLUMNS[v]} FROM local.db.m{v}"))
        java_script += [sql.format(t=f"ref.db.j{v}", v=v) for sql in SCRIPT]
    reads = [f"SELECT {COLUMNS[v]} FROM ref.db.{n}{v}" for v in COLUMNS for n in ("m", "j")]
    entries = [ENTRIES.format(n=f"{n}{v}") for v in COLUMNS for n in ("m", "j")]
    results = java_sql(warehouse, *java_script, *reads, *entries)[len(java_script):]
    keys = [(v, n) for v in COLUMNS for n in ("m", "j")]
    return warehouse, ours, dict(zip(keys, results[:len(keys)])), dict(zip(keys, results[len(keys):]))


@pytest.mark.parametrize("v", list(COLUMNS))
def test_manifest_lists_have_javas_shape_at_every_snapshot(twins, v):
    warehouse = twins[0]
    ours, theirs = _manifest_shapes(warehouse, f"m{v}"), _manifest_shapes(warehouse, f"j{v}")
    assert ours == theirs
    # merges did happen: never more manifests of one content than the minimum count
    assert max(len(s) for s in ours) <= 2 * (MIN_COUNT - 1)
    assert any(existing for shape in ours for _, _, existing, _ in shape)


@pytest.mark.parametrize("v", list(COLUMNS))
def test_java_reads_the_same_live_files_and_rows(twins, v):
    _, ours, reads, entries = twins
    assert entries[(v, "m")] == entries[(v, "j")]  # content, data and file sequence numbers, counts
    assert reads[(v, "m")] == reads[(v, "j")] == ours[v]


def test_peers_read_our_merged_table(twins):
    warehouse, ours, _, _ = twins
    assert_peers_read(f"{warehouse}/db/m2", ours["2"])
