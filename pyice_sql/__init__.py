"""pyice_sql: row-level SQL (MERGE INTO, UPDATE, DELETE) for Apache Iceberg tables on PySpark.

    import pyice_sql
    ice = pyice_sql.connect()            # local Spark, filesystem warehouse ./warehouse
    ice.sql("CREATE TABLE local.db.t (id bigint, s string) USING iceberg")
    ice.sql("INSERT INTO local.db.t VALUES (1, 'a')")
    ice.sql("SELECT * FROM local.db.t").show()

    pyice_sql.install(spark)             # or: plain spark.sql() runs pyice statements too
    spark.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN DELETE")

The public names are resolved on first use, so `import pyice_sql` (and `pyice_sql.core`) loads no
Spark: pyspark and py4j are imported only when a session is made.
"""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyice_sql.core.errors import PyIceError
    from pyice_sql.spark.session import IceSession, connect
    from pyice_sql.spark_hook import install, uninstall

__version__ = "0.1.0"
__all__ = ["IceSession", "PyIceError", "connect", "install", "uninstall", "__version__"]

_PUBLIC = {
    "IceSession": "pyice_sql.spark.session",
    "connect": "pyice_sql.spark.session",
    "PyIceError": "pyice_sql.core.errors",
    "install": "pyice_sql.spark_hook",
    "uninstall": "pyice_sql.spark_hook",
}


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'pyice_sql' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython) -> None:
    """`%load_ext pyice_sql`: registers the %pyice_sql / %%pyice_sql magics."""
    from pyice_sql.magics import register

    register(ipython)
