"""The row-level plan: explicit, pure-Python objects between the parser and Spark.

A MERGE, UPDATE or DELETE becomes one RowLevelPlan:

    TargetScan (pruned by `scan_filter`, reads `_file`/`_pos` row identity)
      → [join with the source, type chosen from the clauses]   (MERGE only)
      → MergeRows: ordered Instructions tag each row with `__row_operation`
        (1 delete, 2 update, 3 insert; anything else keeps the row unchanged)
      → write: merge-on-read (position deletes + new rows) or copy-on-write (rewrite the
        touched files) → one atomic commit.

UPDATE and DELETE are the degenerate case with no source: a single instruction on every
target row that satisfies WHERE. Rewrite rules (plan/rules/) fill in the join type, the scan
filter and the write mode; EXPLAIN prints the result.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sqlglot import exp

from pyice_sql.core.expr.predicates import AlwaysTrue, Expression
from pyice_sql.core.sql.statements import Query, TableRef

DELETE, UPDATE, INSERT = 1, 2, 3
MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE = "matched", "not_matched", "not_matched_by_source"


@dataclass(frozen=True)
class Instruction:
    """One WHEN clause: which rows it sees, its condition, and what it does to them.

    `values` maps target column name → SQL expression for UPDATE (only assigned columns) and
    INSERT (every column); DELETE has none.
    """

    kind: str
    condition: exp.Expression | None
    operation: int
    values: dict[str, exp.Expression] = field(default_factory=dict)
    position: Any = None


@dataclass(frozen=True)
class PruningFilter:
    """A scan filter and where it came from, for EXPLAIN."""

    predicate: Expression
    origin: str


@dataclass(frozen=True)
class RowLevelPlan:
    command: str  # MERGE, UPDATE or DELETE
    target: TableRef
    target_alias: str
    instructions: tuple[Instruction, ...]
    source: TableRef | Query | None = None
    source_alias: str | None = None
    on: exp.Expression | None = None
    where: exp.Expression | None = None
    join_type: str | None = None
    join_reason: str = ""
    # a MERGE that keeps unmatched source rows, over a source small enough to broadcast: its
    # matched pairs come from a join that broadcasts the source, not one that shuffles the target
    broadcast_source: bool = False
    # a MERGE that inserts, over a source within Spark's broadcast threshold: its inserts (at most
    # one per source row) are few, so merge-on-read writes them in the tasks that write the deletes
    small_source: bool = False
    # merge-on-read, where `broadcast_source` was dropped over a small target scan: the target rows
    # are narrowed to those the source's keys pair with (a broadcast left semi join, one job) before
    # the join that keeps unmatched source rows shuffles them, instead of shuffling every one
    semi_join_source_keys: bool = False
    filters: tuple[PruningFilter, ...] = ()
    scan_filter: Expression = field(default_factory=AlwaysTrue)
    source_key_columns: tuple[tuple[str, str], ...] = ()  # (target column, source column) of ON equalities
    prune_by_source_keys: bool = False
    mode: str = "copy-on-write"
    mode_reason: str = ""

    def with_(self, **changes: Any) -> "RowLevelPlan":
        return replace(self, **changes)

    @property
    def has_not_matched(self) -> bool:
        return any(i.kind == NOT_MATCHED for i in self.instructions)

    @property
    def has_not_matched_by_source(self) -> bool:
        return any(i.kind == NOT_MATCHED_BY_SOURCE for i in self.instructions)

    @property
    def has_matched_actions(self) -> bool:
        return any(i.kind == MATCHED for i in self.instructions)
