"""`install(spark)`: route a SparkSession's own `spark.sql` through pyice_sql.

There is no Catalyst extension to hook into, so the Python SparkSession object's `sql` is
replaced on that one instance. Statements on pyice catalogs (`local.db.t`: MERGE, UPDATE,
DELETE, CALL, DDL, SELECT, ...) then run in pyice_sql; everything else goes to Spark as before,
with its `args` and `{name}` formatting, on classic and Spark Connect sessions alike.
Unqualified names stay Spark's (its current catalog), until `USE <pyice catalog>.<db>`. While
pyice_sql runs a statement, the `spark.sql` calls it makes itself go straight to Spark, so its
generated SQL is never parsed twice.
"""
from __future__ import annotations

import functools
import threading
from typing import Any, Callable

from pyspark.sql import DataFrame, SparkSession

from pyice_sql.spark.connect_backend import is_connect
from pyice_sql.spark.runtime import local_session
from pyice_sql.spark.session import IceSession, connect

_ATTR = "_pyice_session"
_inside = threading.local()


def install(spark: SparkSession | None = None, *, warehouse: str | None = None, catalog: str | None = None,
            catalog_type: str | None = None, uri: str | None = None, quiet: bool | None = None) -> IceSession:
    """Make `spark.sql` run pyice statements; returns the IceSession behind it.

    Arguments as for `connect` (left out: read from `spark.pyice.*` conf). Installing again
    replaces the previous installation.
    """
    spark = spark or local_session(quiet=bool(quiet))
    uninstall(spark)
    ice = connect(spark, warehouse=warehouse, catalog=catalog, catalog_type=catalog_type, uri=uri, quiet=quiet)
    ice.current_catalog = spark.catalog.currentCatalog()  # unqualified names stay Spark's
    spark_sql = spark.sql
    remote = is_connect(spark)

    def sql(sqlQuery: str, args: dict[str, Any] | list | None = None, **kwargs: Any) -> DataFrame:
        if getattr(_inside, "active", False):
            return spark_sql(sqlQuery, args, **kwargs)
        formatter, views = None, {}
        if kwargs:  # Spark's own `{name}` formatting: DataFrames become temp views, values literals
            formatter = _formatter(spark)
            sqlQuery = formatter.format(sqlQuery, **kwargs)
            # Connect's formatter only names the DataFrames: they become temp views here, which
            # outlive the call (a Connect result is analyzed when it runs, not now)
            views = {name: df for df, name in formatter._temp_views} if remote else {}
        try:
            return ice.sql(sqlQuery, args=args, **views)
        finally:
            if formatter is not None:
                formatter.clear()

    for method in ("execute", "table", "append"):  # pyice's own spark.sql calls go straight to Spark
        setattr(ice, method, _straight_to_spark(getattr(ice, method)))
    sql.__doc__ = f"spark.sql routed through pyice_sql (see pyice_sql.install).\n\n{SparkSession.sql.__doc__}"
    spark.sql = sql
    setattr(spark, _ATTR, ice)
    return ice


def _straight_to_spark(run: Callable[..., Any]) -> Callable[..., Any]:
    """`run`, with the `spark.sql` calls it makes going to Spark's own `sql` (not parsed again;
    on Connect, not formatted again, which would turn its scans into temp views)."""
    @functools.wraps(run)
    def inside(*args: Any, **kwargs: Any) -> Any:
        outer = getattr(_inside, "active", False)
        _inside.active = True
        try:
            return run(*args, **kwargs)
        finally:
            _inside.active = outer
    return inside


def _formatter(spark: SparkSession):
    """pyspark's `{name}` formatter for this kind of session. Classic's registers each DataFrame
    as a temp view itself (dropped by `clear`); Connect's only names them (its sql() sends the
    plans along), so `install` registers those views."""
    if is_connect(spark):
        from pyspark.sql.connect.sql_formatter import SQLStringFormatter as ConnectFormatter

        return ConnectFormatter(spark)
    from pyspark.sql.sql_formatter import SQLStringFormatter

    return SQLStringFormatter(spark)


def uninstall(spark: SparkSession) -> bool:
    """Give `spark.sql` back to Spark; False if pyice_sql was not installed on this session."""
    if getattr(spark, _ATTR, None) is None:
        return False
    spark.__dict__.pop("sql", None)
    delattr(spark, _ATTR)
    return True


def installed(spark: SparkSession) -> IceSession | None:
    """The IceSession installed on `spark`, if any."""
    return getattr(spark, _ATTR, None)
