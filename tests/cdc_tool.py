"""The statements a CDC tool sends to SQL Server, with the answers SQL Server documents: run
by each client of the driver suite (tests/emulator/test_drivers_*.py) against the emulator.

:func:`prepare` makes the scenario on an emulator (a table under CDC with three captured
changes, scanned) and returns the :class:`Statement` list: catalog views and functions, the
CDC procedures and functions, a parameterized change read, ``CONVERT`` of binary values,
string ``+``, ``IF``/``BEGIN...END``, ``SERVERPROPERTY``, ``DATEPART(TZOFFSET, ...)``,
``sys.fn_cdc_increment_lsn`` over a column, ``sp_spaceused``, ``HAS_PERMS_BY_NAME``, the wait
statistics view, and a function the emulator does not have (an error, never a value).
Statements use ``?`` for their parameters; each client spells them its own way
(:func:`markers`). A client hands back, per statement, its result sets as rows of plain
Python values (int, str, bytes, Decimal, bool, None), or the error number; :func:`check`
compares them with the documented answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

import pytds

__all__ = ["Outcome", "Param", "Statement", "check", "markers", "prepare"]

Rows = list[tuple[object, ...]]


@dataclass(frozen=True)
class Param:
    type: str  # int, nvarchar or varbinary
    value: object


@dataclass
class Outcome:
    """What a client read: its result sets, or the error number SQL Server sent."""

    results: list[Rows] = field(default_factory=list)
    error: int | None = None


@dataclass(frozen=True)
class Statement:
    name: str
    sql: str
    params: list[Param]
    #: raises AssertionError unless the outcome is the documented answer
    expect: Callable[[Outcome], None]


def markers(sql: str, style: str) -> str:
    """``?`` markers as a client spells them: ``qmark`` as they are, ``format`` ``%s``,
    ``named`` ``@p1``, ``@p2``, ..."""
    if style == "qmark":
        return sql
    if style == "format":
        return sql.replace("%", "%%").replace("?", "%s")
    parts = sql.split("?")
    return "".join(p + (f"@p{i}" if i < len(parts) else "") for i, p in enumerate(parts, 1))


def _rows(expected: Rows) -> Callable[[Outcome], None]:
    def expect(outcome: Outcome) -> None:
        assert outcome.error is None, outcome.error
        assert [list(r) for r in outcome.results[0]] == [list(r) for r in expected]

    return expect


def _error(number: int) -> Callable[[Outcome], None]:
    def expect(outcome: Outcome) -> None:
        assert outcome.error == number, outcome

    return expect


@dataclass(frozen=True)
class Scenario:
    lo: bytes  # fn_cdc_get_min_lsn of the instance
    hi: bytes  # fn_cdc_get_max_lsn
    statements: list[Statement]


def prepare(emulator) -> Scenario:
    """The table, its capture instance and three changes; the statements with their answers."""
    with (
        pytds.connect(
            emulator.host,
            port=emulator.port,
            user="sa",
            password=emulator.password,
            autocommit=True,
        ) as conn,
        conn.cursor() as cur,
    ):
        cur.execute(
            "CREATE TABLE dbo.orders (id INT NOT NULL, name NVARCHAR(40), amount DECIMAL(10, 2), "
            "code VARBINARY(8), CONSTRAINT PK_orders PRIMARY KEY (id))"
        )
        cur.execute("EXEC sys.sp_cdc_enable_db")
        cur.execute(
            "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
            "@role_name = NULL, @supports_net_changes = 1"
        )
        cur.execute("INSERT INTO dbo.orders VALUES (1, N'a', 1.50, 0x0102), (2, N'b', 2.25, NULL)")
        cur.execute("UPDATE dbo.orders SET name = N'a2' WHERE id = 1")
        emulator.scan()
        cur.execute("SELECT sys.fn_cdc_get_min_lsn('dbo_orders'), sys.fn_cdc_get_max_lsn()")
        lo, hi = cur.fetchone()
    lo, hi = bytes(lo), bytes(hi)

    def lsn_text(outcome: Outcome) -> None:
        ((text, lsn),) = outcome.results[0]
        assert text == "0x" + bytes(lsn).hex().upper()  # "CAST and CONVERT": style 1

    def server_properties(outcome: Outcome) -> None:
        ((major, version, edition, none),) = outcome.results[0]
        assert major == str(version).split(".")[0]  # "SERVERPROPERTY": the major version
        assert edition in (2, 3, 4, 5, 8)
        assert none is None  # an unknown property is NULL

    def tzoffset(outcome: Outcome) -> None:
        ((offset, minutes),) = outcome.results[0]
        assert isinstance(offset, int)
        assert abs(offset - minutes) <= 1  # DATEPART(TZOFFSET): the offset in minutes

    def lsn_steps(outcome: Outcome) -> None:
        ((lsn, following, before),) = outcome.results[0]
        assert len(following) == len(before) == 10
        assert bytes(before) < bytes(lsn) < bytes(following)

    def spaceused(outcome: Outcome) -> None:
        ((name, rows, reserved, data, index_size, unused),) = outcome.results[0]
        assert (name, str(rows).strip()) == ("orders", "2")
        assert all(str(v).endswith(" KB") for v in (reserved, data, index_size, unused))

    def help_cdc(outcome: Outcome) -> None:
        (row,) = outcome.results[0]
        assert row[0:3] == ("dbo", "orders", "dbo_orders")
        assert bytes(row[5]) == lo
        assert row[7] in (True, 1)  # supports_net_changes
        assert row[13:15] == ("[id]", "[id], [name], [amount], [code]")

    def waits(outcome: Outcome) -> None:
        ((count,),) = outcome.results[0]
        assert isinstance(count, int)
        assert count >= 0

    def lsns(outcome: Outcome) -> None:
        ((low, high),) = outcome.results[0]
        assert (bytes(low), bytes(high)) == (lo, hi)

    orders = Param("nvarchar", "dbo.orders")
    statements = [
        Statement(
            "sys.columns of OBJECT_ID",
            "SELECT name, column_id, system_type_id, max_length, precision, scale "
            "FROM sys.columns WHERE object_id = OBJECT_ID(?) ORDER BY column_id",
            [orders],
            _rows(
                [
                    ("id", 1, 56, 4, 10, 0),
                    ("name", 2, 231, 80, 0, 0),
                    ("amount", 3, 106, 9, 10, 2),
                    ("code", 4, 165, 8, 0, 0),
                ]
            ),
        ),
        Statement(
            "sys.objects",
            "SELECT name, type, type_desc FROM sys.objects WHERE object_id = OBJECT_ID(?) "
            "OR parent_object_id = OBJECT_ID(?) ORDER BY type DESC",
            [orders, orders],
            _rows([("orders", "U ", "USER_TABLE"), ("PK_orders", "PK", "PRIMARY_KEY_CONSTRAINT")]),
        ),
        Statement(
            "sys.types with TYPE_ID",
            "SELECT name, max_length FROM sys.types WHERE user_type_id = TYPE_ID(?)",
            [Param("nvarchar", "nvarchar")],
            _rows([("nvarchar", 8000)]),
        ),
        Statement(
            "INFORMATION_SCHEMA.TABLES",
            "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM INFORMATION_SCHEMA.TABLES "
            "WHERE TABLE_NAME = ?",
            [Param("nvarchar", "orders")],
            _rows([("dbo", "orders", "BASE TABLE")]),
        ),
        Statement(
            "INFORMATION_SCHEMA.COLUMNS",
            "SELECT COLUMN_NAME, DATA_TYPE, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION "
            "FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_NAME = ? ORDER BY ORDINAL_POSITION",
            [Param("nvarchar", "orders")],
            _rows(
                [
                    ("id", "int", None, 10),
                    ("name", "nvarchar", 40, None),
                    ("amount", "decimal", None, 10),
                    ("code", "varbinary", 8, None),
                ]
            ),
        ),
        Statement(
            "sys.sp_cdc_help_change_data_capture",
            "EXEC sys.sp_cdc_help_change_data_capture @source_schema = ?, @source_name = ?",
            [Param("nvarchar", "dbo"), Param("nvarchar", "orders")],
            help_cdc,
        ),
        Statement(
            "sys.sp_cdc_get_captured_columns",
            "EXEC sys.sp_cdc_get_captured_columns @capture_instance = ?",
            [Param("nvarchar", "dbo_orders")],
            lambda o: _rows([("id",), ("name",), ("amount",), ("code",)])(
                Outcome([[(r[3],) for r in o.results[0]]], o.error)
            ),
        ),
        Statement(
            "sys.fn_cdc_get_min_lsn and get_max_lsn",
            "SELECT sys.fn_cdc_get_min_lsn(?) AS lo, sys.fn_cdc_get_max_lsn() AS hi",
            [Param("nvarchar", "dbo_orders")],
            lsns,
        ),
        Statement(
            "a parameterized change read",
            "SELECT __$operation AS op, id, name, amount FROM "
            "cdc.fn_cdc_get_all_changes_dbo_orders(?, ?, N'all') ORDER BY __$start_lsn, __$seqval",
            [Param("varbinary", lo), Param("varbinary", hi)],
            _rows(
                [
                    (2, 1, "a", Decimal("1.50")),
                    (2, 2, "b", Decimal("2.25")),
                    (4, 1, "a2", Decimal("1.50")),
                ]
            ),
        ),
        Statement(
            "CONVERT of a binary parameter, style 1",
            "SELECT CONVERT(varchar(22), ?, 1) AS t",
            [Param("varbinary", hi)],
            _rows([("0x" + hi.hex().upper(),)]),
        ),
        Statement(
            "CONVERT of a binary column, style 1",
            "SELECT TOP (1) CONVERT(varchar(22), __$start_lsn, 1) AS t, __$start_lsn AS l "
            "FROM cdc.dbo_orders_CT ORDER BY __$start_lsn DESC",
            [],
            lsn_text,
        ),
        Statement(
            "string +, NULL + x",
            "SELECT name + N' u' AS a, N'x' + NULL AS b FROM dbo.orders WHERE id = ?",
            [Param("int", 1)],
            _rows([("a2 u", None)]),
        ),
        Statement(
            "IF EXISTS ... BEGIN ... END ELSE",
            "IF EXISTS (SELECT 1 FROM dbo.orders WHERE id = ?) BEGIN SELECT N'yes' AS r END "
            "ELSE BEGIN SELECT N'no' AS r END",
            [Param("int", 2)],
            _rows([("yes",)]),
        ),
        Statement(
            "SERVERPROPERTY",
            "SELECT SERVERPROPERTY('ProductMajorVersion') AS major, "
            "SERVERPROPERTY('ProductVersion') AS version, SERVERPROPERTY('EngineEdition') AS ed, "
            "SERVERPROPERTY('NoSuchProperty') AS none",
            [],
            server_properties,
        ),
        Statement(
            "DATEPART(TZOFFSET, SYSDATETIMEOFFSET())",
            "SELECT DATEPART(TZOFFSET, SYSDATETIMEOFFSET()) AS tz, "
            "DATEDIFF(MINUTE, SYSUTCDATETIME(), SYSDATETIME()) AS d",
            [],
            tzoffset,
        ),
        Statement(
            "fn_cdc_increment_lsn and decrement_lsn over a column",
            "SELECT TOP (1) __$start_lsn AS l, sys.fn_cdc_increment_lsn(__$start_lsn) AS n, "
            "sys.fn_cdc_decrement_lsn(__$start_lsn) AS p FROM cdc.dbo_orders_CT "
            "ORDER BY __$start_lsn",
            [],
            lsn_steps,
        ),
        Statement(
            "sp_spaceused of a table",
            "EXEC sp_spaceused @objname = ?",
            [orders],
            spaceused,
        ),
        Statement(
            "HAS_PERMS_BY_NAME of a table and a column",
            "SELECT HAS_PERMS_BY_NAME(?, 'OBJECT', 'SELECT') AS t, "
            "HAS_PERMS_BY_NAME(?, 'OBJECT', 'SELECT', 'name', 'COLUMN') AS c",
            [orders, orders],
            _rows([(1, 1)]),
        ),
        Statement(
            "sys.dm_exec_session_wait_stats",
            "SELECT COUNT(*) AS n FROM sys.dm_exec_session_wait_stats WHERE session_id = @@SPID",
            [],
            waits,
        ),
        Statement(
            "a function the emulator does not have is an error",
            "SELECT SQRT(?) AS r",
            [Param("int", 4)],
            _error(40517),
        ),
    ]
    return Scenario(lo, hi, statements)


def check(scenario: Scenario, outcomes: dict[str, Outcome]) -> list[str]:
    """The statements whose outcome is not the documented answer, with what was read."""
    bad = []
    for statement in scenario.statements:
        outcome = outcomes.get(statement.name)
        try:
            assert outcome is not None, "not run"
            statement.expect(outcome)
        except AssertionError as exc:
            bad.append(f"{statement.name}: {exc or ''} -> {outcome}")
    return bad
