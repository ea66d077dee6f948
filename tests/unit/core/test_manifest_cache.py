"""Decoded manifests kept between reads (core/format/manifest_cache.py): a hit reads no file and
gives the entries written; a manifest changed or removed on disk is read again, so its error still
names it; the bound holds, least recently used out first."""
from __future__ import annotations

import dataclasses
import os

import pytest

from pyice_sql.core.errors import CorruptTableError
from pyice_sql.core.format.manifest_cache import ManifestCache, entry_bytes
from pyice_sql.core.format import manifests
from pyice_sql.core.model.manifest import DataFile, EntryStatus, ManifestContent, ManifestEntry
from pyice_sql.core.model.partitioning import UNPARTITIONED
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.types import LONG, NestedField
from tests.counting_io import CountingIO

SCHEMA = Schema((NestedField(1, "id", LONG, True),))


def _entry(path: str, records: int, snapshot_id: int) -> ManifestEntry:
    """An ADDED entry whose sequence number is left to inherit from its manifest-list row."""
    return ManifestEntry(status=EntryStatus.ADDED, snapshot_id=snapshot_id, data_file=DataFile(
        file_path=path, file_format="PARQUET", partition=(), record_count=records,
        file_size_in_bytes=100 + records, spec_id=0))


ENTRY = entry_bytes(_entry("x", 1, 1))  # what each entry of these manifests weighs (no column metrics)


@pytest.fixture
def cache(monkeypatch):
    """A fresh cache in place of the process's, holding up to 8 entries (2-entry manifests at most)."""
    fresh = ManifestCache(8 * ENTRY)
    monkeypatch.setattr(manifests, "MANIFESTS", fresh)
    return fresh


def _write(tmp_path, io, names: list[str], snapshot_id: int = 11, sequence_number: int = 4):
    """A data manifest of ADDED entries for files `names`."""
    entries = [_entry(f"{tmp_path}/data/{n}.parquet", 10 + i, snapshot_id) for i, n in enumerate(names)]
    writer = manifests.ManifestWriter(io, str(tmp_path))
    return writer.write_manifest(entries, UNPARTITIONED, SCHEMA, snapshot_id, sequence_number, ManifestContent.DATA)


def _files(entries):
    return [(e.data_file.file_path.rsplit("/", 1)[1], e.data_file.record_count, e.sequence_number, e.snapshot_id)
            for e in entries]


def test_a_second_read_opens_no_file_and_gives_the_entries_written(tmp_path, cache):
    io = CountingIO()
    m = _write(tmp_path, io, ["a", "b"])
    first = manifests.read_entries(io, m)
    second = manifests.read_entries(io, m)
    assert io.reads == [m.manifest_path]
    assert _files(first) == _files(second) == [("a.parquet", 10, 4, 11), ("b.parquet", 11, 4, 11)]
    second.clear()  # a caller's list is its own
    assert len(manifests.read_entries(io, m)) == 2


def test_what_entries_inherit_is_part_of_the_key(tmp_path, cache):
    io = CountingIO()
    m = _write(tmp_path, io, ["a"])
    assert _files(manifests.read_entries(io, m)) == [("a.parquet", 10, 4, 11)]
    later = manifests.read_entries(io, dataclasses.replace(m, sequence_number=9))
    assert _files(later) == [("a.parquet", 10, 9, 11)]
    assert len(io.reads) == 2


def test_a_manifest_replaced_on_disk_is_read_again_and_named(tmp_path, cache):
    io = CountingIO()
    m = _write(tmp_path, io, ["a", "b"])
    manifests.read_entries(io, m)
    with open(m.manifest_path.removeprefix("file:"), "wb") as f:
        f.write(b"Obj\x01 this is not avro")
    with pytest.raises(CorruptTableError, match=os.path.basename(m.manifest_path)):
        manifests.read_entries(io, m)


def test_a_removed_manifest_is_named_missing(tmp_path, cache):
    io = CountingIO()
    m = _write(tmp_path, io, ["a"])
    manifests.read_entries(io, m)
    os.remove(m.manifest_path.removeprefix("file:"))
    with pytest.raises(CorruptTableError, match="manifest file is missing"):
        manifests.read_entries(io, m)


def test_the_bound_holds_least_recently_used_out_first(tmp_path, cache):
    io = CountingIO()
    a, b, c, d, e = (_write(tmp_path, io, [f"{n}1", f"{n}2"]) for n in "abcde")
    for m in (a, b, a, c, d):  # 8 entries held; b is the least recently used
        manifests.read_entries(io, m)
    io.reads.clear()
    manifests.read_entries(io, e)  # read once, as often as b: not let in
    manifests.read_entries(io, e)  # read twice, more than b: let in, b goes
    assert io.reads == [e.manifest_path] * 2
    io.reads.clear()
    for m in (a, c, d, e, b):
        manifests.read_entries(io, m)
    assert io.reads == [b.manifest_path]
    assert cache._size <= cache.max_bytes
    too_large = _write(tmp_path, io, ["f1", "f2", "f3"])
    io.reads.clear()
    manifests.read_entries(io, too_large)
    manifests.read_entries(io, too_large)
    assert io.reads == [too_large.manifest_path] * 2  # over a quarter of the bound: never held


def test_manifests_read_in_turn_beyond_the_bound_keep_hitting_those_held(tmp_path, cache):
    """Each plan reads all six manifests in order, 12 entries against a bound of 8: the first four
    stay and are hit; plain LRU would push each out just before the next plan reads it."""
    io = CountingIO()
    six = [_write(tmp_path, io, [f"{n}1", f"{n}2"]) for n in "abcdef"]
    for _ in range(3):
        io.reads.clear()
        for m in six:
            manifests.read_entries(io, m)
    assert io.reads == [m.manifest_path for m in six[4:]]


def test_column_metrics_weigh_in():
    bare = _entry("x", 1, 1)
    with_metrics = dataclasses.replace(bare, data_file=dataclasses.replace(
        bare.data_file, value_counts={1: 5, 2: 5}, lower_bounds={1: b"\x00"}, upper_bounds={1: b"\x09"}))
    assert entry_bytes(with_metrics) > entry_bytes(bare)


def test_size_zero_keeps_nothing(tmp_path, cache):
    io = CountingIO()
    m = _write(tmp_path, io, ["a"])
    cache.resize(0)
    manifests.read_entries(io, m)
    manifests.read_entries(io, m)
    assert len(io.reads) == 2
