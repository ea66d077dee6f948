"""The parser's DDL half: CREATE / DROP / SHOW / DESCRIBE / USE, ALTER TABLE and CALL trees to statements.

`DdlParsing` is mixed into `parser._Parser`, which supplies name resolution (`resolve`,
`target_ref`), errors and literals; the DML half and the catalog resolution live there.
"""
from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from pyice_sql.core.errors import ParseError
from pyice_sql.core.sql.dialect import (
    DIALECT, AddPartitionField, AlterColumnAction, CallProcedure, DropPartitionField, DropRef, IdentifierFields,
    RefAction, ReplacePartitionField, ShowObjects, UnsetTableProperties,
)
from pyice_sql.core.sql.statements import (
    AlterTableAddColumns, AlterTableAddPartitionField, AlterTableAlterColumn, AlterTableCreateOrReplaceRef,
    AlterTableDropColumns, AlterTableDropPartitionField, AlterTableDropRef, AlterTableIdentifierFields,
    AlterTableRename, AlterTableRenameColumn, AlterTableReplacePartitionField, AlterTableSetProperties,
    AlterTableUnsetProperties, Call, ColumnSpec, CreateNamespace, CreateTable, Describe, DropNamespace,
    DropTable, NewColumn, PartitionTransform, ShowNamespaces, ShowTables, Statement, TableRef, UseNamespace,
    position_of,
)

_TRANSFORMS = {
    "identity": "identity", "bucket": "bucket", "truncate": "truncate", "years": "year", "year": "year",
    "months": "month", "month": "month", "days": "day", "day": "day", "date": "day",
    "hours": "hour", "hour": "hour", "date_hour": "hour",
}
_TIME_UNIT_MS = {"DAYS": 86_400_000, "HOURS": 3_600_000, "MINUTES": 60_000}


class DdlParsing:
    """CREATE, DROP, SHOW, DESCRIBE, USE, ALTER TABLE and CALL conversions of `parser._Parser`."""

    def create(self, tree: exp.Create) -> Statement | None:
        kind = (tree.args.get("kind") or "").upper()
        if kind in ("DATABASE", "SCHEMA", "NAMESPACE"):
            resolved = self.resolve_namespace([p.name for p in tree.this.parts])
            if resolved is None:
                return None
            properties = {text_of(p.this): text_of(p.args["value"]) for p in properties_of(tree)}
            return CreateNamespace(resolved[0], resolved[1], bool(tree.args.get("exists")), properties)
        schema = tree.this if isinstance(tree.this, exp.Schema) else None
        table_node = schema.this if schema is not None else tree.this
        if kind == "VIEW":
            temporary = any(isinstance(p, exp.TemporaryProperty) for p in properties_of(tree))
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
        for prop in properties_of(tree):
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
                comment = text_of(prop.this)
            elif isinstance(prop, exp.LocationProperty):
                location = text_of(prop.this)
            elif type(prop) is exp.Property:
                properties[text_of(prop.this)] = text_of(prop.args["value"])
            else:
                raise self.unsupported(f"{prop.sql(dialect=DIALECT)} for a pyice table", prop)
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
        not_null, comment, default = self.constraints(column)
        if default is not None:  # as Iceberg Java 1.10 on Spark 3.5, which refuses it too
            raise self.unsupported("DEFAULT in CREATE TABLE (add the column's write-default afterwards with "
                                   f"ALTER TABLE ... ALTER COLUMN {column.name} SET DEFAULT)", default)
        return ColumnSpec(column.name, column.args["kind"].sql(dialect=DIALECT), not_null, comment)

    def constraints(self, column: exp.ColumnDef) -> tuple[bool, str | None, exp.Expression | None]:
        """(NOT NULL, COMMENT text, DEFAULT expression) of a column definition."""
        not_null, comment, default = False, None, None
        for constraint in column.args.get("constraints") or []:
            kind = constraint.args.get("kind")
            if isinstance(kind, exp.NotNullColumnConstraint):
                not_null = not kind.args.get("allow_null")
            elif isinstance(kind, exp.CommentColumnConstraint):
                comment = text_of(kind.this)
            elif isinstance(kind, exp.DefaultColumnConstraint):
                default = kind.this
            else:
                raise self.unsupported(f"column constraint {constraint.sql(dialect=DIALECT)}", constraint)
        return not_null, comment, default

    def transform(self, term: exp.Expression) -> PartitionTransform:
        """bucket(16, id), truncate(4, s), days(ts), ... or a bare column, as Iceberg names them."""
        if isinstance(term, (exp.Column, exp.Identifier, exp.Dot)):
            return PartitionTransform("identity", ".".join(path_of(term)))
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
            raise self.error(f"unknown partition transform {term.sql(dialect=DIALECT)}", term)
        return PartitionTransform(transform, ".".join(path_of(columns[0])), numbers[0] if has_arg else None)

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
        pattern = text_of(tree.args["pattern"]) if tree.args.get("pattern") else None
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
            new = path_of(action.args["to"])
            if len(new) != 1:
                raise self.error("RENAME COLUMN ... TO takes a plain new name", action.args["to"])
            return AlterTableRenameColumn(table, path_of(action.this), new[0])
        if isinstance(action, AlterColumnAction):
            position = action.args.get("position")
            dtype, comment, not_null = (action.args.get(k) for k in ("dtype", "comment", "not_null"))
            return AlterTableAlterColumn(
                table, path_of(action.this), dtype.sql(dialect=DIALECT) if dtype else None,
                text_of(comment) if comment else None,
                not_null.this if isinstance(not_null, exp.Boolean) else None,
                position is not None and position.args.get("position") == "FIRST",
                position.this.name if position is not None and position.this else None,
                action.args.get("default"), bool(action.args.get("drop_default")),
            )
        set_properties = isinstance(action, exp.AlterSet) and len(action.expressions) == 1
        if set_properties and isinstance(action.expressions[0], exp.Properties):
            props = action.expressions[0].expressions
            return AlterTableSetProperties(table, {text_of(p.this): text_of(p.args["value"]) for p in props})
        if isinstance(action, UnsetTableProperties):
            return AlterTableUnsetProperties(table, tuple(text_of(k) for k in action.expressions),
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
            return AlterTableIdentifierFields(table, tuple(path_of(c) for c in action.expressions),
                                              bool(action.args.get("drop")))
        if isinstance(action, DropRef):
            return AlterTableDropRef(table, action.args["kind"].lower(), action.this.name,
                                     bool(action.args.get("exists")), position_of(action) or table.position)
        if isinstance(action, exp.AlterRename):
            parts = [p.name for p in action.this.parts]
            if len(parts) > 1 and parts[0] == table.catalog:
                parts = parts[1:]
            return AlterTableRename(table, tuple(parts[:-1]), parts[-1])
        raise self.unsupported(f"ALTER TABLE {action.sql(dialect=DIALECT)}", action)

    def ref_action(self, table: TableRef, action: RefAction) -> AlterTableCreateOrReplaceRef:
        def number(node: exp.Expression | None) -> int | None:
            if node is None:
                return None
            if not (isinstance(node, exp.Literal) and re.fullmatch(r"-?\d+", node.name)):
                raise self.error(f"expected a whole number, got {node.sql(dialect=DIALECT)}", node)
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
                paths.append(path_of(column))
        return paths

    def new_column(self, column: exp.Expression) -> NewColumn:
        if not isinstance(column, exp.ColumnDef) or column.args.get("kind") is None:
            raise self.error("expected a column definition `name type`", column)
        not_null, comment, default = self.constraints(column)
        position = column.args.get("position")
        first = position is not None and position.args.get("position") == "FIRST"
        after = position.this.name if position is not None and position.this else None
        return NewColumn(path_of(column.this), column.args["kind"].sql(dialect=DIALECT), not_null, comment, first,
                         after, default)

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


def properties_of(tree: exp.Expression) -> list[exp.Expression]:
    props = tree.args.get("properties")
    return list(props.expressions) if props is not None else []


def path_of(node: exp.Expression) -> tuple[str, ...]:
    """The name parts of a column reference or dotted name (`a.b.c` -> ("a", "b", "c"))."""
    if isinstance(node, exp.Identifier):
        return (node.name,)
    if isinstance(node, exp.Column):
        return tuple(p.name for p in node.parts)
    if isinstance(node, exp.Dot):
        return (*path_of(node.this), node.expression.name)
    raise ParseError(f"expected a name, got {node.sql(dialect=DIALECT)}", position=position_of(node))


def text_of(node: exp.Expression) -> str:
    """Property keys and values as text: `'a.b'`, `a.b` and `2` all work."""
    if isinstance(node, (exp.Column, exp.Dot)):
        return ".".join(path_of(node))
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    return node.name
