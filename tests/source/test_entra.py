"""Entra ID logins named by ``Authentication=`` (mssql_cdc.source.entra, ADR 0189): tokens from
azure-identity against a local token endpoint, the emulator's access-token login, refresh
before expiry, the secret kept off the executors and out of errors."""

from __future__ import annotations

import json
import pickle
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mssql_cdc.errors import LoginError
from mssql_cdc.options import parse_options
from mssql_cdc.source import entra
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.entra import connect_token, entra_login, native_connection_string

pytest.importorskip("azure.identity")

SECRET = "Sup3r-Secret-Value"


class TokenEndpoint(ThreadingHTTPServer):
    """A managed identity endpoint (App Service's protocol: ``IDENTITY_ENDPOINT`` and
    ``IDENTITY_HEADER``) that hands out ``token-<n>`` valid for ``lifetime`` seconds."""

    lifetime = 3600
    calls: list[dict[str, str]]


class Handler(BaseHTTPRequestHandler):
    server: TokenEndpoint

    def do_GET(self) -> None:
        from urllib.parse import parse_qs, urlparse

        query = {k: v[0] for k, v in parse_qs(urlparse(self.path).query).items()}
        query["header"] = self.headers.get("X-IDENTITY-HEADER", "")
        self.server.calls.append(query)
        body = json.dumps(
            {
                "access_token": f"token-{len(self.server.calls)}",
                "expires_on": str(int(time.time()) + self.server.lifetime),
                "resource": query.get("resource", ""),
                "token_type": "Bearer",
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint(monkeypatch) -> Iterator[TokenEndpoint]:
    server = TokenEndpoint(("127.0.0.1", 0), Handler)
    server.calls = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("IDENTITY_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}/token")
    monkeypatch.setenv("IDENTITY_HEADER", "local-header")
    monkeypatch.setattr(entra, "_cache", {})
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _options(source, auth: str, **extra: str):
    text = source.connection_string + f";Authentication={auth}"
    return parse_options({**source.options(), "connectionString": text, **extra})


def test_the_keywords_and_what_the_native_client_gets():
    login = entra_login("Server=s;Authentication=activedirectorymsi;UID=abc")
    assert (login.method, login.uid, login.has_secret) == ("ActiveDirectoryMsi", "abc", False)
    sp = entra_login("Server=s;Authentication=ActiveDirectoryServicePrincipal;UID=app")
    assert sp.has_secret
    assert entra_login("Server=s;Authentication=SqlPassword;UID=u") is None
    assert entra_login("Server=s;UID=u") is None
    with pytest.raises(ValueError, match="Authentication='ActiveDirectoryInteractive' is not"):
        entra_login("Server=s;Authentication=ActiveDirectoryInteractive")
    assert (
        native_connection_string("Server=s;Authentication=ActiveDirectoryMsi;UID=x;Database=d")
        == "Server=s;Database=d"
    )


def test_managed_identity_logs_in_with_the_endpoints_token_and_refreshes_it(
    source, endpoint, monkeypatch
):
    source.emulator.add_access_token("token-1", login="sa")
    source.emulator.add_access_token("token-2", login="sa")
    options = _options(source, "ActiveDirectoryMsi")
    first = CdcClient(options)
    assert first.scalar("SELECT 1") == 1
    second = CdcClient(options)  # a new connection: the cached token, no request
    assert second.scalar("SELECT 2") == 2
    assert len(endpoint.calls) == 1
    assert endpoint.calls[0]["resource"] == "https://database.windows.net"
    assert endpoint.calls[0]["header"] == "local-header"
    # near expiry (within the refresh margin) the next connection asks again
    now = time.time()
    monkeypatch.setattr(entra, "_clock", lambda: now + 3600 - entra.REFRESH_MARGIN_S + 5)
    third = CdcClient(options)
    assert third.scalar("SELECT 3") == 3
    assert len(endpoint.calls) == 2
    for client in (first, second, third):
        client.close()


def test_a_token_the_server_refuses_is_a_login_error(source, endpoint):
    options = _options(source, "ActiveDirectoryManagedIdentity")  # token-1 was never added
    client = CdcClient(options)
    with pytest.raises(LoginError) as info:
        client.scalar("SELECT 1")
    assert "token-1" not in str(info.value)


class _RefusedError(Exception):
    pass


def test_a_wrong_secret_is_a_login_error_naming_the_keyword_never_the_secret(monkeypatch):
    import azure.identity

    class Credential:
        def __init__(self, tenant, client_id, secret):
            self.secret = secret

        def get_token(self, *scopes):
            raise _RefusedError(
                f"AADSTS7000215: Invalid client secret provided ({self.secret}). Trace ID: x"
            )

    monkeypatch.setattr(azure.identity, "ClientSecretCredential", Credential)
    monkeypatch.setenv("AZURE_TENANT_ID", "tenant-1")
    monkeypatch.setattr(entra, "_cache", {})
    options = parse_options(
        {
            "connectionString": "Server=s;Authentication=ActiveDirectoryServicePrincipal;UID=app",
            "password": SECRET,
            "captureInstance": "dbo_orders",
        }
    )
    with pytest.raises(LoginError) as info:
        connect_token(options)
    text = str(info.value)
    assert "Authentication=ActiveDirectoryServicePrincipal" in text
    assert "AADSTS7000215" in text
    assert SECRET not in text
    assert info.value.__cause__ is None
    assert info.value.__suppress_context__


def test_the_secret_stays_on_the_driver_and_the_tasks_carry_a_token(monkeypatch):
    from mssql_cdc.source.partitions import ChangeRange

    issued = []

    def fake_token(login, secret, *, min_valid_s=entra.REFRESH_MARGIN_S):
        issued.append((login.method, secret, min_valid_s))
        return "driver-token"

    monkeypatch.setattr(entra, "token", fake_token)
    options = parse_options(
        {
            "connectionString": "Server=s;Authentication=ActiveDirectoryServicePrincipal;UID=app;"
            f"PWD={SECRET}",
            "captureInstance": "dbo_orders",
            "password": SECRET,
        }
    )
    # what a reader pickled into Spark's tasks holds: no secret
    shipped_options = pickle.loads(pickle.dumps(options))
    assert shipped_options.password is None
    assert SECRET.encode() not in pickle.dumps(options.__getstate__()["password"] or "")
    # a SQL login keeps its password: its tasks log in with it
    sql_login = parse_options(
        {"connectionString": "Server=s", "captureInstance": "c", "password": "p"}
    )
    assert pickle.loads(pickle.dumps(sql_login)).password == "p"
    # the driver stamps each partition with a token valid for the task margin
    part = ChangeRange(0, "dbo_orders", "0x" + "0" * 20, "0x" + "0" * 20, ())
    (stamped,) = entra.ship_token(options, [part])
    assert stamped.access_token == "driver-token"
    assert "driver-token" not in repr(stamped)
    assert issued == [("ActiveDirectoryServicePrincipal", SECRET, entra.TASK_TOKEN_MIN_S)]
    # the task logs in with it, never asking the credential
    task = entra.with_task_token(shipped_options, stamped.access_token)
    assert connect_token(task) == "driver-token"
    assert len(issued) == 1
    # a task without one says why
    with pytest.raises(LoginError, match="this task has no token"):
        connect_token(shipped_options)
    # a method without a secret ships nothing: each node asks its own credential
    msi = parse_options(
        {
            "connectionString": "Server=s;Authentication=ActiveDirectoryMsi",
            "captureInstance": "dbo_orders",
        }
    )
    assert entra.ship_token(msi, [part]) == [part]
