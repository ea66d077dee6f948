"""Errors raised by pyice_sql, all rooted at PyIceError.

Every error may carry the SQL it is about and a position in it, so a failure deep inside
a script still tells the user where to look: `unknown column 'x' in table local.db.t
(line 2, column 14)`.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class SqlPosition:
    """A 1-based line and column in a SQL text (a script or a single statement)."""

    line: int
    column: int

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}"

    @classmethod
    def of_offset(cls, text: str, offset: int, origin: SqlPosition | None = None) -> SqlPosition:
        """The position of character `offset` of `text`, where `text` itself starts at `origin`.

        Statements are cut out of scripts; passing the statement's start as `origin` makes the
        result point into the script rather than into the statement.
        """
        offset = max(0, min(offset, len(text)))
        line = text.count("\n", 0, offset)
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        if origin is None:
            return cls(line + 1, column)
        if line == 0:
            return cls(origin.line, origin.column + column - 1)
        return cls(origin.line + line, column)


class PyIceError(Exception):
    """Base of all pyice_sql errors; renders as `message (line L, column C)` when positioned."""

    def __init__(self, message: str, *, position: SqlPosition | None = None, sql: str | None = None):
        super().__init__(message)
        self.message = message
        self.position = position
        self.sql = sql

    def __str__(self) -> str:
        return f"{self.message} ({self.position})" if self.position else self.message


class ParseError(PyIceError):
    """The SQL text is not valid (syntax, or a rule the parser enforces such as MERGE clause order)."""


class AnalysisError(PyIceError):
    """The SQL parses but does not make sense: unknown table/column/catalog, type errors, ambiguity."""


class ExpressionNotAllowedError(AnalysisError):
    """An expression Spark rejects where it stands in a row-level statement (non-deterministic or
    a subquery in a condition, ...); `error_class` is Spark's name for the error, which the message
    starts with, as Spark's do."""

    def __init__(self, error_class: str, message: str, *, position: SqlPosition | None = None,
                 sql: str | None = None):
        super().__init__(f"[{error_class}] {message}", position=position, sql=sql)
        self.error_class = error_class


class NoSuchTableError(AnalysisError):
    """The named table does not exist."""


class NoSuchNamespaceError(AnalysisError):
    """The named namespace (database) does not exist."""


class TableAlreadyExistsError(AnalysisError):
    """CREATE TABLE without IF NOT EXISTS on an existing table."""


class NamespaceAlreadyExistsError(AnalysisError):
    """CREATE NAMESPACE without IF NOT EXISTS on an existing namespace."""


class NamespaceNotEmptyError(AnalysisError):
    """DROP NAMESPACE without CASCADE on a namespace that still holds tables."""


class UnsupportedError(PyIceError):
    """Valid Spark SQL that pyice_sql does not implement for pyice tables."""


class CardinalityError(PyIceError):
    """MERGE matched one target row with several source rows."""


class CommitConflictError(PyIceError):
    """A commit lost the race against a concurrent one; retrying may succeed."""


class ValidationError(PyIceError):
    """Conflict validation failed: a concurrent commit changed data this operation depends on."""


class NotNullViolationError(PyIceError):
    """A write would put NULL into a required column."""


class CorruptTableError(PyIceError):
    """A metadata or data file is missing or unreadable; the message names the file.

    Pass `path` to have it appended to the message and kept as `.path`.
    """

    def __init__(self, message: str, path: str | None = None, *, position: SqlPosition | None = None,
                 sql: str | None = None):
        super().__init__(f"{message}: {path}" if path else message, position=position, sql=sql)
        self.path = path


class CommitStateUnknownError(PyIceError):
    """The catalog may or may not have applied a commit (a 5xx answer or a lost connection).

    Never retried and never cleaned up: the files the commit wrote may already be part of the
    table, so deleting them could corrupt it. The user checks the table's history instead.
    """


class RestCatalogError(PyIceError):
    """A REST catalog answered with an error (or could not be reached); names the endpoint.

    `status` is the HTTP status (None when no answer came) and `error_type` the type of the
    server's ErrorResponse (e.g. `NotAuthorizedException`).
    """

    def __init__(self, message: str, *, status: int | None = None, error_type: str | None = None,
                 endpoint: str | None = None):
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.endpoint = endpoint
