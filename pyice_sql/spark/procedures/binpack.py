"""Iceberg's size-based rewrite planning, shared by data-file and delete-file compaction.

Per partition: take the files outside [min-file-size, max-file-size] (all of them with
`rewrite-all`), pack them in order into groups of at most `max-file-group-size-bytes`, and keep
a group that has ≥ `min-input-files` files, more than one target file of content, or more than
max-file-size bytes. Callers add their own reasons to pick a file or keep a group.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence, TypeVar

from pyice_sql.core.errors import AnalysisError
from pyice_sql.spark.procedures.arguments import bool_option, long_option

T = TypeVar("T")
MAX_GROUP_SIZE_DEFAULT = 100 * 1024 ** 3
OPTIONS = ("target-file-size-bytes", "min-file-size-bytes", "max-file-size-bytes", "min-input-files", "rewrite-all",
           "max-file-group-size-bytes")


@dataclass(frozen=True)
class SizeOptions:
    target_file_size: int
    min_file_size: int
    max_file_size: int
    min_input_files: int = 5
    rewrite_all: bool = False
    max_group_size: int = MAX_GROUP_SIZE_DEFAULT

    @classmethod
    def parse(cls, options: Mapping[str, str], default_target: int, procedure: str) -> "SizeOptions":
        target = long_option(options, "target-file-size-bytes", default_target, procedure)
        made = cls(
            target_file_size=target,
            min_file_size=long_option(options, "min-file-size-bytes", int(target * 0.75), procedure),
            max_file_size=long_option(options, "max-file-size-bytes", int(target * 1.8), procedure),
            min_input_files=long_option(options, "min-input-files", 5, procedure),
            rewrite_all=bool_option(options, "rewrite-all", False, procedure),
            max_group_size=long_option(options, "max-file-group-size-bytes", MAX_GROUP_SIZE_DEFAULT, procedure))
        made.check(procedure)
        return made

    def check(self, procedure: str) -> None:
        def bad(why: str) -> AnalysisError:
            return AnalysisError(f"{procedure}: {why}")
        if self.target_file_size <= 0:
            raise bad(f"target-file-size-bytes must be > 0, got {self.target_file_size}")
        if self.min_file_size < 0 or self.min_file_size >= self.target_file_size:
            raise bad(f"min-file-size-bytes ({self.min_file_size}) must be >= 0 and < target-file-size-bytes "
                      f"({self.target_file_size})")
        if self.max_file_size <= self.target_file_size:
            raise bad(f"max-file-size-bytes ({self.max_file_size}) must be > target-file-size-bytes "
                      f"({self.target_file_size})")
        if self.min_input_files <= 0:
            raise bad(f"min-input-files must be > 0, got {self.min_input_files}")

    @property
    def write_max_file_size(self) -> int:
        return int(self.target_file_size + (self.max_file_size - self.target_file_size) * 0.5)

    def expected_output_files(self, input_bytes: int) -> int:
        """How many files a group's bytes make (Iceberg's rule: keep a remainder worth a file)."""
        target = self.target_file_size
        if input_bytes < target:
            return 1
        with_rest, without_rest = math.ceil(input_bytes / target), input_bytes // target
        if input_bytes % target > self.min_file_size:
            return with_rest
        if input_bytes / without_rest < min(1.1 * target, self.write_max_file_size):
            return without_rest
        return with_rest


def pack(items: Sequence[T], size: Callable[[T], int], max_group_size: int) -> list[list[T]]:
    """In order, a new group whenever the next item does not fit the open one (look-back 1)."""
    groups: list[list[T]] = []
    total = 0
    for item in items:
        n = size(item)
        if groups and total + n <= max_group_size:
            groups[-1].append(item)
            total += n
        else:
            groups.append([item])
            total = n
    return groups


def plan_partition(items: Sequence[T], size: Callable[[T], int], o: SizeOptions,
                   pick: Callable[[T], bool] = lambda _: False) -> list[list[T]]:
    """The groups to rewrite among one partition's files; `pick` adds a reason to take a file
    (and to keep any group holding it)."""
    chosen = list(items) if o.rewrite_all else [
        i for i in items if not o.min_file_size <= size(i) <= o.max_file_size or pick(i)]
    out = []
    for group in pack(chosen, size, o.max_group_size):
        total = sum(size(i) for i in group)
        if (o.rewrite_all or (len(group) > 1 and (len(group) >= o.min_input_files or total > o.target_file_size))
                or total > o.max_file_size or any(pick(i) for i in group)):
            out.append(group)
    return out
