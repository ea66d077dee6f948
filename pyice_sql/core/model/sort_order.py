"""SortOrder and SortField: the write ordering a table asks writers to apply.

Sort orders are advisory for readers but are part of the metadata every writer must carry
through, and order id 0 is reserved for "unsorted", which every table has.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyice_sql.core.model.transforms import Transform, parse_transform

ASC = "asc"
DESC = "desc"
NULLS_FIRST = "nulls-first"
NULLS_LAST = "nulls-last"

UNSORTED_ORDER_ID = 0
INITIAL_SORT_ORDER_ID = 1


@dataclass(frozen=True)
class SortField:
    """One sort key: a (transformed) source column, its direction and where nulls go."""

    source_id: int
    transform: Transform
    direction: str = ASC
    null_order: str = NULLS_FIRST

    def __post_init__(self) -> None:
        if self.direction not in (ASC, DESC):
            raise ValueError(f"invalid sort direction {self.direction!r}")
        if self.null_order not in (NULLS_FIRST, NULLS_LAST):
            raise ValueError(f"invalid null order {self.null_order!r}")

    def to_json(self) -> dict[str, Any]:
        return {"transform": str(self.transform), "source-id": self.source_id,
                "direction": self.direction, "null-order": self.null_order}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "SortField":
        return cls(obj["source-id"], parse_transform(obj["transform"]), obj["direction"].lower(),
                   obj["null-order"].lower())


@dataclass(frozen=True)
class SortOrder:
    order_id: int = UNSORTED_ORDER_ID
    fields: tuple[SortField, ...] = field(default_factory=tuple)

    @property
    def is_unsorted(self) -> bool:
        return not self.fields

    def to_json(self) -> dict[str, Any]:
        return {"order-id": self.order_id, "fields": [f.to_json() for f in self.fields]}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "SortOrder":
        return cls(obj.get("order-id", UNSORTED_ORDER_ID), tuple(SortField.from_json(f) for f in obj.get("fields", [])))


UNSORTED = SortOrder(UNSORTED_ORDER_ID, ())
