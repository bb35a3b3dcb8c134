"""The SQL text of the change and snapshot reads (pure string building, tested without a
server)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mssql_cdc.source.client import quote_name

__all__ = ["change_query", "column_expression", "snapshot_query"]

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def column_expression(name: str, sql_type: str, table_alias: str = "") -> str:
    """How a captured column is selected: hierarchyid as its ``/1/2/`` text, geography and
    geometry as WKB, everything else as it is."""
    ref = f"{table_alias}.{quote_name(name)}" if table_alias else quote_name(name)
    kind = sql_type.lower()
    if kind == "hierarchyid":
        return f"CAST({ref} AS nvarchar(4000)) AS {quote_name(name)}"
    if kind in ("geography", "geometry"):
        return f"{ref}.STAsBinary() AS {quote_name(name)}"
    return ref


def change_function(capture_instance: str) -> str:
    """``cdc.fn_cdc_get_all_changes_<ci>``, bracketed only when the name needs it."""
    name = f"fn_cdc_get_all_changes_{capture_instance}"
    return f"cdc.{name}" if _PLAIN.match(name) else f"cdc.{quote_name(name)}"


def change_query(
    capture_instance: str, columns: Sequence[tuple[str, str]], *, include_command_id: bool
) -> str:
    """All changes (with update before-images) of ``@P1 <= __$start_lsn <= @P2``, each with its
    commit's server-local time, in commit order.

    Result columns, by position: start LSN, seqval, operation, [command id], commit time, then
    ``columns``.
    """
    select = ["c.__$start_lsn", "c.__$seqval", "c.__$operation"]
    order = ["c.__$start_lsn"]
    if include_command_id:
        select.append("c.__$command_id")
        order.append("c.__$command_id")
    order += ["c.__$seqval", "c.__$operation"]
    select.append("m.tran_end_time")
    select += [column_expression(name, sql_type, "c") for name, sql_type in columns]
    return (
        f"SELECT {', '.join(select)} "
        f"FROM {change_function(capture_instance)}(@P1, @P2, N'all update old') AS c "
        "JOIN cdc.lsn_time_mapping AS m ON m.start_lsn = c.__$start_lsn "
        f"ORDER BY {', '.join(order)}"
    )


def snapshot_query(
    schema: str,
    table: str,
    columns: Sequence[tuple[str, str]],
    key: str,
    *,
    lo: bool,
    hi: bool,
) -> str:
    """The current rows of ``schema.table`` (``key >= @lo`` / ``key < @hi`` when bounded)."""
    select = [column_expression(name, sql_type) for name, sql_type in columns] or ["1 AS [_]"]
    sql = f"SELECT {', '.join(select)} FROM {quote_name(schema)}.{quote_name(table)}"
    where = []
    params = 1
    if key and lo:
        where.append(f"{quote_name(key)} >= @P{params}")
        params += 1
    if key and hi:
        where.append(f"{quote_name(key)} < @P{params}")
    if where:
        sql += " WHERE " + " AND ".join(where)
    if key:
        sql += f" ORDER BY {quote_name(key)}"
    return sql
