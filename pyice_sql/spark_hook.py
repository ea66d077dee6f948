"""`install(spark)`: route a SparkSession's own `spark.sql` through pyice_sql.

There is no Catalyst extension to hook into, so the Python SparkSession object's `sql` is
replaced on that one instance. Statements on pyice catalogs (`local.db.t`: MERGE, UPDATE,
DELETE, CALL, DDL, SELECT, ...) then run in pyice_sql; everything else goes to Spark as before,
with its `args` and `{name}` formatting. Unqualified names stay Spark's (its current catalog),
until `USE <pyice catalog>.<db>`. While pyice_sql runs a statement, the `spark.sql` calls it
makes itself go straight to Spark, so its generated SQL is never parsed twice.
"""
from __future__ import annotations

import threading
from typing import Any

from pyspark.sql import DataFrame, SparkSession

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

    def sql(sqlQuery: str, args: dict[str, Any] | list | None = None, **kwargs: Any) -> DataFrame:
        if getattr(_inside, "active", False):
            return spark_sql(sqlQuery, args, **kwargs)
        formatter = None
        if kwargs:  # Spark's own `{name}` formatting: DataFrames become temp views, values literals
            from pyspark.sql.sql_formatter import SQLStringFormatter

            formatter = SQLStringFormatter(spark)
            sqlQuery = formatter.format(sqlQuery, **kwargs)
        _inside.active = True
        try:
            return ice.sql(sqlQuery, args=args)
        finally:
            _inside.active = False
            if formatter is not None:
                formatter.clear()

    sql.__doc__ = f"spark.sql routed through pyice_sql (see pyice_sql.install).\n\n{SparkSession.sql.__doc__}"
    spark.sql = sql
    setattr(spark, _ATTR, ice)
    return ice


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
