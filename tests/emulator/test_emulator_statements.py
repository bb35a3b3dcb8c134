"""Statements the session answers itself: identity functions with the session's login and user
(never the engine's), and SQL that cannot be parsed as an error, not a dropped connection."""

from __future__ import annotations

import pytest

from mssql_cdc import _native
from mssql_cdc.errors import SqlServerError


def test_login_and_user_names(sql_server, emulator):
    text = f"Server={sql_server.host},{sql_server.port};Encrypt=yes;TrustServerCertificate=yes"
    with _native.connect(text, user="sa", password=sql_server.password) as conn:
        assert conn.scalar("SELECT SUSER_NAME()") == "sa"
        assert conn.scalar("SELECT SUSER_SNAME()") == "sa"
        assert conn.scalar("SELECT USER_NAME()") == "dbo"


def test_unparseable_sql_is_an_error_and_the_session_survives(sql_server, emulator):
    text = f"Server={sql_server.host},{sql_server.port};Encrypt=yes;TrustServerCertificate=yes"
    with _native.connect(text, user="sa", password=sql_server.password) as conn:
        for sql, number in [
            ("SELECT 'abc", 105),
            ("SELECT [abc", 105),
            ("SELECT 1 /* abc", 105),
            ("SELECT " + "(" * 2000 + "1" + ")" * 2000, 191),
        ]:
            with pytest.raises(SqlServerError) as info:
                conn.execute(sql)
            assert info.value.number == number
        assert conn.scalar("SELECT 5") == 5


def test_a_variable_declared_without_a_value_is_null(sql_server, emulator):
    """``DECLARE @x int`` holds NULL until set (it closed the connection before)."""
    text = f"Server={sql_server.host},{sql_server.port};Encrypt=yes;TrustServerCertificate=yes"
    with _native.connect(text, user="sa", password=sql_server.password) as conn:
        assert conn.scalar("DECLARE @x int; SELECT CASE WHEN @x IS NULL THEN 1 ELSE 0 END") == 1
        assert conn.scalar("DECLARE @y int; SET @y = 7; SELECT @y + 1") == 8
