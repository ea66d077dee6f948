"""Spark's spelling of each planned data file's path in `_metadata.file_path`, computed once per file.

Deletes are matched to scanned rows by (file, row position). Spark reports the file as a
percent-encoded URI (`file:/tmp/a%20b/x.parquet`) while manifests and position delete files hold
the path as written (`/tmp/a b/x.parquet`, `file:///tmp/...`). Converting every scanned row's
path (regexp + URL decode) cost as much as the scan itself, so the conversion runs the other way:
on the driver, once per file, into Spark's spelling, and the joins use the raw column.

Spark 3.5 fills `file_path` as `new Path(sparkPath.toPath.toString).toUri.toString`, where
`sparkPath` is the listed file's URI (what `DataFrame.inputFiles()` returns). `metadata_spelling`
redoes that chain: decode the URI's path, then quote it as `java.net.URI`'s multi-argument
constructor does (Hadoop's Path builds its URI that way); an empty authority (`file:///`) is
dropped on the way, as in Java.
"""
from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

from pyspark.sql import DataFrame

from pyice_sql.spark.connect_backend import is_connect

_URI = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*):(?://(?P<authority>[^/]*))?(?P<path>.*)$", re.S)
_LOCAL_PREFIX = re.compile(r"^file:/+")
# java.net.URI: characters a path keeps unquoted (unreserved, punct, '/', '@'); '%' is always quoted
_PATH_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                       "_-!.~'()*" ",;:$&+=" "/@")


def local_key(path: str) -> str:
    """A decoded path without its `file:` prefix: one key for `/x`, `file:/x` and `file:///x`
    (the same rule as `reader.manifest_path_key`, which the delete rows use in Spark)."""
    return _LOCAL_PREFIX.sub("/", path)


def _quote_path(path: str) -> str:
    out = []
    for ch in path:
        if ch in _PATH_SAFE:
            out.append(ch)
        elif ord(ch) > 0x7F and not _java_space_or_control(ch):
            out.append(ch)  # java.net.URI leaves other non-ASCII characters as they are
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8")))
    return "".join(out)


def _java_space_or_control(ch: str) -> bool:
    """Character.isSpaceChar or Character.isISOControl."""
    return unicodedata.category(ch) in ("Zs", "Zl", "Zp") or ord(ch) <= 0x1F or 0x7F <= ord(ch) <= 0x9F


def metadata_spelling(listed_uri: str) -> str:
    """`_metadata.file_path` of the rows of a file Spark listed as `listed_uri` (see module doc)."""
    m = _URI.match(listed_uri)
    if m is None:  # no scheme: Spark lists qualified paths, so this is not expected
        return _quote_path(unquote(listed_uri))
    authority = m.group("authority")
    prefix = m.group("scheme") + ":" + (f"//{unquote(authority)}" if authority else "")
    return prefix + _quote_path(unquote(m.group("path")))


def spark_spellings(frame: DataFrame, paths: list[str]) -> dict[str, str]:
    """Each path of `paths` (as the manifest spells it) → its `_metadata.file_path` in `frame`,
    a plain Parquet read of exactly those files. One JVM call lists them all."""
    if is_connect(frame.sparkSession):
        listed = frame.inputFiles()
    else:  # joined in the JVM: a few py4j round trips, not one per file (a scan may list thousands)
        from pyice_sql.spark.jvm.bridge import load_shim

        listed = load_shim(frame.sparkSession).joined(frame._jdf.inputFiles(), "\n").split("\n")
    by_key = {}
    for uri in listed:
        by_key[local_key(unquote(uri))] = metadata_spelling(uri)
    # a file the listing lacks (seen with a MERGE whose source is its own target) is spelled from its
    # manifest path the way Hadoop's Path would
    return {p: by_key.get(local_key(p)) or manifest_spelling(p) for p in paths}


def manifest_spelling(path: str) -> str:
    """`_metadata.file_path` of a file from its path as a manifest holds it (raw, not URI-encoded)."""
    m = _URI.match(path)
    if m is None:  # a bare local path: Spark qualifies it as file:
        return "file:" + _quote_path(path)
    authority = m.group("authority")
    return m.group("scheme") + ":" + (f"//{authority}" if authority else "") + _quote_path(m.group("path"))
