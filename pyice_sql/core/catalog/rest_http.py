"""HTTP for the Iceberg REST catalog: JSON requests, bearer auth, OAuth2 tokens, error answers.

Stdlib only (urllib). Authentication as Iceberg's clients do it: a static bearer `token`, or a
`credential` (`client_id:client_secret`, or a bare secret) exchanged for a token with the OAuth2
client-credentials grant at `oauth2-server-uri` (default `<uri>/v1/oauth/tokens`), fetched again
shortly before it expires and once when the server answers 401. Secrets never appear in a
message: every error text passes through `redact`.

Every failure is a RestCatalogError naming the endpoint (`GET /v1/namespaces`), the HTTP status
and the server's ErrorResponse type and message.
"""
from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Mapping

from pyice_sql.core.errors import RestCatalogError

DEFAULT_SCOPE = "catalog"  # Iceberg Java's default OAuth2 scope (OAuth2Properties.CATALOG_SCOPE)
_REFRESH_MARGIN = 0.9  # fetch a new token after 90% of its lifetime


@dataclass(frozen=True)
class HttpFailure:
    """What went wrong with one request: an error answer (status set) or no answer at all."""

    endpoint: str
    status: int | None
    error_type: str | None
    message: str
    sent: bool  # whether the request may have reached the server (no answer after sending)


class RestHttp:
    """A JSON client for one REST catalog base URI."""

    def __init__(self, uri: str, *, headers: Mapping[str, str] | None = None, token: str | None = None,
                 credential: str | None = None, scope: str | None = None, oauth2_server_uri: str | None = None,
                 timeout_s: float = 120.0) -> None:
        self.uri = uri.rstrip("/")
        self.headers = dict(headers or {})
        self.timeout_s = timeout_s
        self._static_token = token
        self._credential = credential
        self._scope = scope or DEFAULT_SCOPE
        self._token_uri = oauth2_server_uri or f"{self.uri}/v1/oauth/tokens"
        self._token: str | None = token
        self._token_expires: float | None = None
        self._secrets = [s for s in (token, credential, (credential or "").partition(":")[2]) if s]

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    # --- auth ---------------------------------------------------------------------------
    def _bearer(self) -> str | None:
        if self._credential and (self._token is None or
                                 (self._token_expires is not None and time.monotonic() > self._token_expires)):
            self._fetch_token()
        return self._token

    def _fetch_token(self) -> None:
        client_id, _, secret = self._credential.partition(":") if ":" in self._credential else ("", "", self._credential)
        form = {"grant_type": "client_credentials", "client_secret": secret, "scope": self._scope}
        if client_id:
            form["client_id"] = client_id
        endpoint = f"POST {_path_of(self._token_uri)}"
        body = urllib.parse.urlencode(form).encode()
        request = urllib.request.Request(self._token_uri, data=body, method="POST", headers={
            **self.headers, "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
        status, answer = self._send(request, endpoint)
        answer = answer if isinstance(answer, dict) else {}
        if status >= 400 or not answer.get("access_token"):
            message = answer.get("error_description") or "no access_token in the answer"
            raise RestCallFailed(HttpFailure(endpoint, status, answer.get("error"), f"OAuth2 token: {message}", True))
        self._token = str(answer["access_token"])
        self._secrets.append(self._token)
        expires_in = answer.get("expires_in")
        self._token_expires = time.monotonic() + _REFRESH_MARGIN * float(expires_in) if expires_in else None

    # --- requests -----------------------------------------------------------------------
    def call(self, method: str, path: str, *, query: Mapping[str, str] | None = None,
             body: Any = None) -> tuple[int, Any]:
        """Send one request; returns (status, parsed JSON or None) for a 2xx/304 answer.

        Raises RestCallFailed (carrying an HttpFailure) for an error answer or no answer.
        """
        url = f"{self.uri}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
        endpoint = f"{method} {path}"
        for attempt in (0, 1):
            headers = {**self.headers, "Accept": "application/json"}
            bearer = self._bearer()
            if bearer:
                headers["Authorization"] = f"Bearer {bearer}"
            data = None
            if body is not None:
                data = json.dumps(body).encode("utf-8")
                headers["Content-Type"] = "application/json"
            status, answer = self._send(urllib.request.Request(url, data=data, method=method, headers=headers),
                                        endpoint)
            if status == 401 and attempt == 0 and self._credential:
                self._token = None  # expired or revoked: fetch a new one and try once more
                continue
            if status >= 400:
                error = answer.get("error") if isinstance(answer, dict) else None
                error = error if isinstance(error, dict) else {}
                message = error.get("message") or (answer if isinstance(answer, str) else None) or "no error message"
                raise RestCallFailed(HttpFailure(endpoint, status, error.get("type"), str(message), True))
            return status, answer
        raise AssertionError("unreachable")

    def error(self, failure: HttpFailure, what: str) -> RestCatalogError:
        """`what` failed: REST catalog URI answered ENDPOINT with HTTP S TYPE: message (secrets redacted)."""
        if failure.status is None:
            text = f"{what}: {failure.endpoint} on REST catalog {self.uri} got no answer: {failure.message}"
        else:
            kind = f" {failure.error_type}" if failure.error_type else ""
            text = (f"{what}: REST catalog {self.uri} answered {failure.endpoint} with HTTP {failure.status}{kind}: "
                    f"{failure.message}")
        return RestCatalogError(self.redact(text), status=failure.status, error_type=failure.error_type,
                                endpoint=failure.endpoint)

    def _send(self, request: urllib.request.Request, endpoint: str) -> tuple[int, Any]:
        """Send and read the answer: (status, JSON or text or None); raises RestCallFailed with no answer."""
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as r:
                return r.status, _parse(r.read())
        except urllib.error.HTTPError as e:
            with e:
                return e.code, _parse(e.read())
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = e.reason if isinstance(e, urllib.error.URLError) else e
            refused = isinstance(reason, (ConnectionRefusedError, socket.gaierror))  # nothing was sent
            raise RestCallFailed(HttpFailure(endpoint, None, type(reason).__name__,
                                             f"no answer from {self.uri}: {reason}", not refused)) from None


class RestCallFailed(Exception):
    """Internal: a request failed; the catalog maps `failure` to the right pyice error."""

    def __init__(self, failure: HttpFailure) -> None:
        super().__init__(failure.message)
        self.failure = failure


def _parse(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace").strip()[:500]


def _path_of(url: str) -> str:
    return urllib.parse.urlsplit(url).path or "/"
