"""What the REST catalog tests share: the fixture server, Iceberg Java and PyIceberg as REST
clients, and a recording proxy that can also answer for the server (auth and failure stubs).

The server is shared/iceberg-rest-server: Iceberg Java's own CatalogHandlers over a
HadoopCatalog warehouse (README there). Java runs as a separate process (java_rest.py).
"""
from __future__ import annotations

import contextlib
import http.server
import sys
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from tests.interop.engines import SHARED, plain, sort_rows, statement_results

JAVA_REST = Path(__file__).with_name("java_rest.py")
REST_SERVER_DIR = SHARED / "iceberg-rest-server"


@contextlib.contextmanager
def rest_server(warehouse: str | Path, log: str | Path | None = None) -> Iterator[str]:
    """The fixture server over `warehouse`; yields its base URI (stopped by its PID on exit)."""
    sys.path.insert(0, str(REST_SERVER_DIR))
    try:
        import rest_server as fixture
    finally:
        sys.path.remove(str(REST_SERVER_DIR))
    with fixture.serve(str(warehouse), log=str(log) if log else None, python=sys.executable) as uri:
        yield uri


def java_rest_sql(uri: str, *statements: str) -> list[list[list[Any]]]:
    """Run statements on Iceberg Java with catalog `rest` on `uri`, in one JVM; rows per statement."""
    return statement_results([str(JAVA_REST), uri, *statements], len(statements))


def pyiceberg_rows(uri: str, table: str, columns: tuple[str, ...], snapshot_id: int | None = None) -> list:
    """Rows of `table` ('db.t') as PyIceberg's RestCatalog reads them (optionally at a snapshot)."""
    from pyiceberg.catalog.rest import RestCatalog

    catalog = RestCatalog("pyiceberg", uri=uri)
    scan = catalog.load_table(table).scan(selected_fields=columns, snapshot_id=snapshot_id)
    arrow = scan.to_arrow()
    return sort_rows(zip(*(arrow.column(c).to_pylist() for c in columns))) if arrow.num_rows else []


@dataclass
class Seen:
    method: str
    path: str
    authorization: str | None


@dataclass
class Proxy:
    """A local HTTP server in front of `upstream` (or alone): records every request and lets a
    test replace answers. `answer(method, path)` returns (status, JSON body) to answer without
    forwarding, or None to forward; `after(method, path, status)` may replace the forwarded
    answer's status (the request still reached the upstream), or return 0 to hang up without
    answering (a connection lost mid-request)."""

    upstream: str | None = None
    answer: Callable[[str, str], tuple[int, Any] | None] = lambda m, p: None
    after: Callable[[str, str, int], int | None] = lambda m, p, s: None
    seen: list[Seen] = field(default_factory=list)
    uri: str = ""


@contextlib.contextmanager
def proxy(p: Proxy) -> Iterator[Proxy]:
    import json

    class Handler(http.server.BaseHTTPRequestHandler):
        def _any(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            p.seen.append(Seen(self.command, self.path, self.headers.get("Authorization")))
            canned = p.answer(self.command, self.path)
            if canned is None and p.upstream is None:
                canned = (400, {"error": {"message": "no route", "type": "BadRequestException", "code": 400}})
            if canned is not None:
                status, payload = canned
                data = json.dumps(payload).encode() if payload is not None else b""
            else:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                request = urllib.request.Request(p.upstream + self.path, data=body or None, method=self.command,
                                                 headers=headers)
                try:
                    with urllib.request.urlopen(request) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                replaced = p.after(self.command, self.path, status)
                if replaced == 0:
                    self.close_connection = True
                    return
                status = replaced or status
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_POST = do_DELETE = do_HEAD = _any

        def log_message(self, *args) -> None:  # quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    p.uri = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield p
    finally:
        server.shutdown()
        server.server_close()


__all__ = ["Proxy", "java_rest_sql", "plain", "proxy", "pyiceberg_rows", "rest_server", "sort_rows"]
