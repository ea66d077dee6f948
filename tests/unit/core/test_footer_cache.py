"""FooterCache: footers read once per (path, length), shared when equal, bounded by count."""
from __future__ import annotations

from pyice_sql.core.format.footer_cache import FooterCache


def _footer(*names: str) -> dict:
    columns = [{"fieldId": i + 1, "path": [n], "physicalType": "INT32", "logicalType": None}
               for i, n in enumerate(names)]
    return {"columns": columns + [{"fieldId": None, "path": ["no_id"], "physicalType": "INT64"}]}


class _Reader:
    """Footers by path, counting what is read."""

    def __init__(self, footers: dict[str, dict]) -> None:
        self.footers, self.calls = footers, []

    def __call__(self, paths: list[str]) -> list[dict]:
        self.calls.append(list(paths))
        return [self.footers[p] for p in paths]


def test_a_footer_is_read_once_per_path_and_length():
    cache, read = FooterCache(), _Reader({"a": _footer("id", "x"), "b": _footer("id", "y")})
    first = cache.leaves([("a", 10), ("b", 20)], read)
    no_id = (None, ("no_id",), "INT64", "")  # a column written without an id: kept, matched by name
    assert first == [((1, ("id",), "INT32", ""), (2, ("x",), "INT32", ""), no_id),
                     ((1, ("id",), "INT32", ""), (2, ("y",), "INT32", ""), no_id)]
    assert cache.leaves([("b", 20), ("a", 10)], read) == first[::-1]
    assert read.calls == [["a", "b"]]
    cache.leaves([("a", 11), ("b", 20)], read)  # another length: another file
    assert read.calls == [["a", "b"], ["a"]]


def test_equal_footers_are_one_object():
    cache, read = FooterCache(), _Reader({p: _footer("id", "v") for p in "abc"})
    a, b = cache.leaves([("a", 1), ("b", 1)], read)
    (c,) = cache.leaves([("c", 1)], read)
    assert a == b == c and a is b is c


def test_least_recently_used_goes_first():
    cache, read = FooterCache(max_files=2), _Reader({p: _footer(p) for p in "abc"})
    cache.leaves([("a", 1), ("b", 1)], read)
    cache.leaves([("a", 1)], read)  # a used last: b goes when c comes
    cache.leaves([("c", 1)], read)
    cache.leaves([("a", 1), ("c", 1)], read)
    assert read.calls == [["a", "b"], ["c"]]
    cache.leaves([("b", 1)], read)
    assert read.calls[-1] == ["b"]


def test_a_zero_bound_keeps_nothing():
    cache, read = FooterCache(max_files=0), _Reader({"a": _footer("id")})
    cache.leaves([("a", 1)], read)
    cache.leaves([("a", 1)], read)
    assert read.calls == [["a"], ["a"]]
