"""Decide from metadata alone whether manifests, partitions and data files can match a filter.

Every evaluator answers one one-sided question and must stay sound when metadata is missing,
truncated or written by another engine:

* inclusive ones (`ManifestEvaluator`, `PartitionEvaluator`, `InclusiveMetricsEvaluator`)
  answer "might some row match?"; any doubt means True, or a file with matches is skipped;
* strict ones (`PartitionEvaluator(strict=True)`, `StrictMetricsEvaluator`) answer "does every
  row surely match?"; any doubt means False, or DELETE drops rows it should keep.

Filters follow the two-valued semantics of `pyice_sql.core.expr.predicates`.
"""
from __future__ import annotations

import struct
from typing import Any, Callable

from pyice_sql.core.expr.predicates import (
    BoundPredicate, Expression, Op, bind, is_nan_value, matches_value, rewrite_not, visit,
)
from pyice_sql.core.expr.projection import inclusive_projection, strict_projection
from pyice_sql.core.model.conversions import from_bytes
from pyice_sql.core.model.manifest import DataFile, FieldSummary, ManifestFile
from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.types import IcebergType, is_floating


def decode_bound(t: IcebergType, raw: bytes | None) -> Any:
    """A bound as an internal value, or None when absent, NaN or unreadable (no information).

    Other writers may truncate strings mid-character or write NaN bounds; ignoring such a
    bound only loses pruning, never correctness.
    """
    if raw is None:
        return None
    try:
        value = from_bytes(t, raw)
    except (ValueError, TypeError, struct.error, UnicodeDecodeError):
        return None
    return None if is_nan_value(value) else value


def _prefix_cmp(bound: str, prefix: str) -> int:
    """Compare `bound` cut to the prefix length with the prefix (-1, 0 or 1)."""
    head = bound[:len(prefix)]
    return (head > prefix) - (head < prefix)


# For ordinary values, "every value satisfies NOT x" is "no value satisfies x".
_COMPLEMENT = {Op.NOT_EQ: Op.EQ, Op.NOT_IN: Op.IN, Op.NOT_STARTS_WITH: Op.STARTS_WITH}


def _bounds_exclude(op: Op, values: tuple[Any, ...], lower: Any, upper: Any) -> bool:
    """True if no non-null, non-NaN value within [lower, upper] can satisfy `op`.

    None bounds are unknown. Truncated string bounds stay valid because lower <= min and
    upper >= max still hold, and prefix comparisons only need those.
    """
    lit = values[0] if values else None
    if op == Op.LT:
        return lower is not None and lower >= lit
    if op == Op.LT_EQ:
        return lower is not None and lower > lit
    if op == Op.GT:
        return upper is not None and upper <= lit
    if op == Op.GT_EQ:
        return upper is not None and upper < lit
    if op == Op.EQ:
        return (lower is not None and lower > lit) or (upper is not None and upper < lit)
    if op == Op.IN:
        return not any((lower is None or lower <= v) and (upper is None or v <= upper) for v in values)
    if op == Op.STARTS_WITH:
        return ((lower is not None and _prefix_cmp(lower, lit) > 0)
                or (upper is not None and _prefix_cmp(upper, lit) < 0))
    return False


def _bounds_include(op: Op, values: tuple[Any, ...], lower: Any, upper: Any) -> bool:
    """True if every non-null, non-NaN value within [lower, upper] satisfies `op`."""
    if op in _COMPLEMENT:
        return _bounds_exclude(_COMPLEMENT[op], values, lower, upper)
    if lower is None or upper is None:
        return False
    lit = values[0] if values else None
    if op == Op.LT:
        return upper < lit
    if op == Op.LT_EQ:
        return upper <= lit
    if op == Op.GT:
        return lower > lit
    if op == Op.GT_EQ:
        return lower >= lit
    if op == Op.EQ:
        return lower == lit and upper == lit
    if op == Op.IN:
        return lower == upper and lower in values
    if op == Op.STARTS_WITH:
        return _prefix_cmp(lower, lit) == 0 and _prefix_cmp(upper, lit) == 0
    return False


class _FileStats:
    """Column metrics of one data file, with missing maps and ids read as "unknown" (None)."""

    def __init__(self, f: DataFile) -> None:
        self.f = f

    @staticmethod
    def _get(stats: dict[int, Any] | None, field_id: int) -> Any:
        return None if stats is None else stats.get(field_id)

    def nulls(self, field_id: int) -> int | None:
        return self._get(self.f.null_value_counts, field_id)

    def nans(self, p: BoundPredicate) -> int | None:
        """NaN count; 0 for types that cannot hold NaN."""
        return self._get(self.f.nan_value_counts, p.field_id) if is_floating(p.type) else 0

    def only_missing(self, p: BoundPredicate) -> bool:
        """Every value is null or NaN (so no ordinary comparison can hold)."""
        values, nulls, nans = self._get(self.f.value_counts, p.field_id), self.nulls(p.field_id), self.nans(p)
        if values is None:
            return False
        return (nulls is not None and values == nulls) or (nans is not None and values == nans) or (
            nulls is not None and nans is not None and values == nulls + nans)

    def only_nulls(self, p: BoundPredicate) -> bool:
        values, nulls = self._get(self.f.value_counts, p.field_id), self.nulls(p.field_id)
        return values is not None and nulls is not None and values == nulls

    def only_nans(self, p: BoundPredicate) -> bool:
        values, nans = self._get(self.f.value_counts, p.field_id), self.nans(p)
        return values is not None and nans is not None and values == nans

    def bounds(self, p: BoundPredicate) -> tuple[Any, Any]:
        return (decode_bound(p.type, self._get(self.f.lower_bounds, p.field_id)),
                decode_bound(p.type, self._get(self.f.upper_bounds, p.field_id)))


class _MetricsEvaluator:
    """A filter judged per data file from its column metrics; subclasses say what an empty file and
    untrustworthy metrics (v1 writers could store record_count -1) answer, and judge one predicate."""

    EMPTY_FILE: bool
    UNTRUSTED_METRICS: bool

    def __init__(self, schema: Schema, row_filter: Expression, case_sensitive: bool = False) -> None:
        self.expr = rewrite_not(bind(row_filter, schema, case_sensitive))

    def eval(self, data_file: DataFile) -> bool:
        if data_file.record_count == 0:
            return self.EMPTY_FILE
        if data_file.record_count < 0:
            return self.UNTRUSTED_METRICS
        stats = _FileStats(data_file)
        return visit(self.expr, lambda p: self._test(p, stats))

    @staticmethod
    def _test(p: BoundPredicate, s: _FileStats) -> bool:
        raise NotImplementedError


class InclusiveMetricsEvaluator(_MetricsEvaluator):
    """Whether a data file might contain a row matching the filter: eval is False only when the
    metrics prove no row matches."""

    EMPTY_FILE, UNTRUSTED_METRICS = False, True

    @staticmethod
    def _test(p: BoundPredicate, s: _FileStats) -> bool:
        op = p.op
        if op == Op.IS_NULL:
            return s.nulls(p.field_id) != 0
        if op == Op.NOT_NULL:
            return not s.only_nulls(p)
        if op == Op.IS_NAN:
            return s.nans(p) != 0 and not s.only_nulls(p)
        if op == Op.NOT_NAN:
            return not s.only_nans(p)
        if op in (Op.NOT_EQ, Op.NOT_IN):
            return True  # null and NaN rows match, and bounds cannot rule out every value
        if op == Op.NOT_STARTS_WITH:
            if s.nulls(p.field_id) != 0:
                return True
            lower, upper = s.bounds(p)
            return not _bounds_include(Op.STARTS_WITH, p.values, lower, upper)
        if s.only_missing(p):
            return False
        lower, upper = s.bounds(p)
        return not _bounds_exclude(op, p.values, lower, upper)


class StrictMetricsEvaluator(_MetricsEvaluator):
    """Whether every row of a data file surely matches the filter (e.g. DELETE drops it whole): eval
    is True only when the metrics prove all rows match; missing or odd metrics give False."""

    EMPTY_FILE, UNTRUSTED_METRICS = True, False

    @staticmethod
    def _test(p: BoundPredicate, s: _FileStats) -> bool:
        op = p.op
        if op == Op.IS_NULL:
            return s.only_nulls(p)
        if op == Op.NOT_NULL:
            return s.nulls(p.field_id) == 0
        if op == Op.IS_NAN:
            return s.only_nans(p)
        if op == Op.NOT_NAN:
            return s.nans(p) == 0 or s.only_nulls(p)
        if op in (Op.NOT_EQ, Op.NOT_IN, Op.NOT_STARTS_WITH):
            # Null and NaN rows satisfy these, so only the ordinary values need checking.
            if s.only_missing(p):
                return True
            lower, upper = s.bounds(p)
            return _bounds_include(op, p.values, lower, upper)
        if s.nulls(p.field_id) != 0 or s.nans(p) != 0:
            return False
        lower, upper = s.bounds(p)
        return _bounds_include(op, p.values, lower, upper)


class ManifestEvaluator:
    """Whether a manifest might hold files matching the filter, from its partition summaries."""

    def __init__(self, spec: PartitionSpec, schema: Schema, row_filter: Expression,
                 case_sensitive: bool = False) -> None:
        self.spec_id = spec.spec_id
        self.expr = rewrite_not(inclusive_projection(spec, schema, bind(row_filter, schema, case_sensitive)))
        self._positions = {f.field_id: i for i, f in enumerate(spec.fields)}

    def eval(self, manifest: ManifestFile) -> bool:
        """False only when the summaries prove no partition in the manifest can match."""
        if manifest.partition_spec_id != self.spec_id:
            raise ValueError(f"manifest {manifest.manifest_path} has spec {manifest.partition_spec_id}, "
                             f"evaluator was built for spec {self.spec_id}")
        summaries = manifest.partitions
        if summaries is None or len(summaries) != len(self._positions):
            return True
        return visit(self.expr, lambda p: self._might_match(p, summaries[self._positions[p.field_id]]))

    @staticmethod
    def _might_match(p: BoundPredicate, s: FieldSummary) -> bool:
        op = p.op
        # Writers omit both bounds exactly when no value is neither null nor NaN.
        no_values = s.lower_bound is None and s.upper_bound is None
        all_null = s.contains_null and no_values and (not is_floating(p.type) or s.contains_nan is False)
        if op == Op.IS_NULL:
            return s.contains_null
        if op == Op.NOT_NULL:
            return not all_null
        if op == Op.IS_NAN:
            return s.contains_nan is not False and not all_null
        if op == Op.NOT_NAN:
            return not (s.contains_nan is True and not s.contains_null and no_values)
        if op in (Op.NOT_EQ, Op.NOT_IN):
            return True
        lower, upper = decode_bound(p.type, s.lower_bound), decode_bound(p.type, s.upper_bound)
        if op == Op.NOT_STARTS_WITH:
            return s.contains_null or not _bounds_include(Op.STARTS_WITH, p.values, lower, upper)
        if no_values:
            return False
        return not _bounds_exclude(op, p.values, lower, upper)


class PartitionEvaluator:
    """Evaluate the projected filter on one partition tuple of `spec`.

    Inclusive (default): might the partition hold a matching row. Strict: does every row in
    the partition match, i.e. can files be dropped whole.
    """

    def __init__(self, spec: PartitionSpec, schema: Schema, row_filter: Expression, strict: bool = False,
                 case_sensitive: bool = False) -> None:
        project = strict_projection if strict else inclusive_projection
        self.expr = rewrite_not(project(spec, schema, bind(row_filter, schema, case_sensitive)))
        self._ids = [f.field_id for f in spec.fields]

    def eval(self, partition: tuple[Any, ...]) -> bool:
        if len(partition) != len(self._ids):
            raise ValueError(f"partition tuple {partition!r} does not have {len(self._ids)} fields")
        row = dict(zip(self._ids, partition))
        return visit(self.expr, lambda p: matches_value(p.op, p.values, row.get(p.field_id)))


def rows_must_match(schema: Schema, spec_by_id: Callable[[int], PartitionSpec], row_filter: Expression
                    ) -> Callable[[DataFile], bool]:
    """A test that every row of a data file matches `row_filter`, so the file can be dropped (or
    replaced) in metadata without being read: its partition satisfies the strict projection, or
    its column metrics prove the filter for every row."""
    metrics = StrictMetricsEvaluator(schema, row_filter)
    partitions: dict[int, PartitionEvaluator] = {}

    def must_match(f: DataFile) -> bool:
        if f.spec_id not in partitions:
            partitions[f.spec_id] = PartitionEvaluator(spec_by_id(f.spec_id), schema, row_filter, strict=True)
        return partitions[f.spec_id].eval(f.partition) or metrics.eval(f)
    return must_match
