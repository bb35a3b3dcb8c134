"""The native client's access-token login (LOGIN7 FEDAUTH) and routing ENVCHANGE (issue 4,
proof 3). Both need the emulator's control API."""

from __future__ import annotations

import pytest

from mssql_cdc import _native
from mssql_cdc.emulator import Emulator
from mssql_cdc.errors import LoginError

TOKEN = "eyJ0eXAiOiJKV1QifQ.test-token-for-the-emulator.signature"


def conn_str(host, port):
    return f"Server=tcp:{host},{port};Encrypt=yes;TrustServerCertificate=yes"


def test_access_token_login(sql_server, emulator):
    emulator.add_access_token(TOKEN, login="sa")
    with _native.connect(conn_str(sql_server.host, sql_server.port), access_token=TOKEN) as conn:
        assert conn.scalar("SELECT 42") == 42
        assert emulator.sessions()  # logged in


def test_unknown_access_token_is_a_login_error_that_hides_the_token(sql_server, emulator):
    with pytest.raises(LoginError) as info:
        _native.connect(conn_str(sql_server.host, sql_server.port), access_token="not-a-token")
    assert info.value.number == 18456
    assert "not-a-token" not in str(info.value)


def test_access_token_wins_over_a_password(sql_server, emulator):
    emulator.add_access_token(TOKEN, login="sa")
    text = conn_str(sql_server.host, sql_server.port) + ";UID=sa;PWD=wrong"
    with _native.connect(text, access_token=TOKEN) as conn:
        assert conn.scalar("SELECT 1") == 1


def test_routing_envchange_reconnects_to_the_named_server(sql_server, emulator):
    with Emulator() as target:
        target_conn_str = conn_str(target.host, target.port)
        with _native.connect(target_conn_str, user="sa", password=target.password) as c:
            c.execute("CREATE TABLE dbo.routed_here (id int)")
        emulator.route_next_login(target.host, target.port)
        # log in to the first server; it routes us to the second (same sa password there)
        text = conn_str(sql_server.host, sql_server.port)
        with _native.connect(text, user="sa", password=target.password) as conn:
            assert conn.scalar("SELECT COUNT(*) FROM dbo.routed_here") == 0
