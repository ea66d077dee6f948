"""Merge-on-read on format v3: only data files the statement deletes rows from get a new DV.

Two data files, each with a deletion vector. A DELETE whose WHERE cannot skip either file (the
`data` bounds of both files cover 'r3') reads both but removes a row of the first only: the
commit replaces the first file's DV (one added, one removed) and leaves the second's entry as
it was, so a concurrent writer on the second file does not conflict. A MERGE in which a target
row matches two source rows fails and commits nothing. Rows are checked against hand-computed sets.
"""
from __future__ import annotations

import pytest

from pyice_sql.core.errors import CardinalityError

pytestmark = pytest.mark.spark

MOR = ("'format-version'='3', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
       "'write.merge.mode'='merge-on-read'")


def _summary(ice) -> dict:
    """The current snapshot's summary (the newest snapshot: this table's history is linear)."""
    return ice.sql("SELECT summary FROM local.db.t.snapshots ORDER BY committed_at DESC LIMIT 1").first().summary


def _dvs(ice) -> dict[str, tuple[str, int]]:
    rows = ice.sql("SELECT referenced_data_file, file_path, content_offset FROM local.db.t.delete_files").collect()
    return {r.referenced_data_file: (r.file_path, r.content_offset) for r in rows}


@pytest.fixture
def table(ice):
    ice.sql("CREATE DATABASE IF NOT EXISTS local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, data string) USING iceberg TBLPROPERTIES ({MOR})")
    for lo in (0, 10):  # one file per INSERT: ids 0-9 ('r0'..'r9') and 10-19 ('r10'..'r19')
        ice.sql(f"INSERT INTO local.db.t SELECT /*+ COALESCE(1) */ id, concat('r', cast(id as string)) "
                f"FROM range({lo}, {lo + 10})")
    ice.sql("DELETE FROM local.db.t WHERE id IN (1, 11)")
    return ice


def test_a_file_read_but_unchanged_keeps_its_deletion_vector(table):
    ice = table
    before = _dvs(ice)
    assert len(before) == 2
    ice.sql("DELETE FROM local.db.t WHERE data = 'r3'")
    summary = _summary(ice)
    assert summary["added-delete-files"] == "1" and summary["removed-delete-files"] == "1"
    after = _dvs(ice)
    assert after.keys() == before.keys()
    changed = [f for f in after if after[f] != before[f]]
    assert len(changed) == 1 and after[changed[0]][0] != before[changed[0]][0]  # one file's DV is new ...
    (other,) = after.keys() - set(changed)
    assert after[other] == before[other]  # ... the other file's DV entry is untouched
    rows = {r.id for r in ice.sql("SELECT id FROM local.db.t").collect()}
    assert rows == set(range(20)) - {1, 11, 3}


def test_merge_cardinality_violation_commits_nothing(table):
    ice = table
    snapshots = ice.sql("SELECT count(*) AS n FROM local.db.t.snapshots").first().n
    src = ice.spark.createDataFrame([(4, "a"), (4, "b")], "id bigint, data string")
    with pytest.raises(CardinalityError):
        ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET data = s.data",
                src=src)
    assert ice.sql("SELECT count(*) AS n FROM local.db.t.snapshots").first().n == snapshots
    # one unconditional DELETE may match a row twice: it is deleted once
    result = ice.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN DELETE", src=src).first()
    assert result.num_deleted_rows == 1
    assert {r.id for r in ice.sql("SELECT id FROM local.db.t").collect()} == set(range(20)) - {1, 11, 4}
