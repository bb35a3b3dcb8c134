"""Each T-SQL expression the emulator computes answers with SQL Server's documented result
type and value.

The table is transcribed by hand from Microsoft's reference pages (each row names its page;
most values are the pages' own examples), not generated from the emulator. Each expression
is selected alone (``SELECT <expr> AS v``, over ``dbo.n`` when it reads a column); its type is
read from COLMETADATA through python-tds (:mod:`sqltypes`), its value as python-tds decodes it.
A row whose type is ``None`` checks the value only (the page does not give the type).
"""

from __future__ import annotations

import datetime as dt
import uuid
from decimal import Decimal

import pytest

import sqltypes

pytest.importorskip("pytds")
pytest.importorskip("duckdb")

from mssql_cdc.emulator import Emulator

ANY = object()  # a value not fixed by the page (the clock, NEWID)
UNREAD = object()  # a value the client cannot decode (only the type is compared)
DATEPART_VALUE = "'2007-10-30 12:15:32.1234567 +05:10'"

EXPRESSIONS: list[tuple[str, str, str | None, object]] = [
    # (page, expression, SQL type, value)
    # --- DATEPART: the page's table for '2007-10-30 12:15:32.1234567 +05:10' ---
    *[
        ("DATEPART (Transact-SQL)", f"DATEPART({part}, {DATEPART_VALUE})", "int", value)
        for part, value in [
            ("year", 2007),
            ("yyyy", 2007),
            ("yy", 2007),
            ("quarter", 4),
            ("qq", 4),
            ("q", 4),
            ("month", 10),
            ("mm", 10),
            ("m", 10),
            ("dayofyear", 303),
            ("dy", 303),
            ("y", 303),
            ("day", 30),
            ("dd", 30),
            ("d", 30),
            ("week", 44),
            ("wk", 44),
            ("ww", 44),
            ("weekday", 3),
            ("dw", 3),
            ("hour", 12),
            ("hh", 12),
            ("minute", 15),
            ("n", 15),
            ("second", 32),
            ("ss", 32),
            ("s", 32),
            ("millisecond", 123),
            ("ms", 123),
            ("microsecond", 123456),
            ("mcs", 123456),
            ("nanosecond", 123456700),
            ("ns", 123456700),
            ("tzoffset", 310),
            ("tz", 310),
            ("iso_week", 44),
            ("isowk", 44),
            ("isoww", 44),
        ]
    ],
    # week and weekday of 2007-04-21 under SET DATEFIRST 7 (us_english)
    ("DATEPART (Transact-SQL)", "DATEPART(week, '2007-04-21 ')", "int", 16),
    ("DATEPART (Transact-SQL)", "DATEPART(weekday, '2007-04-21 ')", "int", 7),
    (
        "DATEPART (Transact-SQL)",
        "DATEPART(tzoffset, '2007-05-10  00:00:01.1234567 +05:10')",
        "int",
        310,
    ),
    ("DATEPART (Transact-SQL)", "DATEPART(millisecond, '00:00:01.1234567')", "int", 123),
    ("DATEPART (Transact-SQL)", "DATEPART(microsecond, '00:00:01.1234567')", "int", 123456),
    ("DATEPART (Transact-SQL)", "DATEPART(nanosecond, '00:00:01.1234567')", "int", 123456700),
    # a literal without a date part takes the default 1900-01-01
    ("DATEPART (Transact-SQL)", "DATEPART(year, '12:10:30.123')", "int", 1900),
    ("DATEPART (Transact-SQL)", "DATEPART(month, '12:10:30.123')", "int", 1),
    ("DATEPART (Transact-SQL)", "DATEPART(day, '12:10:30.123')", "int", 1),
    ("DATEPART (Transact-SQL)", "DATEPART(dayofyear, '12:10:30.123')", "int", 1),
    ("DATEPART (Transact-SQL)", "DATEPART(weekday, '12:10:30.123')", "int", 2),
    ("DAY (Transact-SQL)", "DAY('2015-04-30 01:01:01.1234567')", "int", 30),
    ("MONTH (Transact-SQL)", "MONTH('2007-04-30T01:01:01.1234567 -07:00')", "int", 4),
    ("YEAR (Transact-SQL)", "YEAR('2010-04-30T01:01:01.1234567-07:00')", "int", 2010),
    # --- DATEDIFF: one boundary crossed between the two instants, for every part ---
    *[
        (
            "DATEDIFF (Transact-SQL)",
            f"DATEDIFF({part}, '2005-12-31 23:59:59.9999999', '2006-01-01 00:00:00.0000000')",
            "int",
            1,
        )
        for part in (
            "year",
            "quarter",
            "month",
            "dayofyear",
            "day",
            "week",
            "hour",
            "minute",
            "second",
            "millisecond",
        )
    ],
    (
        "DATEDIFF_BIG (Transact-SQL)",
        "DATEDIFF_BIG(millisecond, '2005-12-31 23:59:59.9999999', '2006-01-01 00:00:00.0000000')",
        "bigint",
        1,
    ),
    # --- DATEADD: a string is datetime; a month's end is kept ---
    (
        "DATEADD (Transact-SQL)",
        "DATEADD(month, 1, '2006-08-31')",
        "datetime",
        dt.datetime(2006, 9, 30),
    ),
    (
        "DATEADD (Transact-SQL)",
        "DATEADD(day, 1, CAST('2006-08-31' AS date))",
        "date",
        dt.date(2006, 9, 1),
    ),
    # --- date and time functions: return types ---
    ("SYSDATETIME (Transact-SQL)", "SYSDATETIME()", "datetime2(7)", ANY),
    ("SYSUTCDATETIME (Transact-SQL)", "SYSUTCDATETIME()", "datetime2(7)", ANY),
    ("SYSDATETIMEOFFSET (Transact-SQL)", "SYSDATETIMEOFFSET()", "datetimeoffset(7)", ANY),
    ("GETDATE (Transact-SQL)", "GETDATE()", "datetime", ANY),
    ("GETUTCDATE (Transact-SQL)", "GETUTCDATE()", "datetime", ANY),
    # --- CAST and CONVERT: the binary styles section's examples ---
    ("CAST and CONVERT (Transact-SQL)", "CONVERT(char(8), 0x4E616d65, 0)", "char(8)", "Name    "),
    ("CAST and CONVERT (Transact-SQL)", "CONVERT(char(8), 0x4E616d65, 1)", "char(8)", "0x4E616D"),
    ("CAST and CONVERT (Transact-SQL)", "CONVERT(char(8), 0x4E616d65, 2)", "char(8)", "4E616D65"),
    (
        "CAST and CONVERT (Transact-SQL)",
        "CONVERT(binary(8), 'Name', 0)",
        "binary(8)",
        b"Name\x00\x00\x00\x00",
    ),
    (
        "CAST and CONVERT (Transact-SQL)",
        "CONVERT(binary(4), '0x4E616D65', 1)",
        "binary(4)",
        b"Name",
    ),
    ("CAST and CONVERT (Transact-SQL)", "CONVERT(binary(4), '4E616D65', 2)", "binary(4)", b"Name"),
    # ... and a column: an LSN as text
    (
        "CAST and CONVERT (Transact-SQL)",
        "CONVERT(varchar(22), lsn, 1)",
        "varchar(22)",
        "0x0000002A000001F40003",
    ),
    (
        "CAST and CONVERT (Transact-SQL)",
        "CONVERT(varchar(22), lsn, 2)",
        "varchar(22)",
        "0000002A000001F40003",
    ),
    ("CAST and CONVERT (Transact-SQL)", "CONVERT(varchar(8), lsn, 1)", "varchar(8)", "0x000000"),
    # --- + (String concatenation): the type of higher precedence, the lengths added ---
    ("+ (String concatenation) (Transact-SQL)", "'book' + 'case'", "varchar(8)", "bookcase"),
    ("+ (String concatenation) (Transact-SQL): NULL yields NULL", "'book' + NULL", None, None),
    ("+ (String concatenation) (Transact-SQL)", "N'a' + 'bc'", "nvarchar(3)", "abc"),
    ("+ (String concatenation) (Transact-SQL)", "name + N' u'", "nvarchar(42)", "héllo u"),
    ("+ (String concatenation) (Transact-SQL)", "0xFF + 0xA5", "varbinary(2)", b"\xff\xa5"),
    # a lone surrogate: python-tds cannot decode the value, so only its type is read
    ("NCHAR (Transact-SQL)", "N'a' + NCHAR(55296)", "nvarchar(2)", UNREAD),
    # --- string functions (default collation SQL_Latin1_General_CP1_CI_AS) ---
    ("LEN (Transact-SQL): trailing spaces are not counted", "LEN('abc  ')", "int", 3),
    ("LEN (Transact-SQL)", "LEN(name)", "int", 5),
    ("DATALENGTH (Transact-SQL)", "DATALENGTH(N'abc')", "int", 6),
    (
        "CHARINDEX (Transact-SQL): a case-insensitive search",
        "CHARINDEX('TEST', 'This is a Test')",
        "int",
        11,
    ),
    ("CHARINDEX (Transact-SQL)", "CHARINDEX('is', 'This is a Test', 4)", "int", 6),
    (
        "REPLACE (Transact-SQL)",
        "REPLACE('abcdefghicde', 'cde', 'xxx')",
        "varchar(8000)",
        "abxxxfghixxx",
    ),
    ("SUBSTRING (Transact-SQL)", "SUBSTRING('abcdef', 2, 3)", "varchar(6)", "bcd"),
    ("LEFT (Transact-SQL)", "LEFT('abcdefg', 2)", "varchar(7)", "ab"),
    ("RIGHT (Transact-SQL)", "RIGHT('abcdefg', 2)", "varchar(7)", "fg"),
    ("UPPER (Transact-SQL)", "UPPER(name)", "nvarchar(40)", "HÉLLO"),
    ("LTRIM (Transact-SQL)", "LTRIM('     Five spaces')", "varchar(16)", "Five spaces"),
    ("QUOTENAME (Transact-SQL)", "QUOTENAME('abc[]def')", "nvarchar(258)", "[abc[]]def]"),
    (
        "CONCAT (Transact-SQL)",
        "CONCAT('Happy ', 'Birthday ', 11, '/', '25')",
        None,
        "Happy Birthday 11/25",
    ),
    # --- ISNULL, COALESCE, IIF, NULLIF ---
    (
        "ISNULL (Transact-SQL): the type of the check expression",
        "ISNULL(code, 'abcdef')",
        "char(3)",
        "abc",
    ),
    ("COALESCE (Transact-SQL)", "COALESCE(NULL, NULL, 'x')", "varchar(1)", "x"),
    ("IIF (Transact-SQL)", "IIF(45 > 40, 'TRUE', 'FALSE')", "varchar(5)", "TRUE"),
    ("NULLIF (Transact-SQL)", "NULLIF(4, 4)", "int", None),
    # --- arithmetic on the integer family; numeric functions ---
    ("/ (Division) (Transact-SQL): integers divide to a truncated integer", "7 / 2", "int", 3),
    ("/ (Division) (Transact-SQL)", "-7 / 2", "int", -3),
    ("% (Modulus) (Transact-SQL)", "7 % 3", "int", 1),
    ("+ (Addition) (Transact-SQL)", "1 + 2", "int", 3),
    ("ABS (Transact-SQL)", "ABS(-1.0)", "decimal(2,1)", Decimal("1.0")),
    ("ROUND (Transact-SQL)", "ROUND(123.9994, 3)", "decimal(7,4)", Decimal("123.9990")),
    ("ROUND (Transact-SQL)", "ROUND(123.9995, 3)", "decimal(7,4)", Decimal("124.0000")),
    ("FLOOR (Transact-SQL)", "FLOOR(123.45)", "decimal(5,0)", Decimal("123")),
    ("FLOOR (Transact-SQL)", "FLOOR(-123.45)", "decimal(5,0)", Decimal("-124")),
    ("CEILING (Transact-SQL)", "CEILING(123.45)", "decimal(5,0)", Decimal("124")),
    ("POWER (Transact-SQL): the type of the first argument", "POWER(2, 3)", "int", 8),
    ("NEWID (Transact-SQL)", "NEWID()", "uniqueidentifier", ANY),
    # --- aggregates over dbo.n (1, 2) ---
    ("COUNT (Transact-SQL)", "(SELECT COUNT(*) FROM dbo.n)", "int", 2),
    ("COUNT_BIG (Transact-SQL)", "(SELECT COUNT_BIG(*) FROM dbo.n)", "bigint", 2),
    ("SUM (Transact-SQL): int gives int", "(SELECT SUM(k) FROM dbo.n)", "int", 3),
    ("AVG (Transact-SQL): int gives int", "(SELECT AVG(k) FROM dbo.n)", "int", 1),
    ("MAX (Transact-SQL)", "(SELECT MAX(k) FROM dbo.n)", "int", 2),
    # --- metadata and server functions ---
    ("TYPE_NAME (Transact-SQL)", "TYPE_NAME(36)", "nvarchar(128)", "uniqueidentifier"),
    ("TYPE_NAME (Transact-SQL)", "TYPE_NAME(239)", "nvarchar(128)", "nchar"),
    ("SERVERPROPERTY (Transact-SQL)", "SERVERPROPERTY('ProductMajorVersion')", "sql_variant", "16"),
    (
        "SERVERPROPERTY (Transact-SQL)",
        "SERVERPROPERTY('ProductVersion')",
        "sql_variant",
        "16.0.4135.4",
    ),
    ("SERVERPROPERTY (Transact-SQL)", "SERVERPROPERTY('EngineEdition')", "sql_variant", 3),
    (
        "SERVERPROPERTY (Transact-SQL): an unknown property is NULL",
        "SERVERPROPERTY('NoSuch')",
        "sql_variant",
        None,
    ),
    (
        "sql_variant (Transact-SQL): CAST converts the base value",
        "CAST(SERVERPROPERTY('ProductMajorVersion') AS int)",
        "int",
        16,
    ),
    (
        "sql_variant (Transact-SQL): CAST converts the base value",
        "CONVERT(varchar(20), SERVERPROPERTY('EngineEdition'))",
        "varchar(20)",
        "3",
    ),
    ("@@TRANCOUNT (Transact-SQL)", "@@TRANCOUNT", "int", 0),
    ("sys.fn_cdc_increment_lsn (Transact-SQL)", "sys.fn_cdc_increment_lsn(lsn)", "binary(10)", ANY),
    ("sys.fn_cdc_decrement_lsn (Transact-SQL)", "sys.fn_cdc_decrement_lsn(lsn)", "binary(10)", ANY),
]


@pytest.fixture(scope="module")
def server():
    class Target:
        pass

    with Emulator() as emu:
        target = Target()
        target.host, target.port, target.user = emu.host, emu.port, "sa"
        target.password, target.database = emu.password, "master"
        with sqltypes.connect(target) as conn, conn.cursor() as cursor:
            cursor.execute(
                "CREATE TABLE dbo.n (k INT NOT NULL, name NVARCHAR(40), code CHAR(3), "
                "lsn BINARY(10))"
            )
            cursor.execute(
                "INSERT INTO dbo.n VALUES (1, N'héllo', NULL, 0x0000002A000001F40003), "
                "(2, NULL, NULL, NULL)"
            )
        yield target


@pytest.mark.parametrize(
    ("page", "expression", "sqltype", "value"), EXPRESSIONS, ids=[e[1] for e in EXPRESSIONS]
)
def test_the_documented_type_and_value(server, page, expression, sqltype, value):
    reads_a_column = any(c in expression for c in ("name", "code", "lsn")) and "(SELECT" not in (
        expression
    )
    sql = f"SELECT {expression} AS v" + (" FROM dbo.n WHERE k = 1" if reads_a_column else "")
    with sqltypes.connect(server) as conn, conn.cursor() as cur:
        if value is UNREAD:
            assert sqltypes.first_type(cur, sql) == sqltype, page
            return
        ((column,),) = sqltypes.columns(cur, sql)
        cur.execute(sql)
        (got,) = cur.fetchone()
    if sqltype is not None:
        assert column.type == sqltype, page
    if value is ANY:
        assert got is not None, page
    elif isinstance(value, uuid.UUID | dt.datetime):
        assert got == value, page
    else:
        assert got == value, page
        assert type(got) is type(value) or value is None, page
