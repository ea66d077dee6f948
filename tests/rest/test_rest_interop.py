"""pyice_sql on an Iceberg REST catalog, checked by Iceberg Java and PyIceberg as REST clients.

Against shared/iceberg-rest-server (Iceberg Java's CatalogHandlers over a HadoopCatalog):
pyice creates a namespace and partitioned tables (copy-on-write and merge-on-read), INSERTs,
MERGEs, UPDATEs, DELETEs, evolves schema and partitioning, tags and branches, and compacts with
a CALL. Every main snapshot it commits is then read by Iceberg Java (Spark 3.5, SparkCatalog
type=rest) and PyIceberg (RestCatalog) at that snapshot and must give exactly pyice's rows; the
final rows are also checked against a hand-computed table. Then Java writes (INSERT, MERGE,
DELETE, ALTER, UPDATE) and pyice must read exactly Java's rows, and write on top of them.
"""
from __future__ import annotations

import pytest

from pyice_sql.core.catalog.base import TableIdentifier
from tests.rest.support import java_rest_sql, pyiceberg_rows, rest_server, sort_rows

pytestmark = [pytest.mark.rest, pytest.mark.interop, pytest.mark.spark]

MODES = {
    "cow": "'write.merge.mode'='copy-on-write', 'write.update.mode'='copy-on-write', "
           "'write.delete.mode'='copy-on-write'",
    "mor": "'write.merge.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
           "'write.delete.mode'='merge-on-read'",
}
BASE_COLUMNS = ("id", "s", "d")
ALL_COLUMNS = ("id", "s", "d", "n")


def steps(t: str) -> list[tuple[str, tuple[str, ...]]]:
    """(statement, the columns to compare after it) — each statement commits one main snapshot."""
    return [
        (f"INSERT INTO {t} VALUES (1, 'a', DATE'2024-01-01'), (2, 'b', DATE'2024-01-02'), "
         "(3, 'c', DATE'2024-01-03'), (4, 'd', DATE'2024-01-03')", BASE_COLUMNS),
        (f"MERGE INTO {t} t USING (SELECT * FROM VALUES (2, 'B'), (5, 'e') AS v(id, s)) v ON t.id = v.id "
         "WHEN MATCHED THEN UPDATE SET s = v.s "
         "WHEN NOT MATCHED THEN INSERT (id, s, d) VALUES (v.id, v.s, DATE'2024-02-01')", BASE_COLUMNS),
        (f"UPDATE {t} SET s = concat(s, '!') WHERE id >= 4", BASE_COLUMNS),
        (f"DELETE FROM {t} WHERE id = 3", BASE_COLUMNS),
        (f"ALTER TABLE {t} ADD COLUMN n int", None),
        (f"ALTER TABLE {t} ADD PARTITION FIELD truncate(1, s)", None),
        (f"INSERT INTO {t} VALUES (6, 'f', DATE'2024-03-01', 60)", ALL_COLUMNS),
        (f"UPDATE {t} SET n = 1 WHERE id = 1", ALL_COLUMNS),
        (f"ALTER TABLE {t} CREATE TAG t1", None),
        (f"ALTER TABLE {t} CREATE BRANCH b1", None),
        (f"INSERT INTO {t}.branch_b1 VALUES (7, 'g', DATE'2024-03-02', 70)", None),
        (f"CALL r.system.rewrite_data_files(table => '{t.removeprefix('r.')}', options => map('min-input-files', '2'))",
         ALL_COLUMNS),
    ]


# hand-computed: the table after all steps (main), and branch b1
FINAL = [[1, "a", "2024-01-01", 1], [2, "B", "2024-01-02", None], [4, "d!", "2024-01-03", None],
         [5, "e!", "2024-02-01", None], [6, "f", "2024-03-01", 60]]
BRANCH = FINAL + [[7, "g", "2024-03-02", 70]]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("rest")
    with rest_server(root / "warehouse", log=root / "server.log") as uri:
        yield uri


@pytest.fixture(scope="module")
def written(spark, server):
    """pyice runs every step on both tables; per table, per step: (main snapshot id, columns, rows)."""
    import pyice_sql

    ice = pyice_sql.connect(spark, catalog="r", catalog_type="rest", uri=server, credential="pyice:secret")
    ice.sql("CREATE NAMESPACE r.db")
    seen: dict[str, list[tuple[int, tuple[str, ...], list]]] = {}
    for mode, props in MODES.items():
        t = f"r.db.{mode}"
        ice.sql(f"CREATE TABLE {t} (id bigint, s string, d date) USING iceberg "
                f"PARTITIONED BY (bucket(4, id), days(d)) TBLPROPERTIES ({props})")
        seen[mode] = []
        for sql, columns in steps(t):
            ice.sql(sql).collect()
            if columns is not None:
                sid = ice.load("r", TableIdentifier(("db",), mode)).metadata.current_snapshot_id
                rows = sort_rows(ice.sql(f"SELECT {', '.join(columns)} FROM {t}").collect())
                seen[mode].append((sid, columns, rows))
    return ice, seen


def test_pyice_rows_are_the_hand_computed_ones(written):
    ice, seen = written
    for mode in MODES:
        assert seen[mode][-1][2] == FINAL, mode
        assert sort_rows(ice.sql(f"SELECT * FROM r.db.{mode} VERSION AS OF 'b1'").collect()) == BRANCH
        assert len({sid for sid, _, _ in seen[mode]}) == len(seen[mode]), "a step committed no snapshot"


def test_java_and_pyiceberg_read_every_snapshot_pyice_committed(written, server):
    _, seen = written
    queries, expected = [], []
    for mode, snapshots in seen.items():
        for sid, columns, rows in snapshots:
            queries.append(f"SELECT {', '.join(columns)} FROM rest.db.{mode} VERSION AS OF {sid}")
            expected.append(rows)
            assert pyiceberg_rows(server, f"db.{mode}", columns, sid) == rows, f"PyIceberg, {mode} at {sid}"
        queries += [f"SELECT * FROM rest.db.{mode} VERSION AS OF 'b1'", f"SELECT * FROM rest.db.{mode}.refs"]
        expected += [BRANCH, None]
    got = java_rest_sql(server, *queries)
    for query, want, rows in zip(queries, expected, got):
        if want is None:  # the refs table: main, t1 and b1, as pyice created them
            assert sorted(r[0] for r in rows) == ["b1", "main", "t1"], query
        else:
            assert rows == want, f"Iceberg Java read different rows: {query}"


def test_pyice_reads_and_writes_on_top_of_what_java_writes(written, server):
    ice, _ = written
    java = []
    for mode in MODES:
        t = f"rest.db.{mode}"
        java += [f"INSERT INTO {t} VALUES (8, 'h', DATE'2024-04-01', 80)",
                 f"MERGE INTO {t} t USING (SELECT 2 AS id, 'J' AS s) v ON t.id = v.id "
                 "WHEN MATCHED THEN UPDATE SET s = v.s",
                 f"DELETE FROM {t} WHERE id = 6",
                 f"ALTER TABLE {t} ADD COLUMN z string",
                 f"UPDATE {t} SET z = 'zz' WHERE id = 1",
                 f"SELECT * FROM {t}"]
    results = java_rest_sql(server, *java)
    for i, mode in enumerate(MODES):
        java_rows = results[6 * i + 5]
        assert java_rows == sort_rows([
            [1, "a", "2024-01-01", 1, "zz"], [2, "J", "2024-01-02", None, None], [4, "d!", "2024-01-03", None, None],
            [5, "e!", "2024-02-01", None, None], [8, "h", "2024-04-01", 80, None]]), mode
        assert sort_rows(ice.sql(f"SELECT * FROM r.db.{mode}").collect()) == java_rows, mode
        ice.sql(f"MERGE INTO r.db.{mode} t USING (SELECT 4 AS id) v ON t.id = v.id "
                "WHEN MATCHED THEN UPDATE SET z = 'pyice'").collect()
        expected = [r if r[0] != 4 else r[:4] + ["pyice"] for r in java_rows]
        assert pyiceberg_rows(server, f"db.{mode}", ("id", "s", "d", "n", "z")) == expected, mode
