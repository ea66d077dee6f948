"""Run a long list of SQL statements on the reference engine (Iceberg Java) in ONE JVM, in the background.

Unlike `iceberg_ref.py sql`, a failing statement does not stop the batch: differential tests
expect some statements to fail (cardinality, NOT NULL, unknown column) and go on with the same
tables afterwards. A JVM costs ~15-20 s to start, so every scenario of a test module goes into
one batch that runs while pyice_sql does its own side; each test waits only for the results of
its own statements (they stream in, one JSON line per statement).

As a script (what `ReferenceBatch` runs):
    ref_batch.py WAREHOUSE STATEMENTS.json
prints {"i": n, "rows": [...]} or {"i": n, "error": "<engine's message>"} per statement, then
reads further statements from stdin (one JSON list a line; numbering goes on) until EOF, so a
test that needs Java again after pyice wrote something reuses the warm JVM (`run_more`).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _load_reference_module():
    import importlib.util

    shared = Path(os.environ.get("PYICE_SHARED", HERE.parents[2] / "shared"))
    path = shared / "iceberg-reference" / "iceberg_ref.py"
    spec = importlib.util.spec_from_file_location("iceberg_ref", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _error_text(e: Exception) -> str:
    """The engine's own message (Py4J wraps Java exceptions; keep the Java message)."""
    java = getattr(e, "java_exception", None)
    text = str(java.toString()) if java is not None else f"{type(e).__name__}: {e}"
    return " ".join(text.split())[:3000]


def main(argv: list[str]) -> int:
    warehouse, statements_file = argv
    ref = _load_reference_module()
    spark = ref.session(warehouse)
    spark.sparkContext.setLogLevel("ERROR")
    with open(statements_file) as f:
        statements = json.load(f)
    i = 0
    while True:
        for sql in statements:
            start = time.monotonic()
            try:
                rows = [ref.plain(list(x)) for x in spark.sql(sql).collect()]
                out = {"i": i, "rows": rows}
            except Exception as e:  # noqa: BLE001 - every engine error is a result here
                out = {"i": i, "error": _error_text(e)}
            print(json.dumps({**out, "seconds": round(time.monotonic() - start, 3)}), flush=True)
            i += 1
        line = sys.stdin.readline()  # more statements (a JSON list a line) in the same JVM, until EOF
        if not line.strip():
            return 0
        statements = json.loads(line)


def _cache_file(statements: list[str]) -> Path | None:
    """With PYICE_REF_CACHE=DIR (local iteration only, never in CI), results of an identical
    statement list are reused instead of starting the JVM."""
    folder = os.environ.get("PYICE_REF_CACHE")
    if not folder:
        return None
    import hashlib

    digest = hashlib.sha256(json.dumps(statements).encode()).hexdigest()[:24]
    return Path(folder) / f"{digest}.jsonl"


class ReferenceBatch:
    """One background reference-engine process over `statements`; results stream in by index."""

    def __init__(self, warehouse: str | os.PathLike, statements: list[str], work_dir: str | os.PathLike,
                 timeout_s: float = 900) -> None:
        self.warehouse = str(warehouse)
        self.statements = list(statements)
        self.timeout_s = timeout_s
        work = Path(work_dir)
        work.mkdir(parents=True, exist_ok=True)
        stmts = work / "statements.json"
        stmts.write_text(json.dumps(self.statements))
        self._stderr_path = work / "stderr.txt"
        self._stderr = open(self._stderr_path, "w")
        self.results: dict[int, dict[str, Any]] = {}
        self._done = False
        self._cond = threading.Condition()
        self._cache = _cache_file(self.statements)
        if self._cache is not None and self._cache.exists():  # developer shortcut, see _cache_file
            for line in self._cache.read_text().splitlines():
                obj = json.loads(line)
                self.results[obj["i"]] = obj
            self.proc = None
            self._done = True
            return
        env = {**os.environ, "TZ": "UTC"}
        python = os.environ.get("PYICE_REF_PYTHON", sys.executable)  # a pyspark 3.5 one: see engines.REF_PYTHON
        self.proc = subprocess.Popen([python, str(Path(__file__).resolve()), self.warehouse, str(stmts)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     text=True, env=env)
        self._sent = len(self.statements)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if not line.startswith("{"):
                continue
            obj = json.loads(line)
            with self._cond:
                self.results[obj["i"]] = obj
                self._cond.notify_all()
            if self._cache is not None and len(self.results) == self._sent:
                self._cache.parent.mkdir(parents=True, exist_ok=True)
                self._cache.write_text("".join(json.dumps(self.results[i]) + "\n" for i in range(self._sent)))
        self.proc.wait()
        with self._cond:
            self._done = True
            self._cond.notify_all()

    @property
    def cached(self) -> bool:
        """Results came from the developer cache: no reference tables exist on disk."""
        return self.proc is None

    def result(self, i: int) -> dict[str, Any]:
        """{'rows': ...} or {'error': ...} of statement `i`, waiting for it if need be."""
        with self._cond:
            self._cond.wait_for(lambda: i in self.results or self._done, timeout=self.timeout_s)
            if i in self.results:
                return self.results[i]
        raise AssertionError(f"the reference engine gave no result for statement {i}: "
                             f"{self.statements[i][:300]}\n--- its stderr (tail) ---\n{self.stderr_tail()}")

    def wait(self) -> None:
        """Until every statement sent so far has run (the tables are then free to touch)."""
        n = len(self.statements)
        with self._cond:
            self._cond.wait_for(lambda: len(self.results) >= n or self._done, timeout=self.timeout_s)
            if len(self.results) < n:
                raise AssertionError(f"the reference engine batch did not finish:\n{self.stderr_tail()}")

    def run_more(self, statements: list[str]) -> list[dict[str, Any]]:
        """Run more statements in the same (warm) JVM, after everything sent before; their results."""
        if self.proc is None or self.proc.poll() is not None:
            raise AssertionError("the reference engine process is not running")
        first = len(self.statements)
        self.statements += statements
        self.proc.stdin.write(json.dumps(statements) + "\n")
        self.proc.stdin.flush()
        return [self.result(i) for i in range(first, len(self.statements))]

    def stderr_tail(self, n: int = 4000) -> str:
        self._stderr.flush()
        return self._stderr_path.read_text(errors="replace")[-n:]

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with self._cond:
                finished = len(self.results) >= len(self.statements)
            try:
                if not finished:  # nobody waits for the rest (e.g. a -k selection): stop now
                    raise OSError
                self.proc.stdin.close()  # EOF: the runner stops its JVM
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self._stderr.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
