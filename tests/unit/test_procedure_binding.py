"""Procedure argument binding follows Iceberg's Spark procedures (positional xor named)."""
import datetime as dt

import pytest

from pyice_sql.core.errors import AnalysisError
from pyice_sql.core.model.zones import UTC, session_zone
from pyice_sql.spark.procedures.arguments import timestamp_ms
from pyice_sql.spark.procedures.registry import Parameter, Procedure, lookup

PROC = Procedure("p", (Parameter("table", required=True), Parameter("snapshot_id"), Parameter("dry_run", default=False)),
                 "x int", lambda ctx, args: [])


def test_positional_and_named_bind_the_same():
    assert PROC.bind(("db.t", 5), {}, None) == {"table": "db.t", "snapshot_id": 5, "dry_run": False}
    assert PROC.bind((), {"TABLE": "db.t", "snapshot_id": 5}, None) == {"table": "db.t", "snapshot_id": 5,
                                                                         "dry_run": False}


@pytest.mark.parametrize("args,named,message", [
    (("db.t",), {"snapshot_id": 1}, "cannot mix"),
    ((), {"table": "db.t", "nope": 1}, "unknown argument 'nope'"),
    ((), {"snapshot_id": 1}, "missing required argument 'table'"),
    (("a", 1, True, 4), {}, "at most 3"),
])
def test_bad_arguments_are_named(args, named, message):
    with pytest.raises(AnalysisError, match=message):
        PROC.bind(args, named, None)


def test_unknown_procedure_lists_what_exists():
    with pytest.raises(AnalysisError, match="unknown procedure system.no_such"):
        lookup(("system",), "no_such", None)


def test_procedure_timestamps_are_read_in_the_session_zone() -> None:
    """Text without an offset is the session zone's wall clock (Los Angeles: UTC-8 in January); a
    zone Python does not know asks for an offset instead of guessing one."""
    at = dt.datetime(2024, 1, 1, 8, tzinfo=UTC).timestamp() * 1000
    assert timestamp_ms("2024-01-01 00:00:00", "expire_snapshots", "older_than", session_zone("America/Los_Angeles")) == at
    assert timestamp_ms("2024-01-01 13:30:00", "expire_snapshots", "older_than", session_zone("+05:30")) == at
    assert timestamp_ms("2024-01-01 08:00:00+00:00", "expire_snapshots", "older_than", None) == at
    with pytest.raises(AnalysisError, match="time zone"):
        timestamp_ms("2024-01-01 00:00:00", "expire_snapshots", "older_than", None)
