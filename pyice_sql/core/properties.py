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
