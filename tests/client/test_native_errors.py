"""Errors of the native client arrive as mssql_cdc.errors classes with their data: a refused
login keeps every field of the server's ERROR token, and a failure while rows are read through
Result.reader() or iteration is the typed class, not pyarrow's OSError text."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mssql_cdc import _native
from mssql_cdc.errors import ConnectionLostError, LoginError, SqlServerError


def conn_str(sql_server) -> str:
    return (
        f"Server=tcp:{sql_server.host},{sql_server.port};Database={sql_server.database};"
        "Encrypt=yes;TrustServerCertificate=yes"
    )


@pytest.fixture
def connect(sql_server):
    def make():
        return _native.connect(
            conn_str(sql_server), user=sql_server.user, password=sql_server.password
        )

    return make


@pytest.fixture
def numbers(connect):
    """dbo.numbers: 200 rows; a cross join gives 40,000."""
    with connect() as conn:
        conn.execute("CREATE TABLE dbo.numbers (id int PRIMARY KEY)")
        conn.execute("INSERT INTO dbo.numbers VALUES " + ", ".join(f"({i})" for i in range(200)))
    return "SELECT a.id AS a, b.id AS b FROM dbo.numbers a CROSS JOIN dbo.numbers b"


def test_a_refused_login_keeps_every_field_of_the_servers_error(sql_server):
    with pytest.raises(LoginError) as info:
        _native.connect(conn_str(sql_server), user=sql_server.user, password="wrong-pw-4711")
    err = info.value
    assert (err.number, err.state, err.severity, err.line) == (18456, 1, 14, 1)
    assert err.message == f"Login failed for user '{sql_server.user}'."
    assert err.server  # the server's name, as the token gave it
    assert err.procedure is None
    assert str(err) == f"[18456] Login failed for user '{sql_server.user}'."
    assert "wrong-pw-4711" not in str(err) + repr(err)


def test_reader_reads_the_rows_the_c_stream_reads(connect, numbers):
    with connect() as conn:
        via_reader = conn.execute(numbers, batch_rows=7_000).reader().read_all()
        via_stream = pa.table(conn.execute(numbers, batch_rows=7_000))
        assert via_reader.num_rows == 40_000
        assert via_reader.equals(via_stream)
        batches = list(conn.execute(numbers, batch_rows=7_000))
        assert [b.num_rows for b in batches] == [7_000] * 5 + [5_000]
        empty = conn.execute("CREATE TABLE dbo.nothing (id int)").reader().read_all()
        assert (empty.num_rows, empty.num_columns) == (0, 0)


def test_a_drop_mid_result_is_connection_lost_through_the_reader(connect, emulator, numbers):
    fault = emulator.drop_connection("mid_result", after_rows=5_000)
    conn = connect()
    reader = conn.execute(numbers, batch_rows=1_000).reader()
    with pytest.raises(ConnectionLostError) as info:
        for _ in reader:
            pass
    assert fault.wait()
    assert isinstance(info.value, OSError)  # a ConnectionError, as before
    assert info.value.number is None
    conn.close()


def test_a_drop_mid_result_is_connection_lost_through_iteration(connect, emulator, numbers):
    fault = emulator.drop_connection("mid_result", after_rows=5_000)
    conn = connect()
    seen: list[int] = []
    with pytest.raises(ConnectionLostError):
        seen.extend(batch.num_rows for batch in conn.execute(numbers, batch_rows=1_000))
    assert fault.wait()
    assert 0 < sum(seen) < 40_000
    conn.close()


def test_a_superseded_result_read_by_reader_is_a_value_error(connect, numbers):
    with connect() as conn:
        old = conn.execute(numbers)
        assert conn.scalar("SELECT 3") == 3
        with pytest.raises(ValueError, match="superseded"):
            old.reader().read_all()


def test_a_result_read_by_reader_is_read_once(connect):
    with connect() as conn:
        result = conn.execute("SELECT 1 AS a")
        assert result.reader().read_all().to_pylist() == [{"a": 1}]
        with pytest.raises(ValueError, match="already consumed"):
            pa.table(result)
        streamed = conn.execute("SELECT 2 AS a")
        assert pa.table(streamed).to_pylist() == [{"a": 2}]
        with pytest.raises(ValueError, match="already consumed"):
            streamed.reader()
        with pytest.raises(ValueError, match="already consumed"):
            iter(streamed)


def test_a_server_error_at_execute_keeps_its_fields(connect):
    with connect() as conn, pytest.raises(SqlServerError) as info:
        conn.execute("SELECT 10 / 0 AS x").reader().read_all()
    assert (info.value.number, info.value.severity) == (8134, 16)
