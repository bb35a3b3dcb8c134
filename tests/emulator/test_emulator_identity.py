"""Identity functions answer with the session's login and user, never the engine's."""

from __future__ import annotations

from mssql_cdc import _native


def test_login_and_user_names(sql_server, emulator):
    text = f"Server={sql_server.host},{sql_server.port};Encrypt=yes;TrustServerCertificate=yes"
    with _native.connect(text, user="sa", password=sql_server.password) as conn:
        assert conn.scalar("SELECT SUSER_NAME()") == "sa"
        assert conn.scalar("SELECT SUSER_SNAME()") == "sa"
        assert conn.scalar("SELECT USER_NAME()") == "dbo"
