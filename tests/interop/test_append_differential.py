"""The session's `append(table, frame)` against Iceberg Java's `frame.writeTo(table).append()`.

Each frame is appended by both engines to a table with a NOT NULL column, in turn: after every
append the two tables must hold the same rows, and a frame Java rejects (a NULL in the NOT NULL
column, a string for a bigint, a bigint overflowing an int column, a column the table lacks, a
column twice) must be rejected by pyice_sql too, naming the problem, with no new snapshot and no
staging folder left in the table's data folder. Columns are matched by name, case-insensitively, in both. One
deliberate difference: a frame without a nullable column is appended with NULLs there (as `INSERT
INTO t (its columns)`), where Java refuses it; that step comes last and is checked against
hand-computed rows.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyice_sql.core.catalog.base import TableIdentifier
from pyice_sql.core.errors import AnalysisError, NotNullViolationError
from tests.interop.engines import assert_peers_read, ice_rows, java_api, prefetch, scratch_dir

pytestmark = pytest.mark.interop

TABLE = "CREATE TABLE {c}.db.ap (id bigint NOT NULL, v string, n int) USING iceberg"
# (frame schema, rows, the error pyice_sql must raise, or None where both engines append)
APPENDS: list[tuple[str, list, type[Exception] | None]] = [
    ("id bigint, v string, n int", [[1, "a", 10], [2, None, None]], None),
    ("n int, id bigint, v string", [[30, 3, "c"]], None),  # by name
    ("ID bigint, V string, N int", [[4, "d", 40]], None),  # names of another case
    ("id int, v string, n smallint", [[5, "e", 50]], None),  # widened
    ("id bigint, v string, n int", [[6, "f", 60], [None, "null id", 0]], NotNullViolationError),
    ("id string, v string, n int", [["7", "g", 70]], AnalysisError),  # no string -> bigint
    ("id bigint, v string, n bigint", [[8, "h", 2 ** 40]], AnalysisError),  # overflows int, at run time
    ("id bigint, v string, n int, extra int", [[9, "i", 90, 1]], AnalysisError),
    ("id bigint, ID bigint, v string, n int", [[11, 12, "k", 110]], AnalysisError),  # a column twice
]
MISSING = ("id bigint, v string", [[10, "j"]])  # pyice_sql: n is NULL; Java: CANNOT_FIND_DATA


def _append(call_rows: list, schema: str) -> str:
    return json.dumps({"append": "db.ap", "schema": schema, "rows": call_rows})


def java_statements() -> list[str]:
    out = ["CREATE DATABASE ref.db", TABLE.format(c="ref")]
    for schema, rows, _ in [*APPENDS, (*MISSING, None)]:
        out += [_append(rows, schema), "SELECT * FROM ref.db.ap"]
    return out


def prefetch_java():
    def run():
        warehouse = scratch_dir("append")
        return java_api(warehouse, java_statements())
    return prefetch("append_differential", run)


def _snapshots(ice) -> list[int]:
    return [s.snapshot_id for s in ice.catalogs["local"].load_table(TableIdentifier(("db",), "ap")).metadata.snapshots]


def test_append_matches_iceberg_java_write_to(spark, tmp_path):
    import pyice_sql

    ice = pyice_sql.connect(spark, warehouse=str(tmp_path / "pyice"))
    ice.sql("CREATE DATABASE local.db")
    ice.sql(TABLE.format(c="local"))
    data = tmp_path / "pyice" / "db" / "ap" / "data"
    java = iter(prefetch_java().result()[2:])
    rows: list = []
    for schema, values, error in APPENDS:
        java_outcome, java_rows = next(java), next(java)
        before = _snapshots(ice)
        frame = spark.createDataFrame(values, schema)
        if error is None:
            assert not isinstance(java_outcome, str), f"Iceberg Java refused {schema} {values}: {java_outcome}"
            ice.append("local.db.ap", frame)
        else:
            assert isinstance(java_outcome, str), f"Iceberg Java appended {schema} {values}"
            with pytest.raises(error):
                ice.append("local.db.ap", frame)
            assert _snapshots(ice) == before, f"the refused {schema} {values} made a snapshot"
            assert not [p for p in data.iterdir() if p.name.startswith("pyice-staging-")], \
                f"the refused {schema} {values} left its staging folder"
        rows = ice_rows(ice.sql("SELECT * FROM local.db.ap"))
        assert rows == java_rows, f"after appending {schema} {values}\n  pyice: {rows}\n  Iceberg Java: {java_rows}"
    java_outcome, _ = next(java), next(java)
    assert isinstance(java_outcome, str) and "CANNOT_FIND_DATA" in java_outcome, java_outcome
    ice.append("local.db.ap", spark.createDataFrame(MISSING[1], MISSING[0]))
    rows = ice_rows(ice.sql("SELECT * FROM local.db.ap"))
    assert [10, "j", None] in rows and len(rows) == 6
    assert_peers_read(str(Path(data).parent), rows)
