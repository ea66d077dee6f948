"""Typed statements: the seam between SQL text and execution.

`parser.parse_statement` turns one statement into one of these frozen dataclasses and decides
whether pyice_sql handles it (it targets, or reads, a table in a pyice catalog) or Spark gets it
unchanged (`PassThrough`). Nothing after the parser looks at statement-level sqlglot trees;
expressions (conditions, assignment values, queries) stay sqlglot expressions, and every table
they read that lives in a pyice catalog is tagged with its TableRef (`TABLE_REF_META`), so the
session can swap those tables for temp views (`replace_tables`) and hand the rest to Spark.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlglot import exp

from pyice_sql.core.errors import SqlPosition

METADATA_TABLES = frozenset({
    "history", "metadata_log_entries", "snapshots", "entries", "files", "data_files",
    "delete_files", "manifests", "partitions", "position_deletes", "refs", "all_data_files",
    "all_delete_files", "all_files", "all_manifests", "all_entries",
})
SPARK_SESSION_CATALOG = "spark_catalog"
# sqlglot node meta keys the parser sets: the TableRef of a pyice table, a node's script position.
TABLE_REF_META = "pyice_table"
POSITION_META = "pyice_position"


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
    """A column of ALTER TABLE ADD COLUMNS; a path of several parts adds a nested field; `default`
    is its DEFAULT expression (format v3)."""

    path: tuple[str, ...]
    type: str
    not_null: bool = False
    comment: str | None = None
    first: bool = False
    after: str | None = None
    default: exp.Expression | None = None


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
    """One change to a column: its type, comment, nullability (not_null), position, or its
    write-default (SET DEFAULT `default` / DROP DEFAULT)."""

    table: TableRef
    column: tuple[str, ...]
    new_type: str | None = None
    comment: str | None = None
    not_null: bool | None = None
    first: bool = False
    after: str | None = None
    default: exp.Expression | None = None
    drop_default: bool = False


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
    """INSERT INTO/OVERWRITE; `static_partition` holds PARTITION (p = literal) values,
    `dynamic_partition` the columns a PARTITION clause names without one (their values come from
    the query).

    `by_name` matches the query's columns to the table's by name (INSERT ... BY NAME);
    `replace_where` is the condition of INSERT INTO ... REPLACE WHERE (an overwrite of the rows
    it matches).
    """

    table: TableRef
    columns: tuple[str, ...] | None
    query: Query
    overwrite: bool = False
    static_partition: dict[str, Any] = field(default_factory=dict)
    by_name: bool = False
    replace_where: exp.Expression | None = None
    dynamic_partition: tuple[str, ...] = ()


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
    `schema_evolution` (MERGE WITH SCHEMA EVOLUTION) adds the source columns the clauses
    write that the target lacks to its schema, in the MERGE's own commit.
    """

    target: TableRef
    source: TableRef | Query
    source_alias: str | None
    on: exp.Expression
    clauses: tuple[MergeClause, ...]
    schema_evolution: bool = False


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


def tables_read(expression: exp.Expression) -> tuple[TableRef, ...]:
    """The pyice tables an expression reads, in order of appearance, without repeats."""
    refs: dict[TableRef, None] = {}
    for table in expression.find_all(exp.Table):
        ref = table.meta.get(TABLE_REF_META)
        if ref is not None:
            refs.setdefault(ref)
    return tuple(refs)


def table_ref_of(table: exp.Table) -> TableRef | None:
    """The pyice TableRef the parser attached to a table node, or None for Spark's tables."""
    return table.meta.get(TABLE_REF_META)


def replace_tables(expression: exp.Expression, view_name: Callable[[TableRef], str]) -> exp.Expression:
    """A copy of `expression` reading temp view `view_name(ref)` wherever it read pyice table `ref`.

    The view keeps the table's alias (or its name when it had none), and column qualifiers
    spelled with the table's full name (`db.t.col`) are shortened to it.
    """
    copy = expression.copy()
    full_names: list[tuple[str, ...]] = []
    for table in list(copy.find_all(exp.Table)):
        ref = table.meta.get(TABLE_REF_META)
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
    positions = [n.meta[POSITION_META] for n in node.walk() if POSITION_META in n.meta]
    return min(positions) if positions else None
