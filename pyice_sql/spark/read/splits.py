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
session holding them. Where the shim cannot load (Spark Connect), and where the session's own
splits already spread the scan over the cores (`scan_split_size`), the session's settings apply.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from pyspark.sql import SparkSession

from pyice_sql.core import properties as props
from pyice_sql.core.errors import AnalysisError
from pyice_sql.core.model.manifest import DataFile
from pyice_sql.core.scan.planner import FileScanTask
from pyice_sql.spark.connect_backend import is_connect, size_setting

MAX_PARTITION_BYTES = "spark.sql.files.maxPartitionBytes"
MIN_PARTITION_NUM = "spark.sql.files.minPartitionNum"
OPEN_COST = "spark.sql.files.openCostInBytes"
_LEAF_PARALLELISM = "spark.sql.leafNodeDefaultParallelism"
_MIN_ADAPTIVE_SPLIT = 16 * 1024 * 1024  # Iceberg's floor for a split size it lowers
_SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


@dataclass(frozen=True)
class SplitSize:
    """A scan's split size in bytes, and the least a file weighs in a split (its open cost)."""

    split_bytes: int
    open_file_cost: int


def session_split_size(spark: SparkSession, read: Sequence[DataFile]) -> int:
    """The size Spark cuts the files of a scan of `read` at, and packs its splits up to, under the
    session's settings (a classic session: the cores come from its SparkContext): `min(maxPartitionBytes,
    max(openCostInBytes, bytes read / minPartitionNum))`, a file's bytes read being its length and
    the open cost."""
    open_cost = size_setting(spark, OPEN_COST, "4MB") or 0
    default_num = spark.conf.get(MIN_PARTITION_NUM, None) or spark.conf.get(_LEAF_PARALLELISM, None)
    cores = max(1, int(default_num) if default_num else spark.sparkContext.defaultParallelism)
    read_bytes = sum(f.file_size_in_bytes + open_cost for f in read)
    return min(size_setting(spark, MAX_PARTITION_BYTES, "128MB") or 0, max(open_cost, read_bytes // cores))


def table_scan_split(spark: SparkSession, tasks: list[FileScanTask], properties: Mapping[str, str]) -> SplitSize | None:
    """The split size of a table scan handed to the user (`scan_split_size` in this session); None
    on Spark Connect, where the shim that applies it cannot load."""
    if is_connect(spark) or not tasks:
        return None
    session_max = size_setting(spark, MAX_PARTITION_BYTES, "128MB") or 0
    capped = session_split_size(spark, [t.file for t in tasks]) >= session_max
    # Iceberg's parallelism: the larger of Spark's default parallelism and the shuffle partitions
    parallelism = max(spark.sparkContext.defaultParallelism, int(spark.conf.get(_SHUFFLE_PARTITIONS, "200")))
    return scan_split_size(tasks, properties, parallelism, capped)


def scan_split_size(tasks: list[FileScanTask], properties: Mapping[str, str], parallelism: int,
                    session_capped: bool) -> SplitSize | None:
    """The split size Iceberg Java gives a scan of `tasks` of a table with `properties` over
    `parallelism` slots; None where the session's splits serve as well: the
    table sets none of the split properties and the session's split size for the scan is not
    `session_capped` (at `spark.sql.files.maxPartitionBytes`, `session_split_size`).

    Uncapped, Spark's splits are the bytes over the cores: one wave of even tasks. Iceberg would
    pack a small scan's files into its 16 MB floor, a file weighing at least 4 MB per file with its
    delete files, so a few more tasks than the cores: a second wave (3 tasks on 2 cores for 10 small
    files: +20 ms on a 5k-row SELECT, measured). Capped, Spark's splits stop at 128 MB whatever the
    cores: nine 34.5 MB files made 3 uneven tasks on 2 cores, where Iceberg's sizes make 9."""
    target = _positive(properties, props.SPLIT_SIZE, props.SPLIT_SIZE_DEFAULT)
    open_cost = _positive(properties, props.SPLIT_OPEN_FILE_COST, props.SPLIT_OPEN_FILE_COST_DEFAULT)
    adaptive = str(properties.get(props.ADAPTIVE_SPLIT_SIZE_ENABLED,
                                  props.ADAPTIVE_SPLIT_SIZE_ENABLED_DEFAULT)).strip().lower() == "true"
    chosen = any(k in properties for k in (props.SPLIT_SIZE, props.SPLIT_OPEN_FILE_COST,
                                           props.ADAPTIVE_SPLIT_SIZE_ENABLED))
    # a task weighs its data file and its delete files (Iceberg's ScanTask.sizeBytes)
    scanned = sum(t.file.file_size_in_bytes + sum(_content_size(d.data_file) for d in t.deletes) for t in tasks)
    if not chosen and not session_capped:
        return None
    if not adaptive or -(-scanned // target) >= parallelism:  # the target already gives every slot a split
        return SplitSize(target, open_cost)
    # Iceberg cuts files at their row groups (`split_offsets`), Spark at the split size: a split
    # holding no row group's middle reads nothing but is still a task (a 34.5 MB single-row-group
    # file in 16 MB splits: three tasks, two empty). So no smaller than the largest row group.
    floor = max(min(_MIN_ADAPTIVE_SPLIT, target), min(_largest_row_group(tasks), target))
    return SplitSize(max(scanned // parallelism, floor), open_cost)


def _largest_row_group(tasks: list[FileScanTask]) -> int:
    """The bytes of the largest row group of the tasks' data files, by their `split_offsets` (a
    file without them as one), the first from the file's start and the last to its end: a file of
    one row group is never cut."""
    largest = 0
    for t in tasks:
        f = t.file
        starts = [0, *sorted(f.split_offsets or [0])[1:]]
        ends = starts[1:] + [f.file_size_in_bytes]
        largest = max(largest, max(end - start for start, end in zip(starts, ends)))
    return largest


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
