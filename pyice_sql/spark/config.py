"""Catalog settings from Spark conf, so a job is configured with `--conf` alone.

Keys (all optional):

    spark.pyice.catalog                      name of the default catalog (default: the only one
                                             configured, else `local`)
    spark.pyice.catalog.<name>.type          `hadoop` (filesystem layout, default), `sql` (SQLite) or
                                             `rest` (an Iceberg REST catalog server)
    spark.pyice.catalog.<name>.warehouse     warehouse folder or Hadoop URI (default ./warehouse); for
                                             `rest`, the warehouse asked for (optional)
    spark.pyice.catalog.<name>.uri           SQLite file of a `sql` catalog (default <warehouse>/catalog.db),
                                             base URI of a `rest` catalog
    spark.pyice.catalog.<name>.credential    `rest`: OAuth2 client credential `client_id:secret`
    spark.pyice.catalog.<name>.token         `rest`: a bearer token
    spark.pyice.catalog.<name>.scope / .oauth2-server-uri / .rest-page-size / .header.<Header-Name>
                                             `rest`: as in Iceberg's REST catalog properties
    spark.pyice.quiet                        `true` turns off progress lines
    spark.pyice.manifest-cache.max-total-bytes
                                             Python memory for manifests kept decoded between reads,
                                             all tables of the process (default 104857600 = 100 MB;
                                             0: none; core/format/manifest_cache.py)

Any `spark.pyice.catalog.<name>.*` key declares catalog `<name>`; several may be declared.
Arguments given to `connect()` / `install()` override the conf of the catalog they configure.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from pyice_sql.core.errors import AnalysisError

PREFIX = "spark.pyice."
CATALOG_KEY = PREFIX + "catalog"
QUIET_KEY = PREFIX + "quiet"
MANIFEST_CACHE_KEY = PREFIX + "manifest-cache.max-total-bytes"
_CATALOG_FIELDS = ("type", "warehouse", "uri")
_REST_KEYS = ("credential", "token", "scope", "oauth2-server-uri", "rest-page-size")
_HEADER = "header."


@dataclass(frozen=True)
class CatalogConfig:
    name: str
    type: str = "hadoop"
    warehouse: str | None = "./warehouse"  # None: a `rest` catalog given no warehouse
    uri: str | None = None
    properties: tuple[tuple[str, str], ...] = ()  # REST settings (_REST_KEYS, header.*), sorted


@dataclass(frozen=True)
class PyiceConfig:
    default_catalog: str
    catalogs: tuple[CatalogConfig, ...]
    quiet: bool = False
    manifest_cache_bytes: int | None = None  # None: the cache's default


def from_conf(conf: Mapping[str, str], *, catalog: str | None = None, catalog_type: str | None = None,
              warehouse: str | None = None, uri: str | None = None, quiet: bool | None = None,
              properties: Mapping[str, str] | None = None) -> PyiceConfig:
    """The catalogs and flags that `conf` (Spark conf entries) and explicit arguments describe.

    Explicit arguments (`properties`: REST settings such as `credential`) apply to the default
    catalog. Unknown `spark.pyice.*` keys are errors: a misspelt key silently ignored would send a
    job to the wrong warehouse.
    """
    found: dict[str, dict[str, str]] = {}
    props: dict[str, dict[str, str]] = {}
    for key, value in conf.items():
        if not key.startswith(PREFIX) or key in (CATALOG_KEY, QUIET_KEY, MANIFEST_CACHE_KEY):
            continue
        rest = key[len(CATALOG_KEY) + 1:] if key.startswith(CATALOG_KEY + ".") else None
        name, _, field = (rest or "").partition(".")
        if name and field in _CATALOG_FIELDS:
            found.setdefault(name, {})[field] = value
        elif name and (field in _REST_KEYS or (field.startswith(_HEADER) and len(field) > len(_HEADER))):
            found.setdefault(name, {})
            props.setdefault(name, {})[field] = value
        else:
            raise AnalysisError(f"unknown Spark conf key {key!r}: expected {CATALOG_KEY}, {QUIET_KEY}, "
                                f"{MANIFEST_CACHE_KEY} or "
                                f"{CATALOG_KEY}.<name>.{{{','.join(_CATALOG_FIELDS + _REST_KEYS)},header.<name>}}")
    default = catalog or conf.get(CATALOG_KEY) or (next(iter(found)) if len(found) == 1 else "local")
    found.setdefault(default, {}).update(
        {k: v for k, v in (("type", catalog_type), ("warehouse", warehouse), ("uri", uri)) if v is not None})
    props.setdefault(default, {}).update({k: v for k, v in (properties or {}).items() if v is not None})
    catalogs = {name: _catalog(name, fields, props.get(name, {})) for name, fields in found.items()}
    if quiet is None:
        quiet = conf.get(QUIET_KEY, "false").strip().lower() in ("true", "1", "yes")
    ordered = (catalogs[default], *(c for n, c in sorted(catalogs.items()) if n != default))
    return PyiceConfig(default, ordered, quiet, _manifest_cache_bytes(conf.get(MANIFEST_CACHE_KEY)))


def _manifest_cache_bytes(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        size = int(value.strip())
    except ValueError:
        size = -1
    if size < 0:
        raise AnalysisError(f"{MANIFEST_CACHE_KEY}={value!r}: expected a number of bytes (0 turns the cache off)")
    return size


def _catalog(name: str, fields: Mapping[str, str], props: Mapping[str, str]) -> CatalogConfig:
    """A catalog's settings; a `rest` catalog has no default warehouse (its server has one)."""
    rest = fields.get("type", "").lower() == "rest"
    return CatalogConfig(name, **{"warehouse": None if rest else "./warehouse", **fields},
                         properties=tuple(sorted(props.items())))


def spark_conf(spark) -> dict[str, str]:
    """The session's `spark.pyice.*` settings: those set at start (spark-submit --conf) and at run time."""
    if getattr(spark, "_jsparkSession", None) is None:  # Spark Connect: the server's session conf
        return {k: v for k, v in spark.conf.getAll.items() if k.startswith(PREFIX)}
    out = {k: v for k, v in spark.sparkContext.getConf().getAll() if k.startswith(PREFIX)}
    jmap = spark._jsparkSession.conf().getAll()  # runtime conf, including spark.conf.set(...)
    it = jmap.iterator()
    while it.hasNext():
        entry = it.next()
        if str(entry._1()).startswith(PREFIX):
            out[str(entry._1())] = str(entry._2())
    return out
