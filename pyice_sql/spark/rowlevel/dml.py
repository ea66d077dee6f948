"""Run MERGE INTO, UPDATE and DELETE: plan → Spark jobs → delta writer → one atomic commit.

Flow (see plan/nodes.py for the plan itself):
  1. Materialise the source once (MERGE) and, when the ON clause has key equalities and no
     NOT MATCHED BY SOURCE clause, narrow the target scan's files with the source keys'
     values/range, and its rows where those keys are at hand (compile/key_filter.py).
  2. Plan the target scan with the pruning filter; DELETE drops files that the WHERE clause
     covers entirely (strict projection) in metadata only, without reading them.
  3. Run MergeRows (one SQL query over views; an UPDATE's or DELETE's: a filter and a projection
     of the scan) and persist the tagged rows when two passes read them; check cardinality.
  4. Write: merge-on-read writes one position-delete file per touched data file plus new data
     files for updated/inserted rows; copy-on-write rewrites exactly the files holding rows an
     action changed (their other rows copied) plus the inserted rows, by predicate for an
     UPDATE / DELETE that can be evaluated twice (`_rewrites_by_predicate`), by MergeRows again
     over those files for a MERGE (`_merges_again`: first its matched side, uncached).
  5. Commit one snapshot with Iceberg's conflict validation; on failure delete what we wrote.
A statement that changes nothing commits nothing. The result is one row of metrics.
"""
from __future__ import annotations

import datetime as dt
import itertools
import math
from dataclasses import dataclass, replace
from typing import Callable

from pyspark.sql import Column, DataFrame, functions as F, types as T
from sqlglot import exp

from pyice_sql.core import properties as props
from pyice_sql.core.catalog.base import Table
from pyice_sql.core.commit.cleanup import commit_or_clean, delete_written_on_failure
from pyice_sql.core.commit.operations import row_delta
from pyice_sql.core.commit.producer import RemovedFile, file_key, update_metadata
from pyice_sql.core.commit.validation import RowLevelValidator
from pyice_sql.spark.rowlevel.compile.merge_rows import (
    FILE, FILE_ORDINAL, KEY_PREFIX, LIVE, MATCHED_PAIR, MATCHED_SIDE_JOIN, POS, SOURCE_MARK, SOURCE_ROW, TARGET_KEEPING_JOIN,
    rewrite_columns, row_filter, subquery, tagged_columns, tagged_select, unmatched_source_select, value_name,
    value_probe_columns, value_probe_select,
)
from pyice_sql.spark.rowlevel.compile.key_filter import key_row_filter, pairing_rows, shim_key_range
from pyice_sql.spark.rowlevel.compile.store_assignment import check_values, known_value_types
from pyice_sql.core.errors import AnalysisError, CardinalityError
from pyice_sql.core.expr.evaluators import rows_must_match
from pyice_sql.core.expr.from_sql import target_columns, to_predicate
from pyice_sql.core.expr.predicates import AlwaysTrue, And, Expression, gt_eq, in_, lt_eq
from pyice_sql.core.model.conversions import to_internal, zoned_instant
from pyice_sql.core.model.types import IcebergType, type_kind
from pyice_sql.core.model.manifest import DataFile
from pyice_sql.core.model.snapshots import MAIN_BRANCH
from pyice_sql.core.plan import builder
from pyice_sql.core.plan.nodes import UPDATE, PruningFilter, RowLevelPlan
from pyice_sql.core.plan.rules import RuleContext, apply_rules
from pyice_sql.core.plan.rules.join_type import (
    broadcast_by_matched_sources, hash_join_source, keep_broadcast_for_target,
)
from pyice_sql.spark.connect_backend import (
    analyzed_deterministic, drop_own_view, fill_cache, is_connect, is_local_data, reads_cached_data, row_count_estimate,
    size_at_most, shuffle_partitions, size_unknown, within_broadcast_threshold,
)
from pyice_sql.core.scan.key_pruning import source_keys_can_prune
from pyice_sql.core.scan.planner import FileScanTask, ScanPlan, plan_files
from pyice_sql.spark.read.file_keys import ordinal_filter_prunes_files, paths_by_ordinal
from pyice_sql.spark.read.reader import FILE_ORDINAL_COL, METADATA_COLUMNS, read_tasks
from pyice_sql.spark.read.row_lineage import read_with_lineage
from pyice_sql.spark.frames import column, function, select_sql, with_columns
from pyice_sql.spark.local_relation import values
from pyice_sql.spark.read.table_scan import branch_head
from pyice_sql.spark.runtime import spark_session_zone
from pyice_sql.spark.schema import frame_schema, schema_to_spark
from pyice_sql.core.sql import statements as st
from pyice_sql.spark.rowlevel.context import (
    CARDINALITY_MARKER, NotMatched, RowLevelWrite, file_scoped_deletes,
)
from pyice_sql.spark.rowlevel.copy_on_write import CardinalityViolation, write_copy_on_write
from pyice_sql.spark.rowlevel.copy_on_write_v3 import write_copy_on_write_v3
from pyice_sql.spark.rowlevel.merge_on_read import write_merge_on_read
from pyice_sql.spark.rowlevel.merge_on_read_v3 import write_merge_on_read_v3
from pyice_sql.spark.rowlevel.schema_evolution import Evolution, evolve
from pyice_sql.core.model.row_lineage import LINEAGE_COLUMNS
from pyice_sql.spark.write.data_writer import enforce_not_null, quote

MAX_SOURCE_KEY_VALUES = 1000
# A source held in the plan has its keys collected for the target rows' filter alone (no file to
# prune) up to this size: thousands of rows, a few ms of Python. A larger one's keys would narrow
# the rows to a range, which spread keys do not narrow.
LOCAL_KEYS_MAX_BYTES = 1 << 20
_METADATA_NAMES = frozenset(n.lower() for n in METADATA_COLUMNS + LINEAGE_COLUMNS)
_views = itertools.count()


@dataclass
class DmlResult:
    num_updated_rows: int = 0
    num_deleted_rows: int = 0
    num_inserted_rows: int = 0
    added_data_files: int = 0
    removed_data_files: int = 0
    added_delete_files: int = 0
    snapshot_id: int | None = None

    @property
    def num_affected_rows(self) -> int:
        return self.num_updated_rows + self.num_deleted_rows + self.num_inserted_rows

    def as_row(self) -> dict:
        return {"num_affected_rows": self.num_affected_rows, "num_updated_rows": self.num_updated_rows,
                "num_deleted_rows": self.num_deleted_rows, "num_inserted_rows": self.num_inserted_rows,
                "num_added_data_files": self.added_data_files, "num_removed_data_files": self.removed_data_files,
                "num_added_delete_files": self.added_delete_files, "snapshot_id": self.snapshot_id}



class RowLevelExecutor:
    """Executes one row-level statement against a session (for loading tables and running queries)."""

    def __init__(self, session) -> None:
        self.session = session
        self.spark = session.spark
        self._temp: list[str] = []
        self._persisted: list[DataFrame] = []
        self.evolution: Evolution | None = None  # MERGE WITH SCHEMA EVOLUTION that adds columns
        # the session's time zone, which reads the statement's timestamps written without an offset
        self.zone = spark_session_zone(self.spark)

    # --- entry points -------------------------------------------------------------------------
    def plan(self, stmt: st.Merge | st.Update | st.Delete) -> tuple[Table, RowLevelPlan, DataFrame | None]:
        table = self.session.load_ref(stmt.target if isinstance(stmt, st.Merge) else stmt.table)
        schema = table.metadata.schema()
        source = None
        if isinstance(stmt, st.Merge):
            source = self._cached(self._source_frame(stmt.source))
            source_schema = frame_schema(source)
            self.evolution = evolve(stmt, table, source_schema) if stmt.schema_evolution else None
            if self.evolution is not None:
                stmt, table = self.evolution.merge, self.evolution.table
                schema = table.metadata.schema()
            plan = builder.build_merge(stmt, schema, source_schema.names)
        elif isinstance(stmt, st.Update):
            plan = builder.build_update(stmt, schema)
        else:
            plan = builder.build_delete(stmt)
        source_cols = {c.lower() for c in source_schema.names} if source is not None else set()
        ctx = RuleContext(schema, table.metadata.properties, self._target_column(plan, schema, source_cols),
                          self._source_column(plan, source_cols),
                          lambda: source is None or analyzed_deterministic(source),
                          lambda: source is not None and within_broadcast_threshold(source), self.zone)
        return table, apply_rules(plan, ctx), source

    def run(self, stmt: st.Merge | st.Update | st.Delete) -> DmlResult:
        try:
            table, plan, source = self.plan(stmt)
            start = branch_head(table, plan.target.branch or MAIN_BRANCH)
            scan = plan_files(table.metadata, table.io, start, plan.scan_filter)
            key_filter = None
            if source is not None and plan.prune_by_source_keys:
                schema = table.metadata.schema()
                local = is_local_data(source)
                prunes = source_keys_can_prune(scan.tasks, schema, table.metadata.spec_by_id,
                                               [t for t, _ in plan.source_key_columns])
                # a small source held in the plan gives its keys without a job: worth it for the rows alone
                found = (self._source_keys(plan, source, local, local or within_broadcast_threshold(source))
                         if prunes else _local_source_keys(plan, source)
                         if local and size_at_most(source, LOCAL_KEYS_MAX_BYTES) else None)
                if found is not None:
                    key_filter = key_row_filter(plan.source_key_columns, schema, source.schema, *found,
                                                integral_range=shim_key_range(self.spark) if found[1] else None)
                if prunes:
                    narrowed = _narrowed(plan, schema, *found, source.schema, self.zone)
                    if narrowed is not plan:
                        plan, scan = narrowed, plan_files(table.metadata, table.io, start, narrowed.scan_filter)
            return self._execute(table, plan, source, scan, key_filter)
        finally:
            self.close()

    def _cached(self, source: DataFrame) -> DataFrame:
        """`source`, cached unless Spark holds its rows in the plan: it is read by the key pre-pass
        and the join. A source Spark cannot size (rows from Python's `createDataFrame`, an RDD) has
        its cache filled first, so that the plan rules see its real size: a small one then gets the
        plans of a small source (keys collected, broadcast, one write job) as SQL VALUES do. A
        source that reads a cache already (a cached DataFrame's view, deterministic) is read from it."""
        if is_local_data(source):
            return source
        if not (reads_cached_data(source) and analyzed_deterministic(source)):
            source = source.persist()
            self._persisted.append(source)
        if not size_unknown(source):
            return source
        # new plans: one that reads the cache to fill it, and one whose cached relation then
        # reports the size found (a plan computed before keeps the estimate it had)
        fill_cache(source.select("*"))
        return source.select("*")

    def close(self) -> None:
        """Release what a run cached and the temp views it registered."""
        for df in self._persisted:
            df.unpersist()
        for name in self._temp:
            drop_own_view(self.spark, name)
        self._persisted, self._temp = [], []

    # --- resolution helpers -------------------------------------------------------------------
    @staticmethod
    def _target_column(plan: RowLevelPlan, schema, source_cols: set[str]):
        """Resolves a reference to the target's column or nested field (see `target_columns`)."""
        others = {plan.source_alias.lower()} if plan.source_alias else set()
        return target_columns(schema, _qualifiers(plan), others, source_cols)

    @staticmethod
    def _source_column(plan: RowLevelPlan, source_cols: set[str]):
        alias = (plan.source_alias or "").lower()

        def is_source(col) -> str | None:
            if col.table and col.table.lower() == alias and col.name.lower() in source_cols:
                return col.name
            return None
        return is_source

    def _view(self, df: DataFrame) -> str:
        name = f"__pyice_dml_{next(_views)}"
        df.createOrReplaceTempView(name)
        self._temp.append(name)
        return name

    def _source_frame(self, source: st.TableRef | st.Query) -> DataFrame:
        if isinstance(source, st.TableRef):
            return self.session.scan_ref(source)
        return self.session.query_frame(source)

    def _source_keys(self, plan: RowLevelPlan, source: DataFrame, local: bool, small: bool
                     ) -> tuple[dict[str, list], dict[str, tuple]]:
        """The source's distinct key values per target key column (few) and key ranges (for the
        columns with many). `local`: the source is held in the plan (`is_local_data`), so Python
        reads its keys without a job; `small`: small enough for Spark to broadcast, so one aggregate
        finds them (`_small_source_keys`).

        Otherwise one query per key column collects up to MAX_SOURCE_KEY_VALUES + 1 distinct keys
        (exact: a column with more gets the range, never a partial IN list); only the columns with
        more keys need a second query, for their min and max. (A large source pays a distinct
        aggregate of its keys; it is only asked when the target's files can be told apart.)"""
        found = _local_source_keys(plan, source) if local else None
        ranged = found is None and _ranged_by_row_count(plan, source)
        if found is None and small:
            found = _small_source_keys(plan, source, sets=not ranged)
        if found is not None:
            return found
        keys = {}
        for t_col, s_col in [] if ranged else plan.source_key_columns:
            c = F.col(quote(s_col))
            keys[t_col] = [r[0] for r in source.select(c).where(c.isNotNull()).distinct()
                           .limit(MAX_SOURCE_KEY_VALUES + 1).collect()]
        many = [(t, s) for t, s in plan.source_key_columns if ranged or len(keys[t]) > MAX_SOURCE_KEY_VALUES]
        bounds = source.agg(*[f(F.col(quote(s))) for _, s in many for f in (F.min, F.max)]).first() if many else ()
        ranges = {}
        for i, (t, _) in enumerate(many):
            if bounds[2 * i] is None:  # no non-null key (`ranged`): none can match
                keys[t] = []
            else:
                ranges[t] = (bounds[2 * i], bounds[2 * i + 1])
        return keys, ranges

    # --- execution ----------------------------------------------------------------------------
    def _execute(self, table: Table, plan: RowLevelPlan, source: DataFrame | None, scan: ScanPlan,
                 key_filter: str | None = None) -> DmlResult:
        """`key_filter`: the target rows the source's keys can pair with (compile/key_filter.py),
        applied to the scan MergeRows tags; copy-on-write reads the files it rewrites again, whole."""
        task = self.session.progress.task(f"{plan.command} {table.full_name}")
        md = table.metadata
        schema = md.schema()
        branch = plan.target.branch or MAIN_BRANCH
        start = scan.snapshot
        self.session.last_plan = scan
        task.phase("planning", f"{len(scan.tasks)} of {scan.metrics.data_files_total} data files to scan, "
                               f"{len(scan.delete_files)} delete files ({plan.mode})")
        whole, tasks = self._split_whole_file_deletes(table, plan, scan)
        broadcastable = plan.broadcast_source  # a small, deterministic source, whatever the target's size
        plan = keep_broadcast_for_target(plan, sum(t.file.file_size_in_bytes for t in tasks))
        v3 = md.format_version >= 3
        # format v3: an updated row keeps its `_row_id`, read with the target rows it replaces
        row_ids = v3 and any(i.operation == UPDATE for i in plan.instructions)
        # UPDATE / DELETE test the rows' position deletes after their own condition (reader.read_tasks)
        live = LIVE if plan.source is None else None
        # copy-on-write MERGE: the matched side first (files, counts, cardinality), then MergeRows
        # again over the files to rewrite (copy_on_write.py)
        merge_again = plan.mode != "merge-on-read" and _merges_again(plan)
        # copy-on-write UPDATE / DELETE: the count of changes, then (by predicate) the files to
        # rewrite read again through the same scan (copy_on_write.py)
        rewrites = plan.mode != "merge-on-read" and plan.source is None
        # format v3: its copies keep their lineage, read with them
        lineage = row_ids or v3 and (merge_again or rewrites)
        # pass 2 broadcasts the source where the plan would (over a large target scan) and the first
        # pass cannot keep the matched source rows' ids (`matched_sources` below); otherwise a NOT
        # MATCHED clause makes it shuffle both sides by key, as Iceberg Java's ReplaceData does
        broadcast_again = merge_again and plan.broadcast_source
        if merge_again:
            plan = plan.with_(broadcast_source=False)

        def scan_rows(read: list[FileScanTask], row_filter: str | None = None,
                      pairing: bool = False) -> tuple[DataFrame, Column | None]:
            """The target scan of `read`, and (a MERGE's) its rows' file paths by ordinal (the rows
            carry their file's ordinal through the join, and get its path after it). With
            `row_filter` or `pairing`, only the rows the source's keys pair with (key_filter.py). An
            UPDATE's or DELETE's rows are aliased as its target, for the steps that read them
            (`_select_over`); they keep the scan's own `_file`, so no lookup is built for them."""
            rows = (read_with_lineage if lineage else read_tasks)(self.spark, schema, read, with_metadata=True,
                                                                  live_flag=live, file_ordinal=True,
                                                                  row_filter=row_filter)
            if source is None:
                return rows.alias(plan.target_alias), None
            if pairing:
                rows = pairing_rows(rows, source, plan.source_key_columns, schema)
            return (rows, paths_by_ordinal(self.spark, [t.file.file_path for t in read], column(self.spark, FILE)))

        # A copy-on-write MERGE's second pass (or UPDATE's or DELETE's rewrite by predicate) reads
        # whole the files its first pass found: it reuses the first pass's scan, taken before the
        # key filter, instead of building another. Where they are all the planned files that saves
        # ~50 ms of driver time (a 1 % MERGE into a 2M-row clustered table 6-8 % faster); where
        # they are some, a second listing of them (on a local disk within the noise: 200 of 387
        # files, 1.62 s against 1.63 s; on an object store Spark stats each file). With deletes to
        # apply, the key filter stays inside the scan, ahead of the delete filter (`read_tasks`),
        # so the second pass scans on its own.
        planned = None
        if (merge_again or rewrites) and (key_filter is None or not any(t.deletes for t in tasks)):
            planned = scan_rows(tasks)
            target, file_path = planned
        else:
            target, file_path = scan_rows(tasks, key_filter, plan.semi_join_source_keys and key_filter is None)
        # a MERGE's SQL reads the target as a view; an UPDATE's or DELETE's steps read the frame. The
        # first pass's scan filtered by the source keys is a `subquery` of its view, so that the
        # second pass reads the same view (the frame serves a MERGE for its schema only)
        scan_view = target_view = self._view(target) if source is not None else None
        if planned is not None and key_filter is not None:
            target_view = subquery(scan_view, key_filter)
        # the tagged rows carry their file's ordinal (the writers key their files by it): a MERGE's
        # where the lookup of paths exists, an UPDATE's or DELETE's where the shim is (the scan's)
        ordinals = file_path is not None if source is not None else bool(tasks) and not is_connect(self.spark)

        def target_rows(read: list[FileScanTask]) -> tuple[DataFrame, str | None, Column | None]:
            """Copy-on-write pass 2 (a MERGE's, or the rewrite by predicate): the whole rows of
            `read`, with their view (a MERGE's) and file paths. From the first pass's scan where
            there is one, the rows of its other files filtered out by their file's ordinal: that filter reads
            only the rows' file metadata, so Spark tests it against each file as it lists them and
            never opens the others. (The ordinals are an array literal, not an IN list, whose
            values Spark would write into the generated code, compiling the scan's stage again for
            each new set of files.) Where Spark would not test it per file
            (`ordinal_filter_prunes_files`), `read` is scanned on its own."""
            some = len(read) < len(tasks)
            if planned is None or some and not ordinal_filter_prunes_files(self.spark):
                rows, paths = scan_rows(read)
                return rows, self._view(rows) if source is not None else None, paths
            rows, paths = planned
            keep = None
            if some:
                ordinal = {t.file.file_path: i for i, t in enumerate(tasks)}
                ordinals = ", ".join(f"{ordinal[t.file.file_path]}L" for t in read)
                keep = f"array_contains(array({ordinals}), {FILE_ORDINAL_COL})" if read else "false"
            if source is None:  # an UPDATE's or DELETE's rewrite reads the frame itself
                return rows if keep is None else rows.where(F.expr(keep)), None, paths
            # a MERGE's SQL reads them as the first pass's scan view, or a subquery of it: no view
            # of their own
            return rows, scan_view if keep is None else subquery(scan_view, keep), paths

        # copy-on-write MERGE with inserts and a small source, its rows' files known by ordinal: the
        # count of changes may keep the matched pairs' source row ids (FileChanges.java), so that
        # pass 2 joins the source by broadcast, its unmatched rows those the ids leave out
        # (copy_on_write.py)
        matched_sources = (merge_again and broadcastable and file_path is not None
                           and broadcast_by_matched_sources(sum(t.file.file_size_in_bytes for t in tasks),
                                                            shuffle_partitions(self.spark),
                                                            self.spark.sparkContext.defaultParallelism))
        broadcast_again = broadcast_again and not matched_sources
        if source is not None:
            # one projection, one analysis; ids stay the same on each read of the persisted source
            source = with_columns(source, {SOURCE_MARK: function(self.spark, "lit", True), **(
                {SOURCE_ROW: function(self.spark, "monotonically_increasing_id")} if plan.broadcast_source else {})})
            source_view = self._view(F.broadcast(source) if plan.broadcast_source else source)
        else:
            source_view = None
        plan = self._read_pyice_tables_from_views(plan)
        stored = self._store_assignment(plan, schema, (target, target_view),
                                        None if source is None else (source, source_view))

        def tagged_sql(p: RowLevelPlan, t_view: str, s_view: str | None, source_row: bool = False,
                       copies: bool = False) -> str:
            return tagged_select(p, schema, t_view, s_view, stored, row_ids,
                                 "_file" if file_path is None else FILE_ORDINAL_COL, source_row, copies,
                                 lineage=v3 and copies)

        def tag(p: RowLevelPlan, target: DataFrame, target_view: str | None, file_path: Column | None,
                copies: bool = False, sources: tuple[DataFrame, str] | None = None, source_row: bool = False,
                unmatched: str | None = None) -> DataFrame:
            """`copies`: MergeRows again (copy-on-write pass 2), whose matched side is computed twice,
            not cached; `sources`: the source and its view, when not the statement's; `source_row`:
            the rows carry their source row's id; `unmatched`: see `_merge_rows`."""
            if p.source is None:  # no join: the rows' file path and ordinal straight from the scan
                ordinal = [f"{quote(p.target_alias)}.{FILE_ORDINAL_COL} AS {FILE_ORDINAL}"] if ordinals else []
                return _select_over(target, [*tagged_columns(p, schema, stored, row_ids), *ordinal],
                                    row_filter(p, live))
            rows = self._merge_rows(
                p, target_view, *(sources or (source, source_view)),
                lambda p, t_view, s_view, source_row=source_row: tagged_sql(p, t_view, s_view, source_row, copies),
                cache_matched=not copies, unmatched=unmatched)
            if file_path is None:
                return rows
            # the ordinal stays too: the delete writer keys its rows by it
            return with_columns(rows, {FILE_ORDINAL: rows[FILE], FILE: file_path})  # one analysis, not two

        merge_rows, with_ids = None, None
        if merge_again:  # both passes must see the same pairs
            matched_side = plan.with_(join_type=MATCHED_SIDE_JOIN.get(plan.join_type, plan.join_type))
            if matched_sources:
                # source row ids, which Spark's analysis calls non-deterministic (they are the same on
                # each read of the cached or local source): the pairs' determinism is asked without them
                merge_again = matched_sources = analyzed_deterministic(
                    self.spark.sql(tagged_sql(matched_side, target_view, source_view)))
                if matched_sources:  # both passes broadcast it: it is within Spark's broadcast threshold
                    ids = source.withColumn(SOURCE_ROW, F.monotonically_increasing_id())
                    with_ids = (ids, self._view(ids))
                    tagged = tag(matched_side, target, target_view, file_path, sources=with_ids, source_row=True)
            else:
                tagged = tag(matched_side, target, target_view, file_path)
                merge_again = analyzed_deterministic(tagged)
            merge_rows = (self._merging_again(plan, source, tag, target_rows, broadcast_again, with_ids)
                          if merge_again else None)
        if not merge_again:
            tagged = tag(plan, target, target_view, file_path)
        by_predicate = plan.mode != "merge-on-read" and _rewrites_by_predicate(plan, tagged)
        # cached when two passes read the tagged rows: copy-on-write's count of changes and its rewrite by
        # the changed rows; merge-on-read's write mode says when (`RowLevelWrite.read_twice`). With a broadcast
        # source, its matched side is cached: the rest is the source's unmatched rows, cheap to
        # compute again.
        def read_twice(rows: DataFrame) -> None:
            if not plan.broadcast_source:
                self._persisted.append(rows.persist())
        if plan.mode != "merge-on-read" and not by_predicate and not merge_again:
            read_twice(tagged)
        w = RowLevelWrite(self.spark, plan, schema, tagged, tuple(tasks), self.session.runtime.write_context(table),
                          lambda rows: enforce_not_null(table, rows),
                          (lambda read: _select_over(target_rows(read)[0],
                                                     *rewrite_columns(plan, schema, stored, v3, live)))
                          if by_predicate else None, merge_rows, file_ordinals=ordinals,
                          read_twice=read_twice,
                          merged_by_key=(merge_again and plan.has_not_matched
                                         and not (broadcast_again or matched_sources)),
                          merged_as_read=broadcast_again or matched_sources, matched_sources=matched_sources)
        write_mode = ({False: write_copy_on_write, True: write_copy_on_write_v3} if plan.mode != "merge-on-read"
                      else {False: write_merge_on_read, True: write_merge_on_read_v3})[v3]
        written: list[DataFile] = []
        with delete_written_on_failure(table.io, written):
            try:
                out = write_mode(w)
            except CardinalityViolation:
                self._check_cardinality(table, plan, tagged)
                raise
            except Exception as e:  # noqa: BLE001 - only the in-job cardinality failure is ours to name
                if CARDINALITY_MARKER in str(e):
                    self._check_cardinality(table, plan, tagged)
                raise
            written += out.data_files + out.delete_files
        result = DmlResult(num_updated_rows=out.updated, num_inserted_rows=out.inserted,
                           num_deleted_rows=out.deleted + sum(t.file.record_count for t in whole))
        data_files, delete_files = out.data_files, out.delete_files
        task.phase("write", f"{len(out.rewritten) + len(out.referenced)} files touched, {len(whole)} deleted "
                            f"whole; rows: {out.updated} updated, {result.num_deleted_rows} deleted, "
                            f"{out.inserted} inserted; {len(data_files)} data files, {len(delete_files)} "
                            "delete files written")
        if result.num_affected_rows == 0 and not whole:
            for f in written:  # nothing changed: nothing is committed (no rows means no files, normally)
                table.io.delete(f.file_path)
            if self.evolution is not None:  # as Spark, the new columns are added all the same
                update_metadata(self.evolution.base, self.evolution.prepare)
            return result
        by_path = {t.file.file_path: t for t in tasks}
        removed = self._removed_files(out.rewritten + list(whole), scan)
        removed += [RemovedFile(d, scan.delete_manifests[d.data_file.file_path]) for d in out.folded]
        result.added_data_files = len(data_files)
        result.added_delete_files = len(delete_files)
        result.removed_data_files = sum(1 for r in removed if r.entry.data_file.content == 0)
        update = row_delta(
            start.snapshot_id if start else None, data_files, delete_files, removed,
            RowLevelValidator(plan.command, plan.scan_filter, _isolation(md, plan.command),
                              [r.entry.data_file.file_path for r in removed], out.referenced,
                              [(by_path[p].file.spec_id, by_path[p].file.partition) for p in out.referenced]),
            branch=branch)
        if self.evolution is not None:  # the new columns commit with the rows, onto the table as it was
            update.prepare, table = self.evolution.prepare, self.evolution.base
        committed = commit_or_clean(table, update, written)
        result.snapshot_id = committed.metadata.refs[branch].snapshot_id
        task.phase("commit", f"snapshot {result.snapshot_id}")
        return result

    def _merging_again(self, plan: RowLevelPlan, source: DataFrame, tag: Callable[..., DataFrame],
                       target_rows: Callable[[list[FileScanTask]], tuple],
                       broadcast: bool, with_ids: tuple[DataFrame, str] | None
                       ) -> Callable[[list[FileScanTask], NotMatched | None], DataFrame]:
        """Copy-on-write MERGE by MergeRows again: the tagged rows of the given files joined with
        the source so that their target rows are kept. Where the count of changes kept the matched
        pairs' source rows (`not_matched`: the test of the others' ids), the source (`with_ids`: it
        with its row ids, and its view) is broadcast and its unmatched rows are the others: the
        target is read once, not shuffled. With `broadcast`
        (the plan's broadcast source, kept over a large target scan) the source is broadcast too
        (see `_merge_rows`), the matched side computed twice, not cached: the source is cached or
        local, so its row ids are the same on each read. Otherwise the join shuffles both sides,
        and a small source's rows are hashed over a large read rather than both sides sorted
        (`hash_join_source`)."""
        keeping = plan.with_(join_type=TARGET_KEEPING_JOIN.get(plan.join_type, plan.join_type))
        if broadcast:
            keeping = keeping.with_(broadcast_source=True)
            with_ids = source.withColumn(SOURCE_ROW, F.monotonically_increasing_id())
            sources = (with_ids, self._view(F.broadcast(with_ids)))
            return lambda read, _: tag(keeping, *target_rows(read), copies=True, sources=sources)

        def merged(read: list[FileScanTask], not_matched: NotMatched | None) -> DataFrame:
            if not_matched is not None:
                test = not_matched(SOURCE_ROW)
                unmatched = (subquery(with_ids[1], test) if isinstance(test, str)
                             else self._view(with_ids[0].where(test)))
                return tag(keeping.with_(broadcast_source=True), *target_rows(read), copies=True, sources=with_ids,
                           unmatched=unmatched)
            hashed = hash_join_source(keeping, sum(t.file.file_size_in_bytes for t in read))
            return tag(keeping, *target_rows(read), copies=True,
                       sources=(source, self._view(source.hint("shuffle_hash"))) if hashed else None)
        return merged

    def _merge_rows(self, plan: RowLevelPlan, target_view: str, source: DataFrame | None,
                    source_view: str | None, select: Callable[..., str], cache_matched: bool = True,
                    unmatched: str | None = None) -> DataFrame:
        """MergeRows' rows, `select` over (plan, target view, source view). With a broadcast
        source (`source_view` broadcasts `source`), the UNION ALL of the matched side's rows,
        persisted (read by the union and for their source ids), and of the unmatched source rows
        over an empty target (compile/merge_rows.py): the target is scanned once, not shuffled.
        `unmatched`: those source rows, known already (a view, or a `subquery` of the source's view
        by the shim's test of their ids): one query then, the matched side read once, no ids
        carried, the unmatched rows (few: the source is small) in one task, so one file."""
        if not plan.broadcast_source:
            return self.spark.sql(select(plan, target_view, source_view))
        empty_target = subquery(target_view, "false")
        matched_side = plan.with_(join_type=MATCHED_SIDE_JOIN[plan.join_type])
        if unmatched is not None:
            rest = select(plan, empty_target, unmatched)
            return self.spark.sql(f"{select(matched_side, target_view, source_view)} "
                                  f"UNION ALL SELECT /*+ COALESCE(1) */ * FROM ({rest})")
        matched = self.spark.sql(select(matched_side, target_view, source_view, source_row=True))
        if cache_matched:
            matched = matched.persist()
            self._persisted.append(matched)
        unmatched_view = self._view(self.spark.sql(unmatched_source_select(self._view(source), self._view(matched))))
        rest = self.spark.sql(select(plan, empty_target, unmatched_view, source_row=True))
        return matched.unionAll(rest).drop(SOURCE_ROW)

    def _store_assignment(self, plan: RowLevelPlan, schema, target: tuple[DataFrame, str | None],
                          source: tuple[DataFrame, str] | None):
        """The stored SQL of every assigned value (`target`, `source`: each frame and its view, the
        target's only with a source). The types of literals and plain columns are known
        (`known_value_types`); the others come from one query's analysis, an analysis of the whole
        join that a MERGE with only `*` clauses never needs."""
        if not any(ins.values for ins in plan.instructions):
            return {}
        relations = {plan.target_alias: frame_schema(target[0])}
        if source is not None:
            relations[plan.source_alias] = frame_schema(source[0])
        types = known_value_types(plan, relations, value_name)
        if source is None:  # UPDATE: over the target's frame
            probe = value_probe_columns(plan, known=types)
            probed = _select_over(target[0], probe, None) if probe else None
        else:
            probe = value_probe_select(plan, target[1], source[1], known=types)
            probed = self.spark.sql(probe) if probe is not None else None
        if probed is not None:
            types.update((f.name, f.dataType) for f in probed.schema.fields)  # analysis only
        return check_values(plan, types, schema_to_spark(schema, with_ids=False), value_name)

    def _read_pyice_tables_from_views(self, plan: RowLevelPlan) -> RowLevelPlan:
        """Subqueries anywhere in the statement (WHERE, ON, clause conditions, SET and INSERT
        values) may read pyice tables, the target included: Spark cannot resolve those names,
        so each table is scanned once into a temp view and every reference points at it."""
        refs = dict.fromkeys(ref for e in _user_expressions(plan) for ref in st.tables_read(e))
        if not refs:
            return plan
        views = {ref: self._view(self.session.scan_ref(ref)) for ref in refs}

        def swap(e: exp.Expression | None) -> exp.Expression | None:
            return st.replace_tables(e, lambda r: views[r]) if e is not None and st.tables_read(e) else e
        instructions = tuple(replace(i, condition=swap(i.condition), values={k: swap(v) for k, v in i.values.items()})
                             for i in plan.instructions)
        return plan.with_(where=swap(plan.where), on=swap(plan.on), instructions=instructions)

    @staticmethod
    def _removed_files(tasks: list[FileScanTask], scan: ScanPlan) -> list[RemovedFile]:
        """The data files to remove, plus delete files scoped to exactly those files."""
        removed = {file_key(t.file): RemovedFile(t.entry, t.manifest_path) for t in tasks}
        for t in tasks:
            for d in file_scoped_deletes(t):
                removed.setdefault(file_key(d.data_file),
                                   RemovedFile(d, scan.delete_manifests[d.data_file.file_path]))
        return list(removed.values())

    def _split_whole_file_deletes(self, table: Table, plan: RowLevelPlan, scan: ScanPlan
                                  ) -> tuple[list[FileScanTask], list[FileScanTask]]:
        """DELETE: files whose every row matches WHERE are dropped in metadata, never read.

        Only files without delete files qualify, so the deleted-row count stays exact.
        """
        if plan.command != "DELETE" or (plan.where is not None and st.tables_read(plan.where)):
            return [], list(scan.tasks)
        md = table.metadata
        schema = md.schema()
        if plan.where is None:
            strict: Expression = AlwaysTrue()
        else:
            strict = to_predicate(plan.where, target_columns(schema, _qualifiers(plan)), schema, "strict",
                                  zone=self.zone)
        must_match = rows_must_match(schema, md.spec_by_id, strict)
        whole, rest = [], []
        for t in scan.tasks:
            (whole if not t.deletes and must_match(t.file) else rest).append(t)
        return whole, rest

    def _check_cardinality(self, table: Table, plan: RowLevelPlan, tagged: DataFrame) -> None:
        """A target row matched by several source rows is an error when there are WHEN MATCHED
        clauses, whatever their conditions (as Spark/Iceberg: see `RowLevelWrite.checks_cardinality`)."""
        pairs = tagged.where(F.col(MATCHED_PAIR))
        keys = [f"{KEY_PREFIX}{i}" for i in range(len(plan.source_key_columns))]
        dup = (pairs.groupBy(FILE, POS).agg(F.count(F.lit(1)).alias("n"), *[F.first(k).alias(k) for k in keys])
               .where("n > 1"))
        bad = dup.limit(5).collect()
        if not bad:
            return
        total = dup.count()
        names = [t for t, _ in plan.source_key_columns]
        examples = "; ".join(
            (", ".join(f"{n}={row[k]!r}" for n, k in zip(names, keys)) or f"row {row[POS]} of {row[FILE]}")
            + f" matched {row['n']} source rows" for row in bad)
        raise CardinalityError(
            f"MERGE into {table.full_name}: {total} target row(s) matched more than one source row, so the "
            f"WHEN MATCHED clauses would be ambiguous. Examples: {examples}. "
            "Deduplicate the source on the join keys (e.g. keep the latest row per key).")


def _rewrites_by_predicate(plan: RowLevelPlan, tagged: DataFrame) -> bool:
    """Whether copy-on-write may rewrite by predicate (copy_on_write.py): an UPDATE or DELETE whose
    condition and values give the same answer when evaluated again over the files being rewritten.
    So: deterministic, no subquery (IN / EXISTS under the rewrite's NOT and COALESCE would lean on
    Spark's existence-join rewrite), and no metadata column (`_file`, `_pos`, `_row_id`, ...: the
    rewrite reads the table's columns only). Any other statement joins with the changed rows."""
    if plan.source is not None:
        return False
    exprs = _user_expressions(plan)
    if any(e.find(exp.Select) for e in exprs):
        return False
    if any(c.name.lower() in _METADATA_NAMES for e in exprs for c in e.find_all(exp.Column)):
        return False
    return analyzed_deterministic(tagged)


def _merges_again(plan: RowLevelPlan) -> bool:
    """Whether a copy-on-write MERGE may rewrite its files by MergeRows over them again
    (copy_on_write.py), which copies every matched pair no clause changes. Not when such a pair
    may repeat a target row unchecked: NOT MATCHED BY SOURCE clauses (which rewrite files) and no
    WHEN MATCHED clause, hence no cardinality check. (With only an unconditional WHEN MATCHED
    DELETE, unchecked too, every matched pair is deleted.) Those rewrite by the changed rows."""
    return plan.source is not None and (plan.has_matched_actions or not plan.has_not_matched_by_source)


def _select_over(rows: DataFrame, columns: list[str], test: str | None) -> DataFrame:
    """`SELECT columns FROM rows [WHERE test]` as DataFrame steps: an UPDATE or DELETE (no source
    to join) reads its target's rows, aliased as the statement's target, with no temp view (one
    to register, analyse and drop: ~20 ms of a warm statement's driver time)."""
    return select_sql(rows.where(test) if test is not None else rows, columns)


def _user_expressions(plan: RowLevelPlan) -> list[exp.Expression]:
    """Every expression the user wrote: WHERE, ON, clause conditions, SET and INSERT values."""
    exprs = [e for e in (plan.where, plan.on) if e is not None]
    return exprs + [e for i in plan.instructions for e in (i.condition, *i.values.values()) if e is not None]


def _qualifiers(plan: RowLevelPlan) -> list[tuple[str, ...]]:
    """What may qualify the target's columns: its alias and its name (the builder has already
    re-qualified `catalog.db.t.c` with the alias)."""
    return [(plan.target_alias.lower(),), (plan.target.name.lower(),)]


def _isolation(md, command: str) -> str:
    key = props.isolation_level(command)
    level = md.property(key, props.ISOLATION_LEVEL_DEFAULT).lower()
    if level not in ("serializable", "snapshot"):
        raise AnalysisError(f"{key}={level!r}: use serializable or snapshot")
    return level


def result_frame(spark, result: DmlResult) -> DataFrame:
    """The one metrics row, as a JVM-side local relation (collected without a job)."""
    row = result.as_row()
    return values(spark, dict.fromkeys(row, "bigint"), [tuple(row.values())])


def _narrowed(plan: RowLevelPlan, schema, keys: dict[str, list], ranges: dict[str, tuple],
              source: T.StructType, zone: dt.tzinfo | None) -> RowLevelPlan:
    """`plan` with its target scan narrowed to the files that may hold the source's key values or
    range (`RowLevelExecutor._source_keys`), collected from `source`."""
    extra: Expression = AlwaysTrue()
    types = {f.name.lower(): f.dataType for f in source.fields}
    for t_col, s_col in plan.source_key_columns:
        if any(isinstance(v, float) and math.isnan(v) for v in ranges.get(t_col, keys.get(t_col, ()))):
            continue  # Spark orders NaN above every number: no bound of file statistics to test
        field = schema.find_field(t_col)

        def internal(v, source_type=types.get(s_col.lower())):
            return to_internal(field.type, _key_instant(v, source_type, field.type, zone))
        try:
            if t_col in ranges:
                lo, hi = ranges[t_col]
                pred: Expression = And(gt_eq(field.name, internal(lo)), lt_eq(field.name, internal(hi)))
            else:  # no non-null key gives an empty list: `=` can match nothing
                pred = in_(field.name, [internal(v) for v in keys[t_col]])
        except (ValueError, TypeError):
            continue  # key type differs from the target column's: no pruning from it
        extra = And(extra, pred)
    if isinstance(extra, AlwaysTrue):
        return plan
    return plan.with_(scan_filter=And(plan.scan_filter, extra),
                      filters=plan.filters + (PruningFilter(extra, "source join-key values/range (runtime)"),))


def _key_instant(value, source_type: T.DataType | None, target: IcebergType, zone: dt.tzinfo | None):
    """A source key value collected into Python, as the join compares it with a `timestamptz` target
    column: pyspark hands a TIMESTAMP over as the naive wall clock of the Python process's local
    zone (the instant is that), a TIMESTAMP_NTZ as its own wall clock, which the join reads in the
    session's `zone`. Other values are what they are."""
    if not isinstance(value, dt.datetime) or value.tzinfo is not None:
        return value
    if isinstance(source_type, T.TimestampType):
        return value.astimezone(dt.timezone.utc)
    return zoned_instant(value, zone) if type_kind(target) == "timestamptz" else value


def _ranged_by_row_count(plan: RowLevelPlan, source: DataFrame) -> bool:
    """Whether the source's one key column goes straight to its range: Spark's statistics know the
    source holds over ten times MAX_SOURCE_KEY_VALUES rows (a filled cache, for one), so unless
    nearly every row repeats a key there are more keys than a set may hold. Finding that out costs a
    hash set of every row's key (~0.1 s of the one task over a 150k-row source). Several key
    columns keep their sets: one of them may hold few values (a region beside an id)."""
    if len(plan.source_key_columns) != 1:
        return False
    rows = row_count_estimate(source)
    return rows is not None and rows > 10 * MAX_SOURCE_KEY_VALUES


def _small_source_keys(plan: RowLevelPlan, source: DataFrame, sets: bool = True
                       ) -> tuple[dict[str, list], dict[str, tuple]]:
    """`RowLevelExecutor._source_keys`' distinct keys and (for columns with many) key ranges, for a source small
    enough to broadcast: one aggregate in one task (no shuffle: one Spark job), its answer one row.
    Collecting the key columns instead pickled every source row into Python (0.2 s for a 30k-row
    source). Without `sets`, ranges alone (`_ranged_by_row_count`)."""
    exprs = []
    for i, (_, s_col) in enumerate(plan.source_key_columns):
        c = quote(s_col)
        exprs += [f"min({c}) AS lo{i}", f"max({c}) AS hi{i}",
                  f"IF(size(collect_set({c})) > {MAX_SOURCE_KEY_VALUES}, NULL, collect_set({c})) AS keys{i}"
                  if sets else f"NULL AS keys{i}"]
    row, = select_sql(source.coalesce(1), exprs).collect()
    keys, ranges = {}, {}
    for i, (t_col, _) in enumerate(plan.source_key_columns):
        if row[f"lo{i}"] is None:  # no non-null key: none can match
            keys[t_col] = []
        elif row[f"keys{i}"] is None:
            ranges[t_col] = (row[f"lo{i}"], row[f"hi{i}"])
        else:
            keys[t_col] = list(row[f"keys{i}"])
    return keys, ranges


def _local_source_keys(plan: RowLevelPlan, source: DataFrame) -> tuple[dict[str, list], dict[str, tuple]] | None:
    """`RowLevelExecutor._source_keys`' distinct keys and (for columns with many) key ranges, for a source held in
    the plan: its key columns collected, with no job. None when Python cannot stand in for Spark's
    distinct and min/max: an unhashable or unorderable key type, or a NaN (Spark orders it above
    every number); `_small_source_keys` then asks Spark."""
    rows = source.select(*[F.col(quote(s)) for _, s in plan.source_key_columns]).collect()
    keys, ranges = {}, {}
    try:
        for i, (t_col, _) in enumerate(plan.source_key_columns):
            values = list(dict.fromkeys(r[i] for r in rows if r[i] is not None))
            if any(isinstance(v, float) and math.isnan(v) for v in values):
                return None
            keys[t_col] = values
            if len(values) > MAX_SOURCE_KEY_VALUES:
                ranges[t_col] = (min(values), max(values))
    except TypeError:
        return None
    return keys, ranges
