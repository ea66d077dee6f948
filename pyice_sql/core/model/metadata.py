"""TableMetadata: the metadata.json document, read from v1/v2 and written as Java writes it.

Every commit is "read the current metadata, apply pure updates, write the next file", so the
updates here return new values and never mutate. They follow Iceberg Java's TableMetadata
builder rules (sequence numbers, refs, snapshot log, id reuse), because Java and PyIceberg
validate those rules when they read what we write.
"""
from __future__ import annotations

import dataclasses
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from pyice_sql.core.model.format_versions import READABLE_FORMAT_VERSIONS, WRITABLE_FORMAT_VERSIONS
from pyice_sql.core.model.fresh_ids import assign_fresh_ids
from pyice_sql.core.model.partitioning import (
    PARTITION_DATA_ID_START, UNPARTITIONED_LAST_ID, PartitionField, PartitionSpec,
)
from pyice_sql.core.model.row_lineage import advance_next_row_id
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.snapshots import BRANCH, MAIN_BRANCH, Snapshot, SnapshotRef
from pyice_sql.core.model.sort_order import INITIAL_SORT_ORDER_ID, UNSORTED, SortField, SortOrder
from pyice_sql.core.model.types import walk_fields
from pyice_sql.core.properties import (
    FORMAT_VERSION, METADATA_PREVIOUS_VERSIONS_MAX, METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT, RESERVED_PROPERTIES,
)

# Java tolerates this much clock skew between log entries written from different machines.
_CLOCK_SKEW_MS = 60_000

_KNOWN_KEYS = frozenset({
    "format-version", "table-uuid", "location", "last-sequence-number", "last-updated-ms", "last-column-id",
    "schema", "current-schema-id", "schemas", "partition-spec", "default-spec-id", "partition-specs",
    "last-partition-id", "default-sort-order-id", "sort-orders", "properties", "current-snapshot-id", "refs",
    "snapshots", "statistics", "partition-statistics", "snapshot-log", "metadata-log", "next-row-id",
})


@dataclass(frozen=True)
class SnapshotLogEntry:
    """When main started pointing at a snapshot; time travel by timestamp reads this log."""

    timestamp_ms: int
    snapshot_id: int


@dataclass(frozen=True)
class MetadataLogEntry:
    """A previous metadata file and the last-updated-ms it carried."""

    timestamp_ms: int
    metadata_file: str


def _now_ms() -> int:
    return int(time.time() * 1000)


def _strip_trailing_slash(location: str) -> str:
    while location.endswith("/") and not location.endswith("://"):
        location = location[:-1]
    return location


@dataclass(frozen=True)
class TableMetadata:
    """One metadata.json. `extras` holds top-level keys from other writers, kept on rewrite."""

    format_version: int
    table_uuid: str | None
    location: str
    last_sequence_number: int
    last_updated_ms: int
    last_column_id: int
    schemas: tuple[Schema, ...]
    current_schema_id: int
    specs: tuple[PartitionSpec, ...]
    default_spec_id: int
    last_partition_id: int
    sort_orders: tuple[SortOrder, ...] = (UNSORTED,)
    default_sort_order_id: int = UNSORTED.order_id
    properties: dict[str, str] = field(default_factory=dict)
    current_snapshot_id: int | None = None
    refs: dict[str, SnapshotRef] = field(default_factory=dict)
    snapshots: tuple[Snapshot, ...] = ()
    statistics: tuple[dict[str, Any], ...] = ()
    partition_statistics: tuple[dict[str, Any], ...] = ()
    snapshot_log: tuple[SnapshotLogEntry, ...] = ()
    metadata_log: tuple[MetadataLogEntry, ...] = ()
    extras: dict[str, Any] = field(default_factory=dict)
    next_row_id: int | None = None  # format v3: the first row id the next snapshot assigns

    # ------------------------------------------------------------------ reading

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> "TableMetadata":
        """Parse v1, v2 or v3 metadata, filling v1's gaps the way Java and PyIceberg do."""
        version = int(obj["format-version"])
        if version not in READABLE_FORMAT_VERSIONS:
            raise ValueError(f"unsupported Iceberg format version {version}")
        v1 = version == 1

        if "schemas" in obj:
            schemas = tuple(Schema.from_json(s) for s in obj["schemas"])
            current_schema_id = int(obj["current-schema-id"])
        else:
            _require_v1(v1, "schemas")
            schema = Schema.from_json(obj["schema"])
            schemas, current_schema_id = (schema,), schema.schema_id

        if "partition-specs" in obj:
            specs = tuple(PartitionSpec.from_json(s) for s in obj["partition-specs"])
            default_spec_id = int(obj["default-spec-id"])
        else:
            _require_v1(v1, "partition-specs")
            specs, default_spec_id = (PartitionSpec.from_json(obj["partition-spec"], 0),), 0

        if obj.get("last-partition-id") is not None:
            last_partition_id = int(obj["last-partition-id"])
        else:
            _require_v1(v1, "last-partition-id")
            last_partition_id = max((s.last_field_id for s in specs), default=UNPARTITIONED_LAST_ID)

        if "sort-orders" in obj:
            sort_orders = tuple(SortOrder.from_json(o) for o in obj["sort-orders"])
            default_sort_order_id = int(obj["default-sort-order-id"])
        else:
            _require_v1(v1, "sort-orders")
            sort_orders, default_sort_order_id = (UNSORTED,), UNSORTED.order_id

        current = obj.get("current-snapshot-id")
        current_snapshot_id = None if current is None or int(current) == -1 else int(current)
        refs = {name: SnapshotRef.from_json(r) for name, r in (obj.get("refs") or {}).items()}
        if current_snapshot_id is not None and MAIN_BRANCH not in refs:
            refs[MAIN_BRANCH] = SnapshotRef(current_snapshot_id, BRANCH)

        if not v1 and obj.get("table-uuid") is None:
            raise ValueError("table-uuid is required in format v2")
        metadata = cls(
            format_version=version,
            table_uuid=obj.get("table-uuid"),
            location=_strip_trailing_slash(obj["location"]),
            last_sequence_number=0 if v1 else int(obj["last-sequence-number"]),
            last_updated_ms=int(obj["last-updated-ms"]),
            last_column_id=int(obj["last-column-id"]),
            schemas=schemas,
            current_schema_id=current_schema_id,
            specs=specs,
            default_spec_id=default_spec_id,
            last_partition_id=last_partition_id,
            sort_orders=sort_orders,
            default_sort_order_id=default_sort_order_id,
            properties={str(k): _property_value(k, v) for k, v in (obj.get("properties") or {}).items()},
            current_snapshot_id=current_snapshot_id,
            refs=refs,
            snapshots=tuple(Snapshot.from_json(s) for s in obj.get("snapshots") or ()),
            statistics=tuple(obj.get("statistics") or ()),
            partition_statistics=tuple(obj.get("partition-statistics") or ()),
            snapshot_log=tuple(SnapshotLogEntry(int(e["timestamp-ms"]), int(e["snapshot-id"]))
                               for e in obj.get("snapshot-log") or ()),
            metadata_log=tuple(MetadataLogEntry(int(e["timestamp-ms"]), e["metadata-file"])
                               for e in obj.get("metadata-log") or ()),
            extras={k: v for k, v in obj.items() if k not in _KNOWN_KEYS},
            next_row_id=int(obj.get("next-row-id") or 0) if version >= 3 else None)
        metadata.validate()
        return metadata

    # ------------------------------------------------------------------ writing

    def to_json(self) -> dict[str, Any]:
        """The metadata.json object in Java's key order; v1 tables also get `schema`/`partition-spec`."""
        self.validate()
        v1 = self.format_version == 1
        out: dict[str, Any] = {"format-version": self.format_version}
        if self.table_uuid is not None:
            out["table-uuid"] = self.table_uuid
        out["location"] = self.location
        if not v1:
            out["last-sequence-number"] = self.last_sequence_number
        out["last-updated-ms"] = self.last_updated_ms
        out["last-column-id"] = self.last_column_id
        if v1:
            out["schema"] = self.schema().to_json()
        out["current-schema-id"] = self.current_schema_id
        out["schemas"] = [s.to_json() for s in self.schemas]
        if v1:
            out["partition-spec"] = [f.to_json() for f in self.spec().fields]
        out["default-spec-id"] = self.default_spec_id
        out["partition-specs"] = [s.to_json() for s in self.specs]
        out["last-partition-id"] = self.last_partition_id
        out["default-sort-order-id"] = self.default_sort_order_id
        out["sort-orders"] = [o.to_json() for o in self.sort_orders]
        out["properties"] = {k: v for k, v in self.properties.items() if k not in RESERVED_PROPERTIES}
        out["current-snapshot-id"] = self.current_snapshot_id if self.current_snapshot_id is not None else (
            None if self.format_version >= 3 else -1)  # Java writes null for "none" from v3 on
        if self.next_row_id is not None:
            out["next-row-id"] = self.next_row_id
        out["refs"] = {name: ref.to_json() for name, ref in self.refs.items()}
        out["snapshots"] = [s.to_json() for s in self.snapshots]
        out["statistics"] = list(self.statistics)
        out["partition-statistics"] = list(self.partition_statistics)
        out["snapshot-log"] = [{"timestamp-ms": e.timestamp_ms, "snapshot-id": e.snapshot_id} for e in self.snapshot_log]
        out["metadata-log"] = [{"timestamp-ms": e.timestamp_ms, "metadata-file": e.metadata_file}
                               for e in self.metadata_log]
        out.update({k: v for k, v in self.extras.items() if k not in out})
        return out

    def validate(self) -> None:
        """Raise ValueError on anything Java would reject when reading this metadata."""
        if self.format_version not in READABLE_FORMAT_VERSIONS:
            raise ValueError(f"unsupported Iceberg format version {self.format_version}")
        if self.format_version > 1 and self.table_uuid is None:
            raise ValueError("table-uuid is required in format v2")
        if self.format_version == 1 and self.last_sequence_number != 0:
            raise ValueError("last-sequence-number must be 0 in format v1")
        if self.schema_by_id(self.current_schema_id) is None:
            raise ValueError(f"current schema {self.current_schema_id} is not in schemas")
        if self.spec_by_id(self.default_spec_id) is None:
            raise ValueError(f"default spec {self.default_spec_id} is not in partition-specs")
        if all(o.order_id != self.default_sort_order_id for o in self.sort_orders):
            raise ValueError(f"default sort order {self.default_sort_order_id} is not in sort-orders")
        ids = {s.snapshot_id for s in self.snapshots}
        if len(ids) != len(self.snapshots):
            raise ValueError("duplicate snapshot ids")
        if self.current_snapshot_id is not None and self.current_snapshot_id not in ids:
            raise ValueError(f"current snapshot {self.current_snapshot_id} is not in snapshots")
        for name, ref in self.refs.items():
            if ref.snapshot_id not in ids:
                raise ValueError(f"ref {name!r} points at unknown snapshot {ref.snapshot_id}")
        main = self.refs.get(MAIN_BRANCH)
        if (main.snapshot_id if main else None) != self.current_snapshot_id:
            raise ValueError("the main branch must point at current-snapshot-id")
        if main is not None and not main.is_branch:
            raise ValueError("main must be a branch")
        for s in self.snapshots:
            if self.format_version > 1 and s.sequence_number > self.last_sequence_number:
                raise ValueError(f"snapshot {s.snapshot_id} has sequence number {s.sequence_number} "
                                 f"above last-sequence-number {self.last_sequence_number}")
        for log in (self.snapshot_log, self.metadata_log):
            for previous, entry in zip(log, log[1:]):
                if entry.timestamp_ms < previous.timestamp_ms - _CLOCK_SKEW_MS:
                    raise ValueError("log entries are not sorted by time")
            if log and self.last_updated_ms < log[-1].timestamp_ms - _CLOCK_SKEW_MS:
                raise ValueError("last-updated-ms is before the last log entry")

    # ------------------------------------------------------------------ accessors

    def schema(self) -> Schema:
        """The current schema."""
        found = self.schema_by_id(self.current_schema_id)
        if found is None:
            raise ValueError(f"current schema {self.current_schema_id} is not in schemas")
        return found

    def schema_by_id(self, schema_id: int) -> Schema | None:
        return next((s for s in self.schemas if s.schema_id == schema_id), None)

    def spec(self) -> PartitionSpec:
        """The default spec: the one new data files are written with."""
        found = self.spec_by_id(self.default_spec_id)
        if found is None:
            raise ValueError(f"default spec {self.default_spec_id} is not in partition-specs")
        return found

    def spec_by_id(self, spec_id: int) -> PartitionSpec | None:
        return next((s for s in self.specs if s.spec_id == spec_id), None)

    def sort_order(self) -> SortOrder:
        return next(o for o in self.sort_orders if o.order_id == self.default_sort_order_id)

    def snapshot_by_id(self, snapshot_id: int) -> Snapshot | None:
        return next((s for s in self.snapshots if s.snapshot_id == snapshot_id), None)

    def current_snapshot(self) -> Snapshot | None:
        return None if self.current_snapshot_id is None else self.snapshot_by_id(self.current_snapshot_id)

    def ancestors(self, snapshot_id: int | None) -> list[Snapshot]:
        """`snapshot_id`'s snapshot and its parents, newest first, as far as they are kept."""
        out: list[Snapshot] = []
        snapshot = self.snapshot_by_id(snapshot_id) if snapshot_id is not None else None
        while snapshot is not None:
            out.append(snapshot)
            parent = snapshot.parent_snapshot_id
            snapshot = self.snapshot_by_id(parent) if parent is not None else None
        return out

    def snapshot_as_of_timestamp(self, timestamp_ms: int) -> Snapshot | None:
        """The snapshot main pointed at, at `timestamp_ms` (inclusive), per the snapshot log."""
        found: int | None = None
        for entry in self.snapshot_log:
            if entry.timestamp_ms <= timestamp_ms:
                found = entry.snapshot_id
        return None if found is None else self.snapshot_by_id(found)

    def property(self, key: str, default: str | None = None) -> str | None:
        return self.properties.get(key, default)

    def next_sequence_number(self) -> int:
        """The sequence number the next snapshot must carry (always 0 in v1)."""
        return self.last_sequence_number + 1 if self.format_version > 1 else 0

    # ------------------------------------------------------------------ updates

    def _with(self, **changes: Any) -> "TableMetadata":
        changes.setdefault("last_updated_ms", _now_ms())
        return dataclasses.replace(self, **changes)

    def upgrade_format_version(self, format_version: int) -> "TableMetadata":
        """Raise the format version (never lower it); v1 files stay valid with sequence number 0."""
        if format_version not in WRITABLE_FORMAT_VERSIONS or format_version < self.format_version:
            raise ValueError(f"cannot change format version {self.format_version} to {format_version}")
        if format_version == self.format_version:
            return self
        return self._with(format_version=format_version, table_uuid=self.table_uuid or str(uuid.uuid4()),
                          next_row_id=0 if format_version >= 3 else None)  # Java: row ids start at 0

    def add_snapshot(self, snapshot: Snapshot, ref_name: str = MAIN_BRANCH) -> "TableMetadata":
        """Add a new snapshot and move branch `ref_name` to it (main also becomes current)."""
        if self.snapshot_by_id(snapshot.snapshot_id) is not None:
            raise ValueError(f"snapshot {snapshot.snapshot_id} already exists")
        if self.format_version == 1:
            if snapshot.sequence_number != 0:
                raise ValueError("snapshots of a v1 table have sequence number 0")
        elif snapshot.sequence_number <= self.last_sequence_number and snapshot.parent_snapshot_id is not None:
            raise ValueError(f"snapshot sequence number {snapshot.sequence_number} is not above "
                             f"last-sequence-number {self.last_sequence_number}")
        added = dataclasses.replace(
            self, snapshots=self.snapshots + (snapshot,), last_updated_ms=snapshot.timestamp_ms,
            last_sequence_number=max(self.last_sequence_number, snapshot.sequence_number),
            next_row_id=advance_next_row_id(self.next_row_id, snapshot))
        return added._move_branch(ref_name, snapshot.snapshot_id, snapshot.timestamp_ms)

    def set_current_snapshot(self, snapshot_id: int) -> "TableMetadata":
        """Point main at an existing snapshot (rollback or cherry-pick publish)."""
        if self.snapshot_by_id(snapshot_id) is None:
            raise ValueError(f"cannot set main to unknown snapshot {snapshot_id}")
        if self.current_snapshot_id == snapshot_id:
            return self
        now = _now_ms()
        return dataclasses.replace(self, last_updated_ms=now)._move_branch(MAIN_BRANCH, snapshot_id, now)

    def _move_branch(self, name: str, snapshot_id: int, timestamp_ms: int) -> "TableMetadata":
        existing = self.refs.get(name)
        if existing is not None:
            if not existing.is_branch:
                raise ValueError(f"cannot commit to {name!r}: it is a tag")
            if existing.snapshot_id == snapshot_id:
                return self
            ref = dataclasses.replace(existing, snapshot_id=snapshot_id)
        else:
            ref = SnapshotRef(snapshot_id, BRANCH)
        return self._put_ref(name, ref, timestamp_ms)

    def _put_ref(self, name: str, ref: SnapshotRef, timestamp_ms: int) -> "TableMetadata":
        changes: dict[str, Any] = {"refs": {**self.refs, name: ref}}
        if name == MAIN_BRANCH:
            if not ref.is_branch:
                raise ValueError("main must be a branch")
            changes["current_snapshot_id"] = ref.snapshot_id
            changes["snapshot_log"] = self.snapshot_log + (SnapshotLogEntry(timestamp_ms, ref.snapshot_id),)
        return dataclasses.replace(self, **changes)

    def set_ref(self, name: str, ref: SnapshotRef) -> "TableMetadata":
        """Create or replace a branch or tag pointing at an existing snapshot."""
        if self.refs.get(name) == ref:
            return self
        if self.snapshot_by_id(ref.snapshot_id) is None:
            raise ValueError(f"cannot set {name!r} to unknown snapshot {ref.snapshot_id}")
        now = _now_ms()
        return dataclasses.replace(self, last_updated_ms=now)._put_ref(name, ref, now)

    def remove_ref(self, name: str) -> "TableMetadata":
        """Drop a branch or tag; dropping main leaves the table with no current snapshot."""
        if name not in self.refs:
            return self
        refs = {k: v for k, v in self.refs.items() if k != name}
        current = None if name == MAIN_BRANCH else self.current_snapshot_id
        return self._with(refs=refs, current_snapshot_id=current)

    def remove_snapshots(self, snapshot_ids: Iterable[int]) -> "TableMetadata":
        """Expire snapshots: drop them, their statistics, refs left dangling and stale log history.

        A removed snapshot in the snapshot log also clears every entry before it, so the log never
        claims a later snapshot was current during the removed one's time.
        """
        remove = set(snapshot_ids)
        if not remove:
            return self
        snapshots = tuple(s for s in self.snapshots if s.snapshot_id not in remove)
        kept = {s.snapshot_id for s in snapshots}
        refs = {k: v for k, v in self.refs.items() if v.snapshot_id in kept}
        log: list[SnapshotLogEntry] = []
        for entry in self.snapshot_log:
            if entry.snapshot_id in kept:
                log.append(entry)
            else:
                log.clear()
        return self._with(
            snapshots=snapshots, refs=refs,
            current_snapshot_id=refs[MAIN_BRANCH].snapshot_id if MAIN_BRANCH in refs else None,
            statistics=tuple(s for s in self.statistics if s.get("snapshot-id") not in remove),
            partition_statistics=tuple(s for s in self.partition_statistics if s.get("snapshot-id") not in remove),
            snapshot_log=tuple(log))

    def replacement(self, schema: Schema, spec: PartitionSpec, properties: Mapping[str, str]) -> "TableMetadata":
        """CREATE OR REPLACE TABLE, as Iceberg's replace transaction: the same table (uuid,
        location, snapshots, refs other than main, logs) with a new current schema whose columns
        keep the ids of same-named old columns, a new default spec, unsorted, merged properties
        and no current snapshot until the replacement's own data is committed.

        `spec` refers to columns by `schema`'s ids; the ids are reassigned here."""
        old_ids = {path: f.field_id for path, f in walk_fields(self.schema().struct)}
        counter = [self.last_column_id]

        def next_id(path: tuple[str, ...]) -> int:
            if path in old_ids:
                return old_ids.pop(path)
            counter[0] += 1
            return counter[0]

        fresh = Schema(assign_fresh_ids(schema.fields, next_id), 0)
        id_map = {old.field_id: new.field_id
                  for (_, old), (_, new) in zip(walk_fields(schema.struct), walk_fields(fresh.struct))}
        fresh = Schema(fresh.fields, 0, tuple(id_map[i] for i in schema.identifier_field_ids))
        new_spec = PartitionSpec(0, tuple(dataclasses.replace(f, source_id=id_map[f.source_id]) for f in spec.fields))
        for key, value in properties.items():
            _property_value(key, value)
        replaced = (self.remove_ref(MAIN_BRANCH).add_schema(fresh, make_current=True)
                    .add_spec(new_spec, make_default=True))
        orders = replaced.sort_orders if any(o.is_unsorted for o in replaced.sort_orders) else \
            (UNSORTED, *replaced.sort_orders)
        return replaced._with(sort_orders=orders, default_sort_order_id=UNSORTED.order_id, properties={
            **replaced.properties, **{k: v for k, v in properties.items() if k not in RESERVED_PROPERTIES}})

    def add_schema(self, schema: Schema, make_current: bool = False) -> "TableMetadata":
        """Add a schema (reusing the id of an identical one, defaults included) and raise
        last-column-id to cover it."""
        fields = schema.to_json()["fields"]  # unlike field equality, the JSON form has the v3 defaults
        same = next((s for s in self.schemas if s.fields == schema.fields and s.to_json()["fields"] == fields
                     and s.identifier_field_ids == schema.identifier_field_ids), None)
        if same is not None:
            added = self
            schema_id = same.schema_id
        else:
            schema_id = max(s.schema_id for s in self.schemas) + 1
            added = self._with(schemas=self.schemas + (schema.with_id(schema_id),),
                               last_column_id=max(self.last_column_id, schema.highest_field_id))
        return added.set_current_schema(schema_id) if make_current else added

    def set_current_schema(self, schema_id: int) -> "TableMetadata":
        if self.schema_by_id(schema_id) is None:
            raise ValueError(f"cannot set current schema to unknown schema {schema_id}")
        if schema_id == self.current_schema_id:
            return self
        return self._with(current_schema_id=schema_id)

    def add_spec(self, spec: PartitionSpec, make_default: bool = False) -> "TableMetadata":
        """Add a partition spec, reusing an equivalent spec's id and old ids of equivalent fields.

        The given spec's id and field ids are ignored: a field with the same source and transform
        as any field of an earlier spec takes that field's id (preferring one with the same name),
        and new fields get ids after last-partition-id, so partition values keep one meaning.
        """
        wanted = _spec_key(spec)
        same = next((s for s in self.specs if _spec_key(s) == wanted), None)
        if same is not None:
            return self.set_default_spec(same.spec_id) if make_default else self
        if self.format_version == 1:
            raise ValueError("partition evolution needs format v2; upgrade the table first")
        schema = self.schema()
        next_id = self.last_partition_id
        fields = []
        for f in spec.fields:
            if str(f.transform) != "void" and schema.find_field(f.source_id) is None:
                raise ValueError(f"partition source column {f.source_id} is not in the current schema")
            reused = self._reusable_partition_field_id(f)
            if reused is None:
                next_id += 1
                reused = next_id
            fields.append(PartitionField(f.source_id, reused, f.transform, f.name))
        spec_id = max(s.spec_id for s in self.specs) + 1
        added = self._with(specs=self.specs + (PartitionSpec(spec_id, tuple(fields)),),
                           last_partition_id=max(self.last_partition_id, next_id))
        return added.set_default_spec(spec_id) if make_default else added

    def _reusable_partition_field_id(self, wanted: PartitionField) -> int | None:
        matches = [f for s in self.specs for f in s.fields
                   if f.source_id == wanted.source_id and str(f.transform) == str(wanted.transform)]
        if not matches:
            return None
        named = [f.field_id for f in matches if f.name == wanted.name]
        return max(named) if named else max(f.field_id for f in matches)

    def set_default_spec(self, spec_id: int) -> "TableMetadata":
        if self.spec_by_id(spec_id) is None:
            raise ValueError(f"cannot set default spec to unknown spec {spec_id}")
        if spec_id == self.default_spec_id:
            return self
        return self._with(default_spec_id=spec_id)

    def set_properties(self, updates: Mapping[str, str]) -> "TableMetadata":
        """Set table properties; values must be strings and reserved names are refused."""
        if not updates:
            return self
        for key, value in updates.items():
            if key in RESERVED_PROPERTIES:
                raise ValueError(f"{key!r} is a reserved table property and cannot be set")
            _property_value(key, value)
        return self._with(properties={**self.properties, **updates})

    def remove_properties(self, keys: Iterable[str]) -> "TableMetadata":
        remove = set(keys)
        if not remove & self.properties.keys():
            return self
        return self._with(properties={k: v for k, v in self.properties.items() if k not in remove})

    def with_metadata_log(self, previous_file: str, previous_last_updated_ms: int,
                          max_entries: int | None = None) -> "TableMetadata":
        """Record the metadata file this one replaces, keeping the newest `max_entries`.

        `max_entries` defaults to the table's write.metadata.previous-versions-max (100).
        """
        if max_entries is None:
            max_entries = int(self.property(METADATA_PREVIOUS_VERSIONS_MAX)
                              or METADATA_PREVIOUS_VERSIONS_MAX_DEFAULT)
        log = self.metadata_log + (MetadataLogEntry(previous_last_updated_ms, previous_file),)
        return dataclasses.replace(self, metadata_log=log[-max(1, max_entries):])


def _require_v1(v1: bool, key: str) -> None:
    if not v1:
        raise ValueError(f"{key} is required in format v2 metadata")


def _property_value(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"table property {key!r} must be a string, got {value!r}")
    return value


def _spec_key(spec: PartitionSpec) -> tuple[tuple[int, str, str], ...]:
    """What makes two specs equivalent regardless of ids: Java's compatibleWith."""
    return tuple((f.source_id, str(f.transform), f.name) for f in spec.fields)


def new_table_metadata(
    schema: Schema,
    spec: PartitionSpec,
    sort_order: SortOrder,
    location: str,
    properties: Mapping[str, str] | None = None,
    format_version: int = 2,
) -> TableMetadata:
    """Metadata for a new table, with every id assigned fresh the way Iceberg Java does.

    Column ids are reassigned from 1 (each struct's own fields first, then their nested types,
    depth first), partition field ids from 1000 in spec 0, and a non-empty sort order becomes
    order 1. Spec and sort order refer to columns by `schema`'s ids and are remapped. A
    'format-version' property overrides `format_version` and, like the other reserved names,
    is not stored.
    """
    props = dict(properties or {})
    if FORMAT_VERSION in props:
        format_version = int(props[FORMAT_VERSION])
    if format_version not in WRITABLE_FORMAT_VERSIONS:
        raise ValueError(f"unsupported Iceberg format version {format_version}")
    for key, value in props.items():
        _property_value(key, value)

    counter = [0]

    def next_id(_path: tuple[str, ...]) -> int:
        counter[0] += 1
        return counter[0]

    fresh = Schema(assign_fresh_ids(schema.fields, next_id), 0)
    id_map = {old.field_id: new.field_id for (_, old), (_, new) in zip(walk_fields(schema.struct), walk_fields(fresh.struct))}

    def remap(source_id: int, what: str) -> int:
        if source_id not in id_map:
            raise ValueError(f"{what} refers to column id {source_id}, which is not in the schema")
        return id_map[source_id]

    fresh = Schema(fresh.fields, 0, tuple(remap(i, "identifier field") for i in schema.identifier_field_ids))
    fresh_spec = PartitionSpec(0, tuple(
        PartitionField(remap(f.source_id, f"partition field {f.name!r}"), PARTITION_DATA_ID_START + i, f.transform, f.name)
        for i, f in enumerate(spec.fields)))
    fresh_order = UNSORTED if sort_order.is_unsorted else SortOrder(INITIAL_SORT_ORDER_ID, tuple(
        SortField(remap(f.source_id, "sort field"), f.transform, f.direction, f.null_order) for f in sort_order.fields))
    orders = (fresh_order,) if fresh_order.is_unsorted else (UNSORTED, fresh_order)

    return TableMetadata(
        format_version=format_version, table_uuid=str(uuid.uuid4()), location=_strip_trailing_slash(location),
        last_sequence_number=0, last_updated_ms=_now_ms(), last_column_id=counter[0],
        schemas=(fresh,), current_schema_id=0, specs=(fresh_spec,), default_spec_id=0,
        last_partition_id=fresh_spec.last_field_id, sort_orders=orders, default_sort_order_id=fresh_order.order_id,
        properties={k: v for k, v in props.items() if k not in RESERVED_PROPERTIES},
        next_row_id=0 if format_version >= 3 else None)  # v3: row ids start at 0
