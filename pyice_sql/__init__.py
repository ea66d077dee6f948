"""pyice_sql: row-level SQL (MERGE INTO, UPDATE, DELETE) for Apache Iceberg tables on PySpark.

    import pyice_sql
    ice = pyice_sql.connect()            # local Spark, filesystem warehouse ./warehouse
    ice.sql("CREATE TABLE local.db.t (id bigint, s string) USING iceberg")
    ice.sql("INSERT INTO local.db.t VALUES (1, 'a')")
    ice.sql("SELECT * FROM local.db.t").show()

    pyice_sql.install(spark)             # or: plain spark.sql() runs pyice statements too
    spark.sql("MERGE INTO local.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN DELETE")
"""
from pyice_sql.core.errors import PyIceError
from pyice_sql.spark.session import IceSession, connect
from pyice_sql.spark_hook import install, uninstall

__version__ = "0.1.0"
__all__ = ["IceSession", "PyIceError", "connect", "install", "uninstall", "__version__"]


def load_ipython_extension(ipython) -> None:
    """`%load_ext pyice_sql`: registers the %pyice_sql / %%pyice_sql magics."""
    from pyice_sql.magics import register

    register(ipython)
