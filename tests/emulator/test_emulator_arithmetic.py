"""Expressions where the emulator once answered differently from SQL Server, each as SQL Server
answers ("/ (Divide)", "NCHAR", "Constants", "decimal and numeric" in the Transact-SQL docs):

* integer division truncates toward zero (7 / 2 = 3, -7 / 2 = -3) and keeps the integer type;
* a zero divisor is error 8134, for integers, decimals and floats, also for ``%``;
* a parameter value holding NUL comes back whole (it was inlined as a literal: error 102);
* ``NCHAR(55296)`` is one character, the lone surrogate U+D800;
* a decimal constant keeps every digit: ``CAST(-0.000...01 AS decimal(38,38))`` works.
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from mssql_cdc import _native
from mssql_cdc.errors import SqlServerError


@pytest.fixture
def conn(sql_server):
    with _native.connect(
        f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=no",
        user=sql_server.user,
        password=sql_server.password,
    ) as c:
        yield c


def one_row(conn, sql, params=None):
    table = pa.table(conn.execute(sql, params))
    return table.schema, next(iter(table.to_pylist()))


def test_integer_division_truncates_toward_zero_and_stays_int(conn):
    schema, row = one_row(
        conn,
        "SELECT 7 / 2 AS a, -7 / 2 AS b, 7 / -2 AS c, 7 % 2 AS d, -7 % 2 AS e, "
        "CAST(7 AS bigint) / 2 AS f, CAST(7 AS tinyint) / CAST(2 AS smallint) AS g",
    )
    assert row == {"a": 3, "b": -3, "c": -3, "d": 1, "e": -1, "f": 3, "g": 3}
    assert schema.field("a").type == pa.int32()
    assert schema.field("f").type == pa.int64()
    assert schema.field("g").type == pa.int16()


def test_integer_division_of_columns(conn):
    conn.execute("CREATE TABLE dbo.q (a int, b smallint)")
    conn.execute("INSERT INTO dbo.q VALUES (7, 2), (-9, 4)")
    got = pa.table(conn.execute("SELECT a / b AS x, a % b AS y FROM dbo.q ORDER BY a"))
    assert got.to_pylist() == [{"x": -2, "y": -1}, {"x": 3, "y": 1}]
    assert got.schema.field("x").type == pa.int32()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1 / 0",
        "SELECT 1 % 0",
        "SELECT 1.5 / 0",
        "SELECT CAST(1 AS float) / 0",
        "SELECT a / b FROM dbo.z",
        "SELECT a % b FROM dbo.z",
        "SELECT CAST(a AS decimal(10,2)) / b FROM dbo.z",
    ],
)
def test_divide_by_zero_is_error_8134(conn, sql):
    conn.execute("CREATE TABLE dbo.z (a int, b int)")
    conn.execute("INSERT INTO dbo.z VALUES (4, 2), (1, 0)")
    with pytest.raises(SqlServerError) as info:
        conn.execute(sql)
    assert info.value.number == 8134
    assert "Divide by zero error encountered." in str(info.value)
    assert conn.scalar("SELECT 1") == 1  # the session goes on


def test_null_divided_by_a_column_is_null_not_an_error(conn):
    conn.execute("CREATE TABLE dbo.w (a int, b int)")
    conn.execute("INSERT INTO dbo.w VALUES (NULL, 5)")
    assert conn.scalar("SELECT a / b FROM dbo.w") is None


@pytest.mark.parametrize("value", ["a\x00b", "\x00", "x\x00\x00y\x00"])
def test_parameter_holding_nul_comes_back_whole(conn, value):
    assert conn.scalar("SELECT @P1", [value]) == value
    conn.execute("CREATE TABLE dbo.s (id int, v nvarchar(20))")
    conn.execute("INSERT INTO dbo.s VALUES (1, @P1)", [value])
    assert conn.scalar("SELECT v FROM dbo.s WHERE id = 1") == value
    assert conn.scalar("SELECT id FROM dbo.s WHERE v = @P1", [value]) == 1


def test_nchar_of_a_surrogate_code_unit_is_one_character(sql_server):
    pytds = pytest.importorskip("pytds")
    conn = pytds.connect(
        sql_server.host,
        port=sql_server.port,
        user=sql_server.user,
        password=sql_server.password,
    )
    cur = conn.cursor()
    cur.execute(
        "SELECT NCHAR(65) AS a, NCHAR(233) AS b, NCHAR(70000) AS c, NCHAR(NULL) AS d, "
        "DATALENGTH(NCHAR(55296)) AS e"
    )
    assert cur.fetchall() == [("A", "\u00e9", None, None, 2)]
    # the value goes out as the UTF-16 code unit 0xD800, which no strict decoder accepts: read
    # it as raw bytes through a binary cast
    cur.execute("SELECT CAST(NCHAR(55296) AS varbinary(10))")
    assert cur.fetchall() == [(b"\x00\xd8",)]
    conn.close()


def test_nchar_of_a_surrogate_reaches_the_client_as_that_code_unit(conn):
    # the native client replaces a lone surrogate with U+FFFD when it decodes UTF-16
    assert conn.scalar("SELECT NCHAR(55296)") in ("\ud800", "\ufffd")
    _schema, row = one_row(conn, "SELECT NCHAR(55296) AS s")
    assert len(row["s"]) == 1


def test_decimal_constants_keep_every_digit(conn):
    tiny = "0.00000000000000000000000000000000000001"  # 38 decimals
    assert conn.scalar(f"SELECT CAST(-{tiny} AS decimal(38,38))") == Decimal("-" + tiny)
    assert conn.scalar(f"SELECT {tiny}") == Decimal(tiny)
    big = "12345678901234567890.123456789012345678"  # 38 digits
    assert conn.scalar(f"SELECT {big}") == Decimal(big)
    schema, _ = one_row(conn, f"SELECT {tiny} AS t, 0.5 AS h, 3000000000 AS b")
    assert schema.field("t").type == pa.decimal128(38, 38)
    assert schema.field("h").type == pa.decimal128(1, 1)
    assert schema.field("b").type == pa.decimal128(10, 0)  # past int: numeric, not bigint
    with pytest.raises(SqlServerError) as info:
        conn.execute("SELECT 1" + "0" * 38)
    assert info.value.number == 1007
