"""Snapshot management procedures, branch/tag DDL and branch writes, differentially against Iceberg Java.

pyice_sql builds a table with a shared history (two appends on main, an append on branch
`audit`, another append and a delete on main, a dynamic partition overwrite on branch `ow`), then its metadata folder is copied to a second
table (`java.t`; the copy's files stay where the original's are). The same steps then run on both:
pyice on `ours.t`, Iceberg Java 1.10.2 (one warm JVM for the module) on `java.t`. Steps name
snapshots of the shared history by id, so rollback / set-current / cherry-pick / fast-forward
targets are the same on both sides. After every step:
  - the `refs`, `snapshots` and `history` metadata tables of both tables agree, with snapshots
    created during the steps (their ids are random) named by their lineage: parent's name plus
    operation, and summaries compared on records and `source-snapshot-id`;
  - the rows of main and of every branch and tag agree, read by pyice and by Java from both
    tables (Java reads every table pyice wrote after every step);
  - a step Java rejects, pyice rejects too, without a new metadata file.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

import pyice_sql
from pyice_sql.core.errors import PyIceError
from tests.interop.engines import ice_rows, sort_rows
from tests.interop.ref_batch import ReferenceBatch

pytestmark = pytest.mark.interop

PROPS = ("'format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', "
         "'write.merge.mode'='merge-on-read'")
SETUP = [
    f"CREATE TABLE local.ours.t (id bigint, s string, n int) USING iceberg PARTITIONED BY (s) TBLPROPERTIES ({PROPS})",
    "INSERT INTO local.ours.t VALUES (1, 'a', 1), (2, 'b', 2)",                 # S1
    "INSERT INTO local.ours.t VALUES (3, 'a', 3)",                              # S2
    "ALTER TABLE local.ours.t CREATE BRANCH audit",
    "INSERT INTO local.ours.t.branch_audit VALUES (4, 'c', 4)",                 # S3, parent S2, on audit
    "INSERT INTO local.ours.t VALUES (5, 'b', 5)",                              # S4, parent S2
    "DELETE FROM local.ours.t WHERE id = 1",                                    # S5, parent S4
    "ALTER TABLE local.ours.t CREATE BRANCH ow AS OF VERSION {S4}",
    "INSERT OVERWRITE local.ours.t.branch_ow VALUES (8, 'b', 8)",               # S6: dynamic, parent S4, on ow
]


@dataclass(frozen=True)
class Step:
    sql: str
    error: bool = False


STEPS = [
    Step("ALTER TABLE {t} CREATE TAG before_rb AS OF VERSION {S4} RETAIN 10 DAYS"),
    Step("CALL {c}.system.cherrypick_snapshot('{ns}.t', {S6})"),                 # dynamic overwrite re-applied
    Step("CALL {c}.system.cherrypick_snapshot('{ns}.t', {S6})", error=True),    # already picked
    Step("CALL {c}.system.rollback_to_snapshot('{ns}.t', {S2})"),
    Step("CALL {c}.system.rollback_to_snapshot('{ns}.t', {S5})", error=True),  # not an ancestor any more
    Step("CALL {c}.system.cherrypick_snapshot('{ns}.t', {S4})"),                 # parent is main: fast-forward
    Step("CALL {c}.system.cherrypick_snapshot(snapshot_id => {S3}, table => '{ns}.t')"),  # re-applied append
    Step("CALL {c}.system.cherrypick_snapshot('{ns}.t', {S3})", error=True),    # already picked
    Step("CALL {c}.system.cherrypick_snapshot('{ns}.t', {S5})", error=True),    # a delete that cannot fast-forward
    Step("CALL {c}.system.set_current_snapshot(table => '{ns}.t', snapshot_id => {S5})"),
    Step("CALL {c}.system.rollback_to_timestamp('{ns}.t', TIMESTAMP '{TS4}')"),  # newest ancestor before S4: S2
    Step("ALTER TABLE {t} CREATE BRANCH dev AS OF VERSION {S4} RETAIN 7 DAYS "
         "WITH SNAPSHOT RETENTION 3 SNAPSHOTS 2 HOURS"),
    Step("INSERT INTO {t}.branch_dev VALUES (6, 'c', 6)"),
    Step("UPDATE {t}.branch_dev SET n = n + 100 WHERE s = 'a'"),
    Step("MERGE INTO {t}.branch_dev x USING (SELECT * FROM VALUES (2, 'b', 20), (7, 'd', 7) AS v(id, s, n)) src "
         "ON x.id = src.id WHEN MATCHED THEN UPDATE SET n = src.n WHEN NOT MATCHED THEN INSERT *"),
    Step("DELETE FROM {t}.branch_dev WHERE id = 3"),
    Step("INSERT INTO {t}.tag_before_rb VALUES (9, 'z', 9)", error=True),
    Step("INSERT INTO {t}.branch_nope VALUES (9, 'z', 9)", error=True),
    Step("CALL {c}.system.fast_forward('{ns}.t', 'audit', 'dev')", error=True),  # audit's head is off dev's line
    Step("CALL {c}.system.fast_forward('{ns}.t', 'main', 'dev')"),
    Step("ALTER TABLE {t} REPLACE BRANCH dev AS OF VERSION {S2}"),              # keeps dev's retention
    Step("ALTER TABLE {t} CREATE OR REPLACE TAG before_rb AS OF VERSION {S5}"),
    Step("ALTER TABLE {t} CREATE TAG IF NOT EXISTS before_rb AS OF VERSION {S1}"),
    Step("ALTER TABLE {t} CREATE BRANCH dev", error=True),
    Step("ALTER TABLE {t} DROP TAG dev", error=True),
    Step("ALTER TABLE {t} DROP BRANCH main", error=True),
    Step("ALTER TABLE {t} DROP BRANCH audit"),
    Step("ALTER TABLE {t} DROP BRANCH IF EXISTS audit"),
    Step("ALTER TABLE {t} CREATE OR REPLACE BRANCH fresh RETAIN 2 HOURS"),
    Step("CALL {c}.system.set_current_snapshot(table => '{ns}.t', ref => 'before_rb')"),
    Step("ALTER TABLE {t} DROP TAG before_rb"),
]

REFS = "SELECT name, type, snapshot_id, max_reference_age_in_ms, min_snapshots_to_keep, max_snapshot_age_in_ms FROM {t}.refs"
SNAPSHOTS = "SELECT snapshot_id, parent_id, operation, summary FROM {t}.snapshots"
HISTORY = "SELECT snapshot_id, parent_id, is_current_ancestor FROM {t}.history"


def rows_query(t: str, refs: list[tuple[str, str]]) -> str:
    parts = [f"SELECT '{name}' AS ref, * FROM {t}" + ("" if name == "main" else f".{kind.lower()}_{name}")
             for name, kind in sorted(refs)]
    return " UNION ALL ".join(parts)


class Lineage:
    """Names snapshots so both engines' histories compare: shared ids as they are, new ones by lineage."""

    def __init__(self, shared: set[int], snapshots: list[list]) -> None:
        self.shared = shared
        self.by_id = {row[0]: row for row in snapshots}

    def name(self, sid):
        if sid is None or sid in self.shared:
            return sid
        row = self.by_id.get(sid)
        if row is None:
            return f"unknown:{sid}"
        return f"{self.name(row[1])}>{row[2]}"

    def snapshots(self) -> list:
        out = []
        for sid, parent, op, summary in self.by_id.values():
            summary = dict(summary or {}) if isinstance(summary, dict) else _as_dict(summary)
            source = summary.get("source-snapshot-id")
            kept = {k: summary.get(k) for k in ("added-records", "total-records", "total-position-deletes")}
            kept["source"] = self.name(int(source)) if source else None
            out.append([self.name(sid), self.name(parent), op, json.dumps(kept, sort_keys=True)])
        return sort_rows(out)

    def refs(self, rows: list[list]) -> list:
        return sort_rows([[r[0], r[1], self.name(r[2]), *r[3:]] for r in rows])

    def history(self, rows: list[list]) -> list:
        return [[self.name(r[0]), self.name(r[1]), r[2]] for r in rows]


def _as_dict(summary) -> dict:
    if summary is None:
        return {}
    if isinstance(summary, dict):
        return summary
    return dict(summary)  # pyspark gives a dict for map columns; Java's JSON too


@dataclass
class World:
    ice: object
    warehouse: Path
    ids: dict[str, int]
    java: ReferenceBatch

    def text(self, sql: str, engine: str) -> str:
        c, ns = ("local", "ours") if engine == "ice" else ("ref", "java")
        return sql.format(t=f"{c}.{ns}.t", c=c, ns=ns, **{k: v for k, v in self.ids.items()})


@pytest.fixture(scope="module")
def world(spark, tmp_path_factory):
    work = tmp_path_factory.mktemp("snapshot-management")
    warehouse = work / "warehouse"
    java = ReferenceBatch(warehouse, ["SELECT 1"], work)  # the JVM boots while pyice builds the history
    ice = pyice_sql.connect(spark, warehouse=str(warehouse))
    ice.sql("CREATE NAMESPACE local.ours")
    ice.sql("CREATE NAMESPACE local.java")
    mode = spark.conf.get("spark.sql.sources.partitionOverwriteMode")
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        for sql in SETUP:
            ice.sql(sql.format(S4=_snapshot_ids(ice)[3] if "{S4}" in sql else None))
    finally:
        spark.conf.set("spark.sql.sources.partitionOverwriteMode", mode)
    snaps = _snapshot_ids(ice)
    assert len(snaps) == 6
    ts4 = next(r.committed_at for r in ice.sql("SELECT committed_at, snapshot_id FROM local.ours.t.snapshots").collect()
               if r.snapshot_id == snaps[3])
    ids = {f"S{i + 1}": sid for i, sid in enumerate(snaps)}
    ids["TS4"] = ts4.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    shutil.copytree(warehouse / "ours" / "t" / "metadata", warehouse / "java" / "t" / "metadata")
    yield World(ice, warehouse, ids, java)
    java.close()


def _snapshot_ids(ice) -> list[int]:
    return [r.snapshot_id for r in ice.sql("SELECT snapshot_id FROM local.ours.t.snapshots").collect()]


def _ice_state(w: World, t: str) -> dict:
    ice = w.ice
    refs = ice_rows(ice.sql(REFS.format(t=t)))
    return {"refs": refs, "history": [list(r) for r in ice.sql(HISTORY.format(t=t)).collect()],
            "rows": ice_rows(ice.sql(rows_query(t, [(r[0], r[1]) for r in refs])))}


def _java_state(results: list[dict], what: str) -> dict:
    out = {}
    for key, res in zip(("refs", "history", "rows"), results):
        assert "error" not in res, f"Iceberg Java failed reading {key} of {what}: {res['error']}"
        out[key] = res["rows"] if key == "history" else sort_rows(res["rows"])
    return out


def _normalised(state: dict, lineage: Lineage) -> dict:
    return {"refs": lineage.refs(state["refs"]), "snapshots": lineage.snapshots(),
            "history": lineage.history(state["history"]), "rows": state["rows"]}


def _metadata_files(w: World, ns: str) -> list[str]:
    return sorted(p.name for p in (w.warehouse / ns / "t" / "metadata").glob("*.metadata.json"))


def test_every_step_leaves_both_engines_with_the_same_refs_history_and_rows(world):
    w = world
    shared = set(v for k, v in w.ids.items() if k.startswith("S"))
    for i, step in enumerate(STEPS):
        where = f"step {i}: {step.sql}"
        before = {ns: _metadata_files(w, ns) for ns in ("ours", "java")}
        ice_error = None
        try:
            w.ice.sql(w.text(step.sql, "ice")).collect()
        except PyIceError as e:
            ice_error = e
        if step.error:  # both refuse, and neither table gets a new metadata file
            java_step = w.java.run_more([w.text(step.sql, "java")])[0]
            assert "error" in java_step, f"{where}: Iceberg Java accepted it"
            assert ice_error is not None, f"{where}: Java rejects it ({java_step['error'][:300]}), pyice accepted it"
            assert {ns: _metadata_files(w, ns) for ns in before} == before, f"{where}: a failed step committed"
            continue
        assert ice_error is None, f"{where}: pyice failed: {ice_error}"
        ours_by_ice = _ice_state(w, "local.ours.t")
        refs = [(r[0], r[1]) for r in ours_by_ice["refs"]]
        ours, theirs = "ref.ours.t", "ref.java.t"
        # REFRESH: Java's catalog caches tables, and pyice changed ours.t behind its back
        java = w.java.run_more([w.text(step.sql, "java"), f"REFRESH TABLE {ours}"]
                               + [q.format(t=t) for t in (theirs, ours) for q in (REFS, HISTORY)]
                               + [rows_query(theirs, refs), rows_query(ours, refs), SNAPSHOTS.format(t=theirs)])
        java_step, java_snapshots = java[0], java[8]
        assert "error" not in java_step, f"{where}: Iceberg Java failed: {java_step['error'][:500]}"
        assert "error" not in java_snapshots, f"{where}: Iceberg Java failed: {java_snapshots.get('error')}"
        java_table = _java_state([java[2], java[3], java[6]], "java.t")
        ours_by_java = _java_state([java[4], java[5], java[7]], "ours.t (pyice's table)")
        ours_lineage = Lineage(shared, [list(r) for r in w.ice.sql(SNAPSHOTS.format(t="local.ours.t")).collect()])
        java_lineage = Lineage(shared, [list(r) for r in java_snapshots["rows"]])
        expected = _normalised(java_table, java_lineage)
        assert _normalised(ours_by_ice, ours_lineage) == expected, f"{where}: pyice's table differs from Java's"
        assert ours_by_java["rows"] == ours_by_ice["rows"], f"{where}: Java reads other rows from pyice's table"
        assert ours_by_java["refs"] == ours_by_ice["refs"], f"{where}: Java reads other refs from pyice's table"
        if i % 4 == 3 or i == len(STEPS) - 1:  # every few steps: pyice reads the branches and tags Java wrote
            theirs_rows = ice_rows(w.ice.sql(rows_query("local.java.t", refs)))
            assert theirs_rows == java_table["rows"], f"{where}: pyice reads other rows from Java's table"


def test_the_ref_json_pyice_writes_is_what_java_writes(world):
    """After the steps, the refs of both tables' last metadata files are the same JSON, retention keys included."""
    def refs_json(folder: Path) -> dict:
        last = max(folder.glob("v*.metadata.json"), key=lambda p: int(p.name[1:].split(".")[0]))
        return json.loads(last.read_text())["refs"]

    ours, theirs = refs_json(world.warehouse / "ours" / "t" / "metadata"), refs_json(world.warehouse / "java" / "t" / "metadata")
    assert set(ours) == set(theirs) == {"main", "dev", "fresh", "ow"}
    for name in ours:
        assert ({k: v for k, v in ours[name].items() if k != "snapshot-id"}
                == {k: v for k, v in theirs[name].items() if k != "snapshot-id"}), name
    assert ours["dev"] == {"snapshot-id": world.ids["S2"], "type": "branch", "min-snapshots-to-keep": 3,
                           "max-snapshot-age-ms": 7_200_000, "max-ref-age-ms": 604_800_000}
