"""Catalog settings from Spark conf (spark.pyice.*) and their precedence under explicit arguments."""
from __future__ import annotations

import pytest

from pyice_sql.spark.config import CatalogConfig, from_conf
from pyice_sql.core.errors import AnalysisError


def test_no_conf_gives_the_local_filesystem_catalog():
    cfg = from_conf({})
    assert cfg.default_catalog == "local" and not cfg.quiet
    assert cfg.catalogs == (CatalogConfig("local", "hadoop", "./warehouse", None),)


def test_several_catalogs_and_the_default_one():
    cfg = from_conf({
        "spark.pyice.catalog": "lake",
        "spark.pyice.catalog.lake.type": "sql",
        "spark.pyice.catalog.lake.warehouse": "/data/lake",
        "spark.pyice.catalog.lake.uri": "/data/lake.db",
        "spark.pyice.catalog.scratch.warehouse": "/tmp/scratch",
        "spark.pyice.quiet": "true",
        "spark.sql.shuffle.partitions": "4",  # not ours: ignored
    })
    assert cfg.default_catalog == "lake" and cfg.quiet
    assert cfg.catalogs == (CatalogConfig("lake", "sql", "/data/lake", "/data/lake.db"),
                            CatalogConfig("scratch", "hadoop", "/tmp/scratch", None))


def test_a_single_declared_catalog_is_the_default():
    cfg = from_conf({"spark.pyice.catalog.prod.warehouse": "s3a://bucket/wh"})
    assert cfg.default_catalog == "prod"
    assert [c.name for c in cfg.catalogs] == ["prod"]


def test_arguments_override_the_conf_of_the_default_catalog_only():
    conf = {"spark.pyice.catalog.a.warehouse": "/a", "spark.pyice.catalog.b.warehouse": "/b",
            "spark.pyice.catalog": "a", "spark.pyice.quiet": "true"}
    cfg = from_conf(conf, warehouse="/elsewhere", catalog_type="sql", quiet=False)
    assert cfg.catalogs == (CatalogConfig("a", "sql", "/elsewhere", None), CatalogConfig("b", "hadoop", "/b", None))
    assert not cfg.quiet
    assert from_conf(conf, catalog="b").catalogs[0] == CatalogConfig("b", "hadoop", "/b", None)
    assert from_conf(conf, catalog="new").catalogs[0] == CatalogConfig("new")


@pytest.mark.parametrize("key", ["spark.pyice.catalog.local.warehous", "spark.pyice.catalogs", "spark.pyice.catalog..type"])
def test_misspelt_keys_are_errors_naming_the_key(key):
    with pytest.raises(AnalysisError, match=key.replace(".", r"\.")):
        from_conf({key: "x"})


def test_rest_catalog_settings_from_conf_and_arguments():
    cfg = from_conf({
        "spark.pyice.catalog.lake.type": "rest",
        "spark.pyice.catalog.lake.uri": "https://cat.example/api",
        "spark.pyice.catalog.lake.credential": "id:secret",
        "spark.pyice.catalog.lake.header.X-Iceberg-Access-Delegation": "vended-credentials",
        "spark.pyice.catalog.lake.rest-page-size": "100",
    })
    assert cfg.catalogs == (CatalogConfig("lake", "rest", None, "https://cat.example/api", (
        ("credential", "id:secret"), ("header.X-Iceberg-Access-Delegation", "vended-credentials"),
        ("rest-page-size", "100"))),)
    # explicit arguments win, and only for the default catalog; a rest catalog has no default warehouse
    cfg = from_conf({"spark.pyice.catalog.lake.type": "rest", "spark.pyice.catalog.lake.token": "t1"},
                    uri="http://h:8181", warehouse="wh", properties={"token": "t2", "credential": None})
    assert cfg.catalogs == (CatalogConfig("lake", "rest", "wh", "http://h:8181", (("token", "t2"),)),)
    assert from_conf({}, catalog_type="rest", uri="http://h").catalogs[0].warehouse is None


@pytest.mark.parametrize("key", ["spark.pyice.catalog.lake.header.", "spark.pyice.catalog.lake.credentials"])
def test_misspelt_rest_keys_are_errors(key):
    with pytest.raises(AnalysisError, match=key.replace(".", r"\.")):
        from_conf({key: "x"})


def test_manifest_cache_size_from_conf():
    assert from_conf({}).manifest_cache_bytes is None  # the cache's own default
    assert from_conf({"spark.pyice.manifest-cache.max-total-bytes": " 500 "}).manifest_cache_bytes == 500
    assert from_conf({"spark.pyice.manifest-cache.max-total-bytes": "0"}).manifest_cache_bytes == 0


@pytest.mark.parametrize("value", ["-1", "many", ""])
def test_a_bad_manifest_cache_size_is_an_error_naming_the_key(value):
    with pytest.raises(AnalysisError, match=r"spark\.pyice\.manifest-cache\.max-total-bytes"):
        from_conf({"spark.pyice.manifest-cache.max-total-bytes": value})
