"""Statement → RowLevelPlan: resolve assignments and stars against the target, then apply the rules.

Assignments are resolved as Spark does: case-insensitive column names (a backquoted name with
dots is one column, `a.b` unquoted a nested field), `UPDATE SET *` and `INSERT *` expanded by
name from the source, columns an INSERT leaves out and `DEFAULT` take the column's default
(plan/defaults.py), and a nested field assignment (`SET t.addr.city = ...`) rebuilds that
struct keeping its other fields. Every value becomes a sqlglot expression evaluated by Spark
over the joined rows; columns qualified with a table's full name (`local.db.t.c`) are
re-qualified with its alias, and NOT MATCHED [BY SOURCE] clauses see one side only
(plan/merge_scope.py).
"""
from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from pyice_sql.core.errors import AnalysisError
from pyice_sql.core.model import types as it
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.plan.defaults import is_default, missing_value, resolve_default
from pyice_sql.core.plan.merge_scope import scoped_merge
from pyice_sql.core.plan.nodes import (
    DELETE, INSERT, MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE, UPDATE, Instruction, RowLevelPlan,
)
from pyice_sql.core.sql import statements as st


def _col(table: str, *path: str) -> exp.Expression:
    node: exp.Expression = exp.column(path[0], table=table, quoted=True)
    for name in path[1:]:
        node = exp.Dot(this=node, expression=exp.to_identifier(name, quoted=True))
    return node


def _field_at(schema: Schema, path: tuple[str, ...]) -> it.NestedField | None:
    """The field a name path (each part one name, dots and all) reaches through structs."""
    t: it.IcebergType = schema.struct
    found = None
    for part in path:
        found = t.field_by_name(part, False) if isinstance(t, it.StructType) else None
        if found is None:
            return None
        t = found.type
    return found


def _assigned_values(assignments: tuple[st.Assignment, ...], schema: Schema, target_alias: str,
                     position) -> dict[str, exp.Expression]:
    """Top-level column name → new value, nested assignments folded into struct constructors."""
    by_top: dict[str, list[tuple[tuple[str, ...], exp.Expression]]] = {}
    tops: dict[str, it.NestedField] = {}
    for path, value in assignments:
        field = _field_at(schema, path)
        if field is None:
            raise AnalysisError(f"cannot assign to unknown column {'.'.join(path)!r}", position=position)
        if len(path) > 1 and is_default(value):
            raise AnalysisError(f"DEFAULT assigns a whole column, not the nested field {'.'.join(path)!r}",
                                position=position)
        top = _field_at(schema, path[:1])
        tops[top.name] = top
        by_top.setdefault(top.name, []).append((path, resolve_default(value, field, position)))
    out = {}
    for name, items in by_top.items():
        top = tops[name]
        if len(items) > 1 and any(len(p) == 1 for p, _ in items):
            raise AnalysisError(f"column {name!r} is assigned more than once", position=position)
        out[name] = _nested_value(top, [(p[1:], v) for p, v in items], (target_alias, top.name))
    return out


def _nested_value(field: it.NestedField, items: list[tuple[tuple[str, ...], exp.Expression]],
                  path: tuple[str, ...]) -> exp.Expression:
    whole = [v for p, v in items if not p]
    if whole:
        if len(items) > 1:
            raise AnalysisError(f"column {'.'.join(path[1:])!r} is assigned more than once")
        return whole[0]
    if not isinstance(field.type, it.StructType):
        raise AnalysisError(f"column {'.'.join(path[1:])!r} is not a struct")
    args: list[exp.Expression] = []
    for child in field.type.fields:
        sub = [(p[1:], v) for p, v in items if p[0].lower() == child.name.lower()]
        value = _nested_value(child, sub, path + (child.name,)) if sub else _col(path[0], *path[1:], child.name)
        args += [exp.Literal.string(child.name), value]
    return exp.Anonymous(this="named_struct", expressions=args)


def _star_values(schema: Schema, source_alias: str, source_columns: list[str], position) -> dict[str, exp.Expression]:
    available = {c.lower(): c for c in source_columns}
    out = {}
    for f in schema.fields:
        if f.name.lower() not in available:
            raise AnalysisError(f"source has no column {f.name!r} for `*` (source columns: "
                                f"{', '.join(source_columns)})", position=position)
        out[f.name] = exp.column(available[f.name.lower()], table=source_alias, quoted=True)
    return out


def _insert_values(clause: st.NotMatchedInsert, schema: Schema, source_alias: str,
                   source_columns: list[str], table: str) -> dict[str, exp.Expression]:
    if clause.star:
        return _star_values(schema, source_alias, source_columns, clause.position)
    if len(clause.columns) != len(clause.values):
        raise AnalysisError(f"INSERT lists {len(clause.columns)} columns but {len(clause.values)} values",
                            position=clause.position)
    given: dict[str, exp.Expression] = {}
    for name, value in zip(clause.columns, clause.values):
        f = _field_at(schema, (name,))
        if f is None:
            raise AnalysisError(f"cannot insert into unknown column {name!r}", position=clause.position)
        if f.name in given:
            raise AnalysisError(f"column {name!r} appears twice in INSERT", position=clause.position)
        given[f.name] = resolve_default(value, f, clause.position)
    return {f.name: given[f.name] if f.name in given else missing_value(f, table, clause.position)
            for f in schema.fields}


def _requalify(e: exp.Expression | None, tables: list[tuple[st.TableRef, str]]) -> exp.Expression | None:
    """Columns qualified with a table's multi-part name (`db.t.c`, `local.db.t.c`) as Spark
    allows, re-qualified with the name the generated query gives that table (its alias)."""
    if e is None:
        return None
    names = [(tuple(p.lower() for p in (ref.catalog, *ref.namespace, ref.name) if p), alias) for ref, alias in tables]
    out = e.copy()
    for column in out.find_all(exp.Column):
        qualifier = tuple(p.name.lower() for p in column.parts[:-1])
        if len(qualifier) < 2:
            continue
        for full, alias in names:
            if full[-len(qualifier):] == qualifier:
                column.set("catalog", None)
                column.set("db", None)
                column.set("table", exp.to_identifier(alias, quoted=True))
                break
    return out


def _requalified(plan: RowLevelPlan, tables: list[tuple[st.TableRef, str]]) -> RowLevelPlan:
    instructions = tuple(replace(i, condition=_requalify(i.condition, tables),
                                 values={k: _requalify(v, tables) for k, v in i.values.items()})
                         for i in plan.instructions)
    return plan.with_(instructions=instructions, on=_requalify(plan.on, tables),
                      where=_requalify(plan.where, tables))


def build_merge(stmt: st.Merge, schema: Schema, source_columns: list[str]) -> RowLevelPlan:
    target_alias = stmt.target.alias or stmt.target.name
    source_alias = stmt.source_alias or "source"
    instructions = []
    for c in stmt.clauses:
        if isinstance(c, st.MatchedUpdate):
            values = (_star_values(schema, source_alias, source_columns, c.position) if c.star
                      else _assigned_values(c.assignments, schema, target_alias, c.position))
            instructions.append(Instruction(MATCHED, c.condition, UPDATE, values, c.position))
        elif isinstance(c, st.MatchedDelete):
            instructions.append(Instruction(MATCHED, c.condition, DELETE, {}, c.position))
        elif isinstance(c, st.NotMatchedInsert):
            instructions.append(Instruction(NOT_MATCHED, c.condition, INSERT,
                                            _insert_values(c, schema, source_alias, source_columns,
                                                           stmt.target.qualified_name), c.position))
        elif isinstance(c, st.NotMatchedBySourceUpdate):
            instructions.append(Instruction(NOT_MATCHED_BY_SOURCE, c.condition, UPDATE,
                                            _assigned_values(c.assignments, schema, target_alias, c.position),
                                            c.position))
        elif isinstance(c, st.NotMatchedBySourceDelete):
            instructions.append(Instruction(NOT_MATCHED_BY_SOURCE, c.condition, DELETE, {}, c.position))
    tables = [(stmt.target, target_alias)]
    if isinstance(stmt.source, st.TableRef):
        tables.append((stmt.source, source_alias))
    plan = _requalified(RowLevelPlan("MERGE", stmt.target, target_alias, tuple(instructions), source=stmt.source,
                                     source_alias=source_alias, on=stmt.on), tables)
    return scoped_merge(plan, [f.name for f in schema.fields], source_columns)


def build_update(stmt: st.Update, schema: Schema) -> RowLevelPlan:
    alias = stmt.table.alias or stmt.table.name
    values = _assigned_values(stmt.assignments, schema, alias, stmt.table.position)
    return _requalified(RowLevelPlan("UPDATE", stmt.table, alias,
                                     (Instruction(MATCHED, None, UPDATE, values, stmt.table.position),),
                                     where=stmt.where), [(stmt.table, alias)])


def build_delete(stmt: st.Delete) -> RowLevelPlan:
    alias = stmt.table.alias or stmt.table.name
    return _requalified(RowLevelPlan("DELETE", stmt.table, alias, (Instruction(MATCHED, None, DELETE),),
                                     where=stmt.where), [(stmt.table, alias)])
