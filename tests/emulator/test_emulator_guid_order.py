"""``uniqueidentifier`` order as SQL Server has it ("Comparing GUID and uniqueidentifier
Values", learn.microsoft.com/sql/connect/ado-net/sql/compare-guid-uniqueidentifier-values): the
last six bytes of the text decide first, then bytes 8-9, then the groups of bytes 6-7, 4-5 and
0-3, each of these three read right to left (they are stored little-endian). ORDER BY and the
comparisons ``<``, ``<=``, ``>``, ``>=`` follow it; a chunked snapshot's keyset bounds depend
on it. The emulator once ordered by the text."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mssql_cdc import _native


@pytest.fixture
def conn(sql_server):
    with _native.connect(
        f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=no",
        user=sql_server.user,
        password=sql_server.password,
    ) as c:
        yield c


def _guid(position: int) -> str:
    """The GUID whose text has byte ``position`` (0-15, left to right) = 01, the rest 00."""
    digits = ["00"] * 16
    digits[position] = "01"
    h = "".join(digits)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


#: ascending, by the position of the one set byte: what SQL Server returns for ORDER BY
SQL_SERVER_ORDER = [0, 1, 2, 3, 4, 5, 6, 7, 9, 8, 15, 14, 13, 12, 11, 10]


def test_order_by_and_comparisons_follow_sql_server(conn):
    conn.execute("CREATE TABLE dbo.g (id uniqueidentifier NOT NULL PRIMARY KEY, pos int)")
    conn.execute("INSERT INTO dbo.g VALUES " + ", ".join(f"('{_guid(p)}', {p})" for p in range(16)))
    rows = pa.table(conn.execute("SELECT pos FROM dbo.g ORDER BY id")).to_pylist()
    assert [r["pos"] for r in rows] == SQL_SERVER_ORDER
    down = pa.table(conn.execute("SELECT pos FROM dbo.g ORDER BY id DESC")).to_pylist()
    assert [r["pos"] for r in down] == SQL_SERVER_ORDER[::-1]
    # above the GUID with byte 9 set: every later one in SQL Server's order
    pivot = _guid(9)
    above = pa.table(
        conn.execute(
            "SELECT pos FROM dbo.g WHERE id > CAST(@P1 AS uniqueidentifier) ORDER BY id", [pivot]
        )
    ).to_pylist()
    assert [r["pos"] for r in above] == [8, 15, 14, 13, 12, 11, 10]
    at_most = pa.table(
        conn.execute(f"SELECT pos FROM dbo.g WHERE id <= '{pivot}' ORDER BY id")
    ).to_pylist()
    assert [r["pos"] for r in at_most] == [0, 1, 2, 3, 4, 5, 6, 7, 9]
    # the keyset seek a chunked snapshot plans with
    seek = pa.table(
        conn.execute(
            "SELECT id FROM dbo.g ORDER BY id OFFSET @P1 ROWS FETCH NEXT 1 ROWS ONLY", [10]
        )
    ).to_pylist()
    assert str(seek[0]["id"]).lower() == _guid(SQL_SERVER_ORDER[10])
