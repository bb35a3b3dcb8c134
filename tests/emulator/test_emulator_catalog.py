"""The catalog views and metadata functions, each value as its Microsoft reference page states
it: sys.objects, sys.tables, sys.columns, sys.types, INFORMATION_SCHEMA.TABLES/COLUMNS,
OBJECT_ID, OBJECT_NAME, OBJECT_SCHEMA_NAME, SCHEMA_NAME, SCHEMA_ID, TYPE_NAME, TYPE_ID, DB_ID,
QUOTENAME and HAS_PERMS_BY_NAME, with the security model's grants, column GRANT/DENY and
metadata visibility."""

from __future__ import annotations

import pytest

from mssql_cdc import _native
from mssql_cdc.errors import SqlServerError

pytest.importorskip("duckdb")

PASSWORD = "Reader-Passw0rd!"
TABLE = (
    "CREATE TABLE dbo.t (id INT IDENTITY(1,1) NOT NULL PRIMARY KEY, name NVARCHAR(50) NOT NULL, "
    "code CHAR(3), price DECIMAL(10, 2), ts DATETIME2(3), d DATE, blob VARBINARY(MAX), "
    "note VARCHAR(20) COLLATE Latin1_General_CI_AS, f FLOAT, total AS (price + 1))"
)


def connect(emu, user="sa", password=None):
    return _native.connect(
        f"Server=tcp:{emu.host},{emu.port};Encrypt=no",
        user=user,
        password=password or emu.password,
    )


def rows(conn, sql, params=None):
    return conn.execute(sql, params).reader().read_all().to_pylist()


@pytest.fixture
def admin(emulator):
    conn = connect(emulator)
    rows(conn, TABLE)
    rows(conn, f"CREATE LOGIN reader WITH PASSWORD = '{PASSWORD}'")
    rows(conn, "CREATE USER reader FOR LOGIN reader")
    yield conn
    conn.close()


@pytest.fixture
def reader(emulator, admin):
    conn = connect(emulator, "reader", PASSWORD)
    yield conn
    conn.close()


def test_sys_columns_describes_each_column_as_the_page_does(admin):
    got = rows(
        admin,
        "SELECT c.name, c.column_id, c.system_type_id, c.user_type_id, c.max_length, "
        "c.precision, c.scale, c.collation_name, c.is_nullable, c.is_identity, c.is_computed, "
        "c.is_ansi_padded FROM sys.columns AS c WHERE c.object_id = OBJECT_ID(N'dbo.t') "
        "ORDER BY c.column_id",
    )
    latin = "SQL_Latin1_General_CP1_CI_AS"
    want = [
        # name, column_id, system type, user type, max_length, precision, scale, collation,
        # nullable, identity, computed, ANSI padded
        ("id", 1, 56, 56, 4, 10, 0, None, False, True, False, False),
        ("name", 2, 231, 231, 100, 0, 0, latin, False, False, False, True),
        ("code", 3, 175, 175, 3, 0, 0, latin, True, False, False, True),
        ("price", 4, 106, 106, 9, 10, 2, None, True, False, False, False),
        ("ts", 5, 42, 42, 7, 23, 3, None, True, False, False, False),
        ("d", 6, 40, 40, 3, 10, 0, None, True, False, False, False),
        ("blob", 7, 165, 165, -1, 0, 0, None, True, False, False, True),
        ("note", 8, 167, 167, 20, 0, 0, "Latin1_General_CI_AS", True, False, False, True),
        ("f", 9, 62, 62, 8, 53, 0, None, True, False, False, False),
    ]
    assert [tuple(r.values()) for r in got[:9]] == want
    # a computed column: the emulator does not infer its type (docs/emulator.md)
    assert (got[9]["name"], got[9]["is_computed"]) == ("total", True)


def test_sys_columns_has_the_documented_columns_in_order(admin):
    got = admin.execute("SELECT * FROM sys.columns WHERE 1 = 0").reader().schema.names
    assert got[:10] == [
        "object_id", "name", "column_id", "system_type_id", "user_type_id", "max_length",
        "precision", "scale", "collation_name", "is_nullable",
    ]  # fmt: skip
    assert len(got) == 40
    assert got[-1] == "is_dropped_ledger_column"


def test_sys_objects_lists_the_table_and_its_primary_key(admin):
    got = rows(
        admin,
        "SELECT name, type, type_desc, parent_object_id, is_ms_shipped, SCHEMA_NAME(schema_id) "
        "AS s FROM sys.objects ORDER BY object_id",
    )
    table_id = rows(admin, "SELECT OBJECT_ID('dbo.t') AS i")[0]["i"]
    assert got == [
        {"name": "t", "type": "U ", "type_desc": "USER_TABLE", "parent_object_id": 0,
         "is_ms_shipped": False, "s": "dbo"},
        {"name": "PK_t", "type": "PK", "type_desc": "PRIMARY_KEY_CONSTRAINT",
         "parent_object_id": table_id, "is_ms_shipped": False, "s": "dbo"},
    ]  # fmt: skip


def test_cdc_tables_are_shipped_and_tracked(admin):
    rows(admin, "EXEC sys.sp_cdc_enable_db")
    rows(
        admin,
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N't', "
        "@role_name = NULL",
    )
    shipped = rows(
        admin,
        "SELECT name FROM sys.objects WHERE is_ms_shipped = 1 AND type = 'U' ORDER BY name",
    )
    assert {r["name"] for r in shipped} == {
        "captured_columns", "change_tables", "ddl_history", "index_columns", "lsn_time_mapping",
        "dbo_t_CT",
    }  # fmt: skip
    assert rows(admin, "SELECT SCHEMA_ID('cdc') AS i")[0]["i"] == 5
    tracked = rows(admin, "SELECT name FROM sys.tables WHERE is_tracked_by_cdc = 1")
    assert tracked == [{"name": "t"}]


def test_sys_types_and_type_functions(admin):
    got = rows(
        admin,
        "SELECT name, system_type_id, user_type_id, max_length, precision, scale, is_nullable "
        "FROM sys.types WHERE name IN ('int', 'nvarchar', 'sysname', 'datetime2', 'decimal') "
        "ORDER BY user_type_id",
    )
    assert [tuple(r.values()) for r in got] == [
        ("datetime2", 42, 42, 8, 27, 7, True),
        ("int", 56, 56, 4, 10, 0, True),
        ("decimal", 106, 106, 17, 38, 38, True),
        ("nvarchar", 231, 231, 8000, 0, 0, True),
        ("sysname", 231, 256, 256, 0, 0, False),
    ]
    # "TYPE_NAME (Transact-SQL)", example: 36 is uniqueidentifier, 239 nchar
    assert rows(admin, "SELECT TYPE_NAME(36) AS a, TYPE_NAME(239) AS b, TYPE_ID('int') AS c") == [
        {"a": "uniqueidentifier", "b": "nchar", "c": 56}
    ]


def test_information_schema_tables_and_columns(admin):
    assert rows(admin, "SELECT * FROM INFORMATION_SCHEMA.TABLES") == [
        {"TABLE_CATALOG": "master", "TABLE_SCHEMA": "dbo", "TABLE_NAME": "t",
         "TABLE_TYPE": "BASE TABLE"}
    ]  # fmt: skip
    got = rows(
        admin,
        "SELECT COLUMN_NAME, ORDINAL_POSITION, IS_NULLABLE, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, "
        "CHARACTER_OCTET_LENGTH, NUMERIC_PRECISION, NUMERIC_PRECISION_RADIX, NUMERIC_SCALE, "
        "DATETIME_PRECISION, CHARACTER_SET_NAME FROM INFORMATION_SCHEMA.COLUMNS "
        "WHERE TABLE_NAME = 't' AND ORDINAL_POSITION < 10 ORDER BY ORDINAL_POSITION",
    )
    assert [tuple(r.values()) for r in got] == [
        ("id", 1, "NO", "int", None, None, 10, 10, 0, None, None),
        ("name", 2, "NO", "nvarchar", 50, 100, None, None, None, None, "UNICODE"),
        ("code", 3, "YES", "char", 3, 3, None, None, None, None, "iso_1"),
        ("price", 4, "YES", "decimal", None, None, 10, 10, 2, None, None),
        ("ts", 5, "YES", "datetime2", None, None, None, None, None, 3, None),
        ("d", 6, "YES", "date", None, None, None, None, None, 0, None),
        ("blob", 7, "YES", "varbinary", -1, -1, None, None, None, None, None),
        ("note", 8, "YES", "varchar", 20, 20, None, None, None, None, "iso_1"),
        ("f", 9, "YES", "float", None, None, 53, 2, None, None, None),
    ]


def test_object_functions(admin):
    got = rows(
        admin,
        "SELECT OBJECT_ID('dbo.t') AS a, OBJECT_ID('[dbo].[t]', 'U') AS b, OBJECT_ID('t') AS c, "
        "OBJECT_ID('master.dbo.t') AS d, OBJECT_ID('nosuchdb.dbo.t') AS e, "
        "OBJECT_ID('dbo.t', 'V') AS f, OBJECT_ID('#t') AS g, OBJECT_ID('dbo.PK_t', 'PK') AS h",
    )[0]
    assert got["a"] == got["b"] == got["c"] == got["d"]
    assert (got["e"], got["f"], got["g"]) == (None, None, None)
    assert got["h"] == got["a"] + 16
    names = rows(
        admin,
        "SELECT OBJECT_NAME(object_id) AS n, OBJECT_SCHEMA_NAME(object_id, DB_ID()) AS s, "
        "OBJECT_NAME(object_id, 99) AS other FROM sys.objects WHERE type = 'U'",
    )
    assert names == [{"n": "t", "s": "dbo", "other": None}]
    misc = rows(
        admin,
        "SELECT SCHEMA_NAME() AS a, SCHEMA_NAME(1) AS b, SCHEMA_NAME(999) AS c, "
        "SCHEMA_ID('sys') AS d, DB_ID() AS e, DB_ID('nosuch') AS f, DB_NAME(DB_ID()) AS g, "
        "QUOTENAME('a]b') AS h, QUOTENAME('x', '''') AS i, QUOTENAME('x', 'z') AS j",
    )
    assert misc == [
        {"a": "dbo", "b": "dbo", "c": None, "d": 4, "e": 5, "f": None, "g": "master",
         "h": "[a]]b]", "i": "'x'", "j": None}
    ]  # fmt: skip


def test_metadata_is_visible_only_with_a_permission(admin, reader):
    assert rows(reader, "SELECT name FROM sys.objects") == []
    assert rows(reader, "SELECT OBJECT_ID('dbo.t') AS i") == [{"i": None}]
    assert rows(reader, "SELECT COUNT(*) AS n FROM INFORMATION_SCHEMA.COLUMNS") == [{"n": 0}]
    rows(admin, "GRANT SELECT (id, name) ON dbo.t TO reader")  # a column grant makes it visible
    assert rows(reader, "SELECT name FROM sys.tables") == [{"name": "t"}]


def test_has_perms_by_name_follows_grants_denies_and_columns(admin, reader):
    query = (
        "SELECT HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'SELECT') AS t, "
        "HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'SELECT', 'name', 'COLUMN') AS c, "
        "HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'INSERT') AS i"
    )
    assert rows(admin, query) == [{"t": 1, "c": 1, "i": 1}]
    assert rows(reader, query) == [{"t": None, "c": None, "i": None}]  # cannot see it
    rows(admin, "GRANT SELECT ON dbo.t TO reader")
    assert rows(reader, query) == [{"t": 1, "c": 1, "i": 0}]
    rows(admin, "DENY SELECT ON dbo.t (name) TO reader")
    assert rows(reader, query) == [{"t": 1, "c": 0, "i": 0}]
    per_column = rows(
        reader,
        "SELECT name, HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'SELECT', name, 'COLUMN') AS can "
        "FROM sys.columns WHERE object_id = OBJECT_ID('dbo.t') AND column_id <= 3 "
        "ORDER BY column_id",
    )
    assert per_column == [
        {"name": "id", "can": 1}, {"name": "name", "can": 0}, {"name": "code", "can": 1}
    ]  # fmt: skip
    # a column GRANT beats a table DENY ("DENY Object Permissions (Transact-SQL)")
    rows(admin, "DENY SELECT ON dbo.t TO reader")
    rows(admin, "GRANT SELECT (code) ON dbo.t TO reader")
    got = rows(
        reader,
        "SELECT HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'SELECT') AS t, "
        "HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'SELECT', 'code', 'COLUMN') AS c",
    )
    assert got == [{"t": 0, "c": 1}]


def test_has_perms_by_name_answers_null_for_what_is_not_valid(admin):
    got = rows(
        admin,
        "SELECT HAS_PERMS_BY_NAME('dbo.nosuch', 'OBJECT', 'SELECT') AS a, "
        "HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'FLY') AS b, "
        "HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'ANY', 'name', 'COLUMN') AS c, "
        "HAS_PERMS_BY_NAME('dbo.t', 'NOSUCHCLASS', 'SELECT') AS d, "
        "HAS_PERMS_BY_NAME(NULL, NULL, 'VIEW SERVER STATE') AS e, "
        "HAS_PERMS_BY_NAME(DB_NAME(), 'DATABASE', 'ANY') AS f, "
        "HAS_PERMS_BY_NAME('dbo', 'SCHEMA', 'SELECT') AS g",
    )
    assert got == [{"a": None, "b": None, "c": None, "d": None, "e": 1, "f": 1, "g": 1}]
    with pytest.raises(SqlServerError) as refused:
        rows(admin, "SELECT HAS_PERMS_BY_NAME('reader', 'LOGIN', 'IMPERSONATE')")
    assert refused.value.number == 40517
    assert "LOGIN" in refused.value.message


def test_a_denied_column_is_error_230(admin, reader):
    rows(admin, "GRANT SELECT ON dbo.t TO reader")
    rows(admin, "DENY SELECT ON dbo.t (price) TO reader")
    assert rows(reader, "SELECT id, name FROM dbo.t") == []
    for sql in ("SELECT price FROM dbo.t", "SELECT * FROM dbo.t", "SELECT x.price FROM dbo.t x"):
        with pytest.raises(SqlServerError) as denied:
            rows(reader, sql)
        assert denied.value.number == 230
        assert denied.value.message == (
            "The SELECT permission was denied on the column 'price' of the object 't', "
            "database 'master', schema 'dbo'."
        )


def test_what_the_emulator_lacks_is_an_error(admin):
    cases = [
        ("SELECT * FROM sys.databases", 40517),  # only some of its columns
        ("SELECT * FROM sys.tables", 40517),
        ("SELECT * FROM sys.nosuch", 208),
        ("SELECT * FROM INFORMATION_SCHEMA.SCHEMATA", 208),
        ("SELECT TYPE_NAME(1, 2)", 174),
        ("SELECT QUOTENAME('a', '[', 'b')", 189),
    ]
    for sql, number in cases:
        with pytest.raises(SqlServerError) as failed:
            rows(admin, sql)
        assert failed.value.number == number, sql


def test_a_catalog_view_answers_every_shape_of_statement_whatever_columns_it_names(admin):
    """A catalog view holds only the columns its statement names (a database of hundreds of
    tables has thousands of sys.columns rows); the answers are those of the whole view."""
    where = "WHERE object_id = OBJECT_ID(N'dbo.t')"
    assert rows(admin, f"SELECT COUNT(*) AS n FROM sys.columns {where}") == [{"n": 10}]
    whole = rows(admin, f"SELECT * FROM sys.columns {where} ORDER BY column_id")
    qualified = rows(admin, f"SELECT c.* FROM sys.columns AS c {where} ORDER BY c.column_id")
    assert len(whole) == 10
    assert len(whole[0]) == 40  # SQL Server 2022's columns of sys.columns
    assert qualified == whole
    assert rows(
        admin,
        "SELECT t.name AS t, c.name AS c FROM sys.tables AS t JOIN sys.columns AS c "
        "ON c.object_id = t.object_id WHERE t.name = N't' AND c.column_id <= 2 "
        "ORDER BY c.column_id",
    ) == [{"t": "t", "c": "id"}, {"t": "t", "c": "name"}]
    assert rows(
        admin,
        "SELECT name FROM sys.tables AS t WHERE EXISTS (SELECT * FROM sys.columns AS c "
        "WHERE c.object_id = t.object_id AND c.is_computed = 1)",
    ) == [{"name": "t"}]
    with pytest.raises(SqlServerError) as caught:
        rows(admin, f"SELECT no_such_column FROM sys.columns {where}")
    assert caught.value.number == 207


def test_a_user_table_named_like_the_engines_relations_never_takes_a_views_place(admin):
    """A catalog view's rows reach the engine as a relation of its own; a table of the same
    name in dbo must not be read in its place."""
    rows(admin, "CREATE TABLE dbo.__mssql_cdc_rows_0 (c0 int, c1 int)")
    rows(admin, "INSERT INTO dbo.__mssql_cdc_rows_0 VALUES (42, 43)")
    names = [r["name"] for r in rows(admin, "SELECT name FROM sys.tables ORDER BY name")]
    assert "t" in names
    assert "__mssql_cdc_rows_0" in names
    assert rows(admin, "SELECT c0 FROM dbo.__mssql_cdc_rows_0") == [{"c0": 42}]
