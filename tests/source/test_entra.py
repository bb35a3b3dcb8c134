"""Entra ID logins named by ``Authentication=`` (mssql_cdc.source.entra, ADR 0189): tokens from
azure-identity (and msal under it) against a local token endpoint (tests/entra_endpoint.py), the
emulator's access-token login, refresh before expiry, the secret kept off the executors and out
of errors and logs."""

from __future__ import annotations

import logging
import pickle
import time
from collections.abc import Iterator

import pytest

from entra_endpoint import TokenEndpoint, throwaway_tls
from mssql_cdc.errors import LoginError
from mssql_cdc.options import parse_options
from mssql_cdc.source import entra
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.entra import connect_token, entra_login, native_connection_string

pytest.importorskip("azure.identity")
pytestmark = [
    # ActiveDirectoryPassword (ROPC): both libraries warn that Microsoft deprecated the flow
    pytest.mark.filterwarnings("ignore:UsernamePasswordCredential is deprecated"),
    pytest.mark.filterwarnings("ignore:This API has been deprecated for public client flows"),
]

SECRET = "Sup3r-Secret-Value"
APP_ID = "11111111-2222-3333-4444-555555555555"
USER = "reader@contoso.example"
TENANT = "contoso-tenant"
#: the resource azure-identity derives from entra.SCOPE for a managed identity endpoint
RESOURCE = "https://database.windows.net"


class Clock:
    """The product's clock (``entra._clock``) and the endpoint's, moved by the test."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    value = Clock()
    monkeypatch.setattr(entra, "_clock", value)
    return value


@pytest.fixture(autouse=True)
def _empty_token_cache(monkeypatch) -> None:
    monkeypatch.setattr(entra, "_cache", {})


@pytest.fixture
def identity_endpoint(monkeypatch, clock) -> Iterator[TokenEndpoint]:
    """A managed identity endpoint (App Service's protocol) the credential finds through
    ``IDENTITY_ENDPOINT`` and ``IDENTITY_HEADER``; tokens ``mi-<n>``."""
    with TokenEndpoint(prefix="mi", clock=clock) as server:
        monkeypatch.setenv("IDENTITY_ENDPOINT", server.identity_endpoint)
        monkeypatch.setenv("IDENTITY_HEADER", server.identity_header)
        yield server
    assert server.errors == []


@pytest.fixture
def authority(monkeypatch, tmp_path, clock) -> Iterator[TokenEndpoint]:
    """An authority on https://127.0.0.1:<port> named by ``AZURE_AUTHORITY_HOST`` (as for a
    sovereign or air-gapped cloud), its throwaway certificate trusted through
    ``REQUESTS_CA_BUNDLE`` (azure-core's transport, requests, reads it); tokens ``sp-<n>`` for
    ``APP_ID`` with ``SECRET`` and for ``USER`` with ``SECRET`` as password."""
    context, ca_file = throwaway_tls(tmp_path)
    with TokenEndpoint(
        tls=context, secrets={APP_ID: SECRET}, users={USER: SECRET}, prefix="sp", clock=clock
    ) as server:
        monkeypatch.setenv("AZURE_AUTHORITY_HOST", server.base)
        monkeypatch.setenv("AZURE_TENANT_ID", TENANT)
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca_file))
        for name in ("IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "IMDS_ENDPOINT"):
            monkeypatch.delenv(name, raising=False)
        yield server
    assert server.errors == []


@pytest.fixture
def skip_user_realm(monkeypatch) -> None:
    """For ``ActiveDirectoryPassword``: msal looks the user's realm up (federated or not) at
    ``https://<host>/common/userrealm/<user>`` built from the authority's host name without its
    port (msal 1.39, ``Authority.user_realm_discovery``), i.e. at 127.0.0.1:443, not at the
    endpoint. msal remembers a host that answered that lookup with 404 and asks it no more;
    the test starts it with 127.0.0.1 remembered (a real authority listens on 443)."""
    from msal.authority import Authority

    monkeypatch.setattr(Authority, "_domains_without_user_realm_discovery", {"127.0.0.1"})


def _options(source, auth: str, **extra: str):
    """The source's options with ``Authentication=auth`` and no SQL login (``user``,
    ``password``): the token logs in."""
    base = {k: v for k, v in source.options().items() if k not in ("user", "password")}
    text = source.connection_string + f";Authentication={auth}"
    return parse_options({**base, "connectionString": text, **extra})


def _service_principal(source, secret: str = SECRET):
    """A service principal's options as ``stream()`` leaves them: ``PWD`` moved to
    ``password``."""
    return _options(source, f"ActiveDirectoryServicePrincipal;UID={APP_ID}", password=secret)


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


@pytest.mark.parametrize(
    ("auth", "client_id"),
    [
        ("ActiveDirectoryMsi", None),
        ("ActiveDirectoryManagedIdentity", None),
        ("ActiveDirectoryMsi;UID=user-assigned-id", "user-assigned-id"),
    ],
    ids=["msi", "managed-identity", "user-assigned"],
)
def test_managed_identity_logs_in_with_the_token_the_endpoint_issued(
    source, emulator, identity_endpoint, auth, client_id
):
    emulator.add_access_token("mi-1", login="sa")
    options = _options(source, auth)
    first = CdcClient(options)
    assert first.scalar("SELECT 1") == 1
    (call,) = identity_endpoint.calls
    assert (call.method, call.path) == ("GET", "/msi/token")
    assert call.query["resource"] == RESOURCE  # SQL's: entra.SCOPE without "/.default"
    assert call.query["api-version"] == "2019-08-01"
    assert call.query.get("client_id") == client_id
    assert call.headers["x-identity-header"] == identity_endpoint.identity_header
    assert identity_endpoint.issued == ["mi-1"]
    second = CdcClient(options)  # a new connection: the cached token, no request
    assert second.scalar("SELECT 2") == 2
    assert len(identity_endpoint.calls) == 1
    for client in (first, second):
        client.close()


def test_a_token_the_server_does_not_know_is_a_login_error(source, emulator, identity_endpoint):
    emulator.add_access_token("some-other-token", login="sa")
    client = CdcClient(_options(source, "ActiveDirectoryManagedIdentity"))
    with pytest.raises(LoginError) as info:
        client.scalar("SELECT 1")
    assert identity_endpoint.issued == ["mi-1"]
    assert "mi-1" not in str(info.value)


@pytest.mark.parametrize(
    ("auth", "grant", "client_id"),
    [
        (f"ActiveDirectoryServicePrincipal;UID={APP_ID}", "client_credentials", APP_ID),
        (f"ActiveDirectoryPassword;UID={USER}", "password", entra._DRIVER_CLIENT_ID),
    ],
    ids=["service-principal", "password"],
)
@pytest.mark.usefixtures("skip_user_realm")
def test_a_secret_method_gets_its_token_from_the_authority_host_named(  # noqa: PLR0917
    source, emulator, authority, caplog, auth, grant, client_id
):
    for name in ("mssql_cdc", "azure", "msal", "urllib3"):
        caplog.set_level(logging.DEBUG, logger=name)
    emulator.add_access_token("sp-1", login="sa")
    client = CdcClient(_options(source, auth, password=SECRET))
    assert client.scalar("SELECT 1") == 1
    client.close()
    (discovery,) = [c for c in authority.calls if c.path.endswith("/openid-configuration")]
    assert discovery.path == f"/{TENANT}/v2.0/.well-known/openid-configuration"
    (token_call,) = [c for c in authority.calls if c.method == "POST"]
    assert token_call.path == f"/{TENANT}/oauth2/v2.0/token"
    form = token_call.form
    assert (form["grant_type"], form["client_id"]) == (grant, client_id)
    assert SECRET in (form.get("client_secret"), form.get("password"))
    # the scope SQL Server's tokens need (msal adds its reserved scopes to a user's grant)
    assert "https://database.windows.net/.default" in form["scope"].split()
    assert entra.SCOPE == "https://database.windows.net/.default"
    assert authority.issued == ["sp-1"]
    assert "sp-1" not in caplog.text
    assert SECRET not in caplog.text


def test_a_task_logs_in_with_the_token_the_driver_got_from_the_authority(
    source, emulator, authority
):
    """A stream's path for a method with a secret: the driver stamps the partitions with a
    token from the authority; the task, whose options lost the secret in the pickle, logs in
    with it and never asks the authority."""
    from mssql_cdc.source.partitions import ChangeRange

    emulator.add_access_token("sp-1", login="sa")
    options = _service_principal(source)
    part = ChangeRange(0, "dbo_orders", "0x" + "0" * 20, "0x" + "0" * 20, ())
    (stamped,) = pickle.loads(pickle.dumps(entra.ship_token(options, [part])))
    task_options = pickle.loads(pickle.dumps(options))
    assert task_options.password is None
    client = CdcClient(entra.with_task_token(task_options, stamped.access_token))
    assert client.scalar("SELECT 1") == 1
    client.close()
    assert authority.issued == ["sp-1"]
    assert len([c for c in authority.calls if c.method == "POST"]) == 1


def test_the_token_cache_tells_clouds_apart_and_the_public_cloud_is_discovered(monkeypatch):
    login = entra.EntraLogin("ActiveDirectoryServicePrincipal", APP_ID)
    monkeypatch.setenv("AZURE_TENANT_ID", TENANT)
    monkeypatch.delenv("AZURE_AUTHORITY_HOST", raising=False)
    public = entra._key(login, SECRET)
    assert entra._authority_kwargs() == {}  # azure-identity's and msal's defaults
    monkeypatch.setenv("AZURE_AUTHORITY_HOST", "https://login.microsoftonline.us")
    assert entra._key(login, SECRET) != public
    assert entra._authority_kwargs() == {"disable_instance_discovery": True}
    assert SECRET not in public


def _messages(exc: BaseException | None) -> Iterator[str]:
    """The messages of ``exc`` and of every exception chained to it (cause or context)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield str(exc)
        yield repr(exc)
        exc = exc.__cause__ or exc.__context__


@pytest.mark.parametrize(
    ("auth", "code"),
    [
        (f"ActiveDirectoryServicePrincipal;UID={APP_ID}", "AADSTS7000215"),
        (f"ActiveDirectoryPassword;UID={USER}", "AADSTS50126"),
    ],
    ids=["service-principal", "password"],
)
@pytest.mark.usefixtures("skip_user_realm")
def test_a_wrong_secret_is_a_login_error_naming_the_keyword_never_the_secret(
    source, authority, caplog, auth, code
):
    for name in ("mssql_cdc", "azure", "msal", "urllib3"):
        caplog.set_level(logging.DEBUG, logger=name)
    wrong = "Wr0ng-Secret-Value"
    with pytest.raises(LoginError) as info:
        CdcClient(_options(source, auth, password=wrong)).scalar("SELECT 1")
    (token_call,) = [c for c in authority.calls if c.method == "POST"]
    assert wrong in (token_call.form.get("client_secret"), token_call.form.get("password"))
    assert authority.issued == []
    text = str(info.value)
    assert f"Authentication={auth.split(';')[0]}" in text
    assert code in text
    shown = [*_messages(info.value), caplog.text]
    shown += [r.getMessage() for r in caplog.records] + [r.exc_text or "" for r in caplog.records]
    assert [r for r in caplog.records if r.name.startswith("msal")]  # msal did log at DEBUG
    for secret in (wrong, repr(wrong)):
        assert not [s for s in shown if secret in s]


@pytest.mark.parametrize("method", ["ActiveDirectoryMsi", "ActiveDirectoryServicePrincipal"])
def test_a_short_lived_token_is_fetched_again_before_it_expires(
    source, emulator, clock, request, method
):
    """Tokens live 10 minutes; the product renews them 5 minutes (``REFRESH_MARGIN_S``) before
    they expire. The clock is the product's (``entra._clock``) and the endpoint's: no sleep."""
    if method == "ActiveDirectoryMsi":
        endpoint, prefix = request.getfixturevalue("identity_endpoint"), "mi"
        options = _options(source, method)
    else:
        endpoint, prefix = request.getfixturevalue("authority"), "sp"
        options = _service_principal(source)
    endpoint.lifetime = 600
    emulator.add_access_token(f"{prefix}-1", login="sa")
    emulator.add_access_token(f"{prefix}-2", login="sa")

    def connect() -> None:
        client = CdcClient(options)
        assert client.scalar("SELECT 1") == 1
        client.close()

    connect()
    assert endpoint.issued == [f"{prefix}-1"]
    # (the libraries count whole seconds: 10 s either side of the margin)
    clock.now += 600 - entra.REFRESH_MARGIN_S - 10  # 310 s left: still good
    connect()
    assert endpoint.issued == [f"{prefix}-1"]
    clock.now += 20  # 290 s left: within the margin, asked again
    emulator.server.access_tokens.pop(f"{prefix}-1")  # the server refuses the old one now
    connect()
    assert endpoint.issued == [f"{prefix}-1", f"{prefix}-2"]
    connect()  # the new one is cached in turn
    assert endpoint.issued == [f"{prefix}-1", f"{prefix}-2"]


class _RefusedError(Exception):
    pass


def test_a_provider_text_that_echoes_the_secret_is_not_shown(monkeypatch):
    import azure.identity

    class Credential:
        def __init__(self, tenant, client_id, secret, **kwargs):
            self.secret = secret

        def get_token(self, *scopes):
            raise _RefusedError(
                f"AADSTS7000215: Invalid client secret provided ({self.secret}). Trace ID: x"
            )

    monkeypatch.setattr(azure.identity, "ClientSecretCredential", Credential)
    monkeypatch.setenv("AZURE_TENANT_ID", "tenant-1")
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
