"""Table property names and their defaults, as Iceberg Java's TableProperties spells them.

Readers of a property use the name and the default from here, so a key is never misspelt in one
place and a default never differs between two readers of the same key.
"""
from __future__ import annotations

FORMAT_VERSION = "format-version"
# Properties that describe the table rather than configure it: never stored in the map.
RESERVED_PROPERTIES = frozenset({
    FORMAT_VERSION, "uuid", "snapshot-count", "current-snapshot-id", "current-snapshot-summary",
    "current-snapshot-timestamp-ms", "current-schema", "default-partition-spec", "default-sort-order",
})

METADATA_PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT = 100

COMMIT_NUM_RETRIES = "commit.retry.num-retries"
COMMIT_NUM_RETRIES_DEFAULT = 4
COMMIT_MIN_RETRY_WAIT_MS = "commit.retry.min-wait-ms"
COMMIT_MIN_RETRY_WAIT_MS_DEFAULT = 100
COMMIT_MAX_RETRY_WAIT_MS = "commit.retry.max-wait-ms"
COMMIT_MAX_RETRY_WAIT_MS_DEFAULT = 60_000
COMMIT_TOTAL_RETRY_TIME_MS = "commit.retry.total-timeout-ms"
COMMIT_TOTAL_RETRY_TIME_MS_DEFAULT = 1_800_000

WRITE_DATA_LOCATION = "write.data.path"
OBJECT_STORE_ENABLED = "write.object-storage.enabled"
OBJECT_STORE_ENABLED_DEFAULT = False
OBJECT_STORE_PATH = "write.object-storage.path"  # deprecated in Iceberg, still honoured
WRITE_FOLDER_STORAGE_LOCATION = "write.folder-storage.path"  # deprecated in Iceberg, still honoured
WRITE_OBJECT_STORE_PARTITIONED_PATHS = "write.object-storage.partitioned-paths"
WRITE_OBJECT_STORE_PARTITIONED_PATHS_DEFAULT = True

DEFAULT_NAME_MAPPING = "schema.name-mapping.default"

# Row-level operations: write mode and isolation level per command (DELETE, UPDATE, MERGE).
WRITE_MODE_DEFAULT = "copy-on-write"
ISOLATION_LEVEL_DEFAULT = "serializable"


def write_mode(command: str) -> str:
    """`write.delete.mode` / `write.update.mode` / `write.merge.mode` for a row-level command."""
    return f"write.{command.lower()}.mode"


def isolation_level(command: str) -> str:
    """`write.<command>.isolation-level` for DELETE, UPDATE or MERGE."""
    return f"write.{command.lower()}.isolation-level"


DEFAULT_WRITE_METRICS_MODE = "write.metadata.metrics.default"
DEFAULT_WRITE_METRICS_MODE_DEFAULT = "truncate(16)"
METRICS_MODE_COLUMN_CONF_PREFIX = "write.metadata.metrics.column."

PARQUET_COMPRESSION = "write.parquet.compression-codec"
PARQUET_COMPRESSION_DEFAULT = "zstd"
PARQUET_COMPRESSION_LEVEL = "write.parquet.compression-level"
DELETE_PARQUET_COMPRESSION_LEVEL = "write.delete.parquet.compression-level"
# Parquet layout of data files; unset, the writer's own defaults apply (parquet-mr's equal Iceberg's
# but the dictionary page, 1 MB against Iceberg Java's 2 MB).
PARQUET_ROW_GROUP_SIZE_BYTES = "write.parquet.row-group-size-bytes"
PARQUET_PAGE_SIZE_BYTES = "write.parquet.page-size-bytes"
PARQUET_PAGE_ROW_LIMIT = "write.parquet.page-row-limit"
PARQUET_DICT_SIZE_BYTES = "write.parquet.dict-size-bytes"
# The delete files' own; unset, each takes its data file property's value (Iceberg's deleteContext).
DELETE_PARQUET_COMPRESSION = "write.delete.parquet.compression-codec"
DELETE_PARQUET_ROW_GROUP_SIZE_BYTES = "write.delete.parquet.row-group-size-bytes"
DELETE_PARQUET_PAGE_SIZE_BYTES = "write.delete.parquet.page-size-bytes"
DELETE_PARQUET_PAGE_ROW_LIMIT = "write.delete.parquet.page-row-limit"
DELETE_PARQUET_DICT_SIZE_BYTES = "write.delete.parquet.dict-size-bytes"

WRITE_TARGET_FILE_SIZE_BYTES = "write.target-file-size-bytes"
WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT = 512 * 1024 * 1024
DELETE_TARGET_FILE_SIZE_BYTES = "write.delete.target-file-size-bytes"
DELETE_TARGET_FILE_SIZE_BYTES_DEFAULT = 64 * 1024 * 1024
WRITE_DISTRIBUTION_MODE = "write.distribution-mode"
MANIFEST_TARGET_SIZE_BYTES = "commit.manifest.target-size-bytes"
MANIFEST_TARGET_SIZE_BYTES_DEFAULT = 8 * 1024 * 1024
MANIFEST_MERGE_ENABLED = "commit.manifest-merge.enabled"
MANIFEST_MERGE_ENABLED_DEFAULT = True
MANIFEST_MIN_MERGE_COUNT = "commit.manifest.min-count-to-merge"
MANIFEST_MIN_MERGE_COUNT_DEFAULT = 100

MAX_SNAPSHOT_AGE_MS = "history.expire.max-snapshot-age-ms"
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 3600 * 1000
MIN_SNAPSHOTS_TO_KEEP = "history.expire.min-snapshots-to-keep"
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_REF_AGE_MS = "history.expire.max-ref-age-ms"
MAX_REF_AGE_MS_DEFAULT = 2**63 - 1
GC_ENABLED = "gc.enabled"
GC_ENABLED_DEFAULT = True
