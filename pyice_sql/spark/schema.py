"""Conversions between Iceberg schemas and Spark StructTypes.

Spark carries Iceberg field ids as the `parquet.field.id` metadata of each StructField: Spark
writes them into Parquet and, with `spark.sql.parquet.fieldId.read.enabled`, reads columns by
them, which is what makes renamed and re-added columns read right. Iceberg `timestamptz` is
Spark's TIMESTAMP and Iceberg `timestamp` is Spark's TIMESTAMP_NTZ, as Iceberg's Spark
integration maps them.
"""
from __future__ import annotations

import json
from typing import Iterator, Mapping

from pyspark.sql import DataFrame, types as T

from pyice_sql.core.errors import UnsupportedError
from pyice_sql.core.model import types as it
from pyice_sql.core.model.schema import Schema

FIELD_ID_KEY = "parquet.field.id"

_PRIMITIVE_TO_SPARK = {
    "boolean": T.BooleanType(), "int": T.IntegerType(), "long": T.LongType(), "float": T.FloatType(),
    "double": T.DoubleType(), "date": T.DateType(), "timestamp": T.TimestampNTZType(),
    "timestamptz": T.TimestampType(), "string": T.StringType(), "binary": T.BinaryType(),
    "unknown": T.NullType(),
}


# Spark's primitive types -> Iceberg's (several Spark widths share one Iceberg type)
_SPARK_TO_PRIMITIVE: tuple[tuple[tuple[type, ...], it.IcebergType], ...] = (
    ((T.ByteType, T.ShortType, T.IntegerType), it.INT), ((T.LongType,), it.LONG), ((T.FloatType,), it.FLOAT),
    ((T.DoubleType,), it.DOUBLE), ((T.BooleanType,), it.BOOLEAN),
    ((T.StringType, T.VarcharType, T.CharType), it.STRING), ((T.BinaryType,), it.BINARY), ((T.DateType,), it.DATE),
    ((T.TimestampNTZType,), it.TIMESTAMP), ((T.TimestampType,), it.TIMESTAMPTZ),
)


def parquet_node_ids(schema: Schema, former: Mapping[int, tuple[str, ...]] | None = None
                     ) -> dict[tuple[str, ...], int]:
    """The path of names of each node of the Parquet schema Spark writes for `schema` (a list's
    element under `list`, a map's key and value under `key_value`, as Iceberg's own writers name
    them too) → its Iceberg field id: the ids the shim puts on a list/map table's files, and the
    fields of a file written without ids, by the names it holds. With `former` (field id → every
    name it had), also the paths of those names, where no current path is spelled so (a file
    written before a rename; as a name mapping keeps old names)."""
    out: dict[tuple[str, ...], int] = {}

    def node(prefixes: list[tuple[str, ...]], name: str, t: it.IcebergType, field_id: int) -> None:
        names = [name, *(n for n in (former or {}).get(field_id, ()) if n != name)]
        paths = [p + (n,) for p in prefixes for n in names]
        for path in paths:
            out.setdefault(path, field_id)
        if isinstance(t, it.StructType):
            for f in t.fields:
                node(paths, f.name, f.type, f.field_id)
        elif isinstance(t, it.ListType):
            node([p + ("list",) for p in paths], "element", t.element, t.element_id)
        elif isinstance(t, it.MapType):
            node([p + ("key_value",) for p in paths], "key", t.key, t.key_id)
            node([p + ("key_value",) for p in paths], "value", t.value, t.value_id)

    if former:  # current names first: a name one field had and another has now is the other's
        out = parquet_node_ids(schema)
    for f in schema.fields:
        node([()], f.name, f.type, f.field_id)
    return out


def frame_schema(frame: DataFrame) -> T.StructType:
    """`frame.schema`. On a classic session it comes through the shim in pieces: a wide table's
    schema JSON passes 8 KB, and pyspark's own fetch then waits ~40 ms for it (Text.java)."""
    from pyice_sql.spark.connect_backend import is_connect

    if is_connect(frame.sparkSession):
        return frame.schema
    from pyice_sql.spark.jvm.bridge import load_shim

    return T.StructType.fromJson(json.loads(load_shim(frame.sparkSession).schema_json(frame._jdf)))


def to_spark_type(t: it.IcebergType, with_ids: bool = True) -> T.DataType:
    if isinstance(t, it.PrimitiveType):
        if t.name in _PRIMITIVE_TO_SPARK:
            return _PRIMITIVE_TO_SPARK[t.name]
        if t.name == "uuid":
            raise UnsupportedError("Iceberg type uuid has no Spark equivalent; store UUIDs as string")
        raise UnsupportedError(f"Iceberg type {t.name} has no Spark equivalent")
    if isinstance(t, it.DecimalType):
        return T.DecimalType(t.precision, t.scale)
    if isinstance(t, it.FixedType):
        return T.BinaryType()
    if isinstance(t, it.StructType):
        return to_spark_struct(t.fields, with_ids)
    if isinstance(t, it.ListType):
        return T.ArrayType(to_spark_type(t.element, with_ids), not t.element_required)
    if isinstance(t, it.MapType):
        return T.MapType(to_spark_type(t.key, with_ids), to_spark_type(t.value, with_ids), not t.value_required)
    raise UnsupportedError(f"unsupported Iceberg type {t}")


def to_spark_struct(fields: tuple[it.NestedField, ...], with_ids: bool = True) -> T.StructType:
    return T.StructType([
        T.StructField(f.name, to_spark_type(f.type, with_ids), not f.required,
                      {FIELD_ID_KEY: f.field_id} if with_ids else {})
        for f in fields
    ])


def schema_to_spark(schema: Schema, with_ids: bool = True) -> T.StructType:
    return to_spark_struct(schema.fields, with_ids)


class _IdCounter:
    def __init__(self, start: int) -> None:
        self.value = start

    def next(self) -> int:
        self.value += 1
        return self.value


def from_spark_type(dt: T.DataType, ids: _IdCounter) -> it.IcebergType:
    """Spark type → Iceberg type, assigning ids to nested fields breadth-first like Iceberg."""
    for spark_types, iceberg_type in _SPARK_TO_PRIMITIVE:
        if isinstance(dt, spark_types):
            return iceberg_type
    if isinstance(dt, T.DecimalType):
        return it.DecimalType(dt.precision, dt.scale)
    if isinstance(dt, T.StructType):
        return it.StructType(tuple(spark_fields_to_iceberg(dt, ids)))
    if isinstance(dt, T.ArrayType):
        element_id = ids.next()
        return it.ListType(element_id, from_spark_type(dt.elementType, ids), not dt.containsNull)
    if isinstance(dt, T.MapType):
        key_id, value_id = ids.next(), ids.next()
        return it.MapType(key_id, from_spark_type(dt.keyType, ids), value_id,
                          from_spark_type(dt.valueType, ids), not dt.valueContainsNull)
    raise UnsupportedError(f"Spark type {dt.simpleString()} cannot be stored in an Iceberg table")


def spark_fields_to_iceberg(struct: T.StructType, ids: _IdCounter) -> Iterator[it.NestedField]:
    field_ids = [ids.next() for _ in struct.fields]
    for fid, f in zip(field_ids, struct.fields):
        yield it.NestedField(fid, f.name, from_spark_type(f.dataType, ids), not f.nullable,
                             f.metadata.get("comment") if f.metadata else None)


def spark_to_schema(struct: T.StructType, last_column_id: int = 0, schema_id: int = 0) -> Schema:
    """A new Iceberg schema for a Spark struct; ids continue after `last_column_id`."""
    return Schema(tuple(spark_fields_to_iceberg(struct, _IdCounter(last_column_id))), schema_id)


def spark_type_to_iceberg(dt: T.DataType, last_column_id: int) -> tuple[it.IcebergType, int]:
    """Convert one column type for ALTER TABLE ADD COLUMN; returns the type and the new last id."""
    counter = _IdCounter(last_column_id)
    t = from_spark_type(dt, counter)
    return t, counter.value
