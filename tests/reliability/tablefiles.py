"""What a table folder holds versus what its metadata references (the leftover files of a crash).

Computed independently of remove_orphan_files, so the two can be checked against each other.
"""
from __future__ import annotations

import os

from pyice_sql.core.catalog.base import Table
from pyice_sql.core.format.manifests import read_entries, read_manifest_list
from pyice_sql.core.format.fileio import local_path


def files_under(location: str) -> set[str]:
    """Every file below a table location, as local paths (Hadoop's .crc side files excluded)."""
    root = local_path(location)
    out = set()
    for dirpath, _, names in os.walk(root):
        out.update(os.path.join(dirpath, n) for n in names if not n.endswith(".crc"))
    return out


def referenced_files(table: Table) -> set[str]:
    """Files the current metadata reaches: itself, its metadata log, the version hint, and for
    every snapshot its manifest list, manifests and live/added data and delete files."""
    md = table.metadata
    out = {local_path(table.metadata_location)}
    out.update(local_path(e.metadata_file) for e in md.metadata_log)
    hint = os.path.join(os.path.dirname(local_path(table.metadata_location)), "version-hint.text")
    if os.path.exists(hint):
        out.add(hint)
    for snap in md.snapshots:
        out.add(local_path(snap.manifest_list))
        for m in read_manifest_list(table.io, snap.manifest_list):
            out.add(local_path(m.manifest_path))
            out.update(local_path(e.data_file.file_path) for e in read_entries(table.io, m))
    return out


def leftovers(table: Table) -> set[str]:
    """Files under the table's location that its metadata does not reference."""
    return files_under(table.metadata.location) - referenced_files(table)


def kind(path: str) -> str:
    """A leftover's kind: data, deletes, manifest, manifest-list, metadata, temp or other."""
    name = os.path.basename(path)
    if name.endswith(".parquet"):
        return "deletes" if name.endswith("-deletes.parquet") else "data"  # Iceberg's file names
    if name.startswith("snap-") and name.endswith(".avro"):
        return "manifest-list"
    if name.endswith(".avro"):
        return "manifest"
    if name.endswith(".metadata.json"):
        return "metadata"
    if name.endswith(".tmp"):
        return "temp"
    return "other"
