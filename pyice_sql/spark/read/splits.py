"""How large the splits of a table scan handed to the user are: Iceberg's read properties, and its
adaptive split size, as Iceberg Java sizes its scans.

Spark would size them by the session's `spark.sql.files.*` settings when the user's query runs:
up to 128 MB by default, packed over `spark.default.parallelism` (the cores). Iceberg Java packs
its scan tasks up to `read.split.target-size` (128 MB), each file weighing at least
`read.split.open-file-cost` (4 MB), and, where the scan makes fewer splits than the cluster runs
at once, smaller ones: the bytes scanned over that parallelism, at least 16 MB. Its parallelism
is the larger of Spark's default parallelism and the session's shuffle partitions (the slots a
query's later stages use). On 2 cores with 8 shuffle partitions, nine 34.5 MB files are 9 tasks
that way against Spark's 3 uneven ones, and the scan's wall time a third shorter.

The sizes reach Spark through the shim (ScanSplits.java), which reads the files in a companion
session holding them. Where the shim cannot load (Spark Connect), and for scans under 16 MB per
slot (`scan_split_size`), the session's settings apply.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from pyspark.sql import SparkSession

from pyice_sql.core import properties as props
from pyice_sql.core.errors import AnalysisError
from pyice_sql.core.model.manifest import DataFile
from pyice_sql.core.scan.planner import FileScanTask

_MIN_ADAPTIVE_SPLIT = 16 * 1024 * 1024  # Iceberg's floor for a split size it lowers
_SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


@dataclass(frozen=True)
class SplitSize:
    """A scan's split size in bytes, and the least a file weighs in a split (its open cost)."""

    split_bytes: int
    open_file_cost: int


def read_parallelism(spark: SparkSession) -> int:
    """The slots Iceberg Java spreads a scan over: the larger of Spark's default parallelism and the
    session's shuffle partitions (a classic session)."""
    return max(spark.sparkContext.defaultParallelism, int(spark.conf.get(_SHUFFLE_PARTITIONS, "200")))


def scan_split_size(tasks: list[FileScanTask], properties: Mapping[str, str], parallelism: int) -> SplitSize | None:
    """The split size Iceberg Java gives a scan of `tasks` of a table with `properties` over
    `parallelism` slots (`read_parallelism`); None where the session's splits serve as well: the
    table sets none of the split properties and the scan is under 16 MB per slot.

    Below that, Iceberg packs the files into its 16 MB floor, a file weighing at least 4 MB per file
    with its delete files: a small table's files make a few more tasks than the cores, so a second
    wave (3 tasks on 2 cores for 10 small files: +20 ms on a 5k-row SELECT, measured), where
    Spark's own splits (the bytes over the cores) run them in one wave. Above it, Spark's splits
    stop at 128 MB whatever the cores: nine 34.5 MB files on 2 cores made 3 uneven tasks."""
    target = _positive(properties, props.SPLIT_SIZE, props.SPLIT_SIZE_DEFAULT)
    open_cost = _positive(properties, props.SPLIT_OPEN_FILE_COST, props.SPLIT_OPEN_FILE_COST_DEFAULT)
    adaptive = str(properties.get(props.ADAPTIVE_SPLIT_SIZE_ENABLED,
                                  props.ADAPTIVE_SPLIT_SIZE_ENABLED_DEFAULT)).strip().lower() == "true"
    chosen = any(k in properties for k in (props.SPLIT_SIZE, props.SPLIT_OPEN_FILE_COST,
                                           props.ADAPTIVE_SPLIT_SIZE_ENABLED))
    # a task weighs its data file and its delete files (Iceberg's ScanTask.sizeBytes)
    scanned = sum(t.file.file_size_in_bytes + sum(_content_size(d.data_file) for d in t.deletes) for t in tasks)
    if not chosen and scanned < parallelism * _MIN_ADAPTIVE_SPLIT:
        return None
    if not adaptive or -(-scanned // target) >= parallelism:  # the target already gives every slot a split
        return SplitSize(target, open_cost)
    return SplitSize(max(scanned // parallelism, min(_MIN_ADAPTIVE_SPLIT, target)), open_cost)


def _content_size(f: DataFile) -> int:
    """A delete file's bytes read: a deletion vector's blob, else the whole file."""
    return f.content_size_in_bytes if f.content_size_in_bytes is not None else f.file_size_in_bytes


def _positive(properties: Mapping[str, str], key: str, default: int) -> int:
    value = properties.get(key)
    try:
        parsed = int(str(value).strip()) if value is not None else default
    except ValueError:
        parsed = -1
    if parsed <= 0:
        raise AnalysisError(f"table property {key} must be a positive number of bytes, not {value!r}")
    return parsed
