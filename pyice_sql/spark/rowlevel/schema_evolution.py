"""MERGE WITH SCHEMA EVOLUTION (Spark 4.1's form, Iceberg 1.10+'s behaviour): the source
columns the MERGE writes that the target lacks become new, optional target columns.

A source column is added when `UPDATE SET *` or `INSERT *` copies it, or when an assignment or
INSERT column list names it as a target column (`SET active = s.active`). New columns are
appended in source order with the source's type; existing rows read NULL for them. With
evolution, `*` copies only the columns the source has: `UPDATE SET *` keeps the target's value
of a column the source lacks and `INSERT *` gives it its default (NULL). New fields inside an
existing struct column are refused by name (not supported yet).

The schema change is not committed on its own: the MERGE plans and writes against the evolved
metadata, and its snapshot commit applies the same change to the table it commits on (`prepare`),
so readers see the new columns and the new rows together or not at all.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from pyspark.sql import types as T
from sqlglot import exp

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.errors import UnsupportedError, ValidationError
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.sql import statements as st
from pyice_sql.spark.ddl import add_columns
from pyice_sql.spark.schema import schema_to_spark


@dataclass(frozen=True)
class Evolution:
    """The evolved statement and table (uncommitted metadata) and the change its commit applies."""

    merge: st.Merge
    table: Table
    base: Table
    prepare: Callable[[TableMetadata], TableMetadata]


def evolve(stmt: st.Merge, table: Table, source: T.StructType) -> Evolution | None:
    """The MERGE against its evolved target, or None when the target already has every column."""
    schema = table.metadata.schema()
    by_name = {f.name.lower(): f for f in source.fields}
    present = {f.name.lower() for f in schema.fields}
    star = any(getattr(c, "star", False) for c in stmt.clauses)
    wanted = [f.name for f in source.fields] if star else []
    for clause in stmt.clauses:
        if isinstance(clause, (st.MatchedUpdate, st.NotMatchedBySourceUpdate)):
            wanted += [path[0] for path, _ in clause.assignments if len(path) == 1]
        elif isinstance(clause, st.NotMatchedInsert):
            wanted += list(clause.columns)
    new = [by_name[n.lower()] for n in dict.fromkeys(n.lower() for n in wanted)
           if n not in present and n in by_name]
    if star:
        _refuse_new_nested_fields(schema_to_spark(schema, with_ids=False), source, table.full_name)
    missing = [f.name for f in schema.fields if f.name.lower() not in by_name]
    if not new and not (star and missing):
        return None
    columns = tuple(st.NewColumn((f.name,), f.dataType.simpleString()) for f in new)

    def change(md: TableMetadata) -> TableMetadata:
        return add_columns(md, columns) if columns else md
    evolved = replace(table, metadata=change(table.metadata))
    expected = evolved.metadata.schema().fields

    def prepare(md: TableMetadata) -> TableMetadata:
        out = change(md)
        if out.schema().fields != expected:
            raise ValidationError(f"table {table.full_name} changed schema during MERGE WITH SCHEMA EVOLUTION; "
                                  "run it again")
        return out
    names = [f.name for f in evolved.metadata.schema().fields]
    merge = replace(stmt, clauses=tuple(_spell_out_star(c, stmt.source_alias or "source", names, by_name)
                                        for c in stmt.clauses))
    return Evolution(merge, evolved, table, prepare)


def _spell_out_star(clause: st.MergeClause, alias: str, names: list[str], source: dict) -> st.MergeClause:
    """`*` as the explicit list of the target columns the source has."""
    given = [n for n in names if n.lower() in source]
    values = tuple(exp.column(source[n.lower()].name, table=alias, quoted=True) for n in given)
    if isinstance(clause, st.MatchedUpdate) and clause.star:
        return replace(clause, assignments=tuple(((n,), v) for n, v in zip(given, values)), star=False)
    if isinstance(clause, st.NotMatchedInsert) and clause.star:
        return replace(clause, columns=tuple(given), values=values, star=False)
    return clause


def _refuse_new_nested_fields(target: T.StructType, source: T.StructType, table: str, prefix: str = "") -> None:
    targets = {f.name.lower(): f for f in target.fields}
    for f in source.fields:
        t = targets.get(f.name.lower())
        if t is None or not isinstance(f.dataType, T.StructType) or not isinstance(t.dataType, T.StructType):
            continue
        inner = {g.name.lower() for g in t.dataType.fields}
        extra = [g.name for g in f.dataType.fields if g.name.lower() not in inner]
        if extra:
            raise UnsupportedError(f"MERGE WITH SCHEMA EVOLUTION into {table}: adding the nested field "
                                   f"{prefix}{t.name}.{extra[0]} is not supported (add it with ALTER TABLE "
                                   f"{table} ADD COLUMN {prefix}{t.name}.{extra[0]} first)")
        _refuse_new_nested_fields(t.dataType, f.dataType, table, f"{prefix}{t.name}.")
