"""The Spark file source pyice_sql reads and writes table files with.

The shim's `DataFileParquetFormat` (a subclass of Spark's Parquet source, named by class) where
Spark's data source lookup can load it by name: a classic session with the shim on Spark's
classpath. Elsewhere (Spark Connect, a shim loaded into a running session) Spark's own `parquet`,
which reads and writes the same files. What the shim's format changes is cost, not content
(DataFileParquetFormat.java): a write job's Hadoop configuration without YARN's defaults, the
field ids and NaN counts Spark's writer cannot give, and a scan that copies a slimmer Hadoop
configuration per file and opens local files without the checksum file system.
"""
from __future__ import annotations

from pyspark.sql import SparkSession

from pyice_sql.spark.connect_backend import is_connect
from pyice_sql.spark.jvm.bridge import load_shim

DATA_FILE_FORMAT = "pyice.shim.DataFileParquetFormat"


def data_file_format(spark: SparkSession) -> str:
    """`DATA_FILE_FORMAT` where Spark can load it by name, else `parquet`."""
    return DATA_FILE_FORMAT if not is_connect(spark) and load_shim(spark).mode == "classpath" else "parquet"
