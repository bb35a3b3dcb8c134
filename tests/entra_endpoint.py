"""A local stand-in for Microsoft Entra ID's token services, for the tests of
``Authentication=`` logins (tests/source/test_entra.py; docs/entra.md).

It speaks just enough of two protocols for azure-identity (and msal under it) to get tokens
from it, answering as Entra ID does:

* managed identity, App Service's flavour (plain http): ``GET <IDENTITY_ENDPOINT>?
  api-version=2019-08-01&resource=<resource>[&client_id=...]`` with the ``X-IDENTITY-HEADER``
  header; the answer carries ``access_token`` and ``expires_on`` (epoch seconds, a string).
* an authority (https only: azure-identity and msal refuse another scheme) for
  ``ClientSecretCredential``: the OpenID discovery document msal reads first
  (``GET /<tenant>/v2.0/.well-known/openid-configuration``), then the client-credentials
  grant (``POST /<tenant>/oauth2/v2.0/token``): ``expires_in`` on success; a wrong secret
  gets HTTP 401 ``invalid_client`` with ``error_description`` ``AADSTS7000215``, as Entra ID
  answers. The password grant (ROPC, ``UsernamePasswordCredential``) too: a wrong password
  gets HTTP 400 ``invalid_grant``, ``AADSTS50126``. msal first looks the user's realm up at
  ``https://<host>/common/userrealm/<user>``, built from the host name without the
  authority's port, so this endpoint (on a port of its own) never sees that request: see
  ``skip_user_realm`` in tests/source/test_entra.py.

Every request is recorded (``calls``); tokens are ``<prefix>-<n>`` in the order issued
(``issued``). ``clock`` (default ``time.time``) dates the tokens, so a test that moves the
product's clock moves the endpoint's with it. Standard library only (the certificate comes
from the emulator's TLS module), one server thread; ``start()`` returns once the thread
serves (an event, no sleep).
"""

from __future__ import annotations

import base64
import json
import ssl
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from mssql_cdc.emulator.protocol.tls import generate_certificate

__all__ = ["Call", "TokenEndpoint", "throwaway_tls"]

#: what Entra ID answers a wrong client secret with (the text is Entra ID's, without its ids)
WRONG_SECRET = {
    "error": "invalid_client",
    "error_description": "AADSTS7000215: Invalid client secret provided. Ensure the secret "
    "being sent in the request is the client secret value, not the client secret ID, for a "
    "secret added to app 'app-id'. Trace ID: 0 Correlation ID: 0 Timestamp: 2024-01-01 00:00:00Z",
    "error_codes": [7000215],
}

#: and a wrong user password (ROPC)
WRONG_PASSWORD = {
    "error": "invalid_grant",
    "error_description": "AADSTS50126: Error validating credentials due to invalid username or "
    "password. Trace ID: 0 Correlation ID: 0 Timestamp: 2024-01-01 00:00:00Z",
    "error_codes": [50126],
}


@dataclass(frozen=True)
class Call:
    """One request: method, path (without the query), query and form fields (first value
    each), headers (lower-cased names)."""

    method: str
    path: str
    query: dict[str, str]
    form: dict[str, str]
    headers: dict[str, str] = field(repr=False)


def throwaway_tls(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context with a fresh self-signed certificate for localhost and 127.0.0.1, and
    the PEM file a client trusts it by (``REQUESTS_CA_BUNDLE``)."""
    cert = generate_certificate(("localhost",))
    ca_file, key_file = directory / "endpoint-ca.pem", directory / "endpoint-key.pem"
    ca_file.write_bytes(cert.cert_pem)
    key_file.write_bytes(cert.key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(ca_file, key_file)
    key_file.unlink()
    return context, ca_file


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    endpoint: TokenEndpoint

    def finish_request(self, request: Any, client_address: Any) -> None:
        # the TLS handshake runs in the request's thread, not in the accepting one
        if self.endpoint.tls is not None:
            request = self.endpoint.tls.wrap_socket(request, server_side=True)
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        self.endpoint.errors.append(repr(sys.exc_info()[1]))


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self._answer(self.server.endpoint.handle(self._call("GET")))

    def do_POST(self) -> None:
        self._answer(self.server.endpoint.handle(self._call("POST")))

    def _call(self, method: str) -> Call:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        return Call(
            method,
            url.path,
            {k: v[0] for k, v in parse_qs(url.query).items()},
            {k: v[0] for k, v in parse_qs(body).items()},
            {k.lower(): v for k, v in self.headers.items()},
        )

    def _answer(self, answer: tuple[int, dict[str, Any]]) -> None:
        status, payload = answer
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # requests are in ``calls``


class TokenEndpoint:
    """The endpoint; a context manager. ``tls`` (a server context, see :func:`throwaway_tls`):
    serve https, as an authority must; ``None``: plain http, as a managed identity endpoint
    on the same host is. ``secrets``: client id -> the secret the client-credentials grant
    accepts; ``users``: user -> the password the password grant (ROPC) accepts; ``lifetime``:
    seconds a token is valid."""

    identity_header = "local-identity-header"

    def __init__(
        self,
        *,
        tls: ssl.SSLContext | None = None,
        secrets: dict[str, str] | None = None,
        users: dict[str, str] | None = None,
        lifetime: int = 3600,
        prefix: str = "token",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.tls = tls
        self.secrets = dict(secrets or {})
        self.users = dict(users or {})
        self.lifetime = lifetime
        self.prefix = prefix
        self.clock = clock
        self.calls: list[Call] = []
        self.issued: list[str] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.endpoint = self
        self._thread: threading.Thread | None = None

    @property
    def base(self) -> str:
        """``http(s)://127.0.0.1:<port>``"""
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self._server.server_address[1]}"

    @property
    def identity_endpoint(self) -> str:
        """What ``IDENTITY_ENDPOINT`` names (managed identity)."""
        return f"{self.base}/msi/token"

    def start(self) -> TokenEndpoint:
        ready = threading.Event()

        def serve() -> None:
            ready.set()  # the socket listens since the constructor; the loop starts now
            self._server.serve_forever(poll_interval=0.05)

        self._thread = threading.Thread(target=serve, name="token-endpoint", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the token endpoint's thread did not start")
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(10)
        self._server.server_close()

    def __enter__(self) -> TokenEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the protocols ---

    def handle(self, call: Call) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.calls.append(call)
            if call.method == "GET" and call.path == "/msi/token":
                return self._managed_identity(call)
            parts = call.path.strip("/").split("/")
            discovery = ["v2.0", ".well-known", "openid-configuration"]
            if call.method == "GET" and parts[1:] == discovery:
                return 200, self._openid_configuration(parts[0])
            if call.method == "POST" and parts[1:] == ["oauth2", "v2.0", "token"]:
                return self._grant(call)
            return 404, {"error": "not_found", "error_description": call.path}

    def _token(self) -> str:
        value = f"{self.prefix}-{len(self.issued) + 1}"
        self.issued.append(value)
        return value

    def _managed_identity(self, call: Call) -> tuple[int, dict[str, Any]]:
        if call.headers.get("x-identity-header") != self.identity_header:
            return 401, {"statusCode": 401, "message": "X-IDENTITY-HEADER is wrong"}
        return 200, {
            "access_token": self._token(),
            "expires_on": str(int(self.clock()) + self.lifetime),
            "resource": call.query.get("resource", ""),
            "token_type": "Bearer",
            "client_id": call.query.get("client_id", "system-assigned"),
        }

    def _openid_configuration(self, tenant: str) -> dict[str, Any]:
        root = f"{self.base}/{tenant}"
        return {
            "issuer": f"{root}/v2.0",
            "authorization_endpoint": f"{root}/oauth2/v2.0/authorize",
            "token_endpoint": f"{root}/oauth2/v2.0/token",
            "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt"],
            "response_types_supported": ["code", "id_token", "code id_token", "token id_token"],
            "tenant_region_scope": "EU",
        }

    def _grant(self, call: Call) -> tuple[int, dict[str, Any]]:
        form = call.form
        extra: dict[str, Any] = {}
        if form.get("grant_type") == "client_credentials":
            expected = self.secrets.get(form.get("client_id", ""))
            if expected is None or form.get("client_secret") != expected:
                return 401, WRONG_SECRET
        elif form.get("grant_type") == "password":
            expected = self.users.get(form.get("username", ""))
            if expected is None or form.get("password") != expected:
                return 400, WRONG_PASSWORD
            extra = self._user_identity(call.path.strip("/").split("/")[0], form)
        else:
            return 400, {"error": "unsupported_grant_type", "error_description": "AADSTS70003"}
        # relative to ``clock`` too: msal adds ``expires_in`` to the real time
        expires_in = int(self.clock() + self.lifetime - time.time())
        return 200, {
            "token_type": "Bearer",
            "expires_in": expires_in,
            "ext_expires_in": expires_in,
            "access_token": self._token(),
            **extra,
        }

    def _user_identity(self, tenant: str, form: dict[str, str]) -> dict[str, Any]:
        """A user's grant also answers who signed in: ``id_token`` (msal reads its claims, it
        does not check a signature; azure-identity builds its AuthenticationRecord from them)
        and ``client_info``."""
        now = int(self.clock())
        claims = {
            "iss": self._openid_configuration(tenant)["issuer"],
            "aud": form.get("client_id", ""),
            "sub": "user-object-id",
            "oid": "user-object-id",
            "tid": tenant,
            "preferred_username": form.get("username", ""),
            "iat": now,
            "nbf": now,
            "exp": now + self.lifetime,
        }
        header = {"alg": "none", "typ": "JWT"}
        id_token = f"{_b64(header)}.{_b64(claims)}."
        client_info = _b64({"uid": "user-object-id", "utid": tenant})
        return {"id_token": id_token, "client_info": client_info}


def _b64(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")
