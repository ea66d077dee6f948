"""The new rows of a merge-on-read UPDATE / MERGE land in the table's layout whichever way they
are written: by one task when the delete write already counted them as at most one file's worth,
else distributed by the table's write mode. Either way: one file per partition value (or as many
as the target file size needs), each sorted by the table's sort order; rows hand-computed."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.spark


def _table(ice, version: int, target_file_size: int | None = None) -> None:
    size = f", 'write.target-file-size-bytes' = '{target_file_size}'" if target_file_size else ""
    ice.sql("CREATE DATABASE local.db")
    ice.sql("CREATE TABLE local.db.t (id bigint, p int, v string) USING iceberg PARTITIONED BY (p) "
            f"TBLPROPERTIES ('format-version' = '{version}', 'write.update.mode' = 'merge-on-read', "
            f"'write.merge.mode' = 'merge-on-read'{size})")
    ice.sql("ALTER TABLE local.db.t WRITE ORDERED BY id DESC")
    ice.sql("INSERT INTO local.db.t SELECT id, CAST(id % 3 AS INT), 'old' FROM range(0, 3000)")


def _new_files(ice, snapshot_rows: str) -> list[tuple[int, list[int]]]:
    """(partition p, ids in file order) of each data file holding `v = snapshot_rows` rows."""
    paths = [r.file_path for r in ice.sql("SELECT file_path FROM local.db.t.files WHERE content = 0").collect()]
    out = []
    for path in paths:
        rows = ice.spark.read.parquet(path).collect()  # one small file: one task, file order
        if rows and rows[0].v == snapshot_rows:
            out.append((rows[0].p, [r.id for r in rows]))
    return sorted(out)


@pytest.mark.parametrize("version", [2, 3])
def test_few_updated_rows_one_sorted_file_per_partition(ice, version):
    _table(ice, version)
    result = ice.sql("UPDATE local.db.t SET v = 'upd' WHERE id % 100 = 7").collect()[0]
    assert result.num_updated_rows == 30
    files = _new_files(ice, "upd")
    expected_ids = sorted((i for i in range(3000) if i % 100 == 7), reverse=True)
    assert [p for p, _ in files] == [0, 1, 2]
    for p, ids in files:
        assert ids == [i for i in expected_ids if i % 3 == p]
    merged = ice.sql("MERGE INTO local.db.t t USING (SELECT id, 'mrg' AS v FROM range(2990, 3010)) s "
                     "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
                     "WHEN NOT MATCHED THEN INSERT (id, p, v) VALUES (s.id, CAST(s.id % 3 AS INT), s.v)").collect()[0]
    assert (merged.num_updated_rows, merged.num_inserted_rows) == (10, 10)
    files = _new_files(ice, "mrg")
    assert [p for p, _ in files] == [0, 1, 2]
    for p, ids in files:
        assert ids == sorted((i for i in range(2990, 3010) if i % 3 == p), reverse=True)
    counts = {r.v: r.n for r in ice.sql("SELECT v, count(*) AS n FROM local.db.t GROUP BY v").collect()}
    assert counts == {"old": 2960, "upd": 30, "mrg": 20}  # the MERGE's 10 matches hold no updated id


def test_more_rows_than_one_file_are_split_by_the_target_size(ice):
    _table(ice, 2, target_file_size=2048)  # a few hundred rows per file at most
    result = ice.sql("UPDATE local.db.t SET v = 'upd' WHERE id < 2400").collect()[0]
    assert result.num_updated_rows == 2400
    files = _new_files(ice, "upd")
    assert len(files) > 3  # more than one file per partition
    for p, ids in files:
        assert ids == sorted(ids, reverse=True) and all(i % 3 == p for i in ids)
    assert sorted(i for _, ids in files for i in ids) == list(range(2400))
