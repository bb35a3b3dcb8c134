"""Names that need brackets, and the small pieces of T-SQL around them, as SQL Server answers:

* ``sys.sp_cdc_enable_table`` names the capture instance ``<schema>_<table>``, and its change
  function ``cdc.fn_cdc_get_all_changes_<capture_instance>`` is bracket-quoted when that name is
  not a regular identifier (``cdc.[fn_cdc_get_all_changes_dbo_Order Details]``);
* ``CREATE SCHEMA [x]`` (2714 if it exists), the empty binary constant ``0x``, ``DATALENGTH``;
* ``Database=`` naming a missing database fails the login with 4060 then 18456, and ``USE`` of a
  missing database is error 911.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from mssql_cdc import _native
from mssql_cdc.errors import LoginError, SqlServerError

pytds = pytest.importorskip("pytds")

ALL = (
    "SELECT __$operation AS op, id, {column} AS v FROM cdc.{function}("
    "sys.fn_cdc_get_min_lsn(N'{instance}'), sys.fn_cdc_get_max_lsn(), N'all update old') "
    "ORDER BY __$start_lsn, __$seqval, __$operation"
)


def connect(server):
    return _native.connect(
        f"Server=tcp:{server.host},{server.port};Encrypt=no",
        user=server.user,
        password=server.password,
    )


def rows(conn, sql):
    result = conn.execute(sql)
    return [tuple(r.values()) for r in pa.table(result).to_pylist()] if result.has_rows else []


@pytest.fixture
def conn(sql_server):
    with connect(sql_server) as c:
        yield c


def enable(conn, schema, table):
    conn.execute("EXEC sys.sp_cdc_enable_db")
    conn.execute(
        f"EXEC sys.sp_cdc_enable_table @source_schema = N'{schema}', "
        f"@source_name = N'{table}', @role_name = NULL"
    )


@pytest.mark.parametrize(
    ("names", "column", "function"),
    [
        (("dbo", "Order Details"), "[Unit Price]", "[fn_cdc_get_all_changes_dbo_Order Details]"),
        (("Ventes", "Café"), "[Prix]", "[fn_cdc_get_all_changes_Ventes_Café]"),
        # é is a letter, so the unbracketed name is a regular identifier too
        (("Ventes", "Café"), "Prix", "fn_cdc_get_all_changes_Ventes_Café"),
        (("dbo", "a]b"), "[Unit Price]", "[fn_cdc_get_all_changes_dbo_a]]b]"),
    ],
)
def test_change_function_of_a_name_that_needs_brackets(conn, emulator, names, column, function):
    schema, table = names
    instance = f"{schema}_{table}"  # sys.sp_cdc_enable_table's default capture instance name
    price = column.strip("[]")
    quoted = "[" + table.replace("]", "]]") + "]"
    if schema != "dbo":
        conn.execute(f"CREATE SCHEMA [{schema}]")
    conn.execute(f"CREATE TABLE [{schema}].{quoted} (id int NOT NULL PRIMARY KEY, [{price}] money)")
    enable(conn, schema, table)
    assert rows(
        conn,
        "SELECT capture_instance FROM cdc.change_tables",
    ) == [(instance,)]
    conn.execute(f"INSERT INTO [{schema}].{quoted} VALUES (1, 2.5), (2, 3)")
    conn.execute(f"UPDATE [{schema}].{quoted} SET [{price}] = 4 WHERE id = 1")
    conn.execute(f"DELETE FROM [{schema}].{quoted} WHERE id = 2")
    emulator.scan()
    got = rows(conn, ALL.format(column=column, function=function, instance=instance))
    assert [(op, i, float(v)) for op, i, v in got] == [
        (2, 1, 2.5),
        (2, 2, 3.0),
        (3, 1, 2.5),
        (4, 1, 4.0),
        (1, 2, 3.0),
    ]
    min_lsn = conn.scalar(f"SELECT sys.fn_cdc_get_min_lsn(N'{instance}')")
    assert min_lsn is not None
    assert min_lsn != bytes(10)


def test_the_capture_instance_name_keeps_its_brackets_needed_in_the_change_table(conn, emulator):
    conn.execute("CREATE TABLE dbo.[Order Details] (id int NOT NULL PRIMARY KEY)")
    enable(conn, "dbo", "Order Details")
    conn.execute("INSERT INTO dbo.[Order Details] VALUES (7)")
    emulator.scan()
    assert rows(conn, "SELECT __$operation, id FROM cdc.[dbo_Order Details_CT]") == [(2, 7)]
    # an unbracketed name that is not a regular identifier is a syntax error, as in SQL Server
    with pytest.raises(SqlServerError):
        conn.execute(
            "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_Order Details("
            "sys.fn_cdc_get_min_lsn(N'dbo_Order Details'), sys.fn_cdc_get_max_lsn(), N'all')"
        )


def test_create_schema_bracketed_and_twice(conn, emulator):
    conn.execute("CREATE SCHEMA [Ventes]")
    conn.execute("CREATE SCHEMA [Schéma à part]")
    conn.execute("CREATE TABLE [Schéma à part].[t] (id int)")
    conn.execute("INSERT INTO [Schéma à part].[t] VALUES (1)")
    assert conn.scalar("SELECT COUNT(*) FROM [Schéma à part].t") == 1
    with pytest.raises(SqlServerError) as info:
        conn.execute("CREATE SCHEMA ventes")
    assert info.value.number == 2714
    assert "There is already an object named 'ventes' in the database." in str(info.value)


def test_empty_binary_constant(conn, emulator):
    assert conn.scalar("SELECT 0x") == b""
    assert conn.scalar("SELECT DATALENGTH(0x)") == 0
    assert conn.scalar("SELECT CASE WHEN 0x = 0x THEN 1 ELSE 0 END") == 1
    conn.execute("CREATE TABLE dbo.b (id int, v varbinary(10))")
    conn.execute("INSERT INTO dbo.b VALUES (1, 0x), (2, 0x01)")
    assert rows(conn, "SELECT id FROM dbo.b WHERE v = 0x") == [(1,)]
    # a bracketed [0x] stays a name
    assert conn.scalar("SELECT [0x] FROM (SELECT 5 AS [0x]) AS s") == 5
    assert conn.scalar("SELECT '0x'") == "0x"


def test_datalength_of_constants(conn, emulator):
    got = rows(
        conn,
        "SELECT DATALENGTH(N'ab') AS a, DATALENGTH('ab') AS b, DATALENGTH(N'\U0001f600') AS c, "
        "DATALENGTH(0x0102) AS d, DATALENGTH(CAST(1 AS bigint)) AS e, "
        "DATALENGTH(CAST(N'x' AS nchar(5))) AS f, DATALENGTH(NULL) AS g",
    )
    assert got == [(4, 2, 4, 2, 8, 10, None)]


def test_datalength_of_columns_and_its_type(conn, emulator):
    conn.execute(
        "CREATE TABLE dbo.d (a nvarchar(10), b varchar(10), c varbinary(10), d int, "
        "e nchar(3), f nvarchar(max), g decimal(12,2), h datetime2(7), i uniqueidentifier)"
    )
    conn.execute(
        "INSERT INTO dbo.d VALUES (N'\u00e9\U0001f600', '\u00e9', 0x, 1, N'a', N'abc', 1.5, "
        "'2020-01-01', NEWID()), (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
    )
    got = rows(
        conn,
        "SELECT DATALENGTH(a) AS a, DATALENGTH(b) AS b, DATALENGTH(c) AS c, DATALENGTH(d) AS d, "
        "DATALENGTH(x.e) AS e, DATALENGTH(f) AS f, DATALENGTH(g) AS g, DATALENGTH(h) AS h, "
        "DATALENGTH(i) AS i FROM dbo.d AS x "
        "ORDER BY d DESC",
    )
    # 2 UTF-16 units + 1 x 2 bytes; é is one byte in code page 1252; nchar(3) is 6 bytes
    assert got == [(6, 1, 0, 4, 6, 6, 9, 8, 16), (None,) * 9]
    result = conn.execute("SELECT DATALENGTH(a) AS a, DATALENGTH(f) AS f FROM dbo.d")
    schema = pa.table(result).schema
    assert schema.field("a").type == pa.int32()  # int
    assert schema.field("f").type == pa.int64()  # bigint for the (max) types


def test_login_to_a_missing_database_fails_with_4060_then_18456(sql_server):
    with pytest.raises(pytds.OperationalError) as info:
        pytds.connect(
            sql_server.host,
            port=sql_server.port,
            user=sql_server.user,
            password=sql_server.password,
            database="no_such_database_42",
        )
    text = str(info.value.args[0])
    assert 'Cannot open database "no_such_database_42" requested by the login.' in text
    assert "The login failed." in text
    assert f"Login failed for user '{sql_server.user}'." in text
    assert text.index("Cannot open database") < text.index("Login failed for user")
    with pytest.raises(LoginError) as native:
        _native.connect(
            f"Server=tcp:{sql_server.host},{sql_server.port};Database=no_such_database_42;"
            "Encrypt=no",
            user=sql_server.user,
            password=sql_server.password,
        )
    assert native.value.number == 4060


def test_login_to_an_existing_database_still_works(sql_server):
    for name in (sql_server.database, sql_server.database.upper(), "tempdb"):
        conn = pytds.connect(
            sql_server.host,
            port=sql_server.port,
            user=sql_server.user,
            password=sql_server.password,
            database=name,
        )
        conn.close()


def test_use_of_a_missing_database_is_error_911(conn):
    with pytest.raises(SqlServerError) as info:
        conn.execute("USE [no such database]")
    assert info.value.number == 911
    assert "Database 'no such database' does not exist." in str(info.value)
    conn.execute("USE master")
    assert conn.scalar("SELECT 1") == 1
