"""The procedure registry: `CALL <catalog>.system.<name>(...)` resolves here.

A procedure declares its parameters (Iceberg's names, in Iceberg's positional order) and its
result columns (Iceberg's names and types), and is a function of a `ProcedureContext` and the
bound arguments returning result rows. Binding follows Iceberg's Spark procedures: arguments
are all positional or all named, names are case-insensitive, unknown or missing ones are errors.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

from pyice_sql.core.catalog.base import Table, TableIdentifier
from pyice_sql.core.errors import AnalysisError, SqlPosition

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pyice_sql.spark.runtime import Runtime

_MISSING = object()


@dataclass(frozen=True)
class Parameter:
    name: str
    required: bool = False
    default: Any = None


class ProcedureSession(Protocol):
    """The part of a session procedures use (IceSession is one), so they never depend on the session class."""

    spark: SparkSession
    runtime: Runtime
    current_namespace: tuple[str, ...]

    def load(self, catalog: str, ident: TableIdentifier) -> Table: ...


@dataclass(frozen=True)
class ProcedureContext:
    """What a procedure may use: the session, and the catalog named in the CALL."""

    session: ProcedureSession
    catalog: str
    position: SqlPosition | None = None

    @property
    def spark(self) -> SparkSession:
        return self.session.spark

    @property
    def runtime(self) -> Runtime:
        return self.session.runtime

    def load_table(self, name: str) -> Table:
        """`table => 'db.t'` is resolved in the CALL's catalog (a `catalog.` prefix is allowed)."""
        parts = [p.strip("`") for p in str(name).split(".")]
        if len(parts) >= 3 and parts[0] == self.catalog:
            parts = parts[1:]
        if len(parts) < 2:
            parts = [*self.session.current_namespace, *parts]
        if len(parts) < 2:
            raise AnalysisError(f"table {name!r} needs a namespace (db.table)", position=self.position)
        return self.session.load(self.catalog, TableIdentifier(tuple(parts[:-1]), parts[-1]))


@dataclass(frozen=True)
class Procedure:
    name: str
    parameters: tuple[Parameter, ...]
    output: str  # the result schema as a Spark DDL string, e.g. "previous_snapshot_id bigint, ..."
    run: Callable[[ProcedureContext, dict[str, Any]], Sequence[tuple]]

    def bind(self, args: Sequence[Any], named: dict[str, Any], position: SqlPosition | None) -> dict[str, Any]:
        if args and named:
            raise AnalysisError(f"{self.name}: cannot mix named and positional arguments", position=position)
        if len(args) > len(self.parameters):
            raise AnalysisError(f"{self.name}: takes at most {len(self.parameters)} arguments, "
                                f"got {len(args)}", position=position)
        given = {p.name: a for p, a in zip(self.parameters, args)}
        known = {p.name: p for p in self.parameters}
        for key, value in named.items():
            name = key.lower()
            if name not in known:
                raise AnalysisError(f"{self.name}: unknown argument {key!r}; expected one of "
                                    f"{', '.join(known)}", position=position)
            if name in given:
                raise AnalysisError(f"{self.name}: argument {key!r} given twice", position=position)
            given[name] = value
        bound = {}
        for p in self.parameters:
            value = given.get(p.name, _MISSING)
            if value is _MISSING and p.required:
                raise AnalysisError(f"{self.name}: missing required argument {p.name!r}", position=position)
            bound[p.name] = p.default if value is _MISSING else value
        return bound


PROCEDURES: dict[str, Procedure] = {}


def procedure(name: str, parameters: Sequence[Parameter], output: str):
    """Register the decorated function as `system.<name>`."""
    def register(fn: Callable[[ProcedureContext, dict[str, Any]], Sequence[tuple]]):
        PROCEDURES[name] = Procedure(name, tuple(parameters), output, fn)
        return fn
    return register


def lookup(namespace: tuple[str, ...], name: str, position: SqlPosition | None) -> Procedure:
    found = PROCEDURES.get(name.lower()) if tuple(n.lower() for n in namespace) == ("system",) else None
    if found is None:
        raise AnalysisError(f"unknown procedure {'.'.join((*namespace, name))}; available: "
                            f"{', '.join('system.' + n for n in sorted(PROCEDURES)) or 'none'}",
                            position=position)
    return found
