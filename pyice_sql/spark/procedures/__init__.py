"""Iceberg's stored procedures for `CALL <catalog>.system.<name>(...)`.

Importing this package registers every procedure (one module per family) in `registry.PROCEDURES`.
"""
from pyice_sql.spark.procedures.registry import PROCEDURES, Parameter, ProcedureContext, lookup, procedure
from pyice_sql.spark.procedures import snapshot_management  # noqa: F401,E402  (registers rollback_*, set_current_snapshot, cherrypick_snapshot, fast_forward)
from pyice_sql.spark.procedures import (  # noqa: F401,E402  (each registers its procedure)
    expire_snapshots, remove_orphan_files, rewrite_data_files, rewrite_manifests, rewrite_position_delete_files,
)

__all__ = ["PROCEDURES", "Parameter", "ProcedureContext", "lookup", "procedure"]
