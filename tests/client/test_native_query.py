"""The native TDS client's requests and results against the SQL Server stand-in: typed values,
sp_executesql parameters, bounded batches, server errors, cancel (issue 4)."""

from __future__ import annotations

import decimal

import pyarrow as pa
import pytest

from mssql_cdc import Lsn, _native
from mssql_cdc.errors import SqlServerError


@pytest.fixture
def conn(sql_server):
    text = (
        f"Server=tcp:{sql_server.host},{sql_server.port};Database={sql_server.database};"
        "Encrypt=yes;TrustServerCertificate=yes"
    )
    with _native.connect(text, user=sql_server.user, password=sql_server.password) as c:
        yield c


@pytest.fixture
def thousand(conn):
    """dbo.thousand holds ids 1..1000."""
    conn.execute("CREATE TABLE dbo.thousand (id int PRIMARY KEY, v nvarchar(20))")
    values = ", ".join(f"({i}, N'row {i}')" for i in range(1, 1001))
    result = conn.execute(f"INSERT INTO dbo.thousand (id, v) VALUES {values}")
    assert result.rows_affected == 1000
    assert not result.has_rows
    return "dbo.thousand"


def rows(result):
    return pa.table(result).to_pylist()


def test_typed_values_decode_exactly(conn):
    result = conn.execute(
        "SELECT CAST(255 AS tinyint) AS ti, CAST(-32768 AS smallint) AS si, "
        "CAST(2147483647 AS int) AS i, CAST(-9223372036854775808 AS bigint) AS bi, "
        "CAST(1 AS bit) AS b, CAST(12345.6789 AS decimal(9,4)) AS d, "
        "CAST(922337203685477.5807 AS money) AS m, N'Grüße 😀' AS nv, "
        "CONVERT(binary(10), '0x0000002A000001F40003', 1) AS lsn, "
        "CAST(NULL AS int) AS n"
    )
    table = pa.table(result)
    # tinyint is unsigned; the bronze type map widens it to SMALLINT (bronze-schema.md)
    assert table.schema.field("ti").type == pa.int16()
    assert table.schema.field("d").type == pa.decimal128(9, 4)
    assert table.schema.field("m").type == pa.decimal128(19, 4)
    assert table.to_pylist() == [
        {
            "ti": 255,
            "si": -32768,
            "i": 2147483647,
            "bi": -9223372036854775808,
            "b": True,
            "d": decimal.Decimal("12345.6789"),
            "m": decimal.Decimal("922337203685477.5807"),
            "nv": "Grüße 😀",
            "lsn": bytes.fromhex("0000002A000001F40003"),
            "n": None,
        }
    ]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (True, True),
        (-(2**63), -(2**63)),
        (2.5, 2.5),
        ("héllo 😀", "héllo 😀"),
        ("x" * 6000, "x" * 6000),  # longer than 4000 characters: nvarchar(max) as PLP
        (b"\x00\xff", b"\x00\xff"),
        (bytes(range(256)) * 40, bytes(range(256)) * 40),  # varbinary(max)
    ],
)
def test_parameters_round_trip(conn, value, expected):
    assert conn.scalar("SELECT @P1", [value]) == expected


def test_lsn_parameter_goes_as_binary_10(conn):
    lsn = Lsn.parse("0x0000002A000001F40003")
    assert conn.scalar("SELECT @P1", [lsn]) == bytes(lsn)
    assert conn.scalar("SELECT CONVERT(varchar(22), @P1, 1)", [lsn]) == str(lsn)


def test_bad_parameters_say_which(conn):
    with pytest.raises(TypeError, match="parameter 2 has type dict"):
        conn.execute("SELECT @P1, @P2", [1, {}])
    with pytest.raises(OverflowError, match="parameter 1 does not fit in bigint"):
        conn.execute("SELECT @P1", [2**63])


def test_batches_are_bounded_and_complete(conn, thousand):
    result = conn.execute(
        f"SELECT a.id AS a, b.id AS b FROM {thousand} a CROSS JOIN {thousand} b",
        batch_rows=10_000,
    )
    reader = pa.RecordBatchReader.from_stream(result)
    sizes = [batch.num_rows for batch in reader]
    assert sum(sizes) == 1_000_000
    assert max(sizes) <= 10_000
    assert len(sizes) >= 100
    assert conn.scalar("SELECT COUNT(*) FROM dbo.thousand") == 1000  # still usable


def test_batch_bytes_bounds_batches_too(conn, thousand):
    result = conn.execute(f"SELECT id, v FROM {thousand}", batch_bytes=2_000)
    sizes = [b.num_rows for b in pa.RecordBatchReader.from_stream(result)]
    assert sum(sizes) == 1000
    assert max(sizes) < 1000


def test_server_error_carries_its_fields_and_the_connection_survives(conn):
    with pytest.raises(SqlServerError) as info:
        conn.execute("SELECT * FROM dbo.missing_table")
    err = info.value
    assert err.number == 208
    assert err.severity == 16
    assert err.state is not None
    assert err.line == 1
    assert "missing_table" in err.message
    assert conn.scalar("SELECT 5") == 5


def test_cancel_mid_result_leaves_the_connection_usable(conn, thousand):
    result = conn.execute(
        f"SELECT a.id AS a, b.id AS b FROM {thousand} a CROSS JOIN {thousand} b", batch_rows=1000
    )
    reader = pa.RecordBatchReader.from_stream(result)
    first = reader.read_next_batch()
    assert first.num_rows == 1000
    conn.cancel()
    with pytest.raises(OSError, match="superseded"):
        reader.read_next_batch()
    assert conn.scalar("SELECT 11") == 11
    stats = conn.stats()
    assert stats["bytes_received"] > 0
    assert stats["decode_seconds"] > 0


def test_a_cancel_does_not_read_the_rest_of_a_large_result(conn, thousand):
    """SQL Server stops sending a result when the Attention comes (MS-TDS 2.2.1.7): cancelling
    ten million rows (about 110 MB of ROW tokens) after the first thousand reads a small part
    of them, what was already on its way, then the acknowledgement."""
    result = conn.execute(
        f"SELECT a.id AS a, b.id AS b FROM {thousand} a CROSS JOIN {thousand} b "
        f"CROSS JOIN (SELECT TOP 10 id FROM {thousand}) c",
        batch_rows=1000,
    )
    reader = pa.RecordBatchReader.from_stream(result)
    assert reader.read_next_batch().num_rows == 1000
    conn.cancel()
    assert conn.stats()["bytes_received"] < 10_000_000 * 11 // 4
    assert conn.scalar("SELECT 12") == 12


def test_a_new_execute_supersedes_an_unread_result(conn, thousand):
    old = conn.execute(f"SELECT id FROM {thousand}")
    assert conn.scalar("SELECT 3") == 3
    with pytest.raises(OSError, match="superseded"):
        pa.table(old)


def test_a_result_is_read_once(conn):
    result = conn.execute("SELECT 1 AS a")
    assert rows(result) == [{"a": 1}]
    with pytest.raises(ValueError, match="already consumed"):
        pa.table(result)


def test_statement_without_rows_gives_an_empty_stream(conn):
    result = conn.execute("CREATE TABLE dbo.empty_one (id int)")
    assert not result.has_rows
    assert pa.table(result).num_columns == 0


def test_closed_connection_refuses_work(conn):
    conn.close()
    conn.close()  # twice is fine
    with pytest.raises(ValueError, match="closed"):
        conn.execute("SELECT 1")
