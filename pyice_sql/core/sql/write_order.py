"""DDL of Iceberg's Spark extensions that sqlglot does not parse: write order and distribution,
and `SET TBLPROPERTIES ('k' 'v')` (Spark's grammar makes the `=` optional).

  ALTER TABLE t WRITE [LOCALLY] ORDERED BY <term> [ASC|DESC] [NULLS FIRST|LAST], ...
  ALTER TABLE t WRITE DISTRIBUTED BY PARTITION [LOCALLY ORDERED BY <terms>]
  ALTER TABLE t WRITE UNORDERED

A term is a column or a transform of one (`bucket(16, id)`, `truncate(id, 4)`, `days(ts)`, ...).
As in Iceberg's grammar, the table's sort order becomes the given terms (none: unsorted) and
`write.distribution-mode` becomes `range` (ORDERED BY), `none` (LOCALLY ORDERED BY, UNORDERED)
or `hash` (DISTRIBUTED BY PARTITION).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pyice_sql.core.errors import ParseError, SqlPosition
from pyice_sql.core.model.sort_order import ASC, DESC, NULLS_FIRST, NULLS_LAST
from pyice_sql.core.sql import statements as st

_NAME = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)"
_ALTER = re.compile(rf"\s*ALTER\s+TABLE\s+(?P<name>{_NAME}(?:\s*\.\s*{_NAME})*)\s+(?P<rest>.*?)[\s;]*\Z",
                    re.IGNORECASE | re.DOTALL)
_WRITE = re.compile(r"WRITE\s+(?:(?P<unordered>UNORDERED)|(?P<locally>LOCALLY\s+)?ORDERED\s+BY\s+(?P<order>.+)"
                    r"|DISTRIBUTED\s+BY\s+PARTITION(?:\s+LOCALLY\s+ORDERED\s+BY\s+(?P<local>.+))?)\Z",
                    re.IGNORECASE | re.DOTALL)
_PROPERTIES = re.compile(r"SET\s+TBLPROPERTIES\s*\((?P<body>.*)\)\Z", re.IGNORECASE | re.DOTALL)
_STRING = r"'(?:[^'\\]|\\.|'')*'"
_PAIR = re.compile(rf"\s*(?P<k>{_STRING})\s*(?P<eq>=?)\s*(?P<v>{_STRING})\s*(?:,|\Z)", re.DOTALL)
_TERM = re.compile(rf"\s*(?:(?P<fn>[A-Za-z_]+)\s*\((?P<args>[^()]*)\)|(?P<col>{_NAME}(?:\s*\.\s*{_NAME})*))"
                   r"(?:\s+(?P<dir>ASC|DESC))?(?:\s+NULLS\s+(?P<nulls>FIRST|LAST))?\s*\Z", re.IGNORECASE)


@dataclass(frozen=True)
class SortTerm:
    """One `ORDERED BY` item: a transform of a column, its direction and where nulls go."""

    transform: st.PartitionTransform
    direction: str
    null_order: str


@dataclass(frozen=True)
class SetWriteOrder(st.Statement):
    table: st.TableRef
    order: tuple[SortTerm, ...]
    distribution_mode: str


def parse(sql: str, is_pyice_catalog: Callable[[str], bool], default_catalog: str,
          start: SqlPosition | None = None) -> st.Statement | None:
    """The statement, when `sql` is one of these forms on a pyice table; None otherwise."""
    m = _ALTER.match(sql)
    if m is None:
        return None
    rest = m.group("rest")
    write, props = _WRITE.match(rest), _PROPERTIES.match(rest)
    if write is None and (props is None or _all_with_equals(props.group("body"))):
        return None  # not one of ours, or plain SET TBLPROPERTIES ('k' = 'v'), which the main parser takes
    table = _table_ref(m.group("name"), is_pyice_catalog, default_catalog, sql, start)
    if table is None:
        return None
    if props is not None:
        return st.AlterTableSetProperties(table, _properties(props.group("body"), sql, start))
    if write.group("unordered"):
        return SetWriteOrder(table, (), "none")
    if write.group("order"):
        return SetWriteOrder(table, _terms(write.group("order"), sql, start),
                             "none" if write.group("locally") else "range")
    return SetWriteOrder(table, _terms(write.group("local"), sql, start) if write.group("local") else (), "hash")


def _table_ref(name: str, is_pyice_catalog, default_catalog: str, sql: str,
               start: SqlPosition | None) -> st.TableRef | None:
    parts = [_unquote(p) for p in re.findall(_NAME, name)]
    if len(parts) >= 2 and is_pyice_catalog(parts[0]):
        catalog, rest = parts[0], parts[1:]
    elif len(parts) <= 2 and is_pyice_catalog(default_catalog) and parts[0].lower() != st.SPARK_SESSION_CATALOG:
        catalog, rest = default_catalog, parts
    else:
        return None
    return st.TableRef(catalog, tuple(rest[:-1]), rest[-1], position=SqlPosition.of_offset(sql, sql.index(name), start))


def _all_with_equals(body: str) -> bool:
    pairs = [m.group("eq") for m in _PAIR.finditer(body)]
    return bool(pairs) and all(pairs)


def _properties(body: str, sql: str, start: SqlPosition | None) -> dict[str, str]:
    out, pos = {}, 0
    while pos < len(body.rstrip()):
        m = _PAIR.match(body, pos)
        if m is None:
            raise ParseError(f"expected 'key' 'value' in TBLPROPERTIES, got {body[pos:].strip()[:40]!r}",
                             position=SqlPosition.of_offset(sql, sql.index(body) + pos, start), sql=sql)
        out[_string(m.group("k"))] = _string(m.group("v"))
        pos = m.end()
    return out


def _terms(text: str, sql: str, start: SqlPosition | None) -> tuple[SortTerm, ...]:
    out = []
    for item in _split_top_level(text):
        m = _TERM.match(item)
        if m is None or not item.strip():
            raise ParseError(f"expected a column or transform with ASC/DESC and NULLS FIRST/LAST, got {item.strip()!r}",
                             position=SqlPosition.of_offset(sql, sql.index(item.strip()), start), sql=sql)
        direction = DESC if (m.group("dir") or "").upper() == "DESC" else ASC
        default_nulls = "FIRST" if direction == ASC else "LAST"
        nulls = NULLS_FIRST if (m.group("nulls") or default_nulls).upper() == "FIRST" else NULLS_LAST
        out.append(SortTerm(_transform(m, sql, start), direction, nulls))
    return tuple(out)


def _transform(m: re.Match, sql: str, start: SqlPosition | None) -> st.PartitionTransform:
    if m.group("col"):
        return st.PartitionTransform("identity", ".".join(_unquote(p) for p in re.findall(_NAME, m.group("col"))))
    args = [a.strip() for a in m.group("args").split(",")]
    numbers = [int(a) for a in args if re.fullmatch(r"\d+", a)]
    columns = [".".join(_unquote(p) for p in re.findall(_NAME, a)) for a in args if not re.fullmatch(r"\d+", a)]
    if len(columns) != 1 or len(numbers) > 1:
        raise ParseError(f"cannot read sort term {m.group(0).strip()!r}",
                         position=SqlPosition.of_offset(sql, sql.index(m.group(0).strip()), start), sql=sql)
    return st.PartitionTransform(m.group("fn").lower(), columns[0], numbers[0] if numbers else None)


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return parts + [current]


def _string(literal: str) -> str:
    return re.sub(r"\\(.)|''", lambda m: m.group(1) or "'", literal[1:-1])


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name
