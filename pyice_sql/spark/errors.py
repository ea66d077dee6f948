"""Recognise Spark/JVM failures that are really pyice_sql errors, and name them as such.

Checks that run inside Spark jobs (NOT NULL, store-assignment overflow, a data file that
vanished) surface as Py4J/Spark exceptions with long JVM traces; the user should get the same
named error, with the first useful line, as when the check runs on the driver.
"""
from __future__ import annotations

import logging
import re
from contextlib import contextmanager
from typing import Iterator

from pyice_sql.core.errors import AnalysisError, CorruptTableError, NotNullViolationError, ParseError, PyIceError, SqlPosition

_NOT_NULL = re.compile(r"NOT NULL violation: [^\n]*")
_MISSING = re.compile(r"(?:FileNotFoundException|PATH_NOT_FOUND|does not exist)[:\s]*([^\n]*)")
_UNREADABLE = re.compile(r"ChecksumException|is not a Parquet file|expected magic number|FAILED_READ_FILE|"
                         r"CORRUPTED_FILE|Could not read footer|EOFException|can not read class")
_DATA_PATH = re.compile(r"(?:file|hdfs|s3a?|gs|abfss?):/*[^\s'\"]+?\.(?:parquet|avro|orc)")
_OUT_OF_RANGE = re.compile(r"value out of range for column [^\n]*? in store assignment")
_NAME = re.compile(r"`((?:[^`]|``)+)`((?:\.`(?:[^`]|``)+`)*)")
_SPARK_POS = re.compile(r"\(?line (\d+),? pos (\d+)\)?")
_MAX_MESSAGE = 500
# Columns and names pyice_sql adds to the frames Spark analyses (scan metadata columns, MERGE
# markers and keys, temp view names): never the user's, so never offered as suggestions.
_INTERNAL_COLUMNS = frozenset({"_file", "_pos", "_spec_id", "_partition", "_seq"})
_SUGGESTIONS = re.compile(r"(\. Did you mean one of the following\? )\[([^\]]*)\]")
# PySpark 4 logs each Spark error that carries a query context as a JSON line on stderr, when the
# exception object is made (before anyone could catch it).
_QUERY_CONTEXT_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def translate(error: BaseException, sql: str | None = None, start: SqlPosition | None = None) -> PyIceError | None:
    """The pyice_sql error for a Spark failure, or None when it is not one the user caused.

    `sql` is the statement as the user wrote it and `start` where it begins in its script: Spark's
    analysis and parse errors get a position there (the name they complain about, found in the
    user's text, since Spark saw a generated query), else the statement's start.
    """
    text = str(error)
    m = _NOT_NULL.search(text)
    if m:
        return NotNullViolationError(m.group(0).rstrip(".'\""))
    m = _MISSING.search(text)
    if m and ("FileNotFound" in text or "Path does not exist" in text):
        return CorruptTableError(f"a file of the table is missing: {m.group(1).strip()[:500]}")
    path = _DATA_PATH.search(text)
    if path and _UNREADABLE.search(text):
        return CorruptTableError("a file of the table cannot be read (damaged or truncated)", path.group(0))
    m = _OUT_OF_RANGE.search(text)
    if m:
        return AnalysisError(m.group(0))
    kind = _user_error_kind(error)
    if kind is None:
        return None
    message = _first_line(text)
    position = _position(message, text, sql, start, kind is ParseError)
    return kind(message, position=position)


def _user_error_kind(error: BaseException) -> type[PyIceError] | None:
    try:
        from pyspark.errors import AnalysisException, ArithmeticException, NumberFormatException, ParseException
    except ImportError:  # pragma: no cover - pyspark is a dependency
        return None
    if isinstance(error, ParseException):
        return ParseError
    if isinstance(error, (AnalysisException, ArithmeticException, NumberFormatException)):
        return AnalysisError
    return None


def _first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "Spark rejected the statement"
    line = _hide_internal_columns(_SPARK_POS.sub("", line).rstrip(" ;."))
    return line if len(line) <= _MAX_MESSAGE else line[:_MAX_MESSAGE] + "..."


def _position(message: str, text: str, sql: str | None, start: SqlPosition | None,
              parse: bool) -> SqlPosition | None:
    if sql is None:
        return start
    m = _NAME.search(message)
    if m:
        parts = [p.replace("``", "`") for p in re.findall(r"`((?:[^`]|``)+)`", m.group(0))]
        pattern = r"\s*\.\s*".join(rf"`?{re.escape(p)}`?" for p in parts)
        found = re.search(rf"(?<![\w`]){pattern}(?![\w`])", sql, re.IGNORECASE)
        if found:
            return SqlPosition.of_offset(sql, found.start(), start)
    m = _SPARK_POS.search(text)
    if parse and m:  # a parse error comes from Spark parsing the user's own text
        lines = sql.split("\n")
        line = min(int(m.group(1)), len(lines))
        offset = sum(len(x) + 1 for x in lines[:line - 1]) + int(m.group(2))
        return SqlPosition.of_offset(sql, offset, start)
    return SqlPosition.of_offset(sql, len(sql) - len(sql.lstrip()), start)


def _hide_internal_columns(message: str) -> str:
    """Drop pyice_sql's own columns from Spark's `Did you mean ...` list (and the list itself
    when nothing of the user's is left in it)."""
    m = _SUGGESTIONS.search(message)
    if m is None:
        return message
    kept = []
    for item in re.findall(r"`(?:[^`]|``)+`(?:\.`(?:[^`]|``)+`)*", m.group(2)):
        parts = [p.replace("``", "`") for p in re.findall(r"`((?:[^`]|``)+)`", item)]
        if parts[-1].lower() in _INTERNAL_COLUMNS or any(p.startswith("__") for p in parts):
            continue
        kept.append(item)
    if kept:
        return message[:m.start()] + f"{m.group(1)}[{', '.join(kept)}]" + message[m.end():]
    return (message[:m.start()] + message[m.end():]).replace("UNRESOLVED_COLUMN.WITH_SUGGESTION",
                                                              "UNRESOLVED_COLUMN.WITHOUT_SUGGESTION")


@contextmanager
def reported_by_pyice() -> Iterator[None]:
    """Within it, the caller reports Spark's errors itself (the CLI and the notebook magic: one
    line with the script position), so PySpark 4's JSON log line of each error is held back."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # pyspark 3.5 logs nothing of the kind
        yield
        return
    # made through PySparkLogger, whose log calls take the extra fields PySpark passes
    loggers = [PySparkLogger.getLogger(name) for name in _QUERY_CONTEXT_LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)
