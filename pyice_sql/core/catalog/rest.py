"""Iceberg REST catalog client: tables of any server speaking the Iceberg REST protocol.

Polaris, Lakekeeper, Nessie, Unity Catalog, Gravitino, Glue and S3 Tables all speak it. On start
the client reads GET /v1/config and merges its properties as the spec says (server defaults, then
the client's, then server overrides); `prefix` from the result goes into every path.

A commit is sent as requirements plus updates (`metadata_updates.table_changes` of the metadata
the commit path built and the metadata it started from); the server checks the requirements,
applies the updates and writes the metadata file, and its answer becomes the table. A 409 is a
lost race (CommitConflictError: the commit paths refresh, re-validate and retry per
`commit.retry.*`); a 5xx or a lost connection after sending leaves the commit state unknown
(CommitStateUnknownError: nothing is retried and no written file is deleted).

Data and metadata files are read and written through the same FileIO as the other catalogs, so
the server's table locations must be reachable from Spark (local paths, HDFS, s3a:// with the
Hadoop S3A connector configured); credentials the server vends in a load result are not used.
"""
from __future__ import annotations

import urllib.parse
from typing import Any, Mapping

from pyice_sql.core.catalog.base import IoFactory, Table, TableIdentifier
from pyice_sql.core.catalog.metadata_updates import table_changes
from pyice_sql.core.catalog.rest_http import HttpFailure, RestCallFailed, RestHttp
from pyice_sql.core.errors import (
    CommitConflictError, CommitStateUnknownError, CorruptTableError, NamespaceAlreadyExistsError,
    NamespaceNotEmptyError, NoSuchNamespaceError, NoSuchTableError, PyIceError, TableAlreadyExistsError,
    UnsupportedError,
)
from pyice_sql.core.model.metadata import TableMetadata
from pyice_sql.core.properties import FORMAT_VERSION

# Endpoints a server supports when its config names none (the spec's default list).
_DEFAULT_ENDPOINTS = frozenset({
    "GET /v1/{prefix}/namespaces", "POST /v1/{prefix}/namespaces", "GET /v1/{prefix}/namespaces/{namespace}",
    "DELETE /v1/{prefix}/namespaces/{namespace}", "POST /v1/{prefix}/namespaces/{namespace}/properties",
    "GET /v1/{prefix}/namespaces/{namespace}/tables", "POST /v1/{prefix}/namespaces/{namespace}/tables",
    "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
    "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}", "POST /v1/{prefix}/tables/rename",
})
_HEAD_NAMESPACE = "HEAD /v1/{prefix}/namespaces/{namespace}"
_HEAD_TABLE = "HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}"
_AUTH_KEYS = ("uri", "token", "credential", "scope", "oauth2-server-uri")
# connect()/conf properties of a REST catalog besides uri and warehouse (plus header.<name>)
REST_PROPERTIES = ("credential", "token", "scope", "oauth2-server-uri", "rest-page-size")


class RestCatalog:
    def __init__(self, name: str, uri: str, io_factory: IoFactory, *, warehouse: str | None = None,
                 properties: Mapping[str, str] | None = None) -> None:
        self.name = name
        self._io_factory = io_factory
        client = {**(properties or {}), "uri": uri}
        if warehouse:
            client["warehouse"] = warehouse
        self.http = _http(client)
        config = self._call("GET", "/v1/config", "cannot read the catalog configuration",
                            query={"warehouse": warehouse} if warehouse else None)
        config = config if isinstance(config, dict) else {}
        self.properties = {**(config.get("defaults") or {}), **client, **(config.get("overrides") or {})}
        if any(self.properties.get(k) != client.get(k) for k in _AUTH_KEYS) or _headers(self.properties) != \
                _headers(client):
            self.http = _http(self.properties)
        self.endpoints = frozenset(config.get("endpoints") or _DEFAULT_ENDPOINTS)
        prefix = (self.properties.get("prefix") or "").strip("/")
        self._base = "/v1/" + (urllib.parse.quote(prefix, safe="/") + "/" if prefix else "")
        self.page_size = self.properties.get("rest-page-size")

    # --- paths and calls ------------------------------------------------------------------
    def _ns_path(self, namespace: tuple[str, ...]) -> str:
        return f"{self._base}namespaces/{urllib.parse.quote(chr(0x1F).join(namespace), safe='')}"

    def _table_path(self, ident: TableIdentifier) -> str:
        return f"{self._ns_path(ident.namespace)}/tables/{urllib.parse.quote(ident.name, safe='')}"

    def _call(self, method: str, path: str, what: str, *, query: Mapping[str, str] | None = None,
              body: Any = None, missing: type[PyIceError] | None = None,
              conflict: type[PyIceError] | None = None) -> Any:
        """One request; an error answer becomes the pyice error for it (404 → `missing`, 409 →
        `conflict`), else a RestCatalogError naming the endpoint, status and server message."""
        try:
            return self.http.call(method, path, query=query, body=body)[1]
        except RestCallFailed as e:
            raise self._mapped(e.failure, what, missing, conflict) from None

    def _mapped(self, failure: HttpFailure, what: str, missing: type[PyIceError] | None,
                conflict: type[PyIceError] | None) -> PyIceError:
        kind = failure.error_type or ""
        cls: type[PyIceError] | None = None
        if failure.status == 404:
            cls = NoSuchNamespaceError if "NoSuchNamespace" in kind else missing
        elif failure.status == 409:
            cls = NamespaceNotEmptyError if "NotEmpty" in kind else conflict
        elif failure.status == 406:
            cls = UnsupportedError
        error = self.http.error(failure, what)
        return error if cls is None else cls(error.message)

    def _paged(self, path: str, key: str, what: str, missing: type[PyIceError]) -> list:
        out: list = []
        query: dict[str, str] = {"pageToken": "", "pageSize": self.page_size} if self.page_size else {}
        while True:
            answer = self._call("GET", path, what, query=query or None, missing=missing) or {}
            out += answer.get(key) or []
            token = answer.get("next-page-token")
            if not token:
                return out
            query = {**query, "pageToken": token}

    def _exists(self, path: str, endpoint: str, what: str) -> bool:
        method = "HEAD" if endpoint in self.endpoints else "GET"
        try:
            self._call(method, path, what, missing=_Missing)
        except _Missing:
            return False
        except NoSuchNamespaceError:
            return False
        return True

    def _table(self, ident: TableIdentifier, answer: Any, endpoint: str) -> Table:
        """A Table from a LoadTableResult / CommitTableResponse."""
        try:
            location = answer["metadata-location"]
            metadata = TableMetadata.from_json(answer["metadata"])
        except (TypeError, KeyError, ValueError) as e:
            raise CorruptTableError(f"REST catalog {self.http.uri} answered {endpoint} for table "
                                    f"{self.name}.{ident} with no valid table metadata ({e})") from None
        return Table(self, ident, metadata, location, self._io_factory(location or metadata.location))

    # --- tables ---------------------------------------------------------------------------
    def load_table(self, ident: TableIdentifier) -> Table:
        path = self._table_path(ident)
        answer = self._call("GET", path, f"cannot load table {self.name}.{ident}", missing=NoSuchTableError)
        return self._table(ident, answer, f"GET {path}")

    def table_exists(self, ident: TableIdentifier) -> bool:
        return self._exists(self._table_path(ident), _HEAD_TABLE, f"cannot check table {self.name}.{ident}")

    def default_location(self, ident: TableIdentifier) -> str:
        """Where the server is expected to put the table; a CREATE without LOCATION leaves the choice
        to the server (see create_table), so this is only a guess from the warehouse property."""
        root = (self.properties.get("warehouse") or "").rstrip("/")
        return "/".join((root, *ident.namespace, ident.name))

    def create_table(self, ident: TableIdentifier, metadata: TableMetadata) -> Table:
        body: dict[str, Any] = {
            "name": ident.name, "schema": metadata.schema().to_json(), "partition-spec": metadata.spec().to_json(),
            "write-order": metadata.sort_order().to_json(), "stage-create": False,
            "properties": {**metadata.properties, FORMAT_VERSION: str(metadata.format_version)}}
        if metadata.location != self.default_location(ident):
            body["location"] = metadata.location
        path = f"{self._ns_path(ident.namespace)}/tables"
        answer = self._call("POST", path, f"cannot create table {self.name}.{ident}", body=body,
                            missing=NoSuchNamespaceError, conflict=TableAlreadyExistsError)
        return self._table(ident, answer, f"POST {path}")

    def commit(self, base: Table, new_metadata: TableMetadata) -> Table:
        changes = table_changes(base.metadata, new_metadata)
        if not changes.updates:
            return base
        path = self._table_path(base.identifier)
        body = {"identifier": {"namespace": list(base.identifier.namespace), "name": base.identifier.name},
                **changes.to_json()}
        try:
            _, answer = self.http.call("POST", path, body=body)
        except RestCallFailed as e:
            f = e.failure
            what = f"commit to table {base.full_name} failed"
            if f.status == 409:
                raise CommitConflictError(f"table {base.full_name} was changed concurrently "
                                          f"(REST catalog: {self.http.redact(f.message)})") from None
            sent = f.endpoint == f"POST {path}"  # else the token request failed: the commit was never sent
            if sent and ((f.status is not None and f.status >= 500) or (f.status is None and f.sent)):
                raise CommitStateUnknownError(
                    f"{self.http.error(f, f'commit to table {base.full_name}').message}. The commit state is "
                    "unknown: it may or may not have been applied, so the files it wrote are kept; check the "
                    f"table's history ({base.full_name}.snapshots) before running the statement again") from None
            raise self._mapped(f, what, NoSuchTableError, None) from None
        return self._table(base.identifier, answer, f"POST {path}")

    def drop_table(self, ident: TableIdentifier, purge: bool = False) -> None:
        self._call("DELETE", self._table_path(ident), f"cannot drop table {self.name}.{ident}",
                   query={"purgeRequested": "true" if purge else "false"}, missing=NoSuchTableError)

    def rename_table(self, source: TableIdentifier, destination: TableIdentifier) -> None:
        body = {"source": {"namespace": list(source.namespace), "name": source.name},
                "destination": {"namespace": list(destination.namespace), "name": destination.name}}
        self._call("POST", f"{self._base}tables/rename", f"cannot rename table {self.name}.{source} to {destination}",
                   body=body, missing=NoSuchTableError, conflict=TableAlreadyExistsError)

    def list_tables(self, namespace: tuple[str, ...]) -> list[TableIdentifier]:
        found = self._paged(f"{self._ns_path(namespace)}/tables", "identifiers",
                            f"cannot list tables of namespace {self.name}.{'.'.join(namespace)}", NoSuchNamespaceError)
        return sorted((TableIdentifier(tuple(i["namespace"]), i["name"]) for i in found), key=str)

    # --- namespaces -----------------------------------------------------------------------
    def list_namespaces(self) -> list[tuple[str, ...]]:
        found = self._paged(f"{self._base}namespaces", "namespaces", f"cannot list namespaces of {self.name}",
                            NoSuchNamespaceError)
        return sorted(tuple(ns) for ns in found)

    def namespace_exists(self, namespace: tuple[str, ...]) -> bool:
        return self._exists(self._ns_path(namespace), _HEAD_NAMESPACE,
                            f"cannot check namespace {self.name}.{'.'.join(namespace)}")

    def create_namespace(self, namespace: tuple[str, ...], properties: Mapping[str, str] | None = None) -> None:
        self._call("POST", f"{self._base}namespaces", f"cannot create namespace {self.name}.{'.'.join(namespace)}",
                   body={"namespace": list(namespace), "properties": dict(properties or {})},
                   conflict=NamespaceAlreadyExistsError)

    def drop_namespace(self, namespace: tuple[str, ...]) -> None:
        self._call("DELETE", self._ns_path(namespace), f"cannot drop namespace {self.name}.{'.'.join(namespace)}",
                   missing=NoSuchNamespaceError, conflict=NamespaceNotEmptyError)

    def namespace_properties(self, namespace: tuple[str, ...]) -> dict[str, str]:
        answer = self._call("GET", self._ns_path(namespace),
                            f"cannot load namespace {self.name}.{'.'.join(namespace)}", missing=NoSuchNamespaceError)
        return dict((answer or {}).get("properties") or {})

    def update_namespace_properties(self, namespace: tuple[str, ...], updates: Mapping[str, str],
                                    removals: tuple[str, ...] = ()) -> dict[str, list[str]]:
        """Set and remove namespace properties; the server's summary (updated, removed, missing)."""
        return self._call("POST", f"{self._ns_path(namespace)}/properties",
                          f"cannot update the properties of namespace {self.name}.{'.'.join(namespace)}",
                          body={"updates": dict(updates), "removals": list(removals)},
                          missing=NoSuchNamespaceError) or {}


class _Missing(PyIceError):
    """Internal: a 404 seen by an existence check."""


def _headers(props: Mapping[str, str]) -> dict[str, str]:
    return {k[len("header."):]: v for k, v in props.items() if k.startswith("header.")}


def _http(props: Mapping[str, str]) -> RestHttp:
    return RestHttp(props["uri"], headers=_headers(props), token=props.get("token"),
                    credential=props.get("credential"), scope=props.get("scope"),
                    oauth2_server_uri=props.get("oauth2-server-uri"))
