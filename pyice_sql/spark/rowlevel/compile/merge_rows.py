"""MergeRows compiled to Spark SQL: one SELECT that joins and tags every row.

The generated query reads the target scan view (with `_file` and `_pos`, never null on a target
row, so `_pos` is its presence test) and, for MERGE, the source view (with a presence marker),
joined as the plan says. Per row it computes `__row_operation` with one CASE chain over the
clauses in order — the first clause whose kind (matched / not matched / not matched by source)
and condition hold wins — and the new value of every target column with the same chain (a
clause that fires without assigning a column keeps its current value), so Spark evaluates each
value only in the branch that fires (no spurious errors from clauses that do not apply). It is
plain SQL over views: user expressions resolve against the user's aliases with Spark's own
rules. An UPDATE or DELETE, which has no source, takes the same projection and its test of
the target rows (`tagged_columns`, `row_filter`) as two steps over the scan aliased as its
target: no temp view to register, analyse and drop (~20 ms of a warm statement's driver time).

A MERGE whose plan broadcasts the source (rules/join_type.py) runs the same SELECT twice, as a
UNION ALL: over the matched side's join (inner, or left outer with NOT MATCHED BY SOURCE), which
Spark builds from the broadcast source, and over the source rows nothing matched
(`unmatched_source_select`, ids read from the matched side's rows) joined to an empty target,
which Spark's optimizer folds to those rows with a null target side. Together they are the outer
join's rows, and the target is scanned once and not shuffled. That empty target, a copy-on-write
second pass's target narrowed to the files it rewrites, and its unmatched source rows where the
first pass kept the matched pairs' source row ids (tested by the shim's `unmatched_sources`
function) are `subquery`s of the statement's views in the query's text, not views of their own.
"""
from __future__ import annotations

from typing import Collection

from sqlglot import exp

from pyice_sql.core.model.row_lineage import LAST_UPDATED_SEQUENCE_NUMBER, LINEAGE_COLUMNS
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.plan.nodes import INSERT, MATCHED, NOT_MATCHED, UPDATE, RowLevelPlan
from pyice_sql.core.sql.dialect import DIALECT, quote_identifier as _q

SOURCE_MARK = "__pyice_s"
OP, FILE, POS, KEY_PREFIX = "__row_operation", "__file", "__pos", "__key_"
FILE_ORDINAL = "__file_ordinal"  # the row's data file as its index in the tasks read (when rows carry it)
MATCHED_PAIR = "__matched"  # MERGE only: the row is a (target, source) pair that satisfied ON
ROW_ID = "__row_id"  # format v3: the target row's `_row_id`, which an updated row keeps
LIVE = "__pyice_live"  # UPDATE / DELETE: the target scan's flag of rows no position delete removes
KEEP = 0
SOURCE_ROW = "__pyice_source_row"  # broadcast source: each source row's id, to find the unmatched ones
# broadcast source: the join giving the matched pairs (and the target rows no source row matches)
MATCHED_SIDE_JOIN = {"right outer": "inner", "full outer": "left outer"}
# copy-on-write MERGE by join: the join that also keeps every target row (the rewrite copies them)
TARGET_KEEPING_JOIN = {"inner": "left outer", "right outer": "full outer"}


def _sql(e: exp.Expression) -> str:
    return e.sql(dialect=DIALECT)


def _kind_test(plan: RowLevelPlan, kind: str) -> str:
    if plan.source is None:
        return "TRUE"
    t, s = f"{_q(plan.target_alias)}.`_pos`", f"{_q(plan.source_alias)}.{SOURCE_MARK}"
    if kind == MATCHED:
        return f"({t} IS NOT NULL AND {s} IS NOT NULL)"
    if kind == NOT_MATCHED:
        return f"({t} IS NULL)"
    return f"({s} IS NULL)"


def _branches(plan: RowLevelPlan) -> list[str]:
    out = []
    for ins in plan.instructions:
        test = _kind_test(plan, ins.kind)
        if ins.condition is not None:
            test = f"{test} AND ({_sql(ins.condition)})"
        out.append(test)
    return out


def row_filter(plan: RowLevelPlan, live: str | None = None) -> str | None:
    """UPDATE / DELETE: the test of the target rows to tag (None: every row), over the target
    aliased as the statement's; `live` names the target's flag of rows no position delete removes,
    tested after the statement's condition (see reader.read_tasks)."""
    t = _q(plan.target_alias)
    tests = ([f"({_sql(plan.where)})"] if plan.where is not None else []) + ([f"{t}.{_q(live)}"] if live else [])
    return " AND ".join(tests) or None


def subquery(view: str, test: str) -> str:
    """The rows of `view` (a view, or itself a `subquery`) for which `test` holds, as a relation
    the generated queries read in place of a view: a filtered frame registered as a view of its
    own costs two analyses of the whole plan and the registering and dropping (10-35 ms of a warm
    MERGE's driver time), the same filter in the query's text none."""
    return f"(SELECT * FROM {_relation(view)} WHERE {test})"


def _relation(view: str) -> str:
    """A relation of the generated queries: a temp view's name, quoted, or a `subquery` as it is."""
    return view if view.startswith("(SELECT ") else _q(view)


def _from(plan: RowLevelPlan, target_view: str, source_view: str | None) -> str:
    """The FROM (and WHERE) clause."""
    t = _q(plan.target_alias)
    if plan.source is None:
        test = row_filter(plan)
        return f"FROM {_relation(target_view)} AS {t}" + (f" WHERE {test}" if test else "")
    return (f"FROM {_relation(target_view)} AS {t} {plan.join_type.upper()} JOIN {_relation(source_view)} AS "
            f"{_q(plan.source_alias)} ON {_sql(plan.on)}")


def unmatched_source_select(rows_view: str, matched_view: str) -> str:
    """Broadcast source: the source rows (`rows_view`: the source with `SOURCE_ROW`) whose id is
    not among those of the matched side's rows (`matched_view`: its tagged rows with `SOURCE_ROW`)."""
    # the target rows no source row matches (a join keeping them) have no id: left out before the
    # anti-join, which would otherwise shuffle them all to one task
    return (f"SELECT u.* FROM {_q(rows_view)} AS u LEFT ANTI JOIN (SELECT {SOURCE_ROW} FROM {_q(matched_view)} "
            f"WHERE {SOURCE_ROW} IS NOT NULL) AS m ON u.{SOURCE_ROW} = m.{SOURCE_ROW}")


def value_name(clause: int, column: str) -> str:
    return f"__v{clause}_{column}"


def value_probe_columns(plan: RowLevelPlan, known: Collection[str] = ()) -> list[str]:
    """The assigned values whose `value_name` is not in `known`, each named by it: a projection
    whose schema (analysis only, never run) gives their types."""
    return [f"{_sql(v)} AS {_q(value_name(k, name))}"
            for k, ins in enumerate(plan.instructions) for name, v in ins.values.items()
            if value_name(k, name) not in known]


def value_probe_select(plan: RowLevelPlan, target_view: str, source_view: str | None,
                       known: Collection[str] = ()) -> str | None:
    """`value_probe_columns` as a query over the statement's views; None when there is none."""
    cols = value_probe_columns(plan, known)
    return f"SELECT {', '.join(cols)} {_from(plan, target_view, source_view)} LIMIT 0" if cols else None


def tagged_select(plan: RowLevelPlan, schema: Schema, target_view: str, source_view: str | None,
                  stored: dict[tuple[int, str], str], row_id: bool = False, file_column: str = "_file",
                  source_row: bool = False, copies: bool = False, lineage: bool = False) -> str:
    """The MergeRows query text: `tagged_columns` over the statement's views."""
    cols = tagged_columns(plan, schema, stored, row_id, file_column, source_row, copies, lineage)
    return f"SELECT {', '.join(cols)} {_from(plan, target_view, source_view)}"


def tagged_columns(plan: RowLevelPlan, schema: Schema, stored: dict[tuple[int, str], str], row_id: bool = False,
                   file_column: str = "_file", source_row: bool = False, copies: bool = False,
                   lineage: bool = False) -> list[str]:
    """MergeRows' projection: `__file`, `__pos`, `__row_operation`, (MERGE) `__matched`, key
    columns, (`row_id`: the target has `_row_id`) `__row_id`, (`source_row`: the source has it)
    `SOURCE_ROW`, new values.
    `__file` is the target view's `file_column` (the caller may carry a file's ordinal through the
    join and look its path up after it). `copies`: the rows no clause changes are written back
    (copy-on-write by join), so every column keeps its current value where no clause assigns it;
    with `lineage` (format v3: the target view has both lineage columns) they end with
    `_row_id` and `_last_updated_sequence_number` as the rewrite stores them: a copied row keeps
    both, an updated row its id (a null sequence number: it reads the commit's), an inserted
    row neither.

    `stored` is the SQL storing each (clause, column) value (see compile/store_assignment.py).
    """
    t = _q(plan.target_alias)
    tests = _branches(plan)
    op = "CASE " + " ".join(f"WHEN {test} THEN {ins.operation}" for test, ins in zip(tests, plan.instructions))
    op += f" ELSE {KEEP} END"
    cols = [f"{t}.{_q(file_column)} AS {FILE}", f"{t}.`_pos` AS {POS}", f"{op} AS {OP}"]
    if plan.source is not None:
        cols.append(f"{_kind_test(plan, MATCHED)} AS {MATCHED_PAIR}")
    for i, (target_col, _) in enumerate(plan.source_key_columns):
        cols.append(f"{t}.{_q(target_col)} AS {KEY_PREFIX}{i}")
    if row_id:
        cols.append(f"{t}.`_row_id` AS {ROW_ID}")
    if source_row:
        cols.append(f"{_q(plan.source_alias)}.{SOURCE_ROW}")
    for f in schema.fields:
        current = f"{t}.{_q(f.name)}"
        # Every clause up to the last one assigning this column gets a branch: a clause that
        # fires without assigning it keeps the current value (first match wins, per column too).
        assigning = [k for k, ins in enumerate(plan.instructions) if f.name in ins.values]
        whens = [f"WHEN {test} THEN "
                 + (stored[(k, f.name)] if f.name in ins.values else current)
                 for k, (test, ins) in enumerate(zip(tests, plan.instructions)) if assigning and k <= assigning[-1]]
        # ELSE is reached when no clause up to the last one assigning this column fired. If no later
        # clause writes rows either (UPDATE/INSERT), the row is kept or deleted and this value is
        # never used: NULL (not the current value) then lets Spark prune target columns no clause
        # reads, e.g. for `UPDATE SET *` the join carries only keys and row positions.
        later_writes = assigning and any(ins.operation in (UPDATE, INSERT)
                                         for ins in plan.instructions[assigning[-1] + 1:])
        value = (f"CASE {' '.join(whens)} ELSE {current if later_writes or copies else 'NULL'} END" if whens
                 else current)
        cols.append(f"{value} AS {_q(f.name)}")
    if lineage:
        row_id, seq = (_q(n) for n in LINEAGE_COLUMNS)
        cols += [f"{t}.{row_id} AS {row_id}", f"CASE WHEN {op} = {UPDATE} THEN NULL ELSE {t}.{seq} END AS {seq}"]
    return cols


def rewrite_columns(plan: RowLevelPlan, schema: Schema, stored: dict[tuple[int, str], str],
                    lineage: bool = False, live: str | None = None) -> tuple[list[str], str | None]:
    """Copy-on-write by predicate (UPDATE / DELETE): the projection and the test (None: every row)
    giving the rows to write back from the rows of the files being rewritten (aliased as the
    statement's target), the statement's condition evaluated again in place of a join
    with the changed rows. DELETE keeps the rows it does not hold for; UPDATE stores the new value
    where it holds and keeps every other row as it is. With `lineage` the rows also have
    `_row_id` and `_last_updated_sequence_number`: both are kept, except that an updated row's
    sequence number becomes null (it reads the commit's). `live`: the rows' column flagging the
    rows no position delete removes (`reader.read_tasks`), tested after the statement's condition
    as the scan's own filter would be; the others are dropped."""
    t = _q(plan.target_alias)
    ins, = plan.instructions
    tests = [_sql(e) for e in (plan.where, ins.condition) if e is not None]
    holds = f"COALESCE({' AND '.join(f'({c})' for c in tests)}, FALSE)" if tests else "TRUE"
    names = [f.name for f in schema.fields] + (list(LINEAGE_COLUMNS) if lineage else [])
    live_test = f"{t}.{_q(live)}" if live else None
    if ins.operation != UPDATE:
        return [f"{t}.{_q(n)}" for n in names], f"NOT {holds}" + (f" AND {live_test}" if live_test else "")
    new = {n: stored[(0, n)] for n in ins.values}
    if lineage:
        new[LAST_UPDATED_SEQUENCE_NUMBER.name] = "CAST(NULL AS BIGINT)"
    cols = [f"CASE WHEN {holds} THEN {new[n]} ELSE {t}.{_q(n)} END AS {_q(n)}" if n in new else f"{t}.{_q(n)}"
            for n in names]
    return cols, live_test
