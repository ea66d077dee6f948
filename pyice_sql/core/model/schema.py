"""Schema: an id-carrying struct with lookup by name or id, JSON form and name mapping.

Field ids are the identity of a column across renames, drops and type widenings, so every
lookup here can go by id, and the name mapping (`schema.name-mapping.default`) is derived
from the schema for readers of files that carry no ids.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pyice_sql.core.model.types import (
    IcebergType, ListType, MapType, NestedField, StructType, field_from_json, field_to_json, walk_fields,
)


@dataclass(frozen=True)
class Schema:
    fields: tuple[NestedField, ...]
    schema_id: int = 0
    identifier_field_ids: tuple[int, ...] = field(default_factory=tuple)

    @property
    def struct(self) -> StructType:
        return StructType(self.fields)

    @property
    def highest_field_id(self) -> int:
        return max((f.field_id for _, f in walk_fields(self.struct)), default=0)

    def column_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def find_field(self, name_or_id: str | int, case_sensitive: bool = False) -> NestedField | None:
        """Find a field by id, or by dotted name path (struct nesting), case-insensitively by default."""
        if isinstance(name_or_id, int):
            for _, f in walk_fields(self.struct):
                if f.field_id == name_or_id:
                    return f
            return None
        return _find_dotted(self.struct, name_or_id.split("."), case_sensitive)

    def field_path(self, field_id: int) -> tuple[str, ...] | None:
        """The name path of a field id (e.g. ("address", "city")); None when absent."""
        for path, f in walk_fields(self.struct):
            if f.field_id == field_id:
                return path
        return None

    def id_to_field(self) -> dict[int, NestedField]:
        return {f.field_id: f for _, f in walk_fields(self.struct)}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "struct", "schema-id": self.schema_id,
                               "fields": [field_to_json(f) for f in self.fields]}
        if self.identifier_field_ids:
            out["identifier-field-ids"] = list(self.identifier_field_ids)
        return out

    @classmethod
    def from_json(cls, obj: dict[str, Any], default_id: int = 0) -> "Schema":
        return cls(tuple(field_from_json(f) for f in obj["fields"]), obj.get("schema-id", default_id),
                   tuple(obj.get("identifier-field-ids", ()) or ()))

    def has_list_or_map(self) -> bool:
        return any(isinstance(f.type, (ListType, MapType)) for _, f in walk_fields(self.struct))

    def with_id(self, schema_id: int) -> "Schema":
        return Schema(self.fields, schema_id, self.identifier_field_ids)


def _find_dotted(t: IcebergType, parts: list[str], case_sensitive: bool) -> NestedField | None:
    """The field a dotted name reaches; a name may hold dots itself (a column named `a.b`), as
    in Iceberg's full-name index, where no two fields may share a full name."""
    if not isinstance(t, StructType):
        return None
    for n in range(len(parts), 0, -1):
        found = t.field_by_name(".".join(parts[:n]), case_sensitive)
        if found is not None:
            rest = parts[n:]
            deeper = _find_dotted(found.type, rest, case_sensitive) if rest else found
            if deeper is not None:
                return deeper
    return None


def name_mapping(schema: Schema, previous: list[dict] | None = None) -> list[dict]:
    """Iceberg name mapping for `schema`, keeping every name an id had in `previous` (renames)."""
    old_names: dict[int, list[str]] = {}

    def collect(entries: list[dict]) -> None:
        for e in entries:
            if "field-id" in e:
                old_names.setdefault(e["field-id"], []).extend(e.get("names", []))
            collect(e.get("fields", []) or [])

    collect(previous or [])

    def mapping_of(t: IcebergType) -> list[dict]:
        if isinstance(t, StructType):
            items = [(f.field_id, f.name, f.type) for f in t.fields]
        elif isinstance(t, ListType):
            items = [(t.element_id, "element", t.element)]
        elif isinstance(t, MapType):
            items = [(t.key_id, "key", t.key), (t.value_id, "value", t.value)]
        else:
            return []
        out = []
        for fid, name, ftype in items:
            names = [name] + [n for n in old_names.get(fid, []) if n != name]
            entry: dict[str, Any] = {"field-id": fid, "names": list(dict.fromkeys(names))}
            nested = mapping_of(ftype)
            if nested:
                entry["fields"] = nested
            out.append(entry)
        return out

    return mapping_of(schema.struct)


def name_mapping_json(schema: Schema, previous_json: str | None = None) -> str:
    previous = json.loads(previous_json) if previous_json else None
    return json.dumps(name_mapping(schema, previous), separators=(",", ":"))
