"""`pyice-sql` command line: run SQL scripts against pyice_sql catalogs, check the setup.

    pyice-sql run script.sql [more.sql ...] [--var k=v ...] [--warehouse DIR] [--catalog NAME]
                  [--catalog-type hadoop|sql|rest] [--uri URI] [--credential ID:SECRET | --token T]
                  [--quiet] [--max-rows N]
    pyice-sql doctor

Every statement runs in order and prints its result table, or its metrics (DML: rows
affected/updated/deleted/inserted, files added/removed, the new snapshot), and its time. The run
stops at the first failing statement, naming the script, line and column, and exits 1: a user
error (pyice_sql's, or Spark's AnalysisException/ParseException for passed-through SQL) is one
line, never a Python traceback. Catalog settings not given here come from Spark conf
(`spark.pyice.*`), which is how `spark-submit pyice_sql/submit.py script.sql --conf ...` runs it.
"""
from __future__ import annotations

import argparse
import re
import sys
import time
import traceback

from pyice_sql.core.errors import PyIceError, SqlPosition

_SPARK_POSITION = re.compile(r"\(?line (\d+),? pos (\d+)\)?")
_DML_COLUMNS = ["num_affected_rows", "num_updated_rows", "num_deleted_rows", "num_inserted_rows",
                "num_added_data_files", "num_removed_data_files", "num_added_delete_files", "snapshot_id"]


class UserError(Exception):
    """A failure to report in one line (the message is complete)."""


def _variables(items: list[str]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise UserError(f"--var takes k=v, got {item!r}")
        k, v = item.split("=", 1)
        out[k] = v
    return out


def _is_user_error(e: BaseException) -> bool:
    """pyice_sql's errors, and Spark's (AnalysisException, ParseException, failed jobs)."""
    if isinstance(e, PyIceError):
        return True
    try:
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import PySparkException
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return False
    return isinstance(e, (PySparkException, Py4JJavaError))


def describe_error(e: BaseException, script: str, stmt_position: SqlPosition) -> str:
    """One line: where (script:line:column) and what."""
    if isinstance(e, PyIceError):
        where = e.position or stmt_position
        return f"{script}:{where.line}:{where.column}: {type(e).__name__}: {e.message}"
    text = str(e).strip()
    first = text.splitlines()[0].strip() if text else type(e).__name__
    where = stmt_position
    m = _SPARK_POSITION.search(text)
    if m:  # Spark positions are in the statement: line 1-based, pos 0-based
        line, pos = int(m.group(1)), int(m.group(2))
        where = SqlPosition(stmt_position.line + line - 1, (stmt_position.column if line == 1 else 1) + pos)
        first = _SPARK_POSITION.sub("", first).rstrip(" .;") or first
    return f"{script}:{where.line}:{where.column}: {type(e).__name__}: {first}"


def _summary(sql: str, width: int = 100) -> str:
    text = " ".join(sql.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def _print_result(df, max_rows: int, elapsed: float) -> None:
    if df.columns == _DML_COLUMNS:
        r = df.first()
        print(f"  {r.num_affected_rows} row{'s' if r.num_affected_rows != 1 else ''} affected ({r.num_updated_rows} updated, {r.num_deleted_rows} deleted, "
              f"{r.num_inserted_rows} inserted); data files +{r.num_added_data_files} -{r.num_removed_data_files}, "
              f"delete files +{r.num_added_delete_files}; snapshot {r.snapshot_id} | {elapsed:.2f}s")
    elif df.columns == ["plan"]:  # EXPLAIN (ours or Spark's): the plan as text, as the notebook shows it
        for r in df.collect():
            print(r.plan.rstrip("\n"))
        print(f"  {elapsed:.2f}s")
    elif df.columns and df.columns != ["result"]:
        rows = df.take(max_rows + 1)
        df.show(max_rows, truncate=False)
        more = len(rows) > max_rows
        print(f"  {'more than ' if more else ''}{min(len(rows), max_rows)} row{'s' if len(rows) != 1 else ''}"
              f" | {elapsed:.2f}s")
    else:
        print(f"  ok | {elapsed:.2f}s")


def run_scripts(args: argparse.Namespace) -> int:
    from pyice_sql import connect
    from pyice_sql.core.sql.script import split_script, substitute_variables

    variables = _variables(args.var)
    texts = []
    for path in args.scripts:
        try:
            with open(path, encoding="utf-8") as f:
                texts.append((path, f.read()))
        except OSError as e:
            raise UserError(f"cannot read {path}: {e.strerror}") from None
    ice = connect(warehouse=args.warehouse, catalog=args.catalog, catalog_type=args.catalog_type,
                  uri=args.uri, credential=args.credential, token=args.token, quiet=args.quiet or None)
    for path, text in texts:
        if len(texts) > 1:
            print(f"==> {path} <==")
        try:
            statements = split_script(text)
        except PyIceError as e:
            print(f"pyice-sql: {describe_error(e, path, SqlPosition(1, 1))}", file=sys.stderr)
            return 1
        for stmt in statements:
            print(f"> line {stmt.position.line}: {_summary(stmt.sql)}")
            sys.stdout.flush()
            started = time.perf_counter()
            try:
                sql = substitute_variables(stmt.sql, variables, stmt.position)
                df = ice.execute(sql, stmt.position)
                _print_result(df, args.max_rows, time.perf_counter() - started)
            except Exception as e:
                if not _is_user_error(e) and not args.traceback:
                    print(f"pyice-sql: internal error in {path} in the statement at line {stmt.position.line}: "
                          f"{type(e).__name__}: {e} (rerun with --traceback for details)", file=sys.stderr)
                    return 1
                if args.traceback:
                    traceback.print_exc()
                print(f"pyice-sql: {describe_error(e, path, stmt.position)}", file=sys.stderr)
                return 1
            sys.stdout.flush()
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="pyice-sql", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run SQL scripts, statement by statement")
    run.add_argument("scripts", nargs="+", metavar="script.sql")
    run.add_argument("--var", action="append", default=[], metavar="K=V", help="substituted for ${K}")
    run.add_argument("--warehouse", help="warehouse of the default catalog (default: conf, else ./warehouse)")
    run.add_argument("--catalog", help="name of the default catalog (default: conf, else local)")
    run.add_argument("--catalog-type", choices=["hadoop", "sql", "rest"], help="default: conf, else hadoop")
    run.add_argument("--uri", help="REST catalog base URI (rest), or SQLite file (sql)")
    run.add_argument("--credential", help="REST catalog OAuth2 client credential id:secret (or set it in conf)")
    run.add_argument("--token", help="REST catalog bearer token (or set it in conf)")
    run.add_argument("--quiet", action="store_true", help="no progress lines, no Spark progress bar")
    run.add_argument("--max-rows", type=int, default=20, help="rows shown per result (default 20)")
    run.add_argument("--traceback", action="store_true", help="print Python tracebacks of errors")
    sub.add_parser("doctor", help="check Python, Java, Spark, the JVM shim and the catalogs")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from pyice_sql.spark.jvm.bridge import ShimError
    from pyice_sql.spark.errors import reported_by_pyice

    try:
        if args.command == "doctor":
            from pyice_sql.doctor import run_doctor

            return run_doctor()
        with reported_by_pyice():
            return run_scripts(args)
    except (UserError, PyIceError) as e:  # bad arguments or configuration, before any statement ran
        print(f"pyice-sql: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # no Java, no javac, Spark failing to start: the setup, not the script
        if not (isinstance(e, ShimError) or _is_user_error(e)):
            raise
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        print(f"pyice-sql: cannot start: {first} (pyice-sql doctor checks the setup)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
