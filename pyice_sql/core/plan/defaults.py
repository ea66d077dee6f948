"""Column defaults: what `DEFAULT` in SET / VALUES, and a column an INSERT leaves out, stand for.

`write_default` is the one place a field's default comes from: its format-v3 `write-default`
when set, else NULL for a nullable column and nothing for a NOT NULL one (Spark:
NO_DEFAULT_COLUMN_VALUE_AVAILABLE). `default_sql` turns a stored JSON default into the Spark SQL
constant that writes (and scans of files older than the column) use.
"""
from __future__ import annotations

from sqlglot import exp

from pyice_sql.core.errors import AnalysisError, NotNullViolationError, SqlPosition, UnsupportedError
from pyice_sql.core.model import types as it
from pyice_sql.core.model.default_values import from_json, to_json
from pyice_sql.core.sql.statements import position_of

# Spark SQL type of each Iceberg primitive a default can be cast to (Iceberg timestamp is NTZ)
_SPARK_TYPES = {"int": "INT", "long": "BIGINT", "float": "FLOAT", "double": "DOUBLE", "date": "DATE",
                "timestamp": "TIMESTAMP_NTZ", "timestamptz": "TIMESTAMP"}


def write_default(field: it.NestedField) -> exp.Expression | None:
    """The value a write stores into `field` when given none; None when it has no default."""
    if field.write_default is not None:
        return default_sql(field.type, field.write_default, field.name)
    return None if field.required else exp.Null()


def default_sql(t: it.IcebergType, value: object, name: str) -> exp.Expression:
    """The Spark SQL constant of JSON default `value` (of column `name`, type `t`)."""
    internal = from_json(t, value)
    if internal is None:
        return exp.Null()
    kind = it.type_kind(t)
    text = to_json(t, internal)  # the canonical spelling: Spark casts it back exactly
    if kind == "boolean":
        return exp.Boolean(this=internal)
    if kind == "string":
        return exp.Literal.string(internal)
    if kind in ("binary", "fixed"):
        return exp.Unhex(this=exp.Literal.string(text))
    if kind == "decimal":
        to = f"DECIMAL({t.precision}, {t.scale})"
    elif kind in _SPARK_TYPES:
        to = _SPARK_TYPES[kind]
    else:
        raise UnsupportedError(f"the default of column {name!r} has type {t}, which Spark cannot hold")
    return exp.cast(exp.Literal.string(str(text)), exp.DataType.build(to, dialect="spark"))


def is_default(e: exp.Expression) -> bool:
    """The DEFAULT keyword (sqlglot reads it as a variable in VALUES, a bare column in SET)."""
    if isinstance(e, exp.Var):
        return e.name.upper() == "DEFAULT"
    return (isinstance(e, exp.Column) and not e.table and isinstance(e.this, exp.Identifier)
            and not e.this.quoted and e.name.upper() == "DEFAULT")


def resolve_default(value: exp.Expression, field: it.NestedField, position: SqlPosition | None) -> exp.Expression:
    """`value`, or the field's default when the value is DEFAULT; DEFAULT inside an expression is an error."""
    if is_default(value):
        default = write_default(field)
        if default is None:
            raise AnalysisError(f"[NO_DEFAULT_COLUMN_VALUE_AVAILABLE] cannot determine the default value for "
                                f"{field.name!r}: it is NOT NULL and has no default value",
                                position=position_of(value) or position)
        return default
    nested = next((n for n in value.walk() if is_default(n)), None)
    if nested is not None:
        raise AnalysisError("DEFAULT must be the whole value of an assignment, not part of an expression",
                            position=position_of(nested) or position)
    return value


def missing_value(field: it.NestedField, table: str, position: SqlPosition | None) -> exp.Expression:
    """The value of a column an INSERT column list leaves out: its default, else an error."""
    default = write_default(field)
    if default is None:
        raise NotNullViolationError(f"column {field.name!r} of {table} is NOT NULL and has no value",
                                    position=position)
    return default


def values_with_defaults(values: exp.Values, fields: list[it.NestedField | None],
                         position: SqlPosition | None) -> exp.Values:
    """INSERT ... VALUES rows with each DEFAULT replaced by its column's default (`fields`: the
    column each value position writes; None where unknown, left for the column check)."""
    if not any(is_default(n) for n in values.walk()):
        return values
    out = values.copy()
    for row in out.expressions:
        for item, field in zip(list(row.expressions) if isinstance(row, exp.Tuple) else [row], fields):
            if field is not None:
                item.replace(resolve_default(item, field, position))
    return out
