"""Row lineage (format v3): the first row id a data file inherits, and the two lineage columns.

Every row of a v3 table has an id and the sequence number of the commit that last changed it
(spec, "Row Lineage"). They are stored sparsely: a data file's rows carry `_row_id` and
`_last_updated_sequence_number` only where a writer kept them (an updated row keeps its id);
where the column is null (or absent from the file) the reader derives it:

  - `_row_id` = the file's `first_row_id` + the row's position (`_pos`);
  - `_last_updated_sequence_number` = the file's data sequence number.

A data file's `first_row_id` is explicit in its manifest entry or inherited: the manifest's
`first_row_id` (manifest list) plus the record counts of the live (ADDED / EXISTING) data files
before it in that manifest that have no explicit one, which is how Iceberg Java's
ManifestReader assigns it. Data files committed before the table was upgraded to v3 and never
re-listed under a v3 manifest list have none: their rows read a null `_row_id`, as in Java.
"""
from __future__ import annotations

import dataclasses

from pyice_sql.core.model.manifest import EntryStatus, ManifestContent, ManifestEntry, ManifestFile
from pyice_sql.core.model.types import LONG, NestedField

# Reserved field ids (spec, "Reserved Field IDs"): how the columns are stored in data files.
ROW_ID = NestedField(2147483540, "_row_id", LONG, False, "Implicit row ID that is automatically assigned")
LAST_UPDATED_SEQUENCE_NUMBER = NestedField(
    2147483539, "_last_updated_sequence_number", LONG, False,
    "Sequence number when the row was last updated")
LINEAGE_FIELDS = (ROW_ID, LAST_UPDATED_SEQUENCE_NUMBER)
LINEAGE_COLUMNS = tuple(f.name for f in LINEAGE_FIELDS)


def inherit_first_row_ids(entries: list[ManifestEntry], manifest: ManifestFile) -> list[ManifestEntry]:
    """`entries` of `manifest` with each live data file's inherited `first_row_id` filled in."""
    if manifest.content != ManifestContent.DATA or manifest.first_row_id is None:
        return entries
    next_row_id = manifest.first_row_id
    out = []
    for entry in entries:
        f = entry.data_file
        if entry.status != EntryStatus.DELETED and f.first_row_id is None:
            entry = dataclasses.replace(entry, data_file=dataclasses.replace(f, first_row_id=next_row_id))
            next_row_id += f.record_count
        out.append(entry)
    return out


def is_lineage_column(name: str) -> bool:
    """Whether a column name (any case, as Spark resolves it) is a row-lineage metadata column."""
    return name.lower() in LINEAGE_COLUMNS


def assign_manifest_first_row_ids(manifests: list[ManifestFile], first_row_id: int
                                  ) -> tuple[list[ManifestFile], int]:
    """A v3 manifest list's rows with a `first_row_id` for every data manifest lacking one, and
    the snapshot's `added-rows` (spec, "First Row ID Assignment", as Java's ManifestListWriter).

    Each such manifest reserves room for its added AND existing rows: an EXISTING file carried
    from a snapshot older than the v3 upgrade has no row ids yet and inherits them from here.
    Delete manifests and manifests that already have one are kept as they are.
    """
    next_id = first_row_id
    out = []
    for m in manifests:
        if m.content == ManifestContent.DATA and m.first_row_id is None:
            m = dataclasses.replace(m, first_row_id=next_id)
            next_id += (m.added_rows_count or 0) + (m.existing_rows_count or 0)
        out.append(m)
    return out, next_id - first_row_id


def advance_next_row_id(next_row_id: int | None, snapshot) -> int | None:
    """The table's `next-row-id` once `snapshot` is added (None below v3): a v3 snapshot must
    start at or after it and moves it on by its `added-rows`, as Java's TableMetadata checks."""
    if next_row_id is None:
        return None
    if snapshot.first_row_id is None or snapshot.first_row_id < next_row_id:
        raise ValueError(f"snapshot {snapshot.snapshot_id} has first-row-id {snapshot.first_row_id}, "
                         f"behind the table's next-row-id {next_row_id}")
    return next_row_id + (snapshot.added_rows or 0)
