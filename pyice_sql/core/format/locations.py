"""Where new data and delete files go: Iceberg's location providers and file names.

Iceberg Java (`LocationProviders`, `PartitionSpec.partitionToPath`, `OutputFileFactory`) puts a
file at `<data location>/<partition path>/<file name>`:
  * the data location is `write.data.path`, else `write.folder-storage.path`, else
    `<table location>/data` (with `write.object-storage.enabled`, `write.object-storage.path`
    comes before the folder-storage one);
  * the partition path is `name=value` per partition field, joined by `/`, the value being the
    transform's human string (`ts_day=2024-01-02`, `null` for NULL), name and value URL-encoded
    (java.net.URLEncoder: space as `+`, all but letters, digits and `.-*_` as `%XX`);
  * with object storage, 20 bits of the murmur3 hash of `<partition path>/<file name>` come
    first as `xxxx/xxxx/xxxx/xxxxxxxx` (then the table's last two location segments when the
    data location is outside the table's), and `write.object-storage.partitioned-paths=false`
    drops the partition path;
  * the file name is `<partition id>-<task id>-<operation id>-<file count>[-deletes].parquet`:
    the operation id is unique per write, so names never collide with another write's.
"""
from __future__ import annotations

import uuid
from typing import Any

from pyice_sql.core.model.partitioning import PartitionSpec
from pyice_sql.core.model.schema import Schema
from pyice_sql.core import properties as props
from pyice_sql.core.model.hashing import murmur3_32

_URL_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789.-*_")


def url_encode(text: str) -> str:
    """java.net.URLEncoder.encode(text, UTF-8)."""
    out = []
    for ch in text:
        if ch in _URL_SAFE:
            out.append(ch)
        elif ch == " ":
            out.append("+")
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out)


def partition_to_path(spec: PartitionSpec, schema: Schema, partition: tuple[Any, ...]) -> str:
    """PartitionSpec.partitionToPath: `name=human value` per field, URL-encoded, joined by `/`."""
    parts = []
    for field, value in zip(spec.fields, partition):
        source = schema.find_field(field.source_id)
        human = field.transform.to_human_string(value, source.type if source is not None else None)
        parts.append(f"{url_encode(field.name)}={url_encode(human)}")
    return "/".join(parts)


def data_location(table_location: str, properties: dict[str, str]) -> str:
    """The folder new files go under (before partition and object-storage parts)."""
    keys = [props.WRITE_DATA_LOCATION]
    if _object_storage(properties):
        keys.append(props.OBJECT_STORE_PATH)
    keys.append(props.WRITE_FOLDER_STORAGE_LOCATION)
    for key in keys:
        if properties.get(key):
            return properties[key].rstrip("/")
    return f"{table_location.rstrip('/')}/data"


def new_operation_id(deletes: bool = False) -> str:
    """A write's operation id, shaped as Iceberg's Spark writes name theirs: `<query uuid>-<epoch>`
    for data files of a batch write, the bare query uuid for a row-level write's delete files."""
    return str(uuid.uuid4()) if deletes else f"{uuid.uuid4()}-0"


def file_name(partition_id: int, task_id: int, operation_id: str, count: int, deletes: bool = False,
              extension: str = "parquet") -> str:
    """OutputFileFactory's name for the `count`-th (from 1) file a task writes in one operation."""
    return f"{partition_id:05d}-{task_id}-{operation_id}-{count:05d}{'-deletes' if deletes else ''}.{extension}"


def new_file_location(table_location: str, properties: dict[str, str], partition_path: str, name: str) -> str:
    """Where a file named `name` of the partition at `partition_path` ('' if unpartitioned) goes."""
    base = data_location(table_location, properties)
    if not _object_storage(properties):
        return f"{base}/{partition_path}/{name}" if partition_path else f"{base}/{name}"
    with_partition = properties.get(props.WRITE_OBJECT_STORE_PARTITIONED_PATHS,
                                    str(props.WRITE_OBJECT_STORE_PARTITIONED_PATHS_DEFAULT)).lower() != "false"
    relative = f"{partition_path}/{name}" if partition_path and with_partition else name
    entropy = _hash_dirs(relative)
    table = table_location.rstrip("/")
    if not base.startswith(table):  # outside the table: the table's last two segments tell whose it is
        context = "/".join(s for s in table.split("/")[-2:] if s)
        return f"{base}/{entropy}/{context}/{relative}"
    return f"{base}/{entropy}/{relative}" if with_partition else f"{base}/{entropy}-{relative}"


def _object_storage(properties: dict[str, str]) -> bool:
    return properties.get(props.OBJECT_STORE_ENABLED, str(props.OBJECT_STORE_ENABLED_DEFAULT)).lower() == "true"


def _hash_dirs(text: str) -> str:
    """The low 20 bits of murmur3_32(text) in binary, as dirs of 4, 4, 4 and 8 bits."""
    bits = format(murmur3_32(text.encode("utf-8")) & 0xFFFFF, "020b")
    return f"{bits[0:4]}/{bits[4:8]}/{bits[8:12]}/{bits[12:]}"
