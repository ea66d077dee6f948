"""Runtime: the Spark session, the jvm shim and the Spark settings pyice_sql relies on.

One place prepares a SparkSession for Iceberg work (read Parquet columns by field id, write
timestamps as INT64 micros, register the bucket function), whether pyice_sql created the
session or the user handed theirs in.
"""
from __future__ import annotations

import datetime as dt
import os
import sys
from dataclasses import dataclass

from pyspark.sql import SparkSession

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.format.fileio import FileIO, file_io_for, is_local
from pyice_sql.core.model.zones import session_zone
from pyice_sql.spark.connect_backend import ConnectBackend, is_connect
from pyice_sql.spark.jvm.bridge import ShimHandle, load_shim, spark_jars_conf
from pyice_sql.spark.write.data_writer import DEFAULT_BYTES_PER_ROW, WriteContext

SPARK_SETTINGS = {
    "spark.sql.parquet.fieldId.read.enabled": "true",
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.parquet.writeLegacyFormat": "false",
}


def local_session(app_name: str = "pyice_sql", quiet: bool = False) -> SparkSession:
    """A SparkSession with the shim jar on its class path (used when none is given).

    Under spark-submit the JVM is already running with the job's conf: what it sets (master,
    spark.jars, UI, ...) is kept and only missing settings get pyice's defaults. Spark's console
    progress bar is on unless `quiet`.
    """
    given = _submitted_conf()
    # Python UDFs (deletion vectors are decoded in one) import pyice_sql in Spark's Python workers:
    # locally they must run this interpreter, not whatever `python3` is first on the PATH
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    defaults = {
        "spark.master": os.environ.get("PYICE_SPARK_MASTER", "local[2]"),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false" if quiet else "true",
        "spark.sql.shuffle.partitions": os.environ.get("PYICE_SHUFFLE_PARTITIONS", "8"),
        "spark.sql.session.timeZone": "UTC",
    }
    for k, v in defaults.items():
        if k not in given:
            builder = builder.config(k, v)
    builder = builder.config("spark.jars", spark_jars_conf(given.get("spark.jars")))
    for k, v in SPARK_SETTINGS.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("PYICE_SPARK_LOG_LEVEL", "ERROR"))
    return spark


def spark_session_zone(spark: SparkSession) -> dt.tzinfo | None:
    """The session's time zone (`spark.sql.session.timeZone`, asked per statement: a user may change
    it between two), in which Spark reads timestamps written without an offset; None if Python does
    not know its name (see `zones.session_zone`)."""
    return session_zone(spark.conf.get("spark.sql.session.timeZone", None))


def _submitted_conf() -> dict[str, str]:
    """The conf of a JVM that spark-submit already started (empty in a plain Python process,
    where reading it would start a JVM without the settings the builder adds)."""
    from pyspark import SparkConf, SparkContext

    if SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        return {}
    return dict(SparkConf().getAll())


@dataclass
class Runtime:
    spark: SparkSession
    shim: ShimHandle | ConnectBackend

    @classmethod
    def attach(cls, spark: SparkSession) -> "Runtime":
        """Prepare `spark`; the JVM shim on a classic session, its DataFrame-only stand-in on Spark Connect."""
        for k, v in SPARK_SETTINGS.items():
            spark.conf.set(k, v)
        shim = ConnectBackend(spark) if is_connect(spark) else load_shim(spark)
        shim.register_bucket_udf()
        shim.register_deletion_vector_udfs()
        return cls(spark, shim)

    def io_for(self, location: str) -> FileIO:
        if isinstance(self.shim, ConnectBackend) and not is_local(location):
            raise ValueError(f"location {location}: on Spark Connect pyice_sql reads and writes table metadata "
                             "from the client, which reaches local (or mounted) filesystems only; use a classic "
                             "SparkSession for this warehouse")
        return file_io_for(location, self.shim)

    def write_context(self, table: Table, spec_id: int | None = None) -> WriteContext:
        md = table.metadata
        spec = md.spec() if spec_id is None else md.spec_by_id(spec_id)
        return WriteContext(schema=md.schema(), spec=spec, location=md.location, properties=dict(md.properties),
                            io=table.io, footer_stats=self.shim.footer_stats,
                            bytes_per_row=_bytes_per_row(table), specs=tuple(md.specs),
                            sort_order=md.sort_order())


def _bytes_per_row(table: Table) -> float:
    """Average stored bytes per row so far, to turn the target file size into rows per file."""
    snap = table.metadata.current_snapshot()
    if snap is not None:
        size = int(snap.summary.get("total-files-size", "0"))
        rows = int(snap.summary.get("total-records", "0"))
        if size > 0 and rows > 0:
            return size / rows
    return DEFAULT_BYTES_PER_ROW
