"""Merge-on-read checks that now ride inside the delete write job (no statistics pass): the MERGE
cardinality check, a position deleted once however many source rows match it, and the folding
of a data file's old position deletes into its new delete file. Truth: hand-computed rows."""
from __future__ import annotations

import pytest

from pyice_sql.core.errors import CardinalityError

pytestmark = pytest.mark.spark


@pytest.fixture
def mor(ice):
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, s string) USING iceberg TBLPROPERTIES ("
            "'write.merge.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', "
            "'write.delete.mode' = 'merge-on-read')")
    ice.sql("INSERT INTO local.db.t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    return ice


def _rows(ice):
    return sorted(tuple(r) for r in ice.sql("SELECT id, s FROM local.db.t").collect())


def _snapshots(ice):
    return ice.sql("SELECT count(*) FROM local.db.t.snapshots").collect()[0][0]


def test_target_row_in_two_matched_pairs_fails_even_when_no_clause_acts(mor):
    mor.spark.createDataFrame([(2, "x"), (2, "y")], "id bigint, s string").createOrReplaceTempView("dups")
    before = _snapshots(mor)
    with pytest.raises(CardinalityError, match="id=2"):
        mor.sql("MERGE INTO local.db.t t USING dups d ON t.id = d.id WHEN MATCHED AND d.s = 'zzz' THEN UPDATE SET s = d.s")
    assert _snapshots(mor) == before and _rows(mor) == [(1, "a"), (2, "b"), (3, "c")]


def test_lone_unconditional_delete_matched_twice_deletes_the_row_once(mor):
    mor.spark.createDataFrame([(2, "x"), (2, "y"), (3, "z")], "id bigint, s string").createOrReplaceTempView("d2")
    out = mor.sql("MERGE INTO local.db.t t USING d2 d ON t.id = d.id WHEN MATCHED THEN DELETE").collect()[0]
    assert (out.num_deleted_rows, out.num_affected_rows) == (2, 2)
    assert _rows(mor) == [(1, "a")]


def test_lone_unconditional_delete_matched_twice_with_inserts_deletes_the_row_once(mor):
    # inserts from a small source: the deletes and the new rows are written in one job, whose in-task
    # writer drops the second row of position 2 (no cardinality check for a lone unconditional DELETE)
    mor.spark.createDataFrame([(2, "x"), (2, "y"), (3, "z"), (9, "n")], "id bigint, s string") \
        .createOrReplaceTempView("d3")
    out = mor.sql("MERGE INTO local.db.t t USING d3 d ON t.id = d.id "
                  "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *").collect()[0]
    assert (out.num_deleted_rows, out.num_inserted_rows, out.num_affected_rows) == (2, 1, 3)
    assert _rows(mor) == [(1, "a"), (9, "n")]


def test_old_position_deletes_of_a_touched_file_are_folded(mor):
    mor.sql("DELETE FROM local.db.t")
    mor.append("local.db.t", mor.spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id bigint, s string")
               .coalesce(1))  # one data file: both statements below touch it
    mor.sql("DELETE FROM local.db.t WHERE id = 1")
    out = mor.sql("UPDATE local.db.t SET s = 'q' WHERE id = 3").collect()[0]
    assert (out.num_updated_rows, out.num_added_delete_files) == (1, 1)
    assert _rows(mor) == [(2, "b"), (3, "q")]
    live = mor.sql("SELECT count(*), count(DISTINCT referenced_data_file), sum(record_count) "
                   "FROM local.db.t.delete_files").collect()[0]
    # one delete file (the old one was folded into the new one) holding the positions of
    # id 1 (old) and id 3 (updated)
    assert tuple(live) == (1, 1, 2)
