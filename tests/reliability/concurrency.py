"""The racing-writers workload: what each writer commits, its log, and the serial replay.

Table `local.db.race (id bigint, v bigint, w int)`, bucketed on id. Keys 0..49 are shared and
exist from the start (50..59 are shared and appear on first MERGE); writer w owns keys from
(w+1)*1_000_000. Each writer cycles through
    append       INSERT new own keys
    merge_own    MERGE on own keys (disjoint across writers): v += 100, or insert v=7
    merge_shared MERGE on 3 random shared keys (overlapping): v += w+1, or insert v=w+1
    update_shared UPDATE 5 consecutive shared keys: v = v*2 + 1 (order-sensitive on purpose)
    delete_own   DELETE the own keys of its last landed append
    compact      CALL rewrite_data_files (when the procedure exists), racing with the MERGEs
and logs one JSON line per statement: its intent (parameters), outcome and commit retries.
Each intent can be replayed on a dict {id: (v, w)}; replaying the landed statements in the
table's snapshot order must give exactly the table's rows.
"""
from __future__ import annotations

import json
import random
import time

OWN = 1_000_000
SHARED_EXISTING = 50
SHARED_ALL = 60
CYCLE = ("append", "merge_own", "merge_shared", "update_shared", "delete_own")
TABLE = "local.db.race"


def setup_sql(mode_props: str) -> list[str]:
    rows = ", ".join(f"({i}, 0, -1)" for i in range(SHARED_EXISTING))
    return ["CREATE DATABASE IF NOT EXISTS local.db",
            f"CREATE TABLE {TABLE} (id bigint, v bigint, w int) USING iceberg PARTITIONED BY (bucket(4, id)) "
            f"TBLPROPERTIES ({mode_props})",
            f"INSERT INTO {TABLE} VALUES {rows}"]


def statement(op: str, params: dict) -> str:
    w = params.get("w")
    if op == "append":
        return f"INSERT INTO {TABLE} VALUES " + ", ".join(f"({k}, {params['v']}, {w})" for k in params["ids"])
    if op in ("merge_own", "merge_shared"):
        add, new = (100, 7) if op == "merge_own" else (w + 1, w + 1)
        values = ", ".join(f"({k})" for k in params["ids"])
        return (f"MERGE INTO {TABLE} t USING (SELECT * FROM VALUES {values} AS s(id)) s ON t.id = s.id "
                f"WHEN MATCHED THEN UPDATE SET v = t.v + {add} "
                f"WHEN NOT MATCHED THEN INSERT (id, v, w) VALUES (s.id, {new}, {w})")
    if op == "update_shared":
        return f"UPDATE {TABLE} SET v = v * 2 + 1 WHERE id BETWEEN {params['lo']} AND {params['lo'] + 4}"
    if op == "delete_own":
        return f"DELETE FROM {TABLE} WHERE id IN ({', '.join(str(k) for k in params['ids'])})"
    if op == "compact":
        return "CALL local.system.rewrite_data_files(table => 'db.race', options => map('min-input-files', '2'))"
    raise ValueError(op)


def replay(model: dict[int, tuple[int, int]], op: str, params: dict) -> None:
    """Apply one landed statement to the model, as the SQL above defines it."""
    w = params.get("w")
    if op == "append":
        for k in params["ids"]:
            assert k not in model, f"append of existing key {k}"
            model[k] = (params["v"], w)
    elif op in ("merge_own", "merge_shared"):
        add, new = (100, 7) if op == "merge_own" else (w + 1, w + 1)
        for k in params["ids"]:
            model[k] = (model[k][0] + add, model[k][1]) if k in model else (new, w)
    elif op == "update_shared":
        for k in range(params["lo"], params["lo"] + 5):
            if k in model:
                model[k] = (model[k][0] * 2 + 1, model[k][1])
    elif op == "delete_own":
        for k in params["ids"]:
            model.pop(k, None)
    elif op != "compact":
        raise ValueError(op)


def run_worker(ice, spec_json: str, log_path: str) -> int:
    """One writer: `spec` = {"w": index, "commits": n, "compact_every": k or 0, "seed": s}."""
    from pyice_sql.core.errors import CommitConflictError, PyIceError, ValidationError

    spec = json.loads(spec_json)
    w, rng = spec["w"], random.Random(spec["seed"])
    catalog = ice.catalogs["local"]
    retries, landed = [0], [None]
    commit = catalog.commit

    def counting_commit(base, metadata):  # observe lost compare-and-swaps and the snapshot that won
        try:
            table = commit(base, metadata)
        except CommitConflictError:
            retries[0] += 1
            raise
        landed[0] = table.metadata.current_snapshot().snapshot_id
        return table

    catalog.commit = counting_commit
    base = (w + 1) * OWN
    last_append: list[int] = []
    with open(log_path, "a") as log:
        for i in range(spec["commits"]):
            every = spec.get("compact_every") or 0
            op = "compact" if every and i % every == every - 1 else CYCLE[i % len(CYCLE)]
            if op == "delete_own" and not last_append:
                op = "append"
            params: dict = {"w": w}
            if op == "append":
                params.update(ids=[base + i * 10 + j for j in range(3)], v=i)
            elif op == "merge_own":
                params["ids"] = sorted(set(last_append[:2]) | {base + i * 10 + 5})
            elif op == "merge_shared":
                params["ids"] = sorted(rng.sample(range(SHARED_ALL), 3))
            elif op == "update_shared":
                params["lo"] = rng.randrange(SHARED_EXISTING - 4)
            elif op == "delete_own":
                params["ids"] = last_append
            sql = statement(op, params)
            retries[0], landed[0] = 0, None
            started = time.monotonic()
            record = {"w": w, "i": i, "op": op, "params": params}
            try:
                ice.sql(sql).collect()
                record.update(status="landed", snapshot_id=landed[0])
                if op == "append":
                    last_append = params["ids"]
                elif op == "delete_own":
                    last_append = []
            except (CommitConflictError, ValidationError) as e:
                record.update(status="conflict", error=f"{type(e).__name__}: {e}"[:500])
            except PyIceError as e:
                record.update(status="error", error=f"{type(e).__name__}: {e}"[:2000])
            except Exception as e:  # anything else is an anomaly the harness reports
                record.update(status="crash", error=f"{type(e).__name__}: {e}"[:2000])
            record.update(retries=retries[0], seconds=round(time.monotonic() - started, 3))
            log.write(json.dumps(record) + "\n")
            log.flush()
    return 0
