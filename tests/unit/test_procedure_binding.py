"""Procedure argument binding follows Iceberg's Spark procedures (positional xor named)."""
import pytest

from pyice_sql.core.errors import AnalysisError
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
