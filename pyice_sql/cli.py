"""`pyice-sql` command line: run SQL scripts against a pyice_sql warehouse.

    pyice-sql run script.sql [--var k=v ...] [--warehouse DIR] [--catalog NAME] [--catalog-type hadoop|sql]

Every statement runs in order; each prints its result table and how long it took. The run
stops at the first failing statement with its line and column and exits 1 — a user error is
reported in one line, never as a Python traceback.
"""
from __future__ import annotations

import argparse
import sys
import time

from pyice_sql.errors import PyIceError


def _variables(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise SystemExit(f"pyice-sql: --var takes k=v, got {item!r}")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def run_script(args: argparse.Namespace) -> int:
    from pyice_sql import connect
    from pyice_sql.sql.script import split_script, substitute_variables

    try:
        with open(args.script, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print(f"pyice-sql: cannot read {args.script}: {e.strerror}", file=sys.stderr)
        return 2
    variables = _variables(args.var)
    ice = connect(warehouse=args.warehouse, catalog=args.catalog, catalog_type=args.catalog_type)
    for stmt in split_script(text):
        started = time.perf_counter()
        try:
            sql = substitute_variables(stmt.sql, variables, stmt.position)
            df = ice.execute(sql, stmt.position)
            if df.columns and df.columns != ["result"]:
                df.show(args.max_rows, truncate=False)
        except PyIceError as e:
            where = f" at line {e.position.line}, column {e.position.column}" if e.position else \
                f" in the statement at line {stmt.position.line}"
            print(f"pyice-sql: {type(e).__name__}{where}: {e.message}", file=sys.stderr)
            return 1
        except Exception as e:  # Spark's own errors (AnalysisException, ...) for passed-through SQL
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            print(f"pyice-sql: error in the statement at line {stmt.position.line}: {first}", file=sys.stderr)
            return 1
        print(f"-- ok ({time.perf_counter() - started:.2f}s) line {stmt.position.line}: "
              f"{' '.join(stmt.sql.split())[:80]}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="pyice-sql", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a SQL script")
    run.add_argument("script")
    run.add_argument("--var", action="append", default=[], help="k=v, substituted for ${k}")
    run.add_argument("--warehouse", default="./warehouse")
    run.add_argument("--catalog", default="local")
    run.add_argument("--catalog-type", default="hadoop", choices=["hadoop", "sql"])
    run.add_argument("--max-rows", type=int, default=20)
    args = ap.parse_args(argv)
    return run_script(args)


if __name__ == "__main__":
    sys.exit(main())
