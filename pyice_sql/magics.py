"""Notebook magics: `%load_ext pyice_sql`, then `%%pyice_sql` (cell) and `%pyice_sql` (line).

    %%pyice_sql -o changed -n 50
    MERGE INTO local.db.t t USING updates u ON t.id = u.id WHEN MATCHED THEN UPDATE SET *

A cell is a script (`;`-separated; `${name}` takes the text of notebook variable `name`); the
last statement's result is shown as an HTML table of at most `-n` rows (default 20), an
EXPLAIN as preformatted text, and `-o name` stores the DataFrame in the notebook's namespace.
The session is the one `pyice_sql.install(spark)` put on the active SparkSession, else one
`connect()` opens (catalogs from Spark conf). Errors are shown as one line, without traceback.
IPython is imported only here, so it stays an optional dependency.
"""
from __future__ import annotations

import html
import re
from typing import Any, Mapping

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from pyice_sql.core.errors import PyIceError
from pyice_sql.spark.errors import reported_by_pyice

DEFAULT_ROWS = 20
_OPTIONS = re.compile(r"\s*((?:(?:-o|--output|-n|--max-rows)\s+\S+\s*)*)(.*)", re.DOTALL)


class _Namespace(Mapping[str, str]):
    """Notebook variables as `${name}` substitutions (their str())."""

    def __init__(self, ns: dict[str, Any]) -> None:
        self._ns = ns

    def __getitem__(self, key: str) -> str:
        return str(self._ns[key])

    def __contains__(self, key: object) -> bool:
        return key in self._ns

    def __iter__(self):
        return iter(self._ns)

    def __len__(self) -> int:
        return len(self._ns)


class Result:
    """A statement's result as the notebook shows it: HTML table, or <pre> for EXPLAIN."""

    def __init__(self, columns: list[str], rows: list[tuple], more: bool, preformatted: bool = False) -> None:
        self.columns, self.rows, self.more, self.preformatted = columns, rows, more, preformatted

    def _repr_html_(self) -> str:
        if self.preformatted:
            return "".join(f"<pre>{html.escape(str(r[0]))}</pre>" for r in self.rows)
        head = "".join(f"<th>{html.escape(c)}</th>" for c in self.columns)
        body = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in r) + "</tr>" for r in self.rows)
        note = f"<p>showing the first {len(self.rows)} rows</p>" if self.more else ""
        return f"<table class=\"pyice-result\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}"

    def __repr__(self) -> str:
        if self.preformatted:
            return "\n".join(str(r[0]) for r in self.rows)
        lines = [" | ".join(self.columns)] + [" | ".join("NULL" if v is None else str(v) for v in r) for r in self.rows]
        return "\n".join(lines + ([f"(showing the first {len(self.rows)} rows)"] if self.more else []))


def _cell(value: Any) -> str:
    return "<i>NULL</i>" if value is None else html.escape(str(value))


def render(df, max_rows: int) -> Result | None:
    """What a cell shows for DataFrame `df`; None for statements without a result (DDL)."""
    if not df.columns or df.columns == ["result"]:
        return None
    rows = [tuple(r) for r in df.take(max_rows + 1)]
    return Result(df.columns, rows[:max_rows], len(rows) > max_rows, preformatted=df.columns == ["plan"])


@magics_class
class PyiceMagics(Magics):
    def __init__(self, shell) -> None:
        super().__init__(shell)
        self._session = None

    def session(self):
        from pyspark.sql import SparkSession

        from pyice_sql.spark.session import connect
        from pyice_sql.spark_hook import installed

        spark = SparkSession.getActiveSession()
        if spark is not None and installed(spark) is not None:
            return installed(spark)
        if self._session is None or (spark is not None and self._session.spark is not spark):
            self._session = connect(spark)
        return self._session

    @magic_arguments()
    @argument("-o", "--output", help="store the result DataFrame in this notebook variable")
    @argument("-n", "--max-rows", type=int, default=DEFAULT_ROWS, help="rows to show (default 20)")
    @no_var_expand
    @line_cell_magic
    @reported_by_pyice()
    def pyice_sql(self, line: str, cell: str | None = None):
        """Run pyice SQL: `%pyice_sql [-o name] [-n rows] <statement>` or a `%%pyice_sql` cell."""
        options, rest = _split_options(line)
        args = parse_argstring(self.pyice_sql, options)
        text = cell if cell is not None else rest
        if not text.strip():
            raise UsageError("%pyice_sql: no SQL given")
        try:
            df = self.session().sql(text, variables=_Namespace(self.shell.user_ns))
        except Exception as e:
            raise UsageError(_one_line(e)) from None
        if args.output:
            self.shell.user_ns[args.output] = df
        try:
            return render(df, args.max_rows)
        except Exception as e:  # errors Spark raises only when rows are fetched
            raise UsageError(_one_line(e)) from None


def _split_options(line: str) -> tuple[str, str]:
    """Leading `-o name` / `-n N` options, and the SQL after them, kept verbatim (quotes in SQL
    are not shell quotes, so the line is not tokenised as a whole)."""
    m = _OPTIONS.match(line)
    return m.group(1).strip(), m.group(2).strip()


def _one_line(e: BaseException) -> str:
    """`ErrorType: message (line L, column C)`: what a user needs, without the traceback."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    if not isinstance(e, (PyIceError, PySparkException, Py4JJavaError)):
        raise e
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def register(ipython) -> None:
    ipython.register_magics(PyiceMagics)
