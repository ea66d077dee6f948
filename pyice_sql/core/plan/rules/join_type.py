"""Rule: choose the join between target and source from the MERGE clauses.

Only rows a clause can act on need to come out of the join: matched pairs always; source rows
without a match when there is a NOT MATCHED (insert) clause; target rows without a match when
there is a NOT MATCHED BY SOURCE clause. Copy-on-write does not need the target preserved:
untouched rows of rewritten files are copied by a separate read of just those files.

A join that keeps unmatched source rows cannot broadcast the source (Spark broadcasts only the
side an outer join does not keep), so it shuffles every target row. When the source is small
enough that Spark would broadcast it and deterministic (it is read twice), the plan says
`broadcast_source`: the executor takes the matched pairs from the join that keeps only what the
target side needs (inner, or left outer for NOT MATCHED BY SOURCE) with the source broadcast, and
the unmatched source rows from the source anti-joined with the ids of the matched ones
(compile/merge_rows.py). Same rows, no shuffle of the target. That shape costs a second query
plan, a cache of the matched rows and a few broadcast jobs, so it is kept only over a large
target scan (`keep_broadcast_for_target`, once the scan is planned). Over a mid-size one,
merge-on-read keeps the shuffle but of fewer rows: the target scan's rows the source's keys pair
with (`semi_join_source_keys`).

A small source also bounds the inserts: at most one per source row. The plan says `small_source`
(deterministic or not), and merge-on-read then writes the inserted rows in the tasks that write
the delete files, in one job (rowlevel/merge_on_read.py).
"""
from __future__ import annotations

from typing import Callable

from pyice_sql.core.plan.nodes import RowLevelPlan

# Planned target bytes from which a broadcast source pays. Measured on 2 cores (MoR v2, uniform
# ids, a 30k-row and a 3-row source): neutral to 0.2-0.9 s slower over a 54 MB scan (2M rows),
# 40 % faster over a 270 MB scan (10M rows: 11.1 s -> 6.4 s, and 6.0 s -> 3.2 s). Copy-on-write's
# second MergeRows pass with the source broadcast over any target (A/B, same session, clustered ids):
# 12-14 % faster at 2M rows, but a 1 % MERGE 24 % slower at 200k and 43 % slower at 1M rows.
# Below it, merge-on-read's semi join of the source's keys (A/B, same session, uniform ids, 1 %
# MERGE, 30k-row source): 24 % faster at 2M rows (1.12 s -> 0.85 s, Java 1.31 s), neutral at 200k;
# in copy-on-write's first pass, which broadcasts the source already, 7 % slower: not done there.
BROADCAST_MIN_TARGET_BYTES = 128 * 1024 * 1024
# Target bytes a shuffled join reads from which a small source is the hashed side of a shuffled hash
# join, not sorted with the target for a sort-merge join (A/B, same session, copy-on-write's second
# pass, 30k-row source, 5 rounds): 7 % faster over 2M rows in 8 files (54 MB: 2.72 s -> 2.52 s,
# Java 3.57 s), whose write tasks spent most of their time sorting the target's rows; over one
# 20k-row file (clustered ids) 6 % slower, 37 ms, within the rounds' spread.
HASH_JOIN_MIN_TARGET_BYTES = 16 * 1024 * 1024
# Planned target bytes from which merge-on-read's semi join of the source's keys pays for its two
# jobs (the keys' broadcast, and the narrowed side's once adaptive execution sees it small): over
# less, Spark broadcasts the target scan itself (its threshold is 10 MB) and shuffles nothing.
SEMI_JOIN_MIN_TARGET_BYTES = 16 * 1024 * 1024
# Copy-on-write MERGE with a NOT MATCHED clause and a small deterministic source: planned target bytes
# from which its second pass joins the source by broadcast, the unmatched source rows known from the
# first pass's matched ids (`broadcast_by_matched_sources`), not by a shuffle of both sides. A/B, same
# session, 1 % MERGE (30k-row source) and 3-row MERGE, medians of 6-8 rounds: local[2] with 8 shuffle
# partitions, 2M rows in 8 files (54 MB): 3.39 -> 2.71 s and 1.31 -> 0.89 s; 200k rows (5 MB):
# 0.99 -> 0.92 s and 0.63 -> 0.65 s; 2M rows clustered, a few files read: 0.73 -> 0.89 s and
# 0.58 -> 0.59 s (the first pass's ids and the broadcast cost more driver time than the small
# shuffle they save).
MATCHED_SOURCES_MIN_TARGET_BYTES = 16 * 1024 * 1024
# Shuffle partitions per core from which that shuffle costs more than the broadcast over any target:
# each map task writes one block per partition. Spark's default 200 on two executors of one core
# each, A/B as above over 200k rows: 1.93 -> 1.68 s and 1.17 -> 0.97 s uniform, 1.50 -> 1.33 s and
# 0.86 -> 0.73 s clustered.
MATCHED_SOURCES_MIN_PARTITIONS_PER_CORE = 8


def choose_join(plan: RowLevelPlan, source_small: Callable[[], bool],
                source_deterministic: Callable[[], bool]) -> RowLevelPlan:
    """`source_small` (asked only for a join that keeps source rows): whether the source is within
    Spark's broadcast threshold; `source_deterministic`: whether two reads give the same rows."""
    if plan.command != "MERGE":
        return plan
    inserts, by_source = plan.has_not_matched, plan.has_not_matched_by_source
    if inserts:
        plan = (plan.with_(join_type="full outer", join_reason="NOT MATCHED and NOT MATCHED BY SOURCE clauses")
                if by_source else
                plan.with_(join_type="right outer", join_reason="NOT MATCHED clause keeps unmatched source rows"))
        if not source_small():
            return plan
        plan = plan.with_(small_source=True)
        if not source_deterministic():
            return plan
        return plan.with_(broadcast_source=True, join_reason=plan.join_reason + "; over a target scan of at least "
                          f"{BROADCAST_MIN_TARGET_BYTES >> 20} MiB the source is broadcast: matched pairs by a "
                          "broadcast join, unmatched source rows by an anti-join of the matched ones")
    if by_source:
        return plan.with_(join_type="left outer", join_reason="NOT MATCHED BY SOURCE clause keeps unmatched target rows")
    return plan.with_(join_type="inner", join_reason="only WHEN MATCHED clauses")


def keep_broadcast_for_target(plan: RowLevelPlan, target_bytes: int) -> RowLevelPlan:
    """`plan`, with its broadcast source dropped when the planned target scan (`target_bytes` of data
    files) is too small for the shuffle it saves to pay for it. Merge-on-read then shuffles only
    the target rows the source's keys pair with (`semi_join_source_keys`), where the scan is large
    enough to be shuffled: the source is small and deterministic, so a broadcast of its keys finds
    them in the scan's tasks. (Copy-on-write's first pass joins the source by broadcast already;
    its second shuffles the files it rewrites, or broadcasts the source: `broadcast_by_matched_sources`.)"""
    if plan.broadcast_source and target_bytes < BROADCAST_MIN_TARGET_BYTES:
        semi = (plan.mode == "merge-on-read" and plan.prune_by_source_keys
                and target_bytes >= SEMI_JOIN_MIN_TARGET_BYTES)
        return plan.with_(broadcast_source=False, semi_join_source_keys=semi)
    return plan


def broadcast_by_matched_sources(target_bytes: int, shuffle_partitions: int, cores: int) -> bool:
    """Whether a copy-on-write MERGE whose source is small and deterministic, over `target_bytes` of
    planned files, keeps its matched pairs' source row ids in its first pass so that its second
    broadcasts the source (copy_on_write.py): over a large target, or where the session's shuffles
    have many partitions per core (the measurements are at `MATCHED_SOURCES_MIN_TARGET_BYTES`)."""
    return (target_bytes >= MATCHED_SOURCES_MIN_TARGET_BYTES
            or shuffle_partitions >= MATCHED_SOURCES_MIN_PARTITIONS_PER_CORE * max(1, cores))


def hash_join_source(plan: RowLevelPlan, target_bytes: int) -> bool:
    """Whether a join that shuffles both sides hashes the source's rows in each task instead of
    sorting both sides (Spark's default, `preferSortMergeJoin`, whose cost grows with the target's
    rows): for a small source (within Spark's broadcast threshold: a hash table of all of it fits
    in memory, let alone of a task's share) over at least `HASH_JOIN_MIN_TARGET_BYTES` of files."""
    return plan.small_source and not plan.broadcast_source and target_bytes >= HASH_JOIN_MIN_TARGET_BYTES
