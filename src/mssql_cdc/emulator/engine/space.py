"""``sp_spaceused [[@objname =] N'table'] [, @updateusage =] [, @mode =] [, @oneresultset =]``
("sp_spaceused (Transact-SQL)").

* With a table: one result set, ``name`` (nvarchar(128), the table's name without its schema),
  ``rows`` (char(20)), ``reserved``, ``data``, ``index_size``, ``unused`` (varchar(18), ``"N KB"``).
* Without: the database's ``database_name``, ``database_size``, ``unallocated space`` (``"N.NN
  MB"``), then ``reserved``, ``data``, ``index_size``, ``unused`` of all its tables: two
  result sets, or one with all seven columns when ``@oneresultset = 1``.

``rows`` is exact. The emulator has no pages: the sizes are what SQL Server would take for the
rows' stored bytes (each row's bytes as ``DATALENGTH`` counts them plus 9 bytes of row
overhead, 8,096 bytes of rows per 8 KB page, one index page per table with a primary key,
space reserved a page at a time up to 8 pages and then by 64 KB extents), and a new
database's 16 MB (8 MB of data, 8 MB of log). A name that is not a table of the database is
error 15009. Everyone may run it (``public``); ``@updateusage`` is accepted (there is nothing
to correct).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mssql_cdc.emulator.core.duck import one_row
from mssql_cdc.emulator.core.errors import SqlError
from mssql_cdc.emulator.core.results import StatementResult, result_set
from mssql_cdc.emulator.engine.metadata import Metadata
from mssql_cdc.emulator.protocol.types import SqlType, fixed_data_length, scalar

if TYPE_CHECKING:
    from mssql_cdc.emulator.core.catalog import TableDef
    from mssql_cdc.emulator.engine.executor import Executor

__all__ = ["spaceused"]

_SIZE = scalar("varchar", length=18)
_TABLE_COLUMNS: list[tuple[str, SqlType]] = [
    ("name", scalar("nvarchar", length=128)),
    ("rows", scalar("char", length=20)),
    ("reserved", _SIZE),
    ("data", _SIZE),
    ("index_size", _SIZE),
    ("unused", _SIZE),
]
_DATABASE_COLUMNS: list[tuple[str, SqlType]] = [
    ("database_name", scalar("nvarchar", length=128)),
    ("database_size", _SIZE),
    ("unallocated space", _SIZE),
]
_TOTAL_COLUMNS: list[tuple[str, SqlType]] = [
    ("reserved", _SIZE),
    ("data", _SIZE),
    ("index_size", _SIZE),
    ("unused", _SIZE),
]
_PAGE_BYTES = 8096
_ROW_OVERHEAD = 9
_NEW_DATABASE_KB = 8 * 1024  # data file; the log file is as large


def _bytes_expression(t: SqlType, column: str) -> str:
    fixed = fixed_data_length(t)
    if fixed is not None:
        return str(fixed)
    quoted = '"' + column.replace('"', '""') + '"'
    if t.name in ("nchar", "nvarchar", "ntext", "xml"):
        return f"COALESCE(2 * length({quoted}), 0)"
    if t.is_binary or t.name in ("geography", "geometry", "hierarchyid"):
        return f"COALESCE(octet_length(CAST({quoted} AS BLOB)), 0)"
    return f"COALESCE(strlen(CAST({quoted} AS VARCHAR)), 0)"


def _usage(ex: Executor, table: TableDef) -> tuple[int, int, int, int, int]:
    """(rows, reserved KB, data KB, index KB, unused KB) of one table."""
    row_bytes = " + ".join(
        [str(_ROW_OVERHEAD)]
        + [_bytes_expression(c.type, c.name) for c in table.columns if c.computed is None]
    )
    name = f'"{table.schema}"."{table.name}"'
    found = ex.cursor.execute(f"SELECT COUNT(*), COALESCE(SUM({row_bytes}), 0) FROM {name}")
    row = one_row(found)
    rows, total = (int(row[0]), int(row[1])) if row else (0, 0)
    data_pages = math.ceil(total / _PAGE_BYTES)
    index_pages = 1 if table.primary_key and rows else 0
    used = data_pages + index_pages
    reserved = used if used <= 8 else math.ceil(used / 8) * 8
    return rows, reserved * 8, data_pages * 8, index_pages * 8, (reserved - used) * 8


def _kb(value: int) -> str:
    return f"{value} KB"


def spaceused(ex: Executor, args: dict[str, object], positional: list[object]) -> StatementResult:
    """The procedure's result sets: one, or two chained by ``StatementResult.following``."""
    objname = args.get("objname", positional[0] if positional else None)
    one = args.get("oneresultset", positional[3] if len(positional) > 3 else 0)
    if objname is not None:
        resolved = Metadata(ex.db).resolve(str(objname), ex.user)
        table = ex.db.catalog.get(*resolved) if resolved is not None else None
        if table is None or not ex.db.security.can_see(ex.user, table.schema, table.name):
            raise SqlError(
                15009,
                f"The object '{objname}' does not exist in database '{ex.db.name}' or is "
                "invalid for this operation.",
            )
        rows, reserved, data, index, unused = _usage(ex, table)
        row = (table.name, str(rows).ljust(20), _kb(reserved), _kb(data), _kb(index), _kb(unused))
        return result_set(_TABLE_COLUMNS, [row])
    totals = [0, 0, 0, 0]
    for table in ex.db.catalog.tables.values():
        for i, value in enumerate(_usage(ex, table)[1:]):
            totals[i] += value
    reserved_kb = totals[0]
    size = f"{(2 * _NEW_DATABASE_KB + reserved_kb) / 1024:.2f} MB"
    unallocated = f"{max(_NEW_DATABASE_KB - reserved_kb, 0) / 1024:.2f} MB"
    database = (ex.db.name, size, unallocated)
    sizes = tuple(_kb(v) for v in totals)
    if one is not None and int(one):  # type: ignore[call-overload]
        return result_set(_DATABASE_COLUMNS + _TOTAL_COLUMNS, [(*database, *sizes)])
    first = result_set(_DATABASE_COLUMNS, [database])
    first.following.append(result_set(_TOTAL_COLUMNS, [sizes]))
    return first
