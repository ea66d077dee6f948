"""Iceberg's type system: primitives, decimal/fixed, and the nested struct/list/map types.

Every nested type carries the field ids Iceberg assigns, because ids (not names) are what
manifests, Parquet files and column metrics are keyed by. Types are frozen values so they can
be shared freely between schemas, specs and plan objects.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Union

PRIMITIVE_NAMES = (
    "boolean", "int", "long", "float", "double", "date", "time", "timestamp",
    "timestamptz", "string", "uuid", "binary",
    "unknown",  # format v3: a column of only nulls (read as nulls; never written by pyice_sql yet)
)


@dataclass(frozen=True)
class PrimitiveType:
    """One of Iceberg's fixed-width or variable-width primitive types, by its spec name."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in PRIMITIVE_NAMES:
            raise ValueError(f"unknown Iceberg primitive type {self.name!r}")

    def __str__(self) -> str:
        return self.name

    @property
    def is_primitive(self) -> bool:
        return True


@dataclass(frozen=True)
class DecimalType:
    precision: int
    scale: int

    def __str__(self) -> str:
        return f"decimal({self.precision},{self.scale})"

    @property
    def is_primitive(self) -> bool:
        return True


@dataclass(frozen=True)
class FixedType:
    length: int

    def __str__(self) -> str:
        return f"fixed[{self.length}]"

    @property
    def is_primitive(self) -> bool:
        return True


@dataclass(frozen=True)
class NestedField:
    """A named, id-carrying member of a struct (and so of a schema)."""

    field_id: int
    name: str
    type: "IcebergType"
    required: bool = False
    doc: str | None = None
    # format v3 default values, in the spec's JSON single-value form: what rows of files written
    # before the field existed read, and what a write that omits the field stores
    initial_default: Any = field(default=None, compare=False)
    write_default: Any = field(default=None, compare=False)

    @property
    def optional(self) -> bool:
        return not self.required


@dataclass(frozen=True)
class StructType:
    fields: tuple[NestedField, ...] = field(default_factory=tuple)

    def __str__(self) -> str:
        return "struct<" + ", ".join(f"{f.name}: {f.type}" for f in self.fields) + ">"

    @property
    def is_primitive(self) -> bool:
        return False

    def field_by_id(self, field_id: int) -> NestedField | None:
        for f in self.fields:
            if f.field_id == field_id:
                return f
        return None

    def field_by_name(self, name: str, case_sensitive: bool = False) -> NestedField | None:
        for f in self.fields:
            if f.name == name or (not case_sensitive and f.name.lower() == name.lower()):
                return f
        return None


@dataclass(frozen=True)
class ListType:
    element_id: int
    element: "IcebergType"
    element_required: bool = False

    def __str__(self) -> str:
        return f"list<{self.element}>"

    @property
    def is_primitive(self) -> bool:
        return False


@dataclass(frozen=True)
class MapType:
    key_id: int
    key: "IcebergType"
    value_id: int
    value: "IcebergType"
    value_required: bool = False

    def __str__(self) -> str:
        return f"map<{self.key}, {self.value}>"

    @property
    def is_primitive(self) -> bool:
        return False


IcebergType = Union[PrimitiveType, DecimalType, FixedType, StructType, ListType, MapType]

BOOLEAN = PrimitiveType("boolean")
INT = PrimitiveType("int")
LONG = PrimitiveType("long")
FLOAT = PrimitiveType("float")
DOUBLE = PrimitiveType("double")
DATE = PrimitiveType("date")
TIME = PrimitiveType("time")
TIMESTAMP = PrimitiveType("timestamp")
TIMESTAMPTZ = PrimitiveType("timestamptz")
STRING = PrimitiveType("string")
UUID = PrimitiveType("uuid")
BINARY = PrimitiveType("binary")

_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_FIXED = re.compile(r"^fixed\[\s*(\d+)\s*\]$")


def type_from_json(obj: Any) -> IcebergType:
    """Parse the spec's JSON form of a type (a string for primitives, an object for nested)."""
    if isinstance(obj, str):
        s = obj.strip().lower()
        if s in PRIMITIVE_NAMES:
            return PrimitiveType(s)
        m = _DECIMAL.match(s)
        if m:
            return DecimalType(int(m.group(1)), int(m.group(2)))
        m = _FIXED.match(s)
        if m:
            return FixedType(int(m.group(1)))
        raise ValueError(f"unknown Iceberg type {obj!r}")
    kind = obj.get("type")
    if kind == "struct":
        return StructType(tuple(field_from_json(f) for f in obj["fields"]))
    if kind == "list":
        return ListType(obj["element-id"], type_from_json(obj["element"]), bool(obj["element-required"]))
    if kind == "map":
        return MapType(obj["key-id"], type_from_json(obj["key"]), obj["value-id"],
                       type_from_json(obj["value"]), bool(obj["value-required"]))
    raise ValueError(f"unknown Iceberg type {obj!r}")


def field_from_json(obj: dict) -> NestedField:
    return NestedField(obj["id"], obj["name"], type_from_json(obj["type"]), bool(obj["required"]), obj.get("doc"),
                       obj.get("initial-default"), obj.get("write-default"))


def type_to_json(t: IcebergType) -> Any:
    """The spec's JSON form of a type, as Iceberg Java writes it."""
    if isinstance(t, StructType):
        return {"type": "struct", "fields": [field_to_json(f) for f in t.fields]}
    if isinstance(t, ListType):
        return {"type": "list", "element-id": t.element_id, "element": type_to_json(t.element),
                "element-required": t.element_required}
    if isinstance(t, MapType):
        return {"type": "map", "key-id": t.key_id, "key": type_to_json(t.key), "value-id": t.value_id,
                "value": type_to_json(t.value), "value-required": t.value_required}
    return str(t)


def field_to_json(f: NestedField) -> dict:
    out: dict[str, Any] = {"id": f.field_id, "name": f.name, "required": f.required, "type": type_to_json(f.type)}
    if f.doc is not None:
        out["doc"] = f.doc
    if f.initial_default is not None:
        out["initial-default"] = f.initial_default
    if f.write_default is not None:
        out["write-default"] = f.write_default
    return out


def walk_fields(t: IcebergType, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], NestedField]]:
    """Yield (name path, field) for every struct field below `t`, depth first.

    List elements and map keys/values are yielded as pseudo-fields named `element`, `key` and
    `value`, so callers that need every id (name mapping, id assignment) see them too.
    """
    if isinstance(t, StructType):
        for f in t.fields:
            yield path + (f.name,), f
            yield from walk_fields(f.type, path + (f.name,))
    elif isinstance(t, ListType):
        yield path + ("element",), NestedField(t.element_id, "element", t.element, t.element_required)
        yield from walk_fields(t.element, path + ("element",))
    elif isinstance(t, MapType):
        yield path + ("key",), NestedField(t.key_id, "key", t.key, True)
        yield from walk_fields(t.key, path + ("key",))
        yield path + ("value",), NestedField(t.value_id, "value", t.value, t.value_required)
        yield from walk_fields(t.value, path + ("value",))


def is_primitive(t: IcebergType) -> bool:
    return isinstance(t, (PrimitiveType, DecimalType, FixedType))


def is_floating(t: IcebergType) -> bool:
    """float or double: the types with NaN, which comparisons and metrics treat apart."""
    return isinstance(t, PrimitiveType) and t.name in ("float", "double")


def type_kind(t: IcebergType | None) -> str:
    """What per-type code dispatches on: a primitive's name, `decimal`, `fixed`, or `nested`."""
    if isinstance(t, PrimitiveType):
        return t.name
    if isinstance(t, DecimalType):
        return "decimal"
    if isinstance(t, FixedType):
        return "fixed"
    return "nested"


def can_promote(old: IcebergType, new: IcebergType) -> bool:
    """The v2 type widenings ALTER COLUMN TYPE may apply without rewriting data."""
    if old == new:
        return True
    if old == INT and new == LONG:
        return True
    if old == FLOAT and new == DOUBLE:
        return True
    if isinstance(old, DecimalType) and isinstance(new, DecimalType):
        return new.scale == old.scale and new.precision >= old.precision
    return False
