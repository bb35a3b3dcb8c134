"""The SQL text built from names: identifiers, the change and snapshot reads and the snapshot's
planning queries (pure string building, tested without a server); and the pre-flight check's
queries (``CHECK_*``, :mod:`mssql_cdc.source.preflight`).

The fixed catalog and LSN queries live with the calls that run them, in
:class:`~mssql_cdc.source.client.CdcClient`; this module imports nothing of the source.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = [
    "CHANGE_TABLE_OWNER_COLUMNS",
    "CHECK_CAPTURE_JOB_STATE",
    "CHECK_CHANGE_TABLE_OWNER",
    "CHECK_DATABASE",
    "CHECK_HELP_JOBS",
    "CHECK_IS_ROLE_MEMBER",
    "CHECK_SCAN_LATENCY",
    "DATABASE_COLUMNS",
    "HELP_JOBS_COLUMNS",
    "JOB_STATE_COLUMNS",
    "SCAN_LATENCY_COLUMNS",
    "change_function",
    "change_query",
    "change_table",
    "changed_instances_query",
    "check_select",
    "column_expression",
    "key_at_least",
    "key_below",
    "key_min_max",
    "key_order",
    "key_seek",
    "quote_name",
    "row_count",
    "snapshot_query",
    "table_name",
]

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# --- the pre-flight check (docs/permissions.md, "What mssql-cdc check verifies") ---

#: the connected database: its name, whether CDC is enabled and whether snapshot isolation is
#: allowed ("sys.databases", visible to every login for its own database)
CHECK_DATABASE = (
    "SELECT name, is_cdc_enabled, snapshot_isolation_state FROM sys.databases "
    "WHERE name = DB_NAME()"
)
DATABASE_COLUMNS = ("name", "is_cdc_enabled", "snapshot_isolation_state")
#: the database's CDC jobs: capture (polling interval) and cleanup (retention, minutes);
#: needs db_owner ("sys.sp_cdc_help_jobs")
CHECK_HELP_JOBS = "EXEC sys.sp_cdc_help_jobs"
#: the columns of its result the product reads
HELP_JOBS_COLUMNS = ("job_type", "job_name", "pollinginterval", "retention")
#: whether job ``@P1`` runs now (``current_execution_status`` 1 = executing); needs sysadmin or
#: a SQL Server Agent role in msdb ("sp_help_job")
CHECK_CAPTURE_JOB_STATE = "EXEC msdb.dbo.sp_help_job @job_name = @P1, @job_aspect = N'JOB'"
JOB_STATE_COLUMNS = ("current_execution_status",)
#: the newest capture scan's latency, seconds from the last commit it captured to its end;
#: needs VIEW DATABASE STATE ("sys.dm_cdc_log_scan_sessions")
CHECK_SCAN_LATENCY = (
    "SELECT TOP (1) session_id, end_time, latency FROM sys.dm_cdc_log_scan_sessions "
    "WHERE session_id > 0 ORDER BY session_id DESC"
)
SCAN_LATENCY_COLUMNS = ("session_id", "end_time", "latency")
#: the source table and gating role of capture instance ``@P1``, read from the cdc schema's
#: metadata when the login may (a name is NULL when the login cannot see that table)
CHECK_CHANGE_TABLE_OWNER = (
    "SELECT OBJECT_SCHEMA_NAME(source_object_id) AS source_schema, "
    "OBJECT_NAME(source_object_id) AS source_table, role_name "
    "FROM cdc.change_tables WHERE capture_instance = @P1"
)
CHANGE_TABLE_OWNER_COLUMNS = ("source_schema", "source_table", "role_name")
#: 1 when the session's user is a member of role ``@P1``, 0 when not, NULL without the role
CHECK_IS_ROLE_MEMBER = "SELECT IS_ROLEMEMBER(@P1) AS member"


def check_select(columns: Sequence[str] = ()) -> str:
    """Whether the login may SELECT ``columns`` of the table named by ``@P1`` (``[s].[t]``), the
    column names being ``@P2...`` (all columns when none): ``object_id`` (NULL when the login
    cannot see the table), ``can_select`` (the table) and ``column_1``... (each column), each
    1, 0 or NULL, from ``HAS_PERMS_BY_NAME`` ("HAS_PERMS_BY_NAME (Transact-SQL)": the effective
    permission, granted to the user or a role and not denied; column names without brackets).
    Reads no row of the table."""
    probes = [
        f"HAS_PERMS_BY_NAME(@P1, N'OBJECT', N'SELECT', @P{n}, N'COLUMN') AS column_{n - 1}"
        for n in range(2, len(columns) + 2)
    ]
    return (
        "SELECT OBJECT_ID(@P1) AS object_id, HAS_PERMS_BY_NAME(@P1, N'OBJECT', N'SELECT') "
        f"AS can_select{''.join(', ' + p for p in probes)}"
    )


def quote_name(name: str) -> str:
    """``name`` as a bracketed T-SQL identifier (``]`` doubled)."""
    return "[" + name.replace("]", "]]") + "]"


def table_name(schema: str, table: str) -> str:
    """``[schema].[table]``."""
    return f"{quote_name(schema)}.{quote_name(table)}"


def change_table(capture_instance: str) -> str:
    """The instance's change table, ``cdc.[<ci>_CT]``."""
    return f"cdc.{quote_name(capture_instance + '_CT')}"


def row_count(schema: str, table: str) -> str:
    """The rows of ``schema.table`` (``COUNT_BIG``)."""
    return f"SELECT COUNT_BIG(*) FROM {table_name(schema, table)}"


def key_min_max(schema: str, table: str, column: str) -> str:
    """``lo`` and ``hi``: the smallest and largest value of ``column``."""
    name = quote_name(column)
    return f"SELECT MIN({name}) AS lo, MAX({name}) AS hi FROM {table_name(schema, table)}"


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
    """All change rows (update before-images too) of ``@P1 <= __$start_lsn <= @P2``, each with
    its commit's server-local time, in commit order.

    Read from the change table ``cdc.[<ci>_CT]``, not from ``cdc.fn_cdc_get_all_changes_<ci>``:
    only the change table has ``__$command_id`` (the query function returns ``__$start_lsn``,
    ``__$seqval``, ``__$operation``, ``__$update_mask`` and the captured columns), and the order
    within a transaction is ``__$command_id``'s ("cdc.<capture_instance>_CT", Microsoft Learn).
    The change table holds every operation, so the rows are those of the function's
    ``N'all update old'``. It raises no error 313 for a range cleanup purged: the reader checks
    the instance's low endpoint before and after (:mod:`mssql_cdc.source.reading`).

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
        f"FROM {change_table(capture_instance)} AS c "
        "JOIN cdc.lsn_time_mapping AS m ON m.start_lsn = c.__$start_lsn "
        "WHERE c.__$start_lsn >= @P1 AND c.__$start_lsn <= @P2 "
        f"ORDER BY {', '.join(order)}"
    )


def changed_instances_query(capture_instances: Sequence[str]) -> str:
    """Which of ``capture_instances`` hold a change row with ``@P1 < __$start_lsn <= @P2``: one
    row per such instance, column ``i`` (int) its position in the sequence, in no order.

    One branch per change table, ``SELECT <i> WHERE EXISTS (SELECT 1 FROM cdc.[<ci>_CT] WHERE
    ...)``, joined by ``UNION ALL``; both LSNs are parameters shared by every branch, so the
    statement holds two parameters however many instances it names (SQL Server allows 2,100 per
    request) and its text is the same for the same instances, which lets the server reuse its
    plan. SQL Server has no per-table "last change" anywhere (``cdc.change_tables`` holds only
    the low endpoint, ``cdc.lsn_time_mapping`` no table), so the change tables themselves are
    asked; an ``EXISTS`` stops at the first row it finds. Both ends are bounded so that asking
    again for the same range gives the same answer. Callers keep a statement to a few hundred
    instances (:data:`~mssql_cdc.source.client.CHANGED_PER_STATEMENT`).

    Raises:
        ValueError: ``capture_instances`` is empty.
    """
    if not capture_instances:
        raise ValueError("changed_instances_query: no capture instance given")
    branches = [
        f"SELECT {i}{' AS i' if i == 0 else ''} WHERE EXISTS (SELECT 1 FROM "
        f"{change_table(name)} WHERE __$start_lsn > @P1 AND __$start_lsn <= @P2)"
        for i, name in enumerate(capture_instances)
    ]
    return " UNION ALL ".join(branches)


def _bound(sql_type: str, param: int) -> str:
    """Parameter ``param`` as a value of the key column's type: integers and binary are bound
    as they are, everything else as text CAST to the column's declared type."""
    base = sql_type.split("(", maxsplit=1)[0].strip().lower()
    if base in ("tinyint", "smallint", "int", "bigint", "bit", "binary", "varbinary", "timestamp"):
        return f"@P{param}"
    return f"CAST(@P{param} AS {sql_type})"


def key_at_least(keys: Sequence[tuple[str, str]], first_param: int) -> str:
    """``(k1, k2, ...) >= (@P first_param, ...)`` in key order, as T-SQL (no row values)."""
    name, sql_type = keys[0]
    column, bound = quote_name(name), _bound(sql_type, first_param)
    if len(keys) == 1:
        return f"{column} >= {bound}"
    rest = key_at_least(keys[1:], first_param + 1)
    return f"({column} > {bound} OR ({column} = {bound} AND {rest}))"


def key_below(keys: Sequence[tuple[str, str]], first_param: int) -> str:
    """``(k1, k2, ...) < (@P first_param, ...)`` in key order, NULLs first (as ORDER BY sorts
    them), so the first range also holds rows whose key has NULLs."""
    name, sql_type = keys[0]
    column, bound = quote_name(name), _bound(sql_type, first_param)
    if len(keys) == 1:
        return f"({column} IS NULL OR {column} < {bound})"
    rest = key_below(keys[1:], first_param + 1)
    return f"({column} IS NULL OR {column} < {bound} OR ({column} = {bound} AND {rest}))"


def key_order(keys: Sequence[tuple[str, str]]) -> str:
    """The key columns, bracketed, in key order (an ``ORDER BY`` list)."""
    return ", ".join(quote_name(name) for name, _ in keys)


def snapshot_query(
    schema: str,
    table: str,
    columns: Sequence[tuple[str, str]],
    keys: Sequence[tuple[str, str]],
    *,
    lo: bool,
    hi: bool,
) -> str:
    """The current rows of ``schema.table`` with ``keys >= lo`` and ``keys < hi`` (each bound
    when set: ``lo``'s values are the first parameters, then ``hi``'s)."""
    select = [column_expression(name, sql_type) for name, sql_type in columns] or ["1 AS [_]"]
    sql = f"SELECT {', '.join(select)} FROM {table_name(schema, table)}"
    where = []
    if keys and lo:
        where.append(key_at_least(keys, 1))
    if keys and hi:
        where.append(key_below(keys, 1 + (len(keys) if lo else 0)))
    if where:
        sql += " WHERE " + " AND ".join(where)
    if keys:
        sql += f" ORDER BY {key_order(keys)}"
    return sql


def key_seek(schema: str, table: str, keys: Sequence[tuple[str, str]], *, after: bool) -> str:
    """The key ``@P1`` rows past the start (``after``: past the bound in ``@P2...``): the next
    keyset bound, or no row when fewer rows remain."""
    sql = f"SELECT {key_order(keys)} FROM {table_name(schema, table)}"
    if after:
        sql += f" WHERE {key_at_least(keys, 2)}"
    return sql + f" ORDER BY {key_order(keys)} OFFSET @P1 ROWS FETCH NEXT 1 ROWS ONLY"
