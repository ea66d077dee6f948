"""The REST catalog client against the fixture server, a recording proxy and stub servers.

  - catalog calls: namespaces (paged list, exists, properties, drop rules), tables (paged list,
    exists, create conflicts, rename's 406, drop with and without purge), errors naming the table;
  - auth: a credential is exchanged at POST /v1/oauth/tokens and the token sent as a bearer on
    every later call; a static token is sent as is; a 401/403 is one clear error naming the
    endpoint, at the API and at the CLI, with no secret in it;
  - commits: a 409 is retried and lands; a 5xx after the server applied the commit is
    CommitStateUnknownError and the written files are kept (the table references them).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from pyice_sql.core.catalog.base import TableIdentifier
from pyice_sql.core.catalog.rest import RestCatalog
from pyice_sql.core.errors import (
    CommitStateUnknownError, NamespaceAlreadyExistsError, NamespaceNotEmptyError, NoSuchNamespaceError,
    NoSuchTableError, RestCatalogError, TableAlreadyExistsError, UnsupportedError,
)
from pyice_sql.core.model.metadata import new_table_metadata
from pyice_sql.core.model.partitioning import UNPARTITIONED
from pyice_sql.core.model.schema import Schema
from pyice_sql.core.model.sort_order import UNSORTED
from pyice_sql.core.model.types import LONG, NestedField
from tests.rest.support import Proxy, proxy, rest_server, sort_rows

pytestmark = [pytest.mark.rest]

SECRET = "s3cr3t-value"
TOKEN = "static-t0ken-value"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("rest-catalog")
    with rest_server(root / "warehouse", log=root / "server.log") as uri:
        yield uri, root / "warehouse"


def catalog(uri: str, **props: str) -> RestCatalog:
    return RestCatalog("r", uri, lambda path: None, properties=props)


def create(c: RestCatalog, ident: TableIdentifier):
    """As CREATE TABLE without LOCATION does: the catalog's default location, so the server picks."""
    md = new_table_metadata(Schema((NestedField(1, "id", LONG),)), UNPARTITIONED, UNSORTED, c.default_location(ident))
    return c.create_table(ident, md)


def test_namespaces(server):
    c = catalog(server[0], **{"rest-page-size": "1"})
    for ns in (("n1",), ("n2",), ("n3",)):
        c.create_namespace(ns, {"owner": "me"})
    assert c.list_namespaces()[:3] == [("n1",), ("n2",), ("n3",)]  # three pages of one
    assert c.namespace_exists(("n2",)) and not c.namespace_exists(("nope",))
    with pytest.raises(NamespaceAlreadyExistsError, match="n1"):
        c.create_namespace(("n1",))
    assert c.namespace_properties(("n1",))["owner"] == "me"
    c.update_namespace_properties(("n1",), {"k": "v"}, ("owner",))
    props = c.namespace_properties(("n1",))
    assert props.get("k") == "v" and "owner" not in props
    create(c, TableIdentifier(("n3",), "t"))
    with pytest.raises(NamespaceNotEmptyError, match="n3"):
        c.drop_namespace(("n3",))
    c.drop_namespace(("n2",))
    assert not c.namespace_exists(("n2",))
    with pytest.raises(NoSuchNamespaceError, match="r.n2"):
        c.drop_namespace(("n2",))


def test_tables(server):
    uri, warehouse = server
    c = catalog(uri, **{"rest-page-size": "2"})
    c.create_namespace(("tt",))
    idents = [TableIdentifier(("tt",), f"t{i}") for i in range(5)]
    for ident in idents:
        table = create(c, ident)
        assert table.metadata.location.endswith(f"/tt/{ident.name}")  # the server chose it
    assert c.list_tables(("tt",)) == idents  # three pages
    assert c.table_exists(idents[0]) and not c.table_exists(TableIdentifier(("tt",), "nope"))
    assert not c.table_exists(TableIdentifier(("no_ns",), "t"))
    with pytest.raises(TableAlreadyExistsError, match="r.tt.t0"):
        create(c, idents[0])
    with pytest.raises(NoSuchNamespaceError, match="r.no_ns"):
        create(c, TableIdentifier(("no_ns",), "t"))
    with pytest.raises(NoSuchTableError, match=r"r\.tt\.nope.*GET /v1/namespaces/tt/tables/nope.*HTTP 404"):
        c.load_table(TableIdentifier(("tt",), "nope"))
    with pytest.raises(UnsupportedError, match=r"POST /v1/tables/rename with HTTP 406"):
        c.rename_table(idents[0], TableIdentifier(("tt",), "moved"))
    c.drop_table(idents[0])  # HadoopCatalog: the folder goes with the table
    assert not (warehouse / "tt" / "t0").exists() and not c.table_exists(idents[0])
    c.drop_table(idents[1], purge=True)
    assert not (warehouse / "tt" / "t1").exists()
    with pytest.raises(NoSuchTableError):
        c.drop_table(idents[1])


def test_a_credential_becomes_a_bearer_token_on_every_call(spark, server):
    import pyice_sql

    with proxy(Proxy(upstream=server[0])) as p:
        ice = pyice_sql.connect(spark, catalog="r", catalog_type="rest", uri=p.uri, credential=f"client:{SECRET}")
        ice.sql("CREATE NAMESPACE IF NOT EXISTS r.auth")
        ice.sql("CREATE TABLE r.auth.t (id bigint) USING iceberg")
        ice.sql("INSERT INTO r.auth.t VALUES (1), (2)")
        assert sort_rows(ice.sql("SELECT * FROM r.auth.t").collect()) == [[1], [2]]
    first, *rest = p.seen
    assert (first.method, first.path, first.authorization) == ("POST", "/v1/oauth/tokens", None)
    tokens = {s.authorization for s in rest}
    assert len(tokens) == 1 and tokens.pop().startswith("Bearer ") and len(rest) >= 5
    assert [s.path for s in rest][:1] == ["/v1/config"]
    assert any(s.method == "POST" and s.path == "/v1/namespaces/auth/tables/t" for s in rest)  # the commit
    assert all(SECRET not in (s.authorization or "") for s in p.seen)

    with proxy(Proxy(upstream=server[0])) as p:
        catalog(p.uri, token=TOKEN).list_namespaces()
    assert [(s.path, s.authorization) for s in p.seen] == [
        ("/v1/config", f"Bearer {TOKEN}"), ("/v1/namespaces", f"Bearer {TOKEN}")]


def _error(status: int, kind: str, message: str) -> tuple[int, dict]:
    return status, {"error": {"message": message, "type": kind, "code": status}}


def test_401_and_403_are_clear_errors_without_secrets():
    with proxy(Proxy(answer=lambda m, path: _error(401, "NotAuthorizedException", "Not authorized"))) as p:
        with pytest.raises(RestCatalogError) as e:
            catalog(p.uri, token=TOKEN)
    message = str(e.value)
    assert "GET /v1/config" in message and "HTTP 401 NotAuthorizedException: Not authorized" in message
    assert TOKEN not in message and e.value.status == 401

    def answer(method, path):
        if path.startswith("/v1/oauth/tokens"):
            return 200, {"access_token": "tok-from-stub", "token_type": "bearer", "issued_token_type":
                         "urn:ietf:params:oauth:token-type:access_token"}
        if path == "/v1/config":
            return 200, {"defaults": {}, "overrides": {}}
        return _error(403, "ForbiddenException", "Forbidden: principal may not read (token tok-from-stub)")

    with proxy(Proxy(answer=answer)) as p:
        c = catalog(p.uri, credential=f"client:{SECRET}")
        with pytest.raises(RestCatalogError) as e:
            c.load_table(TableIdentifier(("db",), "t"))
    message = str(e.value)
    assert "cannot load table r.db.t" in message and "GET /v1/namespaces/db/tables/t" in message
    assert "HTTP 403 ForbiddenException" in message
    assert SECRET not in message and "tok-from-stub" not in message  # even when the server echoes it


def test_cli_reports_a_refused_login_in_one_line(spark, tmp_path, capsys):
    from pyice_sql import cli

    script = tmp_path / "s.sql"
    script.write_text("SHOW NAMESPACES;\n")
    with proxy(Proxy(answer=lambda m, path: _error(401, "NotAuthorizedException", "Credentials rejected"))) as p:
        code = cli.main(["run", str(script), "--catalog-type", "rest", "--uri", p.uri, "--token", TOKEN, "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        f"pyice-sql: cannot read the catalog configuration: REST catalog {p.uri} answered GET /v1/config "
        "with HTTP 401 NotAuthorizedException: Credentials rejected"]


def _commit(method: str, path: str) -> bool:
    return method == "POST" and "/tables/" in path and not path.endswith("/metrics")


def test_a_lost_race_409_is_retried(spark, server):
    import pyice_sql

    refused = []

    def answer(method, path):
        if _commit(method, path) and not refused:
            refused.append(path)
            return _error(409, "CommitFailedException", "Requirement failed: branch main has changed")
        return None

    with proxy(Proxy(upstream=server[0], answer=answer)) as p:
        ice = pyice_sql.connect(spark, catalog="r", catalog_type="rest", uri=p.uri)
        ice.sql("CREATE NAMESPACE IF NOT EXISTS r.race")
        ice.sql("CREATE TABLE r.race.t (id bigint) USING iceberg")
        ice.sql("INSERT INTO r.race.t VALUES (1)")
    assert refused and sum(_commit(s.method, s.path) for s in p.seen) == 2
    direct = pyice_sql.connect(spark, catalog="r", catalog_type="rest", uri=server[0])
    assert sort_rows(direct.sql("SELECT * FROM r.race.t").collect()) == [[1]]
    assert len(direct.load("r", TableIdentifier(("race",), "t")).metadata.snapshots) == 1


def _data_files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*.parquet")}


def test_an_unknown_commit_state_keeps_the_written_files(spark, server):
    """A gateway answers 502 after the server applied the commit: the rows are in the table, and
    the files they live in must still exist. A 500 before the server saw it: files kept too."""
    import pyice_sql

    uri, warehouse = server
    after = lambda method, path, status: 502 if _commit(method, path) and status == 200 else None  # noqa: E731
    with proxy(Proxy(upstream=uri, after=after)) as p:
        ice = pyice_sql.connect(spark, catalog="r", catalog_type="rest", uri=p.uri)
        ice.sql("CREATE NAMESPACE IF NOT EXISTS r.unknown")
        ice.sql("CREATE TABLE r.unknown.t (id bigint) USING iceberg")
        with pytest.raises(CommitStateUnknownError) as e:
            ice.sql("INSERT INTO r.unknown.t VALUES (1), (2)")
    message = str(e.value)
    assert "POST /v1/namespaces/unknown/tables/t with HTTP 502" in message
    assert "commit state is unknown" in message and "files it wrote are kept" in message
    direct = pyice_sql.connect(spark, catalog="r", catalog_type="rest", uri=uri)
    assert sort_rows(direct.sql("SELECT * FROM r.unknown.t").collect()) == [[1], [2]]  # it had landed

    hang_up = lambda method, path, status: 0 if _commit(method, path) else None  # noqa: E731
    with proxy(Proxy(upstream=uri, after=hang_up)) as p:
        ice = pyice_sql.connect(spark, catalog="r", catalog_type="rest", uri=p.uri)
        with pytest.raises(CommitStateUnknownError, match="got no answer"):
            ice.sql("INSERT INTO r.unknown.t VALUES (3)")
    assert sort_rows(direct.sql("SELECT * FROM r.unknown.t").collect()) == [[1], [2], [3]]

    answer = lambda method, path: _error(500, "RuntimeException", "boom") if _commit(method, path) else None  # noqa: E731
    with proxy(Proxy(upstream=uri, answer=answer)) as p:
        ice = pyice_sql.connect(spark, catalog="r", catalog_type="rest", uri=p.uri)
        ice.sql("CREATE TABLE r.unknown.u (id bigint) USING iceberg")
        with pytest.raises(CommitStateUnknownError, match="HTTP 500 RuntimeException: boom"):
            ice.sql("INSERT INTO r.unknown.u VALUES (3)")
    table_dir = warehouse / "unknown" / "u"
    assert _data_files(table_dir / "data"), "the data file of a commit in an unknown state was deleted"
    assert list((table_dir / "metadata").glob("snap-*.avro")), "its manifest list was deleted"
    assert direct.load("r", TableIdentifier(("unknown",), "u")).metadata.snapshots == ()


def test_the_rest_sql_example_through_the_cli(server, tmp_path):
    """sql_examples/rest_catalog.sql on the REST server gives the expected output it gives on a
    filesystem warehouse (tests/spark/test_cli_subprocess.py runs it there)."""
    import subprocess

    from tests.spark.test_cli_subprocess import BIN, EXAMPLES, _env, _expected, normalise

    uri, warehouse = server
    proc = subprocess.run([str(BIN / "pyice-sql"), "run", str(EXAMPLES / "rest_catalog.sql"), "--catalog-type", "rest",
                           "--uri", uri, "--credential", f"example:{SECRET}", "--quiet"],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert normalise(proc.stdout) == _expected("rest_catalog")
    assert (warehouse / "rest_demo" / "accounts" / "metadata").is_dir() and not (tmp_path / "warehouse").exists()
    assert SECRET not in proc.stdout + proc.stderr


def test_ctas_replace_overwrite_and_snapshot_procedures(spark, server):
    """The commit paths the interop module does not take, checked by hand and by PyIceberg."""
    import pyice_sql
    from tests.rest.support import pyiceberg_rows

    uri, _ = server
    ice = pyice_sql.connect(spark, catalog="r", catalog_type="rest", uri=uri)
    ice.sql("CREATE NAMESPACE IF NOT EXISTS r.paths")
    ice.sql("CREATE TABLE r.paths.t USING iceberg PARTITIONED BY (k) AS "
            "SELECT * FROM VALUES (1, 'a'), (2, 'b'), (3, 'a') AS v(id, k)")
    first = ice.load("r", TableIdentifier(("paths",), "t")).metadata.current_snapshot_id
    ice.sql("INSERT OVERWRITE r.paths.t PARTITION (k = 'a') SELECT 4")  # replaces partition k='a' only
    assert pyiceberg_rows(uri, "paths.t", ("id", "k")) == [[2, "b"], [4, "a"]]
    ice.sql("CREATE OR REPLACE TABLE r.paths.t USING iceberg AS SELECT 9 AS id, 'z' AS k, true AS flag")
    assert pyiceberg_rows(uri, "paths.t", ("id", "k", "flag")) == [[9, "z", True]]
    table = ice.load("r", TableIdentifier(("paths",), "t"))
    assert first in {s.snapshot_id for s in table.metadata.snapshots}  # history kept
    ice.sql(f"CALL r.system.set_current_snapshot('paths.t', {first})").collect()
    assert sort_rows(ice.sql("SELECT id, k FROM r.paths.t").collect()) == [[1, "a"], [2, "b"], [3, "a"]]
    ice.sql("CALL r.system.expire_snapshots(table => 'paths.t', older_than => TIMESTAMP '2999-01-01 00:00:00', "
            "retain_last => 1)").collect()
    assert [s.snapshot_id for s in ice.load("r", TableIdentifier(("paths",), "t")).metadata.snapshots] == [first]
    assert pyiceberg_rows(uri, "paths.t", ("id", "k")) == [[1, "a"], [2, "b"], [3, "a"]]
    ice.sql("DROP TABLE r.paths.t PURGE")
    assert not ice.catalogs["r"].table_exists(TableIdentifier(("paths",), "t"))
