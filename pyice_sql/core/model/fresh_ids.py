"""Fresh column ids for a schema, assigned the way Iceberg Java's TypeUtil.assignFreshIds does."""
from __future__ import annotations

import dataclasses
from typing import Callable

from pyice_sql.core.model.types import IcebergType, ListType, MapType, NestedField, StructType

IdAssigner = Callable[[tuple[str, ...]], int]


def assign_fresh_ids(fields: tuple[NestedField, ...], next_id: IdAssigner,
                     path: tuple[str, ...] = ()) -> tuple[NestedField, ...]:
    """Give a struct's own fields ids first, then descend into each field's type in order.

    `next_id` gets each field's name path (list elements and map keys/values as `element`,
    `key`, `value`), so a replacement can keep the ids of columns it shares with the old schema.
    """
    ids = [next_id(path + (f.name,)) for f in fields]
    return tuple(dataclasses.replace(f, field_id=i, type=_fresh_type(f.type, next_id, path + (f.name,)))
                 for f, i in zip(fields, ids))


def _fresh_type(t: IcebergType, next_id: IdAssigner, path: tuple[str, ...]) -> IcebergType:
    if isinstance(t, StructType):
        return StructType(assign_fresh_ids(t.fields, next_id, path))
    if isinstance(t, ListType):
        element_id = next_id(path + ("element",))
        return ListType(element_id, _fresh_type(t.element, next_id, path + ("element",)), t.element_required)
    if isinstance(t, MapType):
        key_id, value_id = next_id(path + ("key",)), next_id(path + ("value",))
        return MapType(key_id, _fresh_type(t.key, next_id, path + ("key",)), value_id,
                       _fresh_type(t.value, next_id, path + ("value",)), t.value_required)
    return t
