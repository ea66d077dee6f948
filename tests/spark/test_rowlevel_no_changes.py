"""Merge-on-read statements whose delete write writes nothing (no row matches, or only inserts)
still finish with exact counts: the new-row write then counts its own rows (an observation of a
write that wrote nothing never reports, so it must not be waited for). Rows hand-computed."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("version", [2, 3])
def test_statements_that_delete_nothing(ice, version):
    ice.sql("CREATE DATABASE local.db")
    ice.sql(f"CREATE TABLE local.db.t (id bigint, v string) USING iceberg TBLPROPERTIES ('format-version' = "
            f"'{version}', 'write.merge.mode' = 'merge-on-read', 'write.update.mode' = 'merge-on-read', "
            "'write.delete.mode' = 'merge-on-read')")
    ice.sql("INSERT INTO local.db.t VALUES (1, 'a'), (2, 'b')")

    def counts(sql):
        r = ice.sql(sql).collect()[0]
        return r.num_updated_rows, r.num_deleted_rows, r.num_inserted_rows, r.num_added_delete_files

    assert counts("UPDATE local.db.t SET v = 'x' WHERE id = 99") == (0, 0, 0, 0)
    assert counts("DELETE FROM local.db.t WHERE id = 99") == (0, 0, 0, 0)
    assert counts("MERGE INTO local.db.t t USING (SELECT 5 AS id, 'n' AS v) s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *") == (0, 0, 1, 0)
    assert counts("MERGE INTO local.db.t t USING (SELECT 1 AS id, 'm' AS v) s ON t.id = s.id "
                  "WHEN MATCHED THEN UPDATE SET v = s.v") == (1, 0, 0, 1)
    assert sorted(tuple(r) for r in ice.sql("SELECT * FROM local.db.t").collect()) == [(1, "m"), (2, "b"), (5, "n")]
