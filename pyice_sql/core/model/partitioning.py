"""PartitionSpec and PartitionField: how a table's rows map to partition tuples.

A spec is immutable once committed; partition evolution adds a new spec with a new id, and old
files keep the spec they were written with (their manifests name it), so everything here is
keyed by spec id and partition field id, never by position in "the" spec.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.transforms import Transform, parse_transform
from pyice_sql.core.model.types import IcebergType, NestedField, StructType

PARTITION_DATA_ID_START = 1000
UNPARTITIONED_LAST_ID = 999


@dataclass(frozen=True)
class PartitionField:
    source_id: int
    field_id: int
    transform: Transform
    name: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "transform": str(self.transform), "source-id": self.source_id,
                "field-id": self.field_id}

    @classmethod
    def from_json(cls, obj: dict[str, Any], default_id: int) -> "PartitionField":
        return cls(obj["source-id"], obj.get("field-id", default_id), parse_transform(obj["transform"]), obj["name"])


@dataclass(frozen=True)
class PartitionSpec:
    spec_id: int = 0
    fields: tuple[PartitionField, ...] = field(default_factory=tuple)

    @property
    def is_unpartitioned(self) -> bool:
        """True with no fields or only void ones: such a spec puts every row in one partition."""
        return all(str(f.transform) == "void" for f in self.fields)

    @property
    def last_field_id(self) -> int:
        return max((f.field_id for f in self.fields), default=UNPARTITIONED_LAST_ID)

    def partition_type(self, schema: Schema) -> StructType:
        """The struct of partition values (`r102` in manifests): every field optional."""
        out = []
        for f in self.fields:
            src = schema.find_field(f.source_id)
            src_type: IcebergType = src.type if src is not None else f.transform.result_type(None)
            out.append(NestedField(f.field_id, f.name, f.transform.result_type(src_type), False))
        return StructType(tuple(out))

    def to_json(self) -> dict[str, Any]:
        return {"spec-id": self.spec_id, "fields": [f.to_json() for f in self.fields]}

    @classmethod
    def from_json(cls, obj: dict[str, Any] | list, spec_id: int = 0) -> "PartitionSpec":
        """Parse a v2 spec object, or a v1 bare field list (ids implicit from 1000)."""
        if isinstance(obj, list):
            fields_json, sid = obj, spec_id
        else:
            fields_json, sid = obj.get("fields", []), obj.get("spec-id", spec_id)
        return cls(sid, tuple(PartitionField.from_json(f, PARTITION_DATA_ID_START + i)
                              for i, f in enumerate(fields_json)))

    def compatible_with(self, other: "PartitionSpec") -> bool:
        """Same fields (source, transform, name, id): an equivalent spec to reuse, not re-add."""
        return self.fields == other.fields


UNPARTITIONED = PartitionSpec(0, ())
