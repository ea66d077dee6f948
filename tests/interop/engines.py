"""Run the other Iceberg engines as subprocesses and bring their rows into one plain JSON form.

Engines:
  - the reference engine: real Iceberg Java (1.10.2 on Spark 3.5) with a Hadoop catalog named
    `ref` rooted at the same warehouse folder our `local` catalog uses, so `ref.db.t` and
    `local.db.t` are the same table files (`java_sql`, `java_rows`);
  - peer readers: PyIceberg and DuckDB's iceberg extension reading a table folder (`peer_rows`).

Values are normalised (`plain`) so rows from pyice (`DataFrame.collect()`), Java and the peers
compare equal: timestamps become ISO text without offset, in UTC, always with microseconds;
decimals become their text; bytes become lowercase hex; structs (Row, dict or list) become
lists of field values; NaN becomes "NaN"; rows are sorted. Maps come as dicts from some engines
and are turned into their values too (the peers' JSON cannot tell a map from a struct), so
check map keys with a WHERE on them.
"""
from __future__ import annotations

import atexit
import concurrent.futures
import datetime as dt
import decimal
import functools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("PYICE_SHARED", REPO.parent / "shared"))
REFERENCE = SHARED / "iceberg-reference" / "iceberg_ref.py"
# The reference engine is Iceberg's runtime for Spark 3.5: when the tests run on another pyspark
# (Spark 4), tests/run.sh points this at the Spark 3.5 venv's interpreter.
REF_PYTHON = os.environ.get("PYICE_REF_PYTHON", sys.executable)
PEERS = SHARED / "peer-readers" / "read_with_peers.py"
TIMEOUT_S = 600

_ISO_TS = re.compile(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})?$")


class EngineError(AssertionError):
    """An engine reported an error for a statement (its own first line of message is kept)."""


# ------------------------------------------------------------------------------ normalising

def _iso_timestamp(value: dt.datetime) -> str:
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _canonical_text(text: str) -> str:
    """Timestamp text from another engine ('...T03:04:05+00:00', '... 03:04:05.5') in our ISO form."""
    m = _ISO_TS.match(text)
    if not m:
        return text
    return _iso_timestamp(dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace(" ", "T")))


def plain(v: Any) -> Any:
    """One plain JSON-able form for a value from any engine."""
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, dt.datetime):
        return _iso_timestamp(v)
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, dt.time):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else v
    if isinstance(v, str):
        return _canonical_text(v)
    if isinstance(v, dict):
        return [plain(x) for x in v.values()]
    if isinstance(v, (list, tuple)):  # pyspark Row is a tuple
        return [plain(x) for x in v]
    return v


def sort_rows(rows: Iterable[Iterable[Any]]) -> list[list[Any]]:
    return sorted(([plain(x) for x in r] for r in rows), key=lambda r: json.dumps(r, sort_keys=True))


def ice_rows(df) -> list[list[Any]]:
    """Rows of a pyice (Spark) DataFrame in the plain form, sorted."""
    return sort_rows(list(r) for r in df.collect())


def ice_answers(ice, queries: list[str]) -> list[list[list[Any]]]:
    """Rows of several pyice SELECTs with the same columns, in one Spark job (each query is still
    planned, and pruned, on its own): `SELECT <i>, ...` tags each query's rows."""
    if not queries:
        return []
    frames = [ice.sql(q) for q in queries]
    tagged = [df.selectExpr(f"{i} AS __query", "*") for i, df in enumerate(frames)]
    union = functools.reduce(lambda a, b: a.unionByName(b), tagged)
    out: list[list[list[Any]]] = [[] for _ in queries]
    for r in union.collect():
        out[r[0]].append(list(r)[1:])
    return [sort_rows(rows) for rows in out]


# ------------------------------------------------------------------------------ engines

def _require(path: Path) -> None:
    if not path.exists():
        pytest.fail(f"{path} not found: set PYICE_SHARED to the shared folder (tests/run.sh does)")


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "TZ": "UTC", **(env or {})}
    return subprocess.run([REF_PYTHON, *args], capture_output=True, text=True, env=full_env,
                          timeout=TIMEOUT_S)


def java_sql_each(warehouse: str | os.PathLike, statements: list[str], master: str | None = None
                  ) -> list[list[list[Any]] | EngineError]:
    """Run statements on Iceberg Java; per statement its sorted plain rows, or the EngineError it raised.

    One JVM runs them all; when Java rejects a statement (the reference engine then stops), a new
    JVM goes on with the statements after it, so one failure costs one restart, not the batch.
    `master` sets the reference Spark master (e.g. 'local[1]' for one file per insert).
    """
    _require(REFERENCE)
    env = {"ICEBERG_REF_MASTER": master} if master else None
    out: list[list[list[Any]] | EngineError] = []
    while len(out) < len(statements):
        todo = statements[len(out):]
        done = _run([str(REFERENCE), "--warehouse", str(warehouse), "sql", *todo], env)
        progressed = False
        for line in done.stdout.splitlines():
            if not line.startswith("{"):
                continue
            obj = json.loads(line)
            progressed = True
            if "error" in obj:
                out.append(EngineError(f"Iceberg Java failed on: {obj['sql']}\n  -> {obj['error']}"))
                break
            out.append(sort_rows(obj["rows"]))
        if not progressed:
            raise EngineError(f"the reference engine did not run (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return out


def java_sql(warehouse: str | os.PathLike, *statements: str, master: str | None = None) -> list[list[list[Any]]]:
    """Run statements on Iceberg Java in one JVM; the sorted plain rows of each statement.

    Raises the EngineError of the first statement Java rejects (later ones do not run).
    """
    _require(REFERENCE)
    env = {"ICEBERG_REF_MASTER": master} if master else None
    return statement_results([str(REFERENCE), "--warehouse", str(warehouse), "sql", *statements], len(statements),
                             env)


def java_api(warehouse: str | os.PathLike, statements: list[str]) -> list[list[list[Any]] | str]:
    """Run SQL and Java API calls (JSON objects, see java_api.py) on Iceberg Java in one JVM; per
    statement its sorted plain rows, or its error text (a rejected statement does not stop the rest)."""
    _require(REFERENCE)
    done = _run([str(Path(__file__).with_name("java_api.py")), "--reference", str(REFERENCE),
                 "--warehouse", str(warehouse), *statements])
    out: list[list[list[Any]] | str] = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            obj = json.loads(line)
            out.append(obj["error"] if "error" in obj else sort_rows(obj["rows"]))
    if len(out) != len(statements):
        raise EngineError(f"Iceberg Java ran {len(out)} of {len(statements)} statements:\n{done.stderr[-3000:]}")
    return out


def statement_results(args: list[str], count: int, env: dict[str, str] | None = None) -> list[list[list[Any]]]:
    """Run an engine script that prints one {"sql", "rows" | "error"} line per statement (the
    reference engine's protocol); the sorted plain rows of each of the `count` statements."""
    done = _run(args, env)
    results: list[list[list[Any]]] = []
    for line in done.stdout.splitlines():
        if not line.startswith("{"):
            continue
        obj = json.loads(line)
        if "error" in obj:
            raise EngineError(f"Iceberg Java failed on statement {len(results) + 1}: {obj['sql']}\n"
                              f"  -> {obj['error']}")
        results.append(sort_rows(obj["rows"]))
    if len(results) != count:
        raise EngineError(f"Iceberg Java ran {len(results)} of {count} statements "
                          f"(exit {done.returncode}):\n{done.stderr[-4000:]}")
    return results


def in_background(fn, *args, **kwargs) -> concurrent.futures.Future:
    """Run an engine call in a thread (the engines are subprocesses), to overlap it with our own work."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    future = pool.submit(fn, *args, **kwargs)
    pool.shutdown(wait=False)
    return future


_prefetch_pool: concurrent.futures.ThreadPoolExecutor | None = None
_prefetched: dict[str, concurrent.futures.Future] = {}


def prefetch(key: str, fn, *args, **kwargs) -> concurrent.futures.Future:
    """Start `fn` once per test run under `key` (later calls return the same future).

    Engine work that does not depend on pyice (a reference engine building its own tables) is
    started for every selected module when collection ends (tests/interop/conftest.py), one job at
    a time in collection order, so it overlaps the pyice work of earlier modules.
    """
    global _prefetch_pool
    if key not in _prefetched:
        if _prefetch_pool is None:
            _prefetch_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="prefetch")
        _prefetched[key] = _prefetch_pool.submit(fn, *args, **kwargs)
    return _prefetched[key]


def scratch_dir(prefix: str) -> str:
    """A temp folder removed when the test process exits (for prefetched engine work)."""
    path = tempfile.mkdtemp(prefix=f"pyice-interop-{prefix}-")
    atexit.register(shutil.rmtree, path, True)
    return path


def rows_or_raise(result: list[list[Any]] | EngineError) -> list[list[Any]]:
    if isinstance(result, EngineError):
        raise result
    return result


def java_rows(warehouse: str | os.PathLike, table: str) -> list[list[Any]]:
    """All rows of `db.table` as Iceberg Java reads them, sorted."""
    return java_sql(warehouse, f"SELECT * FROM ref.{table}")[0]


def peer_rows(table_dir: str | os.PathLike) -> dict[str, list[list[Any]]]:
    """{'pyiceberg': rows, 'duckdb': rows} read from a table folder; EngineError when a reader fails."""
    _require(PEERS)
    done = _run([str(PEERS), str(table_dir)])
    out: dict[str, list[list[Any]]] = {}
    errors = []
    for line in done.stdout.splitlines():
        if not line.startswith("{"):
            continue
        obj = json.loads(line)
        if "error" in obj:
            errors.append(f"{obj['reader']}: {obj['error']}")
        else:
            out[obj["reader"]] = sort_rows(obj["rows"])
    if errors or set(out) != {"pyiceberg", "duckdb"}:
        raise EngineError(f"peer readers failed on {table_dir}: {errors or done.stderr[-4000:]}")
    return out


def assert_peers_read(table_dir: str | os.PathLike, expected: list[list[Any]],
                      readers: tuple[str, ...] = ("pyiceberg", "duckdb")) -> None:
    """PyIceberg and DuckDB (or just `readers`) read exactly `expected` (already plain and sorted)."""
    for reader, rows in peer_rows(table_dir).items():
        if reader not in readers:
            continue
        assert rows == expected, f"{reader} read different rows from {table_dir}:\n{_diff(expected, rows)}"


def _diff(expected: list, actual: list) -> str:
    exp = [json.dumps(r) for r in expected]
    act = [json.dumps(r) for r in actual]
    missing = [r for r in exp if r not in act]
    extra = [r for r in act if r not in exp]
    return f"  missing ({len(missing)}): {missing[:10]}\n  unexpected ({len(extra)}): {extra[:10]}"


def assert_same_rows(expected: list, actual: list, what: str) -> None:
    assert actual == expected, f"{what}:\n{_diff(expected, actual)}"
