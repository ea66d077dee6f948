"""Rule: choose the join between target and source from the MERGE clauses.

Only rows a clause can act on need to come out of the join: matched pairs always; source rows
without a match when there is a NOT MATCHED (insert) clause; target rows without a match when
there is a NOT MATCHED BY SOURCE clause. Copy-on-write does not need the target preserved:
untouched rows of rewritten files are copied by a separate read of just those files.
"""
from __future__ import annotations

from pyice_sql.core.plan.nodes import RowLevelPlan


def choose_join(plan: RowLevelPlan) -> RowLevelPlan:
    if plan.command != "MERGE":
        return plan
    inserts, by_source = plan.has_not_matched, plan.has_not_matched_by_source
    if inserts and by_source:
        return plan.with_(join_type="full outer", join_reason="NOT MATCHED and NOT MATCHED BY SOURCE clauses")
    if inserts:
        return plan.with_(join_type="right outer", join_reason="NOT MATCHED clause keeps unmatched source rows")
    if by_source:
        return plan.with_(join_type="left outer", join_reason="NOT MATCHED BY SOURCE clause keeps unmatched target rows")
    return plan.with_(join_type="inner", join_reason="only WHEN MATCHED clauses")
