"""``accessTokenProvider``: the reader asks for a fresh Entra ID access token for each new
connection, so a long stream outlives any one token (issue 17). The emulator accepts the tokens
it is given and forgets one to stand for its expiry."""

from __future__ import annotations

import itertools

import pytest

from mssql_cdc.options import parse_options
from mssql_cdc.source import tokens
from mssql_cdc.source.client import CdcClient

_serial = itertools.count(1)
ISSUED: list[str] = []
EMULATOR: list[object] = []


def next_token() -> str:
    """The provider under test: a new token each call, registered with the emulator."""
    token = f"eyJ.fresh-token-{next(_serial)}.sig"
    EMULATOR[0].add_access_token(token, login="sa")  # type: ignore[attr-defined]
    ISSUED.append(token)
    return token


def failing() -> str:
    raise RuntimeError("token service down: secret-detail-123")


def not_text() -> object:
    return 42


NOT_CALLABLE = "x"


@pytest.fixture
def options(sql_server, emulator):
    EMULATOR[:] = [emulator]
    ISSUED.clear()
    text = f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=yes;TrustServerCertificate=yes"

    def make(**extra: str):
        return parse_options({"connectionString": text, "captureInstance": "dbo_x", **extra})

    return make


def test_each_new_connection_takes_a_fresh_token(options, emulator):
    client = CdcClient(options(accessTokenProvider=f"{__name__}:next_token"))
    assert client.scalar("SELECT 1") == 1
    assert len(ISSUED) == 1
    assert client.scalar("SELECT 2") == 2  # the same connection: no new token
    assert len(ISSUED) == 1
    client.close()
    emulator.server.access_tokens.pop(ISSUED[0])  # the first token expired
    assert client.scalar("SELECT 3") == 3  # a new connection, a new token
    assert len(ISSUED) == 2
    client.close()


def test_the_provider_wins_over_a_fixed_token(options):
    client = CdcClient(
        options(accessToken="expired-token", accessTokenProvider=f"{__name__}:next_token")
    )
    assert client.scalar("SELECT 4") == 4
    client.close()


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("no_such_module_xyz:f", "cannot be loaded: ModuleNotFoundError"),
        (f"{__name__}:missing", "cannot be loaded: AttributeError"),
        (f"{__name__}:NOT_CALLABLE", "is not callable"),
        (f"{__name__}:failing", r"failed \(RuntimeError\)"),
        (f"{__name__}:not_text", "returned int, not the token text"),
    ],
)
def test_a_bad_provider_is_a_value_error_naming_the_option(options, spec, match):
    client = CdcClient(options(accessTokenProvider=spec))
    with pytest.raises(ValueError, match=match) as info:
        client.scalar("SELECT 1")
    assert "accessTokenProvider" in str(info.value)
    assert "secret-detail" not in str(info.value)
    assert info.value.__cause__ is None
    assert info.value.__context__ is None or info.value.__suppress_context__


def test_azure_identity_is_resolved_lazily(monkeypatch):
    calls = []

    class Credential:
        def get_token(self, scope):
            calls.append(scope)
            return type("T", (), {"token": "az-token"})()

    import azure.identity

    monkeypatch.setattr(azure.identity, "DefaultAzureCredential", Credential)
    monkeypatch.setattr(tokens, "_resolved", {})
    assert tokens.access_token("azure-identity", None) == "az-token"
    assert tokens.access_token("azure-identity", None) == "az-token"
    assert calls == [tokens.AZURE_SCOPE] * 2
