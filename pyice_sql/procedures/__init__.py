"""Iceberg's stored procedures for `CALL <catalog>.system.<name>(...)`.

Importing this package registers every procedure (one module per family) in `registry.PROCEDURES`.
"""
from pyice_sql.procedures.registry import PROCEDURES, Parameter, ProcedureContext, lookup, procedure

__all__ = ["PROCEDURES", "Parameter", "ProcedureContext", "lookup", "procedure"]
