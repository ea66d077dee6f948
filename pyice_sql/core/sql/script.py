"""Scripts: splitting into statements, `${var}` substitution and `:name` parameter binding.

All three need to know what is code and what is a string, a quoted identifier or a comment,
so they share one small scanner instead of regexes that a `;` or `:x` inside a string would fool.
Splitting keeps where each statement starts in the script, so errors raised while parsing or
running a statement can point into the script rather than into the statement.

Recommended order: split the script, then substitute variables and bind parameters per statement
(a value containing `;` then cannot split a statement). Positions inside a statement refer to the
text before substitution only up to the first substituted reference on a line.
"""
from __future__ import annotations

import datetime
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pyice_sql.core.errors import ParseError, SqlPosition, UnsupportedError

_CODE, _STRING, _IDENT, _COMMENT = "code", "string", "ident", "comment"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)\}")
_PARAMETER = re.compile(r"(?<![A-Za-z0-9_:]):([A-Za-z_][A-Za-z0-9_]*)")
_POSITIONAL = re.compile(r"\?")


@dataclass(frozen=True)
class ScriptStatement:
    """One statement of a script (without its `;`) and where it starts in the script."""

    sql: str
    position: SqlPosition


def _segments(text: str) -> Iterator[tuple[str, int, int]]:
    """Yield (kind, start, end) runs of `text`: code, string literal, `quoted` identifier, comment.

    Follows Spark's lexer: strings in ' or " with backslash escapes (none in r'raw' strings),
    backtick identifiers, `--` line comments and nestable `/* */` block comments.
    """
    i, n, code_start = 0, len(text), 0
    while i < n:
        c = text[i]
        if c in "'\"`":
            if i > code_start:
                yield _CODE, code_start, i
            raw = c != "`" and i > 0 and text[i - 1] in "rR" and (i < 2 or not _is_word(text[i - 2]))
            end = _end_of_quoted(text, i, escapes=c != "`" and not raw)
            yield (_IDENT if c == "`" else _STRING), i, end
            i = code_start = end
        elif text.startswith("--", i):
            if i > code_start:
                yield _CODE, code_start, i
            end = text.find("\n", i)
            end = n if end < 0 else end
            yield _COMMENT, i, end
            i = code_start = end
        elif text.startswith("/*", i):
            if i > code_start:
                yield _CODE, code_start, i
            end = _end_of_block_comment(text, i)
            yield _COMMENT, i, end
            i = code_start = end
        else:
            i += 1
    if code_start < n:
        yield _CODE, code_start, n


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _end_of_quoted(text: str, start: int, escapes: bool) -> int:
    quote, i = text[start], start + 1
    while i < len(text):
        if escapes and text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    what = "quoted identifier" if quote == "`" else "string literal"
    raise ParseError(f"unterminated {what}", position=SqlPosition.of_offset(text, start), sql=text)


def _end_of_block_comment(text: str, start: int) -> int:
    depth, i = 0, start
    while i < len(text):
        if text.startswith("/*", i):
            depth, i = depth + 1, i + 2
        elif text.startswith("*/", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                return i
        else:
            i += 1
    raise ParseError("unterminated comment", position=SqlPosition.of_offset(text, start), sql=text)


def split_script(script: str) -> list[ScriptStatement]:
    """Split on top-level `;`, dropping empty statements; each keeps its start in the script.

    A statement starts at its first token: leading whitespace and comments are not part of it.
    Raises ParseError (with position) for an unterminated string, identifier or comment.
    """
    bounds: list[tuple[int, int]] = []
    start: int | None = None
    for kind, seg_start, seg_end in _segments(script):
        if kind == _COMMENT:
            continue
        if kind != _CODE:
            start = seg_start if start is None else start
            continue
        for i in range(seg_start, seg_end):
            if script[i] == ";":
                if start is not None:
                    bounds.append((start, i))
                start = None
            elif start is None and not script[i].isspace():
                start = i
    if start is not None:
        bounds.append((start, len(script)))
    return [ScriptStatement(script[b:e].rstrip(), SqlPosition.of_offset(script, b)) for b, e in bounds]


def substitute_variables(sql: str, variables: Mapping[str, str],
                         origin: SqlPosition | None = None) -> str:
    """Replace `${name}` in code, string literals and quoted identifiers (as Spark does) by the
    variable's text.

    Comments are left alone. The value is inserted verbatim: variables are trusted SQL text;
    use bind_parameters for values. A missing variable raises ParseError naming it, positioned
    in the script when `origin` (the statement's start in it) is given.
    """
    out: list[str] = []
    for kind, start, end in _segments(sql):
        piece = sql[start:end]
        if kind != _COMMENT:
            for match in _VARIABLE.finditer(piece):
                if match.group(1) not in variables:
                    raise ParseError(f"undefined variable '{match.group(1)}'",
                                     position=SqlPosition.of_offset(sql, start + match.start(), origin),
                                     sql=sql)
            piece = _VARIABLE.sub(lambda m: str(variables[m.group(1)]), piece)
        out.append(piece)
    return "".join(out)


def bind_parameters(sql: str, parameters: Mapping[str, Any] | Sequence[Any],
                    origin: SqlPosition | None = None) -> str:
    """Replace each `:name` marker (a mapping) or each `?` marker in turn (a sequence) in code
    (not in strings, identifiers or comments) by its value as a safely quoted Spark SQL literal.

    Named markers not in `parameters` are left as they are (`STRUCT<a:INT>` is not a marker: a
    name directly before the colon rules it out); a `?` without a value raises ParseError with
    its position (in the script when `origin`, the statement's start in it, is given).
    """
    named = isinstance(parameters, Mapping)
    values = iter(() if named else parameters)
    out: list[str] = []
    for kind, start, end in _segments(sql):
        piece = sql[start:end]
        if kind == _CODE and named:
            piece = _PARAMETER.sub(
                lambda m: sql_literal(parameters[m.group(1)]) if m.group(1) in parameters else m.group(0),
                piece,
            )
        elif kind == _CODE:
            piece = _POSITIONAL.sub(lambda m: _next_literal(values, sql, start + m.start(), origin), piece)
        out.append(piece)
    return "".join(out)


def _next_literal(values: Iterator[Any], sql: str, offset: int, origin: SqlPosition | None) -> str:
    for value in values:
        return sql_literal(value)
    raise ParseError("no value for parameter marker '?': args has fewer values than the statement has markers",
                     position=SqlPosition.of_offset(sql, offset, origin), sql=sql)


def sql_literal(value: Any) -> str:
    """A Spark SQL literal for a Python value; strings are escaped so they cannot end early."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            special = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
            return f"CAST('{special}' AS DOUBLE)"
        return repr(value) + "D"
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise UnsupportedError(f"cannot bind the decimal {value}")
        return f"{value:f}BD"
    if isinstance(value, str):
        return _quote_string(value)
    if isinstance(value, datetime.datetime):
        return f"TIMESTAMP {_quote_string(value.isoformat(sep=' '))}"
    if isinstance(value, datetime.date):
        return f"DATE {_quote_string(value.isoformat())}"
    if isinstance(value, (bytes, bytearray)):
        return f"X'{bytes(value).hex()}'"
    if isinstance(value, (list, tuple)):
        return f"array({', '.join(sql_literal(v) for v in value)})"
    if isinstance(value, Mapping):
        return f"map({', '.join(f'{sql_literal(k)}, {sql_literal(v)}' for k, v in value.items())})"
    raise UnsupportedError(f"cannot bind a parameter of type {type(value).__name__}")


def _quote_string(value: str) -> str:
    # Spark string literals take backslash escapes and do not treat '' as a quote
    # ('a''b' is two adjacent literals), so escape backslash and quote with backslashes.
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
