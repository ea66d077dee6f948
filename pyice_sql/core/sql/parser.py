"""Typed statements: the seam between SQL text and execution.

`parse_statement` turns one statement into a frozen dataclass and decides whether pyice_sql
handles it (it targets, or reads, a table in a pyice catalog) or Spark gets it unchanged
(`PassThrough`). Nothing after this module looks at statement-level sqlglot trees; expressions
(conditions, assignment values, queries) stay sqlglot expressions, and every table they read
that lives in a pyice catalog is tagged with its TableRef, so the session can swap those tables
for temp views (`replace_tables`) and hand the rest to Spark.

Name resolution follows Spark with one limit, since only pyice catalogs are known here: in
`a.b.c`, `a` is a catalog when it is a pyice catalog; otherwise a name of three or more parts
belongs to some Spark catalog, except `db.t.<metadata table>` (e.g. `db.t.snapshots`), which
resolves in the default catalog. `spark_catalog` is always Spark's. An empty namespace means the
session's current namespace.

This module holds the entry, name resolution and the DML statements; `ddl_parser` the DDL ones.
"""
from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError

from pyice_sql.core.errors import ParseError, SqlPosition, UnsupportedError
from pyice_sql.core.sql.ddl_parser import DdlParsing, path_of
from pyice_sql.core.sql.dialect import (
    DIALECT, SCHEMA_EVOLUTION_META, CallProcedure, ExplainStatement, ShowObjects,
)
from pyice_sql.core.sql.statements import (
    METADATA_TABLES, POSITION_META, SPARK_SESSION_CATALOG, TABLE_REF_META, Assignment, Delete, Explain, Insert,
    MatchedDelete, MatchedUpdate, Merge, MergeClause, NotMatchedBySourceDelete, NotMatchedBySourceUpdate,
    NotMatchedInsert, PassThrough, Query, Statement, TableRef, Update, position_of, tables_read,
)

# `parquet.`/path`` reads files directly: never a catalog table.
_FILE_SOURCES = frozenset({"parquet", "orc", "json", "csv", "avro", "text", "binaryfile", "delta"})
# Statements whose text may name a pyice table even when sqlglot cannot parse them.
_OUR_KEYWORDS = frozenset({
    "SELECT", "WITH", "INSERT", "MERGE", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "DESC",
    "DESCRIBE", "SHOW", "CALL", "EXPLAIN", "VALUES", "FROM", "TABLE", "REPLACE", "(",
})
_NAME = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)"
# Iceberg's Spark catalog reads `db.t.branch_b` / `db.t.tag_t` as table t at branch b / tag t.
_REF_SELECTOR = re.compile(r"(branch|tag)_(.+)", re.IGNORECASE | re.DOTALL)


def parse_statement(sql: str, is_pyice_catalog: Callable[[str], bool], default_catalog: str, *,
                    is_temp_view: Callable[[str], bool] | None = None,
                    start: SqlPosition | None = None) -> Statement:
    """Parse one statement and decide whether pyice_sql or Spark runs it.

    `is_temp_view` lets one-part names that are temp views stay Spark's; `start` is where the
    statement begins in its script, so every position (in errors and in `position_of`) points
    into the script. Raises ParseError, or UnsupportedError for valid Spark SQL on pyice tables
    that is not implemented.
    """
    return _Parser(sql, is_pyice_catalog, default_catalog, is_temp_view, start).parse()


class _Parser(DdlParsing):
    """One parse_statement call: the text, the catalog knowledge and the conversions."""


    def __init__(self, sql: str, is_pyice_catalog: Callable[[str], bool], default_catalog: str,
                 is_temp_view: Callable[[str], bool] | None, start: SqlPosition | None):
        self.sql = sql
        self.is_pyice_catalog = is_pyice_catalog
        self.default_catalog = default_catalog
        self.default_is_pyice = is_pyice_catalog(default_catalog)
        self.is_temp_view = is_temp_view or (lambda name: False)
        self.origin = start or SqlPosition(1, 1)
        self.cte_names: set[str] = set()

    def parse(self) -> Statement:
        try:
            trees = [t for t in DIALECT.parse(self.sql) if t is not None]
        except SqlglotParseError as e:
            if self._may_be_ours():
                raise self._from_sqlglot(e) from None
            return PassThrough(self.sql)
        except TokenError as e:
            if self._may_be_ours():
                raise ParseError(f"cannot tokenize statement: {e}", position=self.origin, sql=self.sql) from None
            return PassThrough(self.sql)
        if len(trees) != 1:
            raise ParseError("expected exactly one statement", position=self.origin, sql=self.sql)
        tree = trees[0]
        for node in tree.walk():
            if "start" in node.meta:
                node.meta[POSITION_META] = SqlPosition.of_offset(self.sql, node.meta["start"], self.origin)
        return self.convert(tree)

    def convert(self, tree: exp.Expression) -> Statement:
        if isinstance(tree, ExplainStatement):
            inner = self.convert(tree.this)
            return PassThrough(self.sql) if isinstance(inner, PassThrough) else Explain(inner, tree.args.get("mode"))
        if isinstance(tree, exp.Command):
            return self._command(tree)
        self.cte_names = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        target = _target_of(tree)
        for table in tree.find_all(exp.Table):
            if table is not target:
                ref = self.read_ref(table)
                if ref is not None:
                    table.meta[TABLE_REF_META] = ref
        handler = _HANDLERS.get(type(tree))
        statement = handler(self, tree) if handler else None
        if statement is not None:
            return statement
        reads = tables_read(tree)
        if not reads:
            return PassThrough(self.sql)
        if isinstance(tree, (exp.Query, exp.Insert, exp.Create, exp.Cache, exp.Uncache, exp.Merge, exp.Update,
                             exp.Delete)):
            return Query(tree, reads)
        keyword = self.sql.split(None, 1)[0].upper()
        raise self.unsupported(f"{keyword} on pyice table {reads[0].qualified_name}", tree)

    def error(self, message: str, node: exp.Expression | None) -> ParseError:
        position = position_of(node) if node is not None else None
        return ParseError(message, position=position or self.origin, sql=self.sql)

    def unsupported(self, what: str, node: exp.Expression | None) -> UnsupportedError:
        position = position_of(node) if node is not None else None
        return UnsupportedError(f"{what} is not supported", position=position or self.origin, sql=self.sql)

    def _from_sqlglot(self, error: SqlglotParseError) -> ParseError:
        detail = error.errors[0] if error.errors else {}
        description = str(detail.get("description") or error)
        highlight = str(detail.get("highlight") or "")
        if description.startswith("Required keyword") or description.startswith("Expected"):
            description = "incomplete expression"
        elif description.startswith("Invalid expression"):
            description = "unexpected token"
        message = f"syntax error: {description}" + (f" at '{highlight}'" if highlight else "")
        position = self.origin
        if detail.get("line"):
            # sqlglot points at the last character of the offending token.
            line, column = int(detail["line"]), int(detail["col"])
            if "\n" not in highlight:
                column = max(1, column - len(highlight) + 1)
            offset = _offset_of(self.sql, line, column)
            position = SqlPosition.of_offset(self.sql, offset, self.origin)
        return ParseError(message, position=position, sql=self.sql)

    def _may_be_ours(self) -> bool:
        """For text sqlglot cannot parse: could it be about a pyice table?"""
        first = re.match(r"\s*(\(|[A-Za-z]+)", self.sql)
        if first and self.default_is_pyice and first.group(1).upper() in _OUR_KEYWORDS:
            return True
        return any(self.is_pyice_catalog(_unquote(m.group(1)))
                   for m in re.finditer(rf"({_NAME})\s*\.", self.sql))

    def _command(self, tree: exp.Command) -> Statement:
        """Statements sqlglot keeps opaque: Spark's, unless they name a pyice table."""
        text = self.sql
        for m in re.finditer(rf"\b(?:TABLE|TBLPROPERTIES)\s+({_NAME}(?:\s*\.\s*{_NAME})*)", text, re.IGNORECASE):
            parts = [_unquote(p) for p in re.findall(_NAME, m.group(1))]
            if self.resolve(parts) is not None:
                raise UnsupportedError(
                    f"{tree.name.upper()} statement on pyice table {'.'.join(parts)} is not supported",
                    position=self.origin, sql=self.sql)
        if any(self.is_pyice_catalog(_unquote(m.group(1))) for m in re.finditer(rf"({_NAME})\s*\.", text)):
            raise UnsupportedError(f"{tree.name.upper()} statement on a pyice catalog is not supported",
                                   position=self.origin, sql=self.sql)
        return PassThrough(self.sql)

    def resolve(self, parts: list[str]) -> tuple[str, tuple[str, ...], str, str | None] | None:
        """(catalog, namespace, name, metadata table) of a pyice table name; None for Spark's."""
        if not parts or parts[0].lower() == SPARK_SESSION_CATALOG and len(parts) > 1:
            return None
        if len(parts) >= 2 and self.is_pyice_catalog(parts[0]):
            catalog, rest = parts[0], parts[1:]
        elif len(parts) <= 2 or (len(parts) == 3 and (parts[2].lower() in METADATA_TABLES
                                                       or _REF_SELECTOR.fullmatch(parts[2]))):
            if not self.default_is_pyice:
                return None
            if len(parts) == 1 and (parts[0].lower() in self.cte_names or self.is_temp_view(parts[0])):
                return None
            if len(parts) == 2 and parts[0].lower() in _FILE_SOURCES and re.search(r"[/:]", parts[1]):
                return None
            catalog, rest = self.default_catalog, parts
        else:
            return None
        metadata = None
        if len(rest) >= 3 and (rest[-1].lower() in METADATA_TABLES or _REF_SELECTOR.fullmatch(rest[-1])):
            metadata, rest = rest[-1], rest[:-1]
            metadata = metadata.lower() if metadata.lower() in METADATA_TABLES else metadata
        return catalog, tuple(rest[:-1]), rest[-1], metadata

    def resolve_namespace(self, parts: list[str]) -> tuple[str, tuple[str, ...]] | None:
        """(catalog, namespace) of a pyice namespace name; None for Spark's."""
        if parts and parts[0].lower() == SPARK_SESSION_CATALOG:
            return None
        if parts and self.is_pyice_catalog(parts[0]):
            return parts[0], tuple(parts[1:])
        if len(parts) <= 1 and self.default_is_pyice:
            return self.default_catalog, tuple(parts)
        return None

    def read_ref(self, table: exp.Table) -> TableRef | None:
        """The TableRef of a table a statement reads or writes; None when it is not a pyice table."""
        if not isinstance(table.this, (exp.Identifier, exp.Dot)):
            return None  # a table function such as range(10)
        resolved = self.resolve([p.name for p in table.parts])
        if resolved is None:
            return None
        catalog, namespace, name, metadata = resolved
        snapshot_id = as_of = ref = ref_kind = None
        selector = _REF_SELECTOR.fullmatch(metadata) if metadata else None
        if selector:
            metadata, ref_kind, ref = None, selector.group(1).lower(), selector.group(2)
        version = table.args.get("version")
        if version is not None and selector:
            raise self.error(f"cannot time travel {'.'.join(p.name for p in table.parts)}: it already "
                             f"names {ref_kind} {ref!r}", table)
        if version is not None:
            value = version.expression
            if version.name == "VERSION":
                text = value.name if isinstance(value, exp.Literal) else None
                if text is None:
                    raise self.error("VERSION AS OF needs a snapshot id or a branch or tag name", value)
                if re.fullmatch(r"\d+", text):
                    snapshot_id = int(text)
                else:
                    ref = text
            elif isinstance(value, exp.Literal):
                as_of = value.name
            else:
                as_of = value.sql(dialect=DIALECT)
        return TableRef(catalog, namespace, name, table.alias or None, metadata, snapshot_id, as_of, ref,
                        position_of(table), ref_kind)

    def target_ref(self, table: exp.Expression | None) -> TableRef | None:
        """A table a statement writes: a plain table or one of its branches (no metadata table,
        tag or time travel)."""
        if not isinstance(table, exp.Table):
            return None
        ref = self.read_ref(table)
        if ref is not None and ref.metadata_table:
            raise self.error(f"cannot write to metadata table {ref.qualified_name}.{ref.metadata_table}", table)
        if ref is not None and ref.ref_kind == "tag":
            raise self.error(f"cannot write to tag {ref.ref!r} of {ref.qualified_name}: tags are read-only "
                             "(write to a branch, `branch_<name>`)", table)
        if ref is not None and (ref.snapshot_id or ref.as_of_timestamp or (ref.ref and not ref.branch)):
            raise self.error(f"cannot write to a time-travel version of {ref.qualified_name}", table)
        return ref

    def query(self, expression: exp.Expression) -> Query:
        return Query(expression, tables_read(expression))

    def insert(self, tree: exp.Insert) -> Statement | None:
        node = tree.this
        columns = None
        if isinstance(node, exp.Schema):
            columns = tuple(c.name for c in node.expressions)
            node = node.this
        table = self.target_ref(node)
        if table is None:
            return None
        if tree.args.get("exists"):
            raise self.unsupported("INSERT ... IF NOT EXISTS", tree)
        by_name = bool(tree.args.get("by_name"))
        replace_where = tree.args.get("where")
        if by_name and columns is not None:
            raise self.error("INSERT ... BY NAME takes no column list", tree)
        if replace_where is not None and (tree.args.get("overwrite") or node.args.get("partition") is not None):
            raise self.error("INSERT INTO ... REPLACE WHERE takes no OVERWRITE or PARTITION clause", tree)
        static: dict[str, Any] = {}
        dynamic: list[str] = []
        partition = node.args.get("partition")
        for item in partition.expressions if partition is not None else []:
            if isinstance(item, exp.EQ):
                static[item.this.name] = self.literal(item.expression)
            else:
                dynamic.append(item.name)
        source = tree.expression
        if not isinstance(source, (exp.Query, exp.Values)):
            raise self.error("INSERT needs VALUES or a query", tree)
        return Insert(table, columns, self.query(source), bool(tree.args.get("overwrite")), static, by_name,
                      replace_where, tuple(dynamic))

    def update(self, tree: exp.Update) -> Statement | None:
        table = self.target_ref(tree.this)
        if table is None:
            return None
        for clause in ("from_", "order", "limit", "returning"):
            if tree.args.get(clause) is not None:
                raise self.unsupported(f"UPDATE with {clause.rstrip('_').upper()}", tree.args[clause])
        if tree.this.args.get("joins"):
            raise self.unsupported("UPDATE with JOIN", tree.this)
        assignments = self.assignments(tree.expressions, table, tree)
        where = tree.args.get("where")
        return Update(table, assignments, where.this if where is not None else None)

    def delete(self, tree: exp.Delete) -> Statement | None:
        table = self.target_ref(tree.this)
        if table is None:
            return None
        if tree.args.get("using"):
            raise self.unsupported("DELETE ... USING", tree)
        where = tree.args.get("where")
        return Delete(table, where.this if where is not None else None)

    def merge(self, tree: exp.Merge) -> Statement | None:
        target = self.target_ref(tree.this)
        if target is None:
            return None
        using = tree.args.get("using")
        source: TableRef | Query
        if isinstance(using, exp.Table):
            ref = using.meta.get(TABLE_REF_META)
            source_alias = using.alias or using.name
            if ref is not None:
                source = ref
            else:
                plain = using.copy()
                plain.set("alias", None)
                source = self.query(exp.select("*").from_(plain))
        elif isinstance(using, exp.Subquery):
            source, source_alias = self.query(using.this), using.alias or None
        elif isinstance(using, exp.Values):  # USING (VALUES ...) s: columns col1, col2, ...
            plain = using.copy()
            plain.set("alias", None)
            source, source_alias = self.query(exp.select("*").from_(plain)), using.alias or None
        else:
            raise self.error("MERGE needs a source table or subquery after USING", tree)
        ctes = tree.args.get("with_")
        if ctes is not None and isinstance(source, Query):  # WITH w AS (...) MERGE ... USING w
            query = source.expression.copy()
            inner = query.args.get("with_")
            query.set("with_", exp.With(expressions=[c.copy() for c in ctes.expressions]
                                        + (list(inner.expressions) if inner is not None else []),
                                        recursive=ctes.args.get("recursive")))
            source = self.query(query)
        on = tree.args.get("on")
        if not isinstance(on, exp.Expression):
            raise self.error("MERGE needs an ON condition", tree)
        whens = tree.args.get("whens")
        clauses = [self.merge_clause(w, target) for w in (whens.expressions if whens else [])]
        if not clauses:
            raise self.error("MERGE needs at least one WHEN clause", tree)
        self.check_clause_order(whens.expressions)
        return Merge(target, source, source_alias, on, tuple(clauses), bool(tree.meta.get(SCHEMA_EVOLUTION_META)))

    def merge_clause(self, when: exp.When, target: TableRef) -> MergeClause:
        condition = when.args.get("condition")
        then = when.args.get("then")
        position = position_of(when)
        if when.args.get("matched"):
            if isinstance(then, exp.Update):
                if isinstance(then.expressions[0], exp.Star):
                    return MatchedUpdate(condition, (), True, position)
                return MatchedUpdate(condition, self.assignments(then.expressions, target, when), False, position)
            return MatchedDelete(condition, position)
        if when.args.get("source"):
            if isinstance(then, exp.Update):
                return NotMatchedBySourceUpdate(condition, self.assignments(then.expressions, target, when), position)
            return NotMatchedBySourceDelete(condition, position)
        if isinstance(then.this, exp.Star):
            return NotMatchedInsert(condition, (), (), True, position)
        columns = tuple(self.column_name(c, target) for c in then.this.expressions)
        values = tuple(then.expression.expressions) if then.expression is not None else ()
        if len(columns) != len(values):
            raise self.error(f"INSERT lists {len(columns)} columns but {len(values)} values", when)
        return NotMatchedInsert(condition, columns, values, False, position)

    def check_clause_order(self, whens: list[exp.When]) -> None:
        """Spark's rule: of each kind of clause, only the last may omit its condition."""
        names = {(True, False): "WHEN MATCHED", (False, False): "WHEN NOT MATCHED",
                 (False, True): "WHEN NOT MATCHED BY SOURCE"}
        for i, when in enumerate(whens):
            kind = (bool(when.args.get("matched")), bool(when.args.get("source")))
            later = [w for w in whens[i + 1:] if (bool(w.args.get("matched")), bool(w.args.get("source"))) == kind]
            if when.args.get("condition") is None and later:
                raise self.error(f"only the last {names[kind]} clause may omit its condition", when)

    def assignments(self, items: list[exp.Expression], table: TableRef, node: exp.Expression) -> tuple[Assignment, ...]:
        out = []
        for item in items:
            if not isinstance(item, exp.EQ):
                raise self.error("expected `column = expression`", item or node)
            out.append((self.column_path(item.this, table), item.expression))
        return tuple(out)

    def column_path(self, column: exp.Expression, table: TableRef) -> tuple[str, ...]:
        """A target column path without the table's alias or name in front."""
        path = path_of(column)
        prefixes = [(table.alias,)] if table.alias else [
            tuple(p for p in (table.catalog, *table.namespace, table.name) if p)[-n:]
            for n in range(len(table.namespace) + 2, 0, -1)
        ]
        for prefix in prefixes:
            head = tuple(p.lower() for p in path[:len(prefix)])
            if len(path) > len(prefix) and head == tuple(p.lower() for p in prefix):
                return path[len(prefix):]
        return path

    def column_name(self, column: exp.Expression, table: TableRef) -> str:
        path = self.column_path(column, table)
        if len(path) != 1:
            raise self.error("INSERT names top-level columns only", column)
        return path[0]

    def literal(self, node: exp.Expression) -> Any:
        """A literal expression as a Python value: str, int, float, Decimal, bool, None, date,
        datetime, list (array(...)) or dict (map(...))."""
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.name
            text = node.name
            return int(text) if re.fullmatch(r"\d+", text) else float(text)
        if isinstance(node, exp.Neg):
            return -self.literal(node.this)
        if isinstance(node, exp.Boolean):
            return node.this
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.Array):
            return [self.literal(e) for e in node.expressions]
        if isinstance(node, exp.VarMap):
            keys, values = node.args["keys"].expressions, node.args["values"].expressions
            return {self.literal(k): self.literal(v) for k, v in zip(keys, values)}
        if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
            target = node.to.this
            text = node.this.name
            try:
                if target == exp.DataType.Type.DATE:
                    return datetime.date.fromisoformat(text)
                if target in exp.DataType.TEMPORAL_TYPES:
                    return datetime.datetime.fromisoformat(text)
                if target == exp.DataType.Type.DECIMAL:
                    return Decimal(text)
                if target in exp.DataType.INTEGER_TYPES:
                    return int(text)
                if target in exp.DataType.REAL_TYPES:
                    return float(text)
            except ValueError:
                raise self.error(f"invalid {target.value.lower()} literal '{text}'", node) from None
        raise self.error(f"expected a literal, got {node.sql(dialect=DIALECT)}", node)


_HANDLERS: dict[type, Callable[[_Parser, Any], Statement | None]] = {
    exp.Create: _Parser.create,
    exp.Drop: _Parser.drop,
    ShowObjects: _Parser.show,
    exp.Describe: _Parser.describe,
    exp.Use: _Parser.use,
    exp.Insert: _Parser.insert,
    exp.Update: _Parser.update,
    exp.Delete: _Parser.delete,
    exp.Merge: _Parser.merge,
    exp.Alter: _Parser.alter,
    CallProcedure: _Parser.call,
}


def _target_of(tree: exp.Expression) -> exp.Table | None:
    """The table a statement writes or defines (not one it reads)."""
    node = (tree.args.get("tables") or [None])[0] if isinstance(tree, exp.Drop) else tree.this
    if isinstance(node, exp.Schema):
        node = node.this
    if isinstance(tree, (exp.Create, exp.Drop, exp.Insert, exp.Merge, exp.Update, exp.Delete, exp.Alter, exp.Describe,
                         exp.Use, exp.Cache)) and isinstance(node, exp.Table) and not _caches_table(tree):
        return node
    return None


def _caches_table(tree: exp.Expression) -> bool:
    """`CACHE TABLE <table>` reads its table (`CACHE TABLE <name> AS SELECT` defines one)."""
    return isinstance(tree, exp.Cache) and tree.args.get("expression") is None


def _unquote(name: str) -> str:
    return name[1:-1].replace("``", "`") if name.startswith("`") else name


def _offset_of(text: str, line: int, column: int) -> int:
    """The character offset of a 1-based line and column."""
    offset = 0
    for _ in range(line - 1):
        newline = text.find("\n", offset)
        if newline < 0:
            break
        offset = newline + 1
    return offset + column - 1
