"""Rule: copy-on-write or merge-on-read, from the table's `write.<command>.mode` property."""
from __future__ import annotations

from pyice_sql.core import properties as props
from pyice_sql.core.errors import AnalysisError
from pyice_sql.core.plan.nodes import RowLevelPlan

MODES = ("copy-on-write", "merge-on-read")


def choose_write_mode(plan: RowLevelPlan, properties: dict[str, str]) -> RowLevelPlan:
    key = props.write_mode(plan.command)
    mode = properties.get(key, props.WRITE_MODE_DEFAULT).strip().lower()
    if mode not in MODES:
        raise AnalysisError(f"table property {key}={mode!r} is not one of {', '.join(MODES)}")
    reason = f"table property {key}={mode}" if key in properties else f"{key} not set: Iceberg's default"
    return plan.with_(mode=mode, mode_reason=reason)
