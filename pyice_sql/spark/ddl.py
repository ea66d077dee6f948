"""Schema and partition DDL: CREATE TABLE metadata, ALTER TABLE column and partition changes.

Everything here is a metadata-only change computed from the current TableMetadata; nothing is
rewritten. Column changes keep field ids (a rename is a new name for the same id, a dropped
id is never reused), partition evolution adds a new spec and leaves old files on theirs.
"""
from __future__ import annotations

import dataclasses
import datetime as dt

from pyspark.sql import types as T
from sqlglot import exp

from pyice_sql.core import properties as props
from pyice_sql.core.errors import AnalysisError, UnsupportedError
from pyice_sql.core.expr.from_sql import constant_value
from pyice_sql.core.model import types as it
from pyice_sql.core.model.default_values import DEFAULTS_FORMAT_VERSION, DefaultValueError, check_default, to_json
from pyice_sql.core.model.metadata import TableMetadata, new_table_metadata
from pyice_sql.core.model.partitioning import PartitionField, PartitionSpec
from pyice_sql.core.model.schema import Schema, name_mapping_json
from pyice_sql.core.model.sort_order import UNSORTED, SortField, SortOrder
from pyice_sql.core.model.zones import UTC
from pyice_sql.core.model.transforms import Transform, parse_transform
from pyice_sql.spark.schema import spark_to_schema, spark_type_to_iceberg
from pyice_sql.core.sql.statements import ColumnSpec, NewColumn, PartitionTransform, position_of

NAME_MAPPING = props.DEFAULT_NAME_MAPPING
DEFAULT_PROPERTIES = {props.PARQUET_COMPRESSION: props.PARQUET_COMPRESSION_DEFAULT}

# Spark's partition transform spellings → (Iceberg transform text, CREATE TABLE name suffix)
_TRANSFORMS = {
    "identity": ("identity", ""), "bucket": ("bucket[{n}]", "_bucket"), "truncate": ("truncate[{n}]", "_trunc"),
    "years": ("year", "_year"), "year": ("year", "_year"), "months": ("month", "_month"),
    "month": ("month", "_month"), "days": ("day", "_day"), "day": ("day", "_day"), "date": ("day", "_day"),
    "hours": ("hour", "_hour"), "hour": ("hour", "_hour"), "date_hour": ("hour", "_hour"),
}


def parse_spark_type(text: str) -> T.DataType:
    """A Spark SQL type string → DataType (Spark's own parser, so every spelling Spark takes works)."""
    try:
        return T._parse_datatype_string(text)
    except Exception as e:  # Spark raises ParseException through py4j
        raise AnalysisError(f"invalid column type {text!r}") from e


def columns_to_struct(columns: tuple[ColumnSpec, ...]) -> T.StructType:
    seen = set()
    fields = []
    for c in columns:
        if c.name.lower() in seen:
            raise AnalysisError(f"duplicate column name {c.name!r}")
        seen.add(c.name.lower())
        meta = {"comment": c.comment} if c.comment else {}
        fields.append(T.StructField(c.name, parse_spark_type(c.type), not c.not_null, meta))
    return T.StructType(fields)


def transform_of(pt: PartitionTransform, schema: Schema, for_alter: bool = False) -> tuple[Transform, int, str]:
    """(transform, source field id, default partition field name) for a PARTITIONED BY item."""
    kind = pt.transform.lower()
    if kind not in _TRANSFORMS:
        raise UnsupportedError(f"unsupported partition transform {pt.transform!r}; use identity, bucket, "
                               "truncate, years, months, days or hours")
    text, suffix = _TRANSFORMS[kind]
    if "{n}" in text:
        if pt.arg is None or pt.arg <= 0:
            raise AnalysisError(f"{pt.transform} needs a positive integer argument")
        text = text.format(n=pt.arg)
        if for_alter:
            suffix = f"{suffix}_{pt.arg}"
    source = schema.find_field(pt.column)
    if source is None:
        raise AnalysisError(f"partition column {pt.column!r} is not a column of the table")
    transform = parse_transform(text)
    if not transform.can_transform(source.type):
        raise AnalysisError(f"transform {text} cannot be applied to column {pt.column!r} of type {source.type}")
    return transform, source.field_id, pt.column.replace(".", "_") + suffix


def _spec_of(schema: Schema, partitioning: tuple[PartitionTransform, ...]) -> PartitionSpec:
    fields = []
    for i, pt in enumerate(partitioning):
        transform, source_id, name = transform_of(pt, schema)
        fields.append(PartitionField(source_id, 1000 + i, transform, name))
    names = [f.name for f in fields]
    if len(set(names)) != len(names):
        raise AnalysisError(f"duplicate partition field names {names}")
    return PartitionSpec(0, tuple(fields))


def create_metadata(struct: T.StructType, partitioning: tuple[PartitionTransform, ...], location: str,
                    properties: dict[str, str]) -> TableMetadata:
    schema = spark_to_schema(struct)
    md = new_table_metadata(schema, _spec_of(schema, partitioning), UNSORTED, location,
                            {**DEFAULT_PROPERTIES, **properties})
    return md.set_properties({NAME_MAPPING: name_mapping_json(md.schema())})


def replace_metadata(base: TableMetadata, struct: T.StructType, partitioning: tuple[PartitionTransform, ...],
                     properties: dict[str, str]) -> TableMetadata:
    """CREATE OR REPLACE TABLE on an existing table (see TableMetadata.replacement)."""
    schema = spark_to_schema(struct)
    try:
        md = base.replacement(schema, _spec_of(schema, partitioning), properties)
    except ValueError as e:  # e.g. a new partition spec on a format v1 table
        raise UnsupportedError(f"cannot replace the table: {e}") from e
    return md.set_properties({NAME_MAPPING: name_mapping_json(md.schema(), md.property(NAME_MAPPING))})


def _with_schema(md: TableMetadata, fields: tuple[it.NestedField, ...]) -> TableMetadata:
    """Make `fields` the current schema (add_schema raises last-column-id) and extend the name mapping."""
    md = md.add_schema(Schema(fields, 0, md.schema().identifier_field_ids), make_current=True)
    return md.set_properties({NAME_MAPPING: name_mapping_json(md.schema(), md.property(NAME_MAPPING))})


def _replace_field(fields: tuple[it.NestedField, ...], path: tuple[str, ...], fn) -> tuple[it.NestedField, ...]:
    """Apply `fn(field) -> field | None` to the field at `path` (None drops it); a path goes into
    a list by `element` and into a map by `key` and `value` (`arr.element.x`)."""
    out = []
    found = False
    for f in fields:
        if f.name.lower() == path[0].lower():
            found = True
            new = fn(f) if len(path) == 1 else dataclasses.replace(f, type=_replace_inside(f.type, path, 1, fn))
            if new is not None:
                out.append(new)
        else:
            out.append(f)
    if not found:
        raise AnalysisError(f"column {'.'.join(path)!r} does not exist")
    return tuple(out)


# a list's element, a map's key and value: the attributes of their id, type and nullability
_INNER = {"element": ("element_id", "element", "element_required"), "key": ("key_id", "key", None),
          "value": ("value_id", "value", "value_required")}


def _inner_field(t: it.IcebergType, name: str) -> it.NestedField | None:
    """A list's element or a map's key or value, as a field of that name; None where `t` has none."""
    if not (isinstance(t, it.ListType) and name == "element" or isinstance(t, it.MapType) and name in ("key", "value")):
        return None
    id_attr, type_attr, required_attr = _INNER[name]
    return it.NestedField(getattr(t, id_attr), name, getattr(t, type_attr),
                          getattr(t, required_attr) if required_attr else True)


def _replace_inside(t: it.IcebergType, path: tuple[str, ...], depth: int, fn) -> it.IcebergType:
    """`t` (the type of `path[:depth]`) with `fn` applied at the rest of `path`. A list's element
    and a map's value may change type or nullability, or hold the field changed; they cannot be
    dropped or renamed, and a map's key cannot change (as Iceberg's schema update refuses)."""
    if isinstance(t, it.StructType):
        return it.StructType(_replace_field(t.fields, path[depth:], fn))
    if not isinstance(t, (it.ListType, it.MapType)):
        raise AnalysisError(f"column {'.'.join(path)} is not inside a struct, list or map")
    name = path[depth].lower()
    inner = _inner_field(t, name)
    if inner is None:
        raise AnalysisError(f"column {'.'.join(path)!r} does not exist: a "
                            f"{'list holds element' if isinstance(t, it.ListType) else 'map holds key and value'}")
    if depth + 1 < len(path):
        new = dataclasses.replace(inner, type=_replace_inside(inner.type, path, depth + 1, fn))
    else:
        new = fn(inner)
        if new is None or new.name != name or new.doc != inner.doc:
            raise AnalysisError(f"cannot {'drop' if new is None else 'rename' if new.name != name else 'comment on'} "
                                f"{'.'.join(path)}: a list's element or a map's key or value")
    if name == "key" and new != inner:
        raise AnalysisError(f"cannot change {'.'.join(path)}: a map's keys cannot be updated")
    _, type_attr, required_attr = _INNER[name]
    return dataclasses.replace(t, **{type_attr: new.type, **({required_attr: new.required} if required_attr else {})})


def json_default(md: TableMetadata, t: it.IcebergType, value: exp.Expression, required: bool,
                 what: str, zone: dt.tzinfo | None = UTC) -> object:
    """A DEFAULT expression as the JSON single-value default of a column of type `t` (format v3
    only; `what` names the column and table in errors; `zone`, the session's time zone, reads a
    timestamp without an offset)."""
    position = position_of(value)
    if md.format_version < DEFAULTS_FORMAT_VERSION:
        raise AnalysisError(f"cannot set a default value for {what}: column default values need format "
                            f"v{DEFAULTS_FORMAT_VERSION}, the table is v{md.format_version} (upgrade it with "
                            "ALTER TABLE ... SET TBLPROPERTIES ('format-version'='3'))", position=position)
    try:
        default = to_json(t, constant_value(value, t, zone))
        check_default(t, default, required, what)
    except DefaultValueError as e:
        raise AnalysisError(str(e), position=position) from None
    except ValueError as e:
        raise AnalysisError(f"invalid default for {what}: {e}", position=position) from None
    return default


def add_columns(md: TableMetadata, columns: tuple[NewColumn, ...], table_name: str = "",
                zone: dt.tzinfo | None = UTC) -> TableMetadata:
    """New columns; one with a DEFAULT gets it as both initial-default (older rows read it) and
    write-default, and may then be NOT NULL (the spec's v3 rule). `zone`: as `json_default`'s."""
    fields = md.schema().fields
    last = md.last_column_id
    for c in columns:
        new_type, last_after = spark_type_to_iceberg(parse_spark_type(c.type), last + 1)
        what = f"column {'.'.join(c.path)} of {table_name or 'the table'}"
        default = None if c.default is None else json_default(md, new_type, c.default, c.not_null, what, zone)
        if c.not_null and default is None:
            raise AnalysisError(f"cannot add required column {'.'.join(c.path)}: existing rows have no value")
        new_field = it.NestedField(last + 1, c.path[-1], new_type, c.not_null, c.comment, default, default)
        last = last_after
        if _field_at(Schema(fields), c.path) is not None:
            raise AnalysisError(f"column {'.'.join(c.path)!r} already exists")
        if len(c.path) == 1:
            fields = fields + (new_field,)
        else:
            fields = _replace_field(fields, c.path[:-1], lambda f, nf=new_field: it.NestedField(
                f.field_id, f.name, it.StructType(f.type.fields + (nf,)), f.required, f.doc))
    return _with_schema(md, fields)


def _field_at(schema: Schema, path: tuple[str, ...]) -> it.NestedField | None:
    """The field at `path` (case-insensitive), through lists by `element` and maps by `key` and
    `value`, as a field of that name."""
    field = None
    t: it.IcebergType = schema.struct
    for name in path:
        name = name.lower()
        field = (next((f for f in t.fields if f.name.lower() == name), None) if isinstance(t, it.StructType)
                 else _inner_field(t, name))
        if field is None:
            return None
        t = field.type
    return field


def drop_columns(md: TableMetadata, paths: tuple[tuple[str, ...], ...], if_exists: bool) -> TableMetadata:
    schema = md.schema()
    fields = schema.fields
    ids = set(schema.identifier_field_ids)
    for path in paths:
        f = _field_at(schema, path)
        if f is None:
            if if_exists:
                continue
            raise AnalysisError(f"column {'.'.join(path)!r} does not exist")
        inner = [".".join(path + p) for p, sub in it.walk_fields(f.type) if sub.field_id in ids]
        if f.field_id in ids or inner:
            raise AnalysisError(f"cannot drop identifier field {(inner or ['.'.join(path)])[0]!r}")
        if any(pf.source_id == f.field_id for pf in md.spec().fields):
            raise AnalysisError(f"cannot drop column {'.'.join(path)!r}: the current partition spec uses it")
        fields = _replace_field(fields, path, lambda _: None)
    if not fields:
        raise AnalysisError("cannot drop every column of a table")
    return _with_schema(md, fields)


def set_identifier_fields(md: TableMetadata, paths: tuple[tuple[str, ...], ...], drop: bool) -> TableMetadata:
    """SET replaces the identifier fields, DROP removes some; Iceberg's rules: a field must be a
    NOT NULL primitive (not float/double), reached through structs only."""
    schema = md.schema()
    ids = []
    for path in paths:
        name = ".".join(path)
        field = schema.find_field(name)
        if field is None:
            raise AnalysisError(f"cannot {'drop' if drop else 'set'} identifier field {name!r}: no such column")
        if drop:
            if field.field_id not in schema.identifier_field_ids:
                raise AnalysisError(f"cannot drop identifier field {name!r}: it is not an identifier field")
        elif not field.required:
            raise AnalysisError(f"identifier field {name!r} must be NOT NULL "
                                f"(ALTER TABLE ... ALTER COLUMN {name} SET NOT NULL first)")
        elif not isinstance(field.type, (it.PrimitiveType, it.DecimalType, it.FixedType)) or                 str(field.type) in ("float", "double"):
            raise AnalysisError(f"identifier field {name!r} must be a primitive type other than float and double, "
                                f"not {field.type}")
        ids.append(field.field_id)
    if not drop:
        parents = [p for path in paths for p in _ancestors(schema, path) if not p.required]
        if parents:
            raise AnalysisError(f"identifier fields must be reached through required structs: {parents[0].name!r} "
                                "is optional")
    kept = tuple(i for i in schema.identifier_field_ids if i not in ids) if drop else tuple(dict.fromkeys(ids))
    return md.add_schema(Schema(schema.fields, 0, kept), make_current=True)


def _ancestors(schema: Schema, path: tuple[str, ...]) -> list[it.NestedField]:
    found = []
    for i in range(1, len(path)):
        parent = schema.find_field(".".join(path[:i]))
        if parent is None or not isinstance(parent.type, it.StructType):
            raise AnalysisError(f"identifier field {'.'.join(path)!r} must not be inside a list or map")
        found.append(parent)
    return found


def rename_column(md: TableMetadata, path: tuple[str, ...], new_name: str) -> TableMetadata:
    schema = md.schema()
    parent = _field_at(schema, path[:-1]) if len(path) > 1 else None
    siblings = parent.type.fields if parent is not None and isinstance(parent.type, it.StructType) else schema.fields
    if any(f.name.lower() == new_name.lower() for f in siblings if f.name.lower() != path[-1].lower()):
        raise AnalysisError(f"cannot rename {'.'.join(path)} to {new_name!r}: that name is taken")
    fields = _replace_field(schema.fields, path, lambda f: dataclasses.replace(f, name=new_name))
    return _with_schema(md, fields)


def alter_column(md: TableMetadata, path: tuple[str, ...], new_type: str | None, comment: str | None,
                 not_null: bool | None, default: exp.Expression | None = None, drop_default: bool = False,
                 table_name: str = "", zone: dt.tzinfo | None = UTC) -> TableMetadata:
    """One column change; SET DEFAULT / DROP DEFAULT change only the write-default (the
    initial-default of rows written before the column existed never changes). `zone`: as
    `json_default`'s."""
    def change(f: it.NestedField) -> it.NestedField:
        if default is not None or drop_default:
            what = f"column {'.'.join(path)} of {table_name or 'the table'}"
            value = None if drop_default else json_default(md, f.type, default, f.required, what, zone)
            return dataclasses.replace(f, write_default=value)
        t = f.type
        if new_type is not None:
            wanted, _ = spark_type_to_iceberg(parse_spark_type(new_type), md.last_column_id)
            if not it.can_promote(f.type, wanted):
                raise AnalysisError(f"cannot change column {'.'.join(path)} from {f.type} to {wanted}: "
                                    "only int→bigint, float→double and wider decimal precision are allowed")
            t = wanted
        required = f.required
        if not_null is True and not f.required:
            raise AnalysisError(f"cannot make column {'.'.join(path)} NOT NULL: existing rows may hold NULL")
        if not_null is False:
            required = False
        return dataclasses.replace(f, type=t, required=required, doc=comment if comment is not None else f.doc)

    return _with_schema(md, _replace_field(md.schema().fields, path, change))


def _spec_with(md: TableMetadata, fields: tuple[PartitionField, ...]) -> TableMetadata:
    return md.add_spec(PartitionSpec(0, fields), make_default=True)


def _new_partition_field(md: TableMetadata, fields: tuple[PartitionField, ...], pt: PartitionTransform,
                         name: str | None) -> PartitionField:
    transform, source_id, default_name = transform_of(pt, md.schema(), for_alter=True)
    if any(f.source_id == source_id and f.transform == transform for f in fields):
        raise AnalysisError(f"partition field {transform}({pt.column}) already exists")
    new = PartitionField(source_id, md.last_partition_id + 1, transform, name or default_name)
    if any(f.name == new.name for f in fields):
        raise AnalysisError(f"partition field name {new.name!r} already exists")
    return new


def add_partition_field(md: TableMetadata, pt: PartitionTransform, name: str | None) -> TableMetadata:
    fields = md.spec().fields
    return _spec_with(md, fields + (_new_partition_field(md, fields, pt, name),))


def _find_partition_field(md: TableMetadata, pt: PartitionTransform) -> PartitionField:
    spec = md.spec()
    if pt.transform.lower() == "identity":
        for f in spec.fields:  # DROP PARTITION FIELD name: a partition field name comes first
            if f.name.lower() == pt.column.lower():
                return f
    transform, source_id, _ = transform_of(pt, md.schema())
    for f in spec.fields:
        if f.source_id == source_id and f.transform == transform:
            return f
    raise AnalysisError(f"partition field {pt.transform}({pt.column}) is not in the current spec")


def drop_partition_field(md: TableMetadata, pt: PartitionTransform) -> TableMetadata:
    victim = _find_partition_field(md, pt)
    return _spec_with(md, tuple(f for f in md.spec().fields if f != victim))


def replace_partition_field(md: TableMetadata, old: PartitionTransform, new: PartitionTransform,
                            name: str | None) -> TableMetadata:
    """One new spec, as Iceberg Java makes: the old field dropped and the new one added together."""
    victim = _find_partition_field(md, old)
    kept = tuple(f for f in md.spec().fields if f != victim)
    return _spec_with(md, kept + (_new_partition_field(md, kept, new, name),))


def set_write_order(md: TableMetadata, terms, distribution_mode: str) -> TableMetadata:
    """ALTER TABLE ... WRITE ...: the new default sort order (an equal existing one is reused, as
    Iceberg's ReplaceSortOrder does; no terms is the unsorted order 0) and write.distribution-mode."""
    fields = []
    for term in terms:
        transform, source_id, _ = transform_of(term.transform, md.schema())
        fields.append(SortField(source_id, transform, term.direction, term.null_order))
    order = next((o for o in md.sort_orders if o.fields == tuple(fields)), None)
    if order is None:
        order = SortOrder(max(o.order_id for o in md.sort_orders) + 1, tuple(fields))
        md = md._with(sort_orders=md.sort_orders + (order,))
    return md._with(default_sort_order_id=order.order_id).set_properties(
        {props.WRITE_DISTRIBUTION_MODE: distribution_mode})


def set_properties(md: TableMetadata, properties: dict[str, str], table_name: str) -> TableMetadata:
    """ALTER TABLE SET TBLPROPERTIES: 'format-version' upgrades the table (never down, as Java
    refuses; a table upgraded to v3 starts row ids at next-row-id 0 and its first v3 commit gives
    the existing files theirs); the other properties are set."""
    from pyice_sql.core.model.format_versions import WRITABLE_FORMAT_VERSIONS
    updates = dict(properties)
    version = updates.pop(props.FORMAT_VERSION, None)
    if version is not None:
        digits = version.strip()
        target = int(digits) if digits.isascii() and digits.isdigit() else None
        if target is None or target not in WRITABLE_FORMAT_VERSIONS:
            raise AnalysisError(f"format-version {version!r} is not one pyice_sql writes "
                                f"({', '.join(map(str, WRITABLE_FORMAT_VERSIONS))}): {table_name}")
        if target < md.format_version:
            raise AnalysisError(f"cannot downgrade {table_name} from format v{md.format_version} to v{target}")
        md = md.upgrade_format_version(target)
    return md.set_properties(updates)
