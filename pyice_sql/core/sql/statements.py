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
"""
from __future__ import annotations

import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError

from pyice_sql.core.errors import ParseError, SqlPosition, UnsupportedError
from pyice_sql.core.sql.dialect import (
    AddPartitionField, AlterColumnAction, CallProcedure, DropPartitionField, DropRef, ExplainStatement,
    IdentifierFields, PyIceSpark, RefAction, ReplacePartitionField, ShowObjects, UnsetTableProperties,
)

METADATA_TABLES = frozenset({
    "history", "metadata_log_entries", "snapshots", "entries", "files", "data_files",
    "delete_files", "manifests", "partitions", "position_deletes", "refs", "all_data_files",
    "all_delete_files", "all_files", "all_manifests", "all_entries",
})
SPARK_SESSION_CATALOG = "spark_catalog"
# `parquet.`/path`` reads files directly: never a catalog table.
_FILE_SOURCES = frozenset({"parquet", "orc", "json", "csv", "avro", "text", "binaryfile", "delta"})
_TRANSFORMS = {
    "bucket": "bucket", "truncate": "truncate", "years": "year", "year": "year",
    "months": "month", "month": "month", "days": "day", "day": "day", "date": "day",
    "hours": "hour", "hour": "hour", "date_hour": "hour",
}
_REF_KEY = "pyice_table"
_POSITION_KEY = "pyice_position"
_DIALECT = PyIceSpark()
# Statements whose text may name a pyice table even when sqlglot cannot parse them.
_OUR_KEYWORDS = frozenset({
    "SELECT", "WITH", "INSERT", "MERGE", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "DESC",
    "DESCRIBE", "SHOW", "CALL", "EXPLAIN", "VALUES", "FROM", "TABLE", "REPLACE", "(",
})
_NAME = r"(?:`(?:[^`]|``)+`|[A-Za-z_][A-Za-z0-9_]*)"
# Iceberg's Spark catalog reads `db.t.branch_b` / `db.t.tag_t` as table t at branch b / tag t.
_REF_SELECTOR = re.compile(r"(branch|tag)_(.+)", re.IGNORECASE | re.DOTALL)
_TIME_UNIT_MS = {"DAYS": 86_400_000, "HOURS": 3_600_000, "MINUTES": 60_000}


@dataclass(frozen=True)
class TableRef:
    """A table in a pyice catalog as a statement names it (catalog always resolved by the parser).

    `snapshot_id`/`ref` come from VERSION AS OF (a number, or a branch/tag name) and
    `as_of_timestamp` from TIMESTAMP AS OF: a string literal's text, else the expression's SQL.
    A `branch_<b>` / `tag_<t>` name part sets `ref` and `ref_kind` ('branch' or 'tag'); a branch
    named so is also a write target (the write commits to that branch).
    """

    catalog: str | None
    namespace: tuple[str, ...]
    name: str
    alias: str | None = None
    metadata_table: str | None = None
    snapshot_id: int | None = None
    as_of_timestamp: str | None = None
    ref: str | None = None
    position: SqlPosition | None = field(default=None, compare=False)
    ref_kind: str | None = None

    @property
    def branch(self) -> str | None:
        """The branch a write to this table commits to (None: main)."""
        return self.ref if self.ref_kind == "branch" else None

    @property
    def qualified_name(self) -> str:
        """`catalog.namespace.name` (without metadata table), for messages."""
        return ".".join(p for p in (self.catalog, *self.namespace, self.name) if p)


class ColumnSpec(NamedTuple):
    """A column of CREATE TABLE; `type` is Spark type text such as `MAP<STRING, INT>`."""

    name: str
    type: str
    not_null: bool = False
    comment: str | None = None


class PartitionTransform(NamedTuple):
    """An Iceberg partition transform: identity, bucket, truncate, year, month, day or hour.

    `column` is a dotted source path, `arg` the bucket count or truncate width.
    """

    transform: str
    column: str
    arg: int | None = None


class NewColumn(NamedTuple):
    """A column of ALTER TABLE ADD COLUMNS; a path of several parts adds a nested field."""

    path: tuple[str, ...]
    type: str
    not_null: bool = False
    comment: str | None = None
    first: bool = False
    after: str | None = None


Assignment = tuple[tuple[str, ...], exp.Expression]


class Statement:
    """Base of every parsed statement."""


@dataclass(frozen=True)
class Query(Statement):
    """A statement Spark runs itself once the pyice tables it reads are replaced by temp views:
    a SELECT, or e.g. an INSERT into a Spark table from a pyice table."""

    expression: exp.Expression
    tables: tuple[TableRef, ...]


@dataclass(frozen=True)
class PassThrough(Statement):
    """Not about pyice tables: give the text to spark.sql unchanged."""

    sql: str


@dataclass(frozen=True)
class CreateTable(Statement):
    table: TableRef
    columns: tuple[ColumnSpec, ...]
    partitioning: tuple[PartitionTransform, ...]
    properties: dict[str, str]
    if_not_exists: bool = False
    as_select: Query | None = None
    replace: bool = False
    location: str | None = None
    comment: str | None = None


@dataclass(frozen=True)
class DropTable(Statement):
    table: TableRef
    if_exists: bool = False
    purge: bool = False


@dataclass(frozen=True)
class CreateNamespace(Statement):
    """CREATE NAMESPACE; COMMENT and LOCATION arrive as the `comment`/`location` properties."""

    catalog: str
    namespace: tuple[str, ...]
    if_not_exists: bool = False
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DropNamespace(Statement):
    catalog: str
    namespace: tuple[str, ...]
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class ShowNamespaces(Statement):
    """Namespaces directly under `parent` (() for the catalog's top level)."""

    catalog: str
    parent: tuple[str, ...]
    pattern: str | None = None


@dataclass(frozen=True)
class ShowTables(Statement):
    """Tables of `namespace` (() for the current namespace)."""

    catalog: str
    namespace: tuple[str, ...]
    pattern: str | None = None


@dataclass(frozen=True)
class Describe(Statement):
    table: TableRef
    extended: bool = False


@dataclass(frozen=True)
class UseNamespace(Statement):
    """USE: `catalog` is None when the first part is not a pyice catalog; the name is then a
    namespace of the current catalog or a Spark catalog's name, which the session decides."""

    catalog: str | None
    namespace: tuple[str, ...]


@dataclass(frozen=True)
class AlterTableAddColumns(Statement):
    table: TableRef
    columns: tuple[NewColumn, ...]


@dataclass(frozen=True)
class AlterTableDropColumns(Statement):
    table: TableRef
    columns: tuple[tuple[str, ...], ...]
    if_exists: bool = False


@dataclass(frozen=True)
class AlterTableRenameColumn(Statement):
    table: TableRef
    column: tuple[str, ...]
    new_name: str


@dataclass(frozen=True)
class AlterTableAlterColumn(Statement):
    """One change to a column: its type, comment, nullability (not_null) or position."""

    table: TableRef
    column: tuple[str, ...]
    new_type: str | None = None
    comment: str | None = None
    not_null: bool | None = None
    first: bool = False
    after: str | None = None


@dataclass(frozen=True)
class AlterTableSetProperties(Statement):
    table: TableRef
    properties: dict[str, str]


@dataclass(frozen=True)
class AlterTableUnsetProperties(Statement):
    table: TableRef
    keys: tuple[str, ...]
    if_exists: bool = False


@dataclass(frozen=True)
class AlterTableAddPartitionField(Statement):
    table: TableRef
    field: PartitionTransform
    name: str | None = None


@dataclass(frozen=True)
class AlterTableDropPartitionField(Statement):
    """`field` is an identity transform when the statement names a column or a field name."""

    table: TableRef
    field: PartitionTransform


@dataclass(frozen=True)
class AlterTableReplacePartitionField(Statement):
    table: TableRef
    old: PartitionTransform
    new: PartitionTransform
    name: str | None = None


@dataclass(frozen=True)
class AlterTableRename(Statement):
    """RENAME TO: `new_namespace` is () when the new name keeps the table's namespace."""

    table: TableRef
    new_namespace: tuple[str, ...]
    new_name: str


@dataclass(frozen=True)
class AlterTableCreateOrReplaceRef(Statement):
    """CREATE [OR REPLACE] / REPLACE BRANCH|TAG, as Iceberg's Spark extensions define it.

    `kind` is 'branch' or 'tag'; the retention values are in milliseconds (min_snapshots_to_keep a
    count), None when the statement does not set them.
    """

    table: TableRef
    kind: str
    name: str
    create: bool
    replace: bool
    if_not_exists: bool = False
    snapshot_id: int | None = None
    max_ref_age_ms: int | None = None
    min_snapshots_to_keep: int | None = None
    max_snapshot_age_ms: int | None = None
    position: SqlPosition | None = field(default=None, compare=False)


@dataclass(frozen=True)
class AlterTableIdentifierFields(Statement):
    """SET IDENTIFIER FIELDS (replaces the set) or DROP IDENTIFIER FIELDS (removes from it)."""

    table: TableRef
    fields: tuple[tuple[str, ...], ...]
    drop: bool = False


@dataclass(frozen=True)
class AlterTableDropRef(Statement):
    table: TableRef
    kind: str
    name: str
    if_exists: bool = False
    position: SqlPosition | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Insert(Statement):
    """INSERT INTO/OVERWRITE; `static_partition` holds PARTITION (p = literal) values."""

    table: TableRef
    columns: tuple[str, ...] | None
    query: Query
    overwrite: bool = False
    static_partition: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MatchedUpdate:
    condition: exp.Expression | None
    assignments: tuple[Assignment, ...]
    star: bool = False
    position: SqlPosition | None = field(default=None, compare=False)


@dataclass(frozen=True)
class MatchedDelete:
    condition: exp.Expression | None
    position: SqlPosition | None = field(default=None, compare=False)


@dataclass(frozen=True)
class NotMatchedInsert:
    condition: exp.Expression | None
    columns: tuple[str, ...]
    values: tuple[exp.Expression, ...]
    star: bool = False
    position: SqlPosition | None = field(default=None, compare=False)


@dataclass(frozen=True)
class NotMatchedBySourceUpdate:
    condition: exp.Expression | None
    assignments: tuple[Assignment, ...]
    position: SqlPosition | None = field(default=None, compare=False)


@dataclass(frozen=True)
class NotMatchedBySourceDelete:
    condition: exp.Expression | None
    position: SqlPosition | None = field(default=None, compare=False)


MergeClause = MatchedUpdate | MatchedDelete | NotMatchedInsert | NotMatchedBySourceUpdate | NotMatchedBySourceDelete


@dataclass(frozen=True)
class Merge(Statement):
    """MERGE INTO; `source_alias` is how ON and the clauses name the source (alias or table name).

    A source table outside pyice catalogs arrives as a Query `SELECT * FROM name`.
    """

    target: TableRef
    source: TableRef | Query
    source_alias: str | None
    on: exp.Expression
    clauses: tuple[MergeClause, ...]


@dataclass(frozen=True)
class Update(Statement):
    table: TableRef
    assignments: tuple[Assignment, ...]
    where: exp.Expression | None = None


@dataclass(frozen=True)
class Delete(Statement):
    table: TableRef
    where: exp.Expression | None = None


@dataclass(frozen=True)
class Call(Statement):
    """CALL catalog.namespace.procedure(args): arguments as Python values."""

    catalog: str
    namespace: tuple[str, ...]
    procedure: str
    args: tuple[Any, ...] = ()
    named: dict[str, Any] = field(default_factory=dict)
    position: SqlPosition | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Explain(Statement):
    statement: Statement
    mode: str | None = None


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


def tables_read(expression: exp.Expression) -> tuple[TableRef, ...]:
    """The pyice tables an expression reads, in order of appearance, without repeats."""
    refs: dict[TableRef, None] = {}
    for table in expression.find_all(exp.Table):
        ref = table.meta.get(_REF_KEY)
        if ref is not None:
            refs.setdefault(ref)
    return tuple(refs)


def table_ref_of(table: exp.Table) -> TableRef | None:
    """The pyice TableRef the parser attached to a table node, or None for Spark's tables."""
    return table.meta.get(_REF_KEY)


def replace_tables(expression: exp.Expression, view_name: Callable[[TableRef], str]) -> exp.Expression:
    """A copy of `expression` reading temp view `view_name(ref)` wherever it read pyice table `ref`.

    The view keeps the table's alias (or its name when it had none), and column qualifiers
    spelled with the table's full name (`db.t.col`) are shortened to it.
    """
    copy = expression.copy()
    full_names: list[tuple[str, ...]] = []
    for table in list(copy.find_all(exp.Table)):
        ref = table.meta.get(_REF_KEY)
        if ref is None:
            continue
        alias = table.args.get("alias")
        if alias is None:
            alias = exp.TableAlias(this=exp.to_identifier(ref.name))
            full_names.append(tuple(p.name.lower() for p in table.parts))
        table.replace(exp.Table(this=exp.to_identifier(view_name(ref)), alias=alias))
    for column in copy.find_all(exp.Column):
        qualifier = tuple(p.name.lower() for p in column.parts[:-1])
        if len(qualifier) >= 2 and any(name[-len(qualifier):] == qualifier for name in full_names):
            column.set("catalog", None)
            column.set("db", None)
    return copy


def position_of(node: exp.Expression) -> SqlPosition | None:
    """Where `node` starts in the script (or statement) it was parsed from, if known."""
    positions = [n.meta[_POSITION_KEY] for n in node.walk() if _POSITION_KEY in n.meta]
    return min(positions) if positions else None


class _Parser:
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

    # ---- entry -------------------------------------------------------------------------

    def parse(self) -> Statement:
        try:
            trees = [t for t in _DIALECT.parse(self.sql) if t is not None]
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
                node.meta[_POSITION_KEY] = SqlPosition.of_offset(self.sql, node.meta["start"], self.origin)
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
                    table.meta[_REF_KEY] = ref
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

    # ---- errors ------------------------------------------------------------------------

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

    # ---- names -------------------------------------------------------------------------

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
                as_of = value.sql(dialect=_DIALECT)
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

    # ---- statements --------------------------------------------------------------------

    def create(self, tree: exp.Create) -> Statement | None:
        kind = (tree.args.get("kind") or "").upper()
        if kind in ("DATABASE", "SCHEMA", "NAMESPACE"):
            resolved = self.resolve_namespace([p.name for p in tree.this.parts])
            if resolved is None:
                return None
            properties = {_text(p.this): _text(p.args["value"]) for p in _properties(tree)}
            return CreateNamespace(resolved[0], resolved[1], bool(tree.args.get("exists")), properties)
        schema = tree.this if isinstance(tree.this, exp.Schema) else None
        table_node = schema.this if schema is not None else tree.this
        if kind == "VIEW":
            temporary = any(isinstance(p, exp.TemporaryProperty) for p in _properties(tree))
            if not temporary and self.target_ref(table_node) is not None:
                raise self.unsupported("a view in a pyice catalog", tree)
            return None
        if kind != "TABLE":
            return None
        table = self.target_ref(table_node)
        if table is None:
            return None
        columns = [self.column_spec(c) for c in (schema.expressions if schema is not None else [])]
        partitioning: list[PartitionTransform] = []
        properties: dict[str, str] = {}
        location = comment = None
        for prop in _properties(tree):
            if isinstance(prop, exp.FileFormatProperty):
                if prop.name.lower() != "iceberg":
                    raise self.unsupported(f"USING {prop.name} in a pyice catalog (only iceberg)", prop)
            elif isinstance(prop, exp.PartitionedByProperty):
                for term in prop.this.expressions if isinstance(prop.this, exp.Schema) else [prop.this]:
                    if isinstance(term, exp.ColumnDef):  # Hive style: a partition column defined here
                        columns.append(self.column_spec(term))
                        partitioning.append(PartitionTransform("identity", term.name))
                    else:
                        partitioning.append(self.transform(term))
            elif isinstance(prop, exp.SchemaCommentProperty):
                comment = _text(prop.this)
            elif isinstance(prop, exp.LocationProperty):
                location = _text(prop.this)
            elif type(prop) is exp.Property:
                properties[_text(prop.this)] = _text(prop.args["value"])
            else:
                raise self.unsupported(f"{prop.sql(dialect=_DIALECT)} for a pyice table", prop)
        as_select = tree.expression
        if as_select is not None and not isinstance(as_select, exp.Query):
            raise self.error("CREATE TABLE ... AS needs a query", as_select)
        if as_select is None and not columns:
            raise self.error(f"CREATE TABLE {table.qualified_name} needs columns or AS SELECT", tree)
        return CreateTable(table, tuple(columns), tuple(partitioning), properties,
                           bool(tree.args.get("exists")), self.query(as_select) if as_select else None,
                           bool(tree.args.get("replace")), location, comment)

    def column_spec(self, column: exp.Expression) -> ColumnSpec:
        if not isinstance(column, exp.ColumnDef) or column.args.get("kind") is None:
            raise self.error("expected a column definition `name type`", column)
        not_null, comment = self.constraints(column)
        return ColumnSpec(column.name, column.args["kind"].sql(dialect=_DIALECT), not_null, comment)

    def constraints(self, column: exp.ColumnDef) -> tuple[bool, str | None]:
        not_null, comment = False, None
        for constraint in column.args.get("constraints") or []:
            kind = constraint.args.get("kind")
            if isinstance(kind, exp.NotNullColumnConstraint):
                not_null = not kind.args.get("allow_null")
            elif isinstance(kind, exp.CommentColumnConstraint):
                comment = _text(kind.this)
            else:
                raise self.unsupported(f"column constraint {constraint.sql(dialect=_DIALECT)}", constraint)
        return not_null, comment

    def transform(self, term: exp.Expression) -> PartitionTransform:
        """bucket(16, id), truncate(4, s), days(ts), ... or a bare column, as Iceberg names them."""
        if isinstance(term, (exp.Column, exp.Identifier, exp.Dot)):
            return PartitionTransform("identity", ".".join(_path(term)))
        if isinstance(term, (exp.PartitionedByBucket, exp.PartitionByTruncate)):
            name = "bucket" if isinstance(term, exp.PartitionedByBucket) else "truncate"
            args = [term.this, term.expression]
        elif isinstance(term, exp.Func):
            name = (term.name if isinstance(term, exp.Anonymous) else term.sql_name()).lower()
            args = list(term.args.get("expressions") or []) if isinstance(term, exp.Anonymous) else [term.this]
        else:
            raise self.error("expected a partition transform", term)
        transform = _TRANSFORMS.get(name)
        columns = [a.find(exp.Column) or a for a in args if not isinstance(a, exp.Literal)]
        numbers = [int(a.name) for a in args if isinstance(a, exp.Literal) and a.is_int]
        has_arg = transform in ("bucket", "truncate")
        if transform is None or len(columns) != 1 or len(numbers) != (1 if has_arg else 0):
            raise self.error(f"unknown partition transform {term.sql(dialect=_DIALECT)}", term)
        return PartitionTransform(transform, ".".join(_path(columns[0])), numbers[0] if has_arg else None)

    def drop(self, tree: exp.Drop) -> Statement | None:
        kind = (tree.args.get("kind") or "").upper()
        node = (tree.args.get("tables") or [None])[0]
        if kind in ("DATABASE", "SCHEMA", "NAMESPACE") and isinstance(node, exp.Table):
            resolved = self.resolve_namespace([p.name for p in node.parts])
            if resolved is None:
                return None
            return DropNamespace(resolved[0], resolved[1], bool(tree.args.get("exists")),
                                 bool(tree.args.get("cascade")))
        if kind != "TABLE":
            return None
        table = self.target_ref(node)
        if table is None:
            return None
        return DropTable(table, bool(tree.args.get("exists")), bool(tree.args.get("purge")))

    def show(self, tree: ShowObjects) -> Statement | None:
        parent = tree.args.get("parent")
        parts = [p.name for p in parent.expressions] if parent is not None else []
        resolved = self.resolve_namespace(parts)
        if resolved is None:
            return None
        pattern = _text(tree.args["pattern"]) if tree.args.get("pattern") else None
        if tree.name == "TABLES":
            return ShowTables(resolved[0], resolved[1], pattern)
        return ShowNamespaces(resolved[0], resolved[1], pattern)

    def describe(self, tree: exp.Describe) -> Statement | None:
        kind = (tree.args.get("kind") or "TABLE").upper()
        if kind != "TABLE":
            node = tree.this
            if isinstance(node, exp.Table) and self.resolve_namespace([p.name for p in node.parts]):
                raise self.unsupported(f"DESCRIBE {kind} on a pyice namespace", tree)
            return None
        table = self.read_ref(tree.this) if isinstance(tree.this, exp.Table) else None
        if table is None:
            return None
        style = (tree.args.get("style") or "").upper()
        return Describe(table, style in ("EXTENDED", "FORMATTED"))

    def use(self, tree: exp.Use) -> Statement | None:
        parts = [p.name for p in tree.this.parts] if isinstance(tree.this, exp.Table) else []
        if parts and self.is_pyice_catalog(parts[0]):
            return UseNamespace(parts[0], tuple(parts[1:]))
        if self.default_is_pyice and parts:
            return UseNamespace(None, tuple(parts))
        return None

    def insert(self, tree: exp.Insert) -> Statement | None:
        node = tree.this
        columns = None
        if isinstance(node, exp.Schema):
            columns = tuple(c.name for c in node.expressions)
            node = node.this
        table = self.target_ref(node)
        if table is None:
            return None
        if tree.args.get("by_name") or tree.args.get("exists"):
            raise self.unsupported("INSERT ... BY NAME / IF NOT EXISTS", tree)
        static: dict[str, Any] = {}
        partition = node.args.get("partition")
        for item in partition.expressions if partition is not None else []:
            if isinstance(item, exp.EQ):
                static[item.this.name] = self.literal(item.expression)
        source = tree.expression
        if not isinstance(source, (exp.Query, exp.Values)):
            raise self.error("INSERT needs VALUES or a query", tree)
        return Insert(table, columns, self.query(source), bool(tree.args.get("overwrite")), static)

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
            ref = using.meta.get(_REF_KEY)
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
        return Merge(target, source, source_alias, on, tuple(clauses))

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
        path = _path(column)
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

    def alter(self, tree: exp.Alter) -> Statement | None:
        if (tree.args.get("kind") or "").upper() != "TABLE":
            return None
        table = self.target_ref(tree.this)
        if table is None:
            return None
        actions = tree.args.get("actions") or []
        if actions and all(isinstance(a, exp.Drop) for a in actions):
            columns = tuple(path for a in actions for path in self.dropped_columns(a))
            return AlterTableDropColumns(table, columns, bool(actions[0].args.get("exists")))
        if actions and all(isinstance(a, (exp.ColumnDef, exp.Schema)) for a in actions):
            defs = [d for a in actions for d in (a.expressions if isinstance(a, exp.Schema) else [a])]
            return AlterTableAddColumns(table, tuple(self.new_column(d) for d in defs))
        if len(actions) != 1:
            raise self.unsupported("this ALTER TABLE form", tree)
        action = actions[0]
        if isinstance(action, exp.RenameColumn):
            new = _path(action.args["to"])
            if len(new) != 1:
                raise self.error("RENAME COLUMN ... TO takes a plain new name", action.args["to"])
            return AlterTableRenameColumn(table, _path(action.this), new[0])
        if isinstance(action, AlterColumnAction):
            position = action.args.get("position")
            dtype, comment, not_null = (action.args.get(k) for k in ("dtype", "comment", "not_null"))
            return AlterTableAlterColumn(
                table, _path(action.this), dtype.sql(dialect=_DIALECT) if dtype else None,
                _text(comment) if comment else None,
                not_null.this if isinstance(not_null, exp.Boolean) else None,
                position is not None and position.args.get("position") == "FIRST",
                position.this.name if position is not None and position.this else None,
            )
        set_properties = isinstance(action, exp.AlterSet) and len(action.expressions) == 1
        if set_properties and isinstance(action.expressions[0], exp.Properties):
            props = action.expressions[0].expressions
            return AlterTableSetProperties(table, {_text(p.this): _text(p.args["value"]) for p in props})
        if isinstance(action, UnsetTableProperties):
            return AlterTableUnsetProperties(table, tuple(_text(k) for k in action.expressions),
                                             bool(action.args.get("exists")))
        if isinstance(action, AddPartitionField):
            alias = action.args.get("alias")
            return AlterTableAddPartitionField(table, self.transform(action.this), alias.name if alias else None)
        if isinstance(action, DropPartitionField):
            return AlterTableDropPartitionField(table, self.transform(action.this))
        if isinstance(action, ReplacePartitionField):
            alias = action.args.get("alias")
            return AlterTableReplacePartitionField(table, self.transform(action.this),
                                                   self.transform(action.expression), alias.name if alias else None)
        if isinstance(action, RefAction):
            return self.ref_action(table, action)
        if isinstance(action, IdentifierFields):
            return AlterTableIdentifierFields(table, tuple(_path(c) for c in action.expressions),
                                              bool(action.args.get("drop")))
        if isinstance(action, DropRef):
            return AlterTableDropRef(table, action.args["kind"].lower(), action.this.name,
                                     bool(action.args.get("exists")), position_of(action) or table.position)
        if isinstance(action, exp.AlterRename):
            parts = [p.name for p in action.this.parts]
            if len(parts) > 1 and parts[0] == table.catalog:
                parts = parts[1:]
            return AlterTableRename(table, tuple(parts[:-1]), parts[-1])
        raise self.unsupported(f"ALTER TABLE {action.sql(dialect=_DIALECT)}", action)

    def ref_action(self, table: TableRef, action: RefAction) -> AlterTableCreateOrReplaceRef:
        def number(node: exp.Expression | None) -> int | None:
            if node is None:
                return None
            if not (isinstance(node, exp.Literal) and re.fullmatch(r"-?\d+", node.name)):
                raise self.error(f"expected a whole number, got {node.sql(dialect=_DIALECT)}", node)
            return int(node.name)

        def millis(pair: tuple[exp.Expression, str] | None) -> int | None:
            return None if pair is None else number(pair[0]) * _TIME_UNIT_MS[pair[1]]

        args = action.args
        return AlterTableCreateOrReplaceRef(
            table, args["kind"].lower(), action.this.name, bool(args.get("create")), bool(args.get("replace")),
            bool(args.get("exists")), number(args.get("snapshot_id")), millis(args.get("retain")),
            number(args.get("min_snapshots")), millis(args.get("max_snapshot_age")),
            position_of(action) or table.position)

    def dropped_columns(self, action: exp.Drop) -> list[tuple[str, ...]]:
        if (action.args.get("kind") or "").upper() not in ("COLUMN", "COLUMNS"):
            raise self.unsupported(f"ALTER TABLE DROP {action.args.get('kind')}", action)
        paths = []
        for item in action.args.get("tables") or []:
            for column in item.expressions if isinstance(item, exp.Schema) else [item]:
                paths.append(_path(column))
        return paths

    def new_column(self, column: exp.Expression) -> NewColumn:
        if not isinstance(column, exp.ColumnDef) or column.args.get("kind") is None:
            raise self.error("expected a column definition `name type`", column)
        not_null, comment = self.constraints(column)
        position = column.args.get("position")
        first = position is not None and position.args.get("position") == "FIRST"
        after = position.this.name if position is not None and position.this else None
        return NewColumn(_path(column.this), column.args["kind"].sql(dialect=_DIALECT), not_null, comment, first, after)

    def call(self, tree: CallProcedure) -> Statement | None:
        parts = [p.name for p in tree.this.expressions]
        if len(parts) < 2:
            raise self.error("CALL needs a qualified procedure name such as catalog.system.name", tree)
        resolved = self.resolve(parts)
        if resolved is None:
            return None
        catalog, namespace, name, metadata = resolved
        if metadata:  # e.g. `cat.system.files`: a procedure, whatever its name
            namespace, name = (*namespace, name), metadata
        args: list[Any] = []
        named: dict[str, Any] = {}
        for arg in tree.expressions:
            if isinstance(arg, exp.Kwarg):
                named[arg.this.name] = self.literal(arg.expression)
            else:
                args.append(self.literal(arg))
        return Call(catalog, namespace, name, tuple(args), named, position_of(tree))

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
        raise self.error(f"expected a literal, got {node.sql(dialect=_DIALECT)}", node)


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


def _properties(tree: exp.Expression) -> list[exp.Expression]:
    props = tree.args.get("properties")
    return list(props.expressions) if props is not None else []


def _path(node: exp.Expression) -> tuple[str, ...]:
    """The name parts of a column reference or dotted name (`a.b.c` -> ("a", "b", "c"))."""
    if isinstance(node, exp.Identifier):
        return (node.name,)
    if isinstance(node, exp.Column):
        return tuple(p.name for p in node.parts)
    if isinstance(node, exp.Dot):
        return (*_path(node.this), node.expression.name)
    raise ParseError(f"expected a name, got {node.sql(dialect=_DIALECT)}", position=position_of(node))


def _text(node: exp.Expression) -> str:
    """Property keys and values as text: `'a.b'`, `a.b` and `2` all work."""
    if isinstance(node, (exp.Column, exp.Dot)):
        return ".".join(_path(node))
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    return node.name


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
