"""The native client when the server fails: a connection dropped mid-result or between
requests raises ConnectionLostError without hanging; a deadlock victim is a SqlServerError 1205
and the connection stays usable (issue 4, proof 3). Needs the emulator's fault injection."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mssql_cdc import _native
from mssql_cdc.errors import ConnectionLostError, SqlServerError


@pytest.fixture
def connect(sql_server, emulator):
    def make():
        text = (
            f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=yes;TrustServerCertificate=yes"
        )
        return _native.connect(
            text, user=sql_server.user, password=sql_server.password, query_timeout=30
        )

    return make


@pytest.fixture
def wide(connect):
    """dbo.wide: 200 rows; a cross join gives 40,000."""
    with connect() as conn:
        conn.execute("CREATE TABLE dbo.wide (id int PRIMARY KEY)")
        values = ", ".join(f"({i})" for i in range(200))
        conn.execute(f"INSERT INTO dbo.wide (id) VALUES {values}")
    return "SELECT a.id AS a, b.id AS b FROM dbo.wide a CROSS JOIN dbo.wide b"


def test_drop_mid_result_raises_connection_lost(connect, emulator, wide):
    fault = emulator.drop_connection("mid_result", after_rows=5_000)
    conn = connect()
    reader = pa.RecordBatchReader.from_stream(conn.execute(wide, batch_rows=1_000))
    with pytest.raises(OSError, match="ECLOSED"):
        for _ in reader:
            pass
    assert fault.wait()
    with pytest.raises(ConnectionLostError, match="closed"):
        conn.execute("SELECT 1")
    conn.close()


def test_drop_between_requests_raises_connection_lost(connect, emulator):
    conn = connect()
    emulator.drop_connection("between_requests", spid=emulator.sessions()[-1], after_requests=1)
    assert conn.scalar("SELECT 1") == 1
    with pytest.raises(ConnectionLostError):
        conn.scalar("SELECT 2")
    conn.close()


def test_drop_during_login_raises_connection_lost(connect, emulator):
    emulator.drop_connection("login")
    with pytest.raises(ConnectionLostError):
        connect()
    with connect() as conn:  # the next login works
        assert conn.scalar("SELECT 3") == 3


def test_deadlock_victim_is_error_1205_and_the_connection_survives(connect, emulator):
    with connect() as conn:
        emulator.deadlock_victim(spid=emulator.sessions()[-1])
        with pytest.raises(SqlServerError) as info:
            conn.execute("SELECT 1")
        assert info.value.number == 1205
        assert info.value.severity == 13
        assert conn.scalar("SELECT 4") == 4
