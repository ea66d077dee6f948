"""The row-level plan rules, on parsed statements (no Spark): join type, target pruning, mode."""
from __future__ import annotations

import pytest

from pyice_sql.core.errors import AnalysisError
from pyice_sql.core.expr.predicates import AlwaysTrue, bind, evaluate_row
from pyice_sql.core.model import types as it
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.plan.builder import build_delete, build_merge, build_update
from pyice_sql.core.plan.nodes import DELETE, INSERT, UPDATE
from pyice_sql.core.plan.rules.join_type import (
    BROADCAST_MIN_TARGET_BYTES, HASH_JOIN_MIN_TARGET_BYTES, SEMI_JOIN_MIN_TARGET_BYTES, choose_join,
    hash_join_source, keep_broadcast_for_target,
)
from pyice_sql.core.plan.rules.prune_target import prune_target
from pyice_sql.core.plan.rules.write_mode import choose_write_mode
from pyice_sql.core.sql.parser import parse_statement

SCHEMA = Schema((it.NestedField(1, "id", it.LONG, True), it.NestedField(2, "p", it.STRING),
                 it.NestedField(3, "v", it.INT)))
SOURCE_COLS = ["id", "p", "v", "op"]


def plan_of(sql: str, broadcastable: bool = False, deterministic: bool = True):
    stmt = parse_statement(sql, lambda c: c == "local", "local")
    if type(stmt).__name__ == "Merge":
        plan = build_merge(stmt, SCHEMA, SOURCE_COLS)
    elif type(stmt).__name__ == "Update":
        plan = build_update(stmt, SCHEMA)
    else:
        plan = build_delete(stmt)
    plan = choose_join(plan, lambda: broadcastable, lambda: deterministic)
    source_cols = {c.lower() for c in SOURCE_COLS}

    def is_target(col):
        if col.table and col.table.lower() != "t":
            return None
        if not col.table and col.name.lower() in source_cols and plan.command == "MERGE":
            return None
        f = SCHEMA.find_field(col.name)
        return f.name if f else None

    def is_source(col):
        return col.name if col.table and col.table.lower() == "s" else None

    return prune_target(plan, SCHEMA, is_target, is_source)


def matches(plan, **row) -> bool:
    """Would the target scan keep a row with these values? (evaluated on the bound filter)"""
    bound = bind(plan.scan_filter, SCHEMA)
    return evaluate_row(bound, {SCHEMA.find_field(k).field_id: v for k, v in row.items()})


MERGE = "MERGE INTO local.db.t t USING src s ON t.id = s.id AND t.p = 'a' "


@pytest.mark.parametrize("clauses, join", [
    ("WHEN MATCHED THEN UPDATE SET v = s.v", "inner"),
    ("WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *", "right outer"),
    ("WHEN NOT MATCHED BY SOURCE THEN DELETE", "left outer"),
    ("WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE AND t.v > 3 THEN DELETE", "full outer"),
])
def test_join_type_follows_clauses(clauses, join):
    assert plan_of(MERGE + clauses).join_type == join


@pytest.mark.parametrize("clauses, broadcast", [
    ("WHEN MATCHED THEN UPDATE SET v = s.v", False),  # an inner join broadcasts a small source by itself
    ("WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *", True),
    ("WHEN NOT MATCHED BY SOURCE THEN DELETE", False),
    ("WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE AND t.v > 3 THEN DELETE", True),
])
def test_a_join_keeping_source_rows_broadcasts_a_small_source_and_keeps_its_join_type(clauses, broadcast):
    small, large = plan_of(MERGE + clauses, broadcastable=True), plan_of(MERGE + clauses)
    assert small.broadcast_source is broadcast and not large.broadcast_source
    assert small.join_type == large.join_type


@pytest.mark.parametrize("clauses, inserts", [
    ("WHEN MATCHED THEN UPDATE SET v = s.v", False),
    ("WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *", True),
    ("WHEN NOT MATCHED BY SOURCE THEN DELETE", False),
])
def test_a_small_source_bounds_the_inserts_even_when_it_cannot_be_broadcast(clauses, inserts):
    changing = plan_of(MERGE + clauses, broadcastable=True, deterministic=False)
    assert changing.small_source is inserts and not changing.broadcast_source
    assert plan_of(MERGE + clauses, broadcastable=True).small_source is inserts
    assert not plan_of(MERGE + clauses).small_source


@pytest.mark.parametrize("clauses, mode, semi", [
    ("WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *", "merge-on-read", True),
    ("WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *", "copy-on-write", False),  # broadcast already
    ("WHEN NOT MATCHED THEN INSERT * WHEN NOT MATCHED BY SOURCE AND t.v > 3 THEN DELETE", "merge-on-read", False),
])
def test_a_broadcast_dropped_over_a_mid_size_target_narrows_merge_on_read_by_the_source_keys(clauses, mode, semi):
    """Between 16 and 128 MiB of target the join shuffles the target: merge-on-read narrows it to the
    rows the source's keys pair with (not where NOT MATCHED BY SOURCE clauses need every row)."""
    plan = plan_of(MERGE + clauses, broadcastable=True).with_(mode=mode)
    assert plan.broadcast_source
    mid = keep_broadcast_for_target(plan, SEMI_JOIN_MIN_TARGET_BYTES)
    assert not mid.broadcast_source and mid.semi_join_source_keys is semi
    small = keep_broadcast_for_target(plan, SEMI_JOIN_MIN_TARGET_BYTES - 1)  # Spark broadcasts the target
    assert not small.broadcast_source and not small.semi_join_source_keys
    large = keep_broadcast_for_target(plan, BROADCAST_MIN_TARGET_BYTES)
    assert large.broadcast_source and not large.semi_join_source_keys


def test_a_small_source_is_hashed_over_a_large_shuffled_read():
    """A shuffled join hashes the source's rows instead of sorting both sides only for a source
    within the broadcast threshold, not broadcast, over a read of at least the threshold's bytes."""
    clauses = "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    shuffled = keep_broadcast_for_target(plan_of(MERGE + clauses, broadcastable=True), 0)
    assert shuffled.small_source and not shuffled.broadcast_source
    assert hash_join_source(shuffled, HASH_JOIN_MIN_TARGET_BYTES)
    assert not hash_join_source(shuffled, HASH_JOIN_MIN_TARGET_BYTES - 1)
    assert not hash_join_source(plan_of(MERGE + clauses, broadcastable=False), HASH_JOIN_MIN_TARGET_BYTES)
    broadcast = plan_of(MERGE + clauses, broadcastable=True)
    assert broadcast.broadcast_source and not hash_join_source(broadcast, HASH_JOIN_MIN_TARGET_BYTES)


def test_on_target_conjuncts_prune_and_source_keys_are_found():
    plan = plan_of(MERGE + "WHEN MATCHED THEN UPDATE SET v = s.v")
    assert matches(plan, id=1, p="a", v=0) and not matches(plan, id=1, p="b", v=0)
    assert plan.source_key_columns == (("id", "id"),) and plan.prune_by_source_keys


def test_matched_conditions_never_narrow_the_scan():
    # a row no clause acts on still counts for the cardinality check (Iceberg Java fails such a
    # MERGE when two source rows match it), and with a NOT MATCHED clause its source row would
    # look unmatched and be inserted again
    only_matched = plan_of(MERGE + "WHEN MATCHED AND t.v > 10 THEN DELETE")
    assert matches(only_matched, id=1, p="a", v=5) and matches(only_matched, id=1, p="a", v=11)
    with_insert = plan_of(MERGE + "WHEN MATCHED AND t.v > 10 THEN DELETE WHEN NOT MATCHED THEN INSERT *")
    assert matches(with_insert, id=1, p="a", v=5)
    assert not matches(only_matched, id=1, p="b", v=11)  # ON's target-only conjunct still prunes


def test_not_matched_by_source_widens_the_scan_and_disables_source_key_pruning():
    plan = plan_of(MERGE + "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED BY SOURCE AND t.v < 0 THEN DELETE")
    assert matches(plan, id=1, p="zzz", v=-1)  # outside ON's p = 'a', but the NMBS clause acts on it
    assert not matches(plan, id=1, p="zzz", v=1)
    assert not plan.prune_by_source_keys
    unconditional = plan_of(MERGE + "WHEN NOT MATCHED BY SOURCE THEN DELETE")
    assert matches(unconditional, id=7, p="q", v=7) and not unconditional.prune_by_source_keys


def test_instructions_keep_clause_order_and_operations():
    plan = plan_of(MERGE + "WHEN MATCHED AND s.op = 'd' THEN DELETE WHEN MATCHED THEN UPDATE SET * "
                           "WHEN NOT MATCHED THEN INSERT (id, p) VALUES (s.id, s.p)")
    assert [i.operation for i in plan.instructions] == [DELETE, UPDATE, INSERT]
    assert set(plan.instructions[1].values) == {"id", "p", "v"}
    assert plan.instructions[2].values["v"].sql() == "NULL"


def test_update_and_delete_prune_by_where():
    upd = plan_of("UPDATE local.db.t SET v = v + 1 WHERE p = 'x'")
    assert matches(upd, id=1, p="x", v=1) and not matches(upd, id=1, p="y", v=1)
    assert set(upd.instructions[0].values) == {"v"}
    assert plan_of("DELETE FROM local.db.t").scan_filter == AlwaysTrue()


def test_unknown_assignment_target_is_an_error_with_position():
    with pytest.raises(AnalysisError) as e:
        plan_of("UPDATE local.db.t SET nope = 1")
    assert "nope" in str(e.value)


def test_star_needs_every_target_column_in_the_source():
    stmt = parse_statement(MERGE + "WHEN NOT MATCHED THEN INSERT *", lambda c: c == "local", "local")
    with pytest.raises(AnalysisError, match="source has no column 'v'"):
        build_merge(stmt, SCHEMA, ["id", "p"])


def test_write_mode_from_properties():
    plan = plan_of(MERGE + "WHEN MATCHED THEN DELETE")
    assert choose_write_mode(plan, {}).mode == "copy-on-write"
    assert choose_write_mode(plan, {"write.merge.mode": "merge-on-read"}).mode == "merge-on-read"
    with pytest.raises(AnalysisError):
        choose_write_mode(plan, {"write.merge.mode": "bogus"})


def test_rules_apply_in_order_placement_sees_the_chosen_write_mode():
    """apply_rules runs RULES in order: the placement check (last) reads the write mode chosen
    from the table properties, so a non-deterministic MERGE source is refused in copy-on-write
    only (Iceberg reads the source twice there), and every rule's decision is on the result."""
    from pyice_sql.core.errors import ExpressionNotAllowedError
    from pyice_sql.core.plan.rules import RuleContext, apply_rules

    stmt = parse_statement(MERGE + "WHEN MATCHED THEN UPDATE SET v = s.v", lambda c: c == "local", "local")
    built = build_merge(stmt, SCHEMA, SOURCE_COLS)

    def ctx(props):
        return RuleContext(SCHEMA, props, lambda c: c.name if c.table == "t" else None,
                           lambda c: c.name if c.table == "s" else None, lambda: False)

    with pytest.raises(ExpressionNotAllowedError, match="deterministic source"):
        apply_rules(built, ctx({}))
    plan = apply_rules(built, ctx({"write.merge.mode": "merge-on-read"}))
    assert (plan.join_type, plan.mode, plan.prune_by_source_keys) == ("inner", "merge-on-read", True)
