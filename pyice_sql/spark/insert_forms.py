"""The two INSERT forms Spark 3.4/3.5 added to its grammar: `BY NAME` and `REPLACE WHERE`.

`INSERT INTO t BY NAME <query>` matches the query's columns to the table's by name (Spark's
case-insensitive resolution); as in Spark 3.5 with Iceberg, every table column must be given
and an unknown or repeated name is an error. `INSERT INTO t REPLACE WHERE <cond> <query>` is
Spark's OverwriteByExpression: in one commit, the rows matching `cond` are removed and the
query's rows added. Iceberg removes them by whole files (`overwriteByRowFilter`), so a data
file holding rows on both sides of `cond` is an error, and `cond` must translate exactly to an
Iceberg filter. Iceberg does not check that the added rows match `cond`; neither do we.
"""
from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.errors import AnalysisError, SqlPosition, UnsupportedError
from pyice_sql.core.expr.from_sql import target_columns, to_predicate
from pyice_sql.core.expr.predicates import Expression
from pyice_sql.core.sql import statements as st
from pyice_sql.core.sql.dialect import DIALECT


def by_name_columns(table: Table, df: DataFrame, position: SqlPosition | None) -> tuple[str, ...]:
    """The table column each query column writes, in the query's order."""
    schema = table.metadata.schema()
    out: list[str] = []
    for name in df.columns:
        field = schema.find_field(name)
        if field is None or "." in name:
            raise AnalysisError(f"INSERT ... BY NAME into {table.full_name}: the query's column {name!r} is "
                                "not a column of the table", position=position)
        if field.name in out:
            raise AnalysisError(f"INSERT ... BY NAME into {table.full_name}: the query gives column "
                                f"{field.name!r} more than once", position=position)
        out.append(field.name)
    missing = [f.name for f in schema.fields if f.name not in out]
    if missing:
        raise AnalysisError(f"INSERT ... BY NAME into {table.full_name}: the query has no column for "
                            f"{', '.join(map(repr, missing))}", position=position)
    return tuple(out)


def replace_where_filter(table: Table, ref: st.TableRef, cond: st.exp.Expression,
                         zone: dt.tzinfo | None) -> Expression:
    """The Iceberg filter of REPLACE WHERE `cond`: it must say exactly which rows are replaced
    (`zone`: the session's time zone, which reads its timestamps written without an offset)."""
    if st.tables_read(cond) or any(cond.find_all(st.exp.Subquery)):
        raise UnsupportedError(f"REPLACE WHERE on {table.full_name} with a subquery is not supported",
                               position=st.position_of(cond) or ref.position)
    schema = table.metadata.schema()
    full = [p.lower() for p in (ref.catalog, *ref.namespace, ref.name) if p]
    resolve = target_columns(schema, [tuple(full[i:]) for i in range(len(full))])
    inclusive = to_predicate(cond, resolve, schema, "inclusive", zone=zone)
    if inclusive != to_predicate(cond, resolve, schema, "strict", zone=zone):
        raise UnsupportedError(
            f"REPLACE WHERE on {table.full_name}: cannot translate {cond.sql(dialect=DIALECT)} to an Iceberg "
            "filter (use comparisons, IN, IS NULL, LIKE 'prefix%' of columns with literals)",
            position=st.position_of(cond) or ref.position)
    return inclusive
