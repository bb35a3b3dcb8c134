"""The CDC client: the queries the data sources send, over the native TDS client.

One :class:`CdcClient` wraps one connection, opened lazily and never pickled. The driver keeps
one for the life of a query (planning, offsets); every task opens its own. The native client
raises the :mod:`mssql_cdc.errors` classes itself, also while rows are read (results are read
through ``Result.reader()``, not pyarrow's C stream import, whose failures are ``OSError``
text); a missing SELECT permission (229) becomes a ``PermissionError`` holding the exact GRANT
(:func:`permission_error`).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from mssql_cdc import _native
from mssql_cdc._native import Lsn
from mssql_cdc.errors import ResultShapeError, SqlServerError
from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.clock import ServerClock, resolve_clock
from mssql_cdc.source.entra import connect_token, native_connection_string
from mssql_cdc.source.sql import (
    change_function,
    change_table,
    changed_instances_query,
    quote_name,
    table_name,
)
from mssql_cdc.source.tokens import access_token

__all__ = [
    "CHANGED_PER_STATEMENT",
    "CaptureInstance",
    "CapturedColumn",
    "CdcClient",
    "Commit",
    "DdlChange",
    "is_permission_denied",
    "permission_error",
    "user_of",
]

log = logging.getLogger("mssql_cdc.source")

PERMISSION_DENIED = 229
#: SELECT refused on an object (229) or on one of its columns (230), "Database engine events
#: and errors", Microsoft Learn
PERMISSION_DENIED_NUMBERS = frozenset({PERMISSION_DENIED, 230})

#: SQL Server's system data types ("Data types (Transact-SQL)", Microsoft Learn); a captured
#: column's ``data_type`` outside this set is an alias (user-defined) type, resolved to its base
#: type through ``sys.types`` (:meth:`CdcClient.captured_columns`)
SYSTEM_TYPES = frozenset(
    [
        "bigint",
        "binary",
        "bit",
        "char",
        "date",
        "datetime",
        "datetime2",
        "datetimeoffset",
        "decimal",
        "float",
        "geography",
        "geometry",
        "hierarchyid",
        "image",
        "int",
        "money",
        "nchar",
        "ntext",
        "numeric",
        "nvarchar",
        "real",
        "rowversion",
        "smalldatetime",
        "smallint",
        "smallmoney",
        "sql_variant",
        "sysname",
        "text",
        "time",
        "timestamp",
        "tinyint",
        "uniqueidentifier",
        "varbinary",
        "varchar",
        "xml",
    ]
)
#: the alias types of the database: each one's base system type, or ``None`` for a CLR type
ALIAS_TYPES_SQL = (
    "SELECT t.name, TYPE_NAME(t.system_type_id) AS base_type, t.is_assembly_type "
    "FROM sys.types AS t WHERE t.is_user_defined = 1"
)

#: capture instances per statement of :meth:`CdcClient.changed_instances` (about 170 bytes of
#: text each): no documented limit on ``UNION ALL`` branches applies below the 256 MB batch
#: ("Maximum capacity specifications for SQL Server"), but a statement too complex to compile
#: fails (error 8623), so a database of hundreds of instances is asked in a few statements
CHANGED_PER_STATEMENT = 250
#: the columns of ``sys.sp_cdc_help_change_data_capture`` the client reads
INSTANCE_COLUMNS = (
    "capture_instance",
    "source_schema",
    "source_table",
    "start_lsn",
    "role_name",
    "index_column_list",
    "captured_column_list",
)
#: the columns of ``sys.sp_cdc_get_ddl_history`` the client reads
DDL_HISTORY_COLUMNS = ("ddl_lsn", "ddl_time", "ddl_command", "required_column_update")
#: the columns of ``cdc.lsn_time_mapping`` the client reads
COMMIT_TIME_COLUMNS = ("start_lsn", "tran_end_time")

#: the columns of ``sys.sp_cdc_get_captured_columns`` the client reads
CAPTURED_COLUMNS = (
    "column_name",
    "column_id",
    "column_ordinal",
    "data_type",
    "character_maximum_length",
    "numeric_precision",
    "numeric_scale",
    "datetime_precision",
)


@dataclass(frozen=True)
class Commit:
    """A row of ``cdc.lsn_time_mapping``: a commit LSN and its server-local end time."""

    lsn: Lsn
    local_time: dt.datetime


@dataclass(frozen=True)
class CaptureInstance:
    """A capture instance of the tracked table (``sys.sp_cdc_help_change_data_capture``)."""

    name: str
    source_schema: str
    source_table: str
    start_lsn: Lsn
    #: unique index columns CDC uses, in order (empty without one)
    index_columns: tuple[str, ...]
    #: captured column names, in capture order
    columns: tuple[str, ...]
    #: the gating role (``@role_name``), ``None`` without one
    role_name: str | None = None


@dataclass(frozen=True)
class CapturedColumn:
    """A row of ``sys.sp_cdc_get_captured_columns``."""

    name: str
    column_id: int
    data_type: str
    max_length: int | None
    precision: int | None
    scale: int | None
    datetime_precision: int | None


@dataclass(frozen=True)
class DdlChange:
    """A row of ``sys.sp_cdc_get_ddl_history``: a DDL statement on the tracked table."""

    lsn: Lsn
    #: server-local time of the DDL (``ddl_time``)
    local_time: dt.datetime | None
    command: str
    #: a captured column's type changed, so the change table was altered
    required_column_update: bool
    capture_instance: str


def user_of(options: ReaderOptions) -> str:
    """The login the options connect with (``user``, else the connection string's ``UID``)."""
    if options.user:
        return options.user
    for part in options.connection_string.split(";"):
        key, _, value = part.partition("=")
        if key.strip().lower() in ("uid", "user id", "user"):
            return value.strip()
    return "<your user>"


def is_permission_denied(exc: SqlServerError) -> bool:
    """Whether SQL Server refused a SELECT: on an object (229) or on a column of it (230)."""
    return exc.number in PERMISSION_DENIED_NUMBERS


def permission_error(options: ReaderOptions, capture_instance: str, cause: str) -> PermissionError:
    """The ``PermissionError`` for a login that cannot read ``capture_instance``'s changes: the
    change table, or the commit-time table ``cdc.lsn_time_mapping`` the change read joins."""
    user = quote_name(user_of(options))
    if "lsn_time_mapping" in cause:
        return PermissionError(
            "The login cannot read cdc.lsn_time_mapping (commit LSNs and their times), which "
            f"every change read of capture instance {capture_instance!r} joins. Run: GRANT "
            f"SELECT ON cdc.lsn_time_mapping TO {user}; SQL Server said: {cause}"
        )
    table = change_table(capture_instance)
    grant = f"GRANT SELECT ON {table} TO {user};"
    return PermissionError(
        f"The login cannot read the change table {table} of capture instance "
        f"{capture_instance!r}. Run: {grant} (and GRANT SELECT on the source table; if the "
        f"capture instance has a gating role, add the user to it). SQL Server said: {cause}"
    )


def _lsn(value: object) -> Lsn | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Lsn(bytes(value))
    raise TypeError(f"expected binary(10), got {type(value).__name__}")


class CdcClient:
    """CDC queries on one lazily opened connection.

    Runs wherever it is made: the driver (offsets, planning) or an executor task (reading).
    Holds no connection when pickled.
    """

    def __init__(self, options: ReaderOptions, setup: Sequence[str] = ()) -> None:
        self.options = options
        #: statements run on every new connection (``SET`` options), before any other
        self.setup = tuple(setup)
        self._conn: _native.Connection | None = None

    def __repr__(self) -> str:
        return f"CdcClient({self.options.capture_instance!r}, open={self._conn is not None})"

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options, "setup": self.setup, "_conn": None}

    # --- connection ---

    @property
    def connection(self) -> _native.Connection:
        """The open connection (opened on first use)."""
        if self._conn is None or self._conn.closed:
            o = self.options
            entra = connect_token(o)  # Authentication=ActiveDirectory... (None: a SQL login)
            self._conn = _native.connect(
                o.connection_string
                if entra is None
                else native_connection_string(o.connection_string),
                user=o.user if entra is None else None,
                password=o.password if entra is None else None,
                access_token=entra or access_token(o.access_token_provider, o.access_token),
                login_timeout=float(o.connect_timeout) if o.connect_timeout else None,
                query_timeout=float(o.query_timeout) if o.query_timeout else None,
                max_buffer=o.max_row_bytes,
            )
            for statement in self.setup:
                self._conn.execute(statement)
        return self._conn

    def close(self) -> None:
        """Close the connection (a later call opens a new one)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:  # closing a broken connection must not fail
                log.debug("closing a broken connection failed", exc_info=True)

    def stats(self) -> dict[str, float]:
        """The connection's counters (bytes, round trips, network wait), zeros when closed."""
        return {} if self._conn is None else self._conn.stats()

    # --- generic ---

    def table(self, sql: str, params: Sequence[_native.Param] | None = None) -> pa.Table:
        """Run ``sql`` and read its whole (small) result."""
        return self.connection.execute(sql, params).reader().read_all()

    def rows(
        self,
        sql: str,
        params: Sequence[_native.Param] | None = None,
        *,
        needs: Sequence[str],
    ) -> list[dict[str, Any]]:
        """Run ``sql`` and return its (small) result as one dict per row, keyed by column name.

        ``needs`` are the columns the caller reads by name. Raises
        :class:`~mssql_cdc.errors.ResultShapeError` (statement, missing columns, server
        version) when the result set lacks any of them, so that a server whose answer differs
        from the documented one fails with its name and version, never with a ``KeyError``.
        """
        table = self.table(sql, params)
        missing = tuple(c for c in needs if c not in table.column_names)
        if missing:
            raise ResultShapeError(
                sql, missing, tuple(table.column_names), self.connection.server_version
            )
        rows: list[dict[str, Any]] = table.to_pylist()
        return rows

    def batches(
        self, sql: str, params: Sequence[_native.Param] | None, batch_rows: int
    ) -> Iterator[pa.RecordBatch]:
        """Run ``sql`` and yield its result in batches of at most ``batch_rows`` rows."""
        yield from self.connection.execute(sql, params, batch_rows=batch_rows)

    def scalar(self, sql: str, params: Sequence[_native.Param] | None = None) -> object:
        """Run ``sql`` and return the first column of its first row."""
        return self.connection.scalar(sql, params)

    # --- LSNs and commits ---

    def max_commit(self) -> Commit | None:
        """The newest row of ``cdc.lsn_time_mapping`` (its LSN is ``sys.fn_cdc_get_max_lsn()``);
        ``None`` when capture never wrote one."""
        rows = self.rows(
            "SELECT TOP (1) start_lsn, tran_end_time FROM cdc.lsn_time_mapping "
            "ORDER BY start_lsn DESC",
            needs=COMMIT_TIME_COLUMNS,
        )
        return _commit(rows[0]) if rows else None

    def nth_commit(self, after: Lsn, n: int, cap: Lsn) -> Commit | None:
        """The ``n``-th commit after ``after`` (or the last one up to ``cap`` if fewer)."""
        rows = self.rows(
            "SELECT TOP (1) start_lsn, tran_end_time FROM cdc.lsn_time_mapping "
            "WHERE start_lsn <= (SELECT MAX(x.start_lsn) FROM (SELECT TOP (@P3) start_lsn "
            "FROM cdc.lsn_time_mapping WHERE start_lsn > @P1 AND start_lsn <= @P2 "
            "ORDER BY start_lsn) AS x) ORDER BY start_lsn DESC",
            [after, cap, n],
            needs=COMMIT_TIME_COLUMNS,
        )
        return _commit(rows[0]) if rows else None

    def commit_at_or_before(self, lsn: Lsn) -> Commit | None:
        """The newest commit at or below ``lsn``."""
        rows = self.rows(
            "SELECT TOP (1) start_lsn, tran_end_time FROM cdc.lsn_time_mapping "
            "WHERE start_lsn <= @P1 ORDER BY start_lsn DESC",
            [lsn],
            needs=COMMIT_TIME_COLUMNS,
        )
        return _commit(rows[0]) if rows else None

    def first_commit_from(self, lsn: Lsn) -> Commit | None:
        """The oldest commit at or above ``lsn``."""
        rows = self.rows(
            "SELECT TOP (1) start_lsn, tran_end_time FROM cdc.lsn_time_mapping "
            "WHERE start_lsn >= @P1 ORDER BY start_lsn",
            [lsn],
            needs=COMMIT_TIME_COLUMNS,
        )
        return _commit(rows[0]) if rows else None

    def commits_between(self, low: Lsn, high: Lsn) -> list[Commit]:
        """Every commit with ``low <= start_lsn <= high``, in LSN order."""
        rows = self.rows(
            "SELECT start_lsn, tran_end_time FROM cdc.lsn_time_mapping "
            "WHERE start_lsn >= @P1 AND start_lsn <= @P2 ORDER BY start_lsn",
            [low, high],
            needs=COMMIT_TIME_COLUMNS,
        )
        return [_commit(r) for r in rows]

    def min_lsn(self, capture_instance: str) -> Lsn:
        """``sys.fn_cdc_get_min_lsn``: the zero LSN if unknown or not readable."""
        value = _lsn(self.scalar("SELECT sys.fn_cdc_get_min_lsn(@P1)", [capture_instance]))
        return value if value is not None else Lsn(bytes(10))

    def commit_time(self, lsn: Lsn) -> dt.datetime | None:
        """The UTC commit time of the commit at ``lsn`` (``None`` when no commit has that LSN);
        the server clock is resolved only when one has."""
        commit = self.commit_at_or_before(lsn)
        if commit is None or commit.lsn != lsn:
            return None
        return self.server_clock().to_utc(commit.local_time)

    # --- the server clock ---

    def server_clock(self) -> ServerClock:
        """How this server's commit times map to UTC, for ``sourceTimeZone``
        (:func:`~mssql_cdc.source.clock.resolve_clock`)."""
        return resolve_clock(
            self.options.source_time_zone,
            lambda: self.scalar("SELECT CURRENT_TIMEZONE_ID()"),
            lambda: self.scalar("SELECT DATEDIFF(MINUTE, SYSUTCDATETIME(), SYSDATETIME())"),
        )

    def server_utc(self) -> dt.datetime:
        """The server's clock in UTC (naive)."""
        value = self.scalar("SELECT SYSUTCDATETIME()")
        if isinstance(value, dt.datetime):
            return value.replace(tzinfo=None)
        return dt.datetime.fromisoformat(str(value))

    def ping_ms(self) -> float:
        """Milliseconds of one ``SELECT 1`` round trip."""
        began = time.perf_counter()
        self.scalar("SELECT 1")
        return (time.perf_counter() - began) * 1000.0

    # --- capture instances ---

    def capture_instances(self) -> list[CaptureInstance]:
        """Every capture instance the login can read, oldest ``start_lsn`` first."""
        rows = self.rows("EXEC sys.sp_cdc_help_change_data_capture", needs=INSTANCE_COLUMNS)
        out = [
            CaptureInstance(
                name=r["capture_instance"],
                source_schema=r["source_schema"],
                source_table=r["source_table"],
                start_lsn=_lsn(r["start_lsn"]) or Lsn(bytes(10)),
                index_columns=_names(r["index_column_list"]),
                columns=_names(r["captured_column_list"]),
                role_name=r["role_name"] or None,
            )
            for r in rows
        ]
        return sorted(out, key=lambda i: (bytes(i.start_lsn), i.name))

    def change_access_denied(self, capture_instance: str) -> str | None:
        """SQL Server's 229 message if the instance's change function exists but the login may
        not read it (``None`` otherwise: readable, or no such instance)."""
        try:
            self.table(
                f"SELECT TOP (0) * FROM {change_function(capture_instance)}(@P1, @P1, N'all')",
                [Lsn(bytes(10))],
            )
        except SqlServerError as exc:
            return str(exc) if is_permission_denied(exc) else None
        return None

    def captured_columns(self, capture_instance: str) -> list[CapturedColumn]:
        """``sys.sp_cdc_get_captured_columns``, in capture order (``column_ordinal``, the name
        its current page gives; the 2008-2012 pages said ``ordinal_position``)."""
        rows = self.rows(
            "EXEC sys.sp_cdc_get_captured_columns @capture_instance = @P1",
            [capture_instance],
            needs=CAPTURED_COLUMNS,
        )
        rows.sort(key=lambda r: r["column_ordinal"])
        types = [str(r["data_type"]).lower() for r in rows]
        if not SYSTEM_TYPES.issuperset(types):
            aliases = self.alias_types()
            types = [aliases.get(t) or t for t in types]
        return [
            CapturedColumn(
                name=r["column_name"],
                column_id=r["column_id"],
                data_type=data_type,
                max_length=r["character_maximum_length"],
                precision=r["numeric_precision"],
                scale=r["numeric_scale"],
                datetime_precision=r["datetime_precision"],
            )
            for r, data_type in zip(rows, types, strict=True)
        ]

    def alias_types(self) -> dict[str, str | None]:
        """The database's alias (user-defined) types, lower case: each one's base system type
        (``dbo.Name`` -> ``nvarchar``), ``None`` for a CLR type (read as binary).

        ``sp_cdc_get_captured_columns`` documents ``data_type`` only as "column data type";
        whether a column of an alias type reports the alias or its base type is not said, so
        a name outside :data:`SYSTEM_TYPES` is resolved here rather than guessed.
        """
        rows = self.rows(ALIAS_TYPES_SQL, needs=("name", "base_type", "is_assembly_type"))
        return {
            str(r["name"]).lower(): None if r["is_assembly_type"] else str(r["base_type"]).lower()
            for r in rows
        }

    def ddl_history(self, capture_instance: str) -> list[DdlChange]:
        """``sys.sp_cdc_get_ddl_history``: the instance's DDL since it was enabled, in LSN
        order (the same SELECT permission as its change data)."""
        rows = self.rows(
            "EXEC sys.sp_cdc_get_ddl_history @capture_instance = @P1",
            [capture_instance],
            needs=DDL_HISTORY_COLUMNS,
        )
        out = [
            DdlChange(
                lsn=_lsn(r["ddl_lsn"]) or Lsn(bytes(10)),
                local_time=r["ddl_time"],
                command=str(r["ddl_command"] or ""),
                required_column_update=bool(r["required_column_update"]),
                capture_instance=capture_instance,
            )
            for r in rows
        ]
        return sorted(out, key=lambda d: bytes(d.lsn))

    def table_columns(self, schema: str, table: str) -> set[str]:
        """Lower-case names of the source table's columns now (``SELECT TOP (0) *``): a
        captured column dropped from the table is still in its capture instance."""
        empty = self.table(f"SELECT TOP (0) * FROM {table_name(schema, table)}")
        return {name.lower() for name in empty.column_names}

    def computed_columns(self, instance: CaptureInstance) -> set[str]:
        """Names of ``instance``'s captured columns that are computed in its source table
        (``sys.columns.is_computed``; the catalog views show a table's columns to any login
        with a permission on it, "Metadata Visibility Configuration", Microsoft Learn).

        CDC stores NULL for a computed column in every change row, while a snapshot reads its
        value; the schema leaves such columns out. When the login cannot see the table's
        metadata at all, computed columns cannot be told apart: a WARNING says so (never
        silently "none") and the empty set is returned.
        """
        source = table_name(instance.source_schema, instance.source_table)
        rows = self.rows(
            "SELECT c.name, c.is_computed FROM sys.columns AS c WHERE c.object_id = OBJECT_ID(@P1)",
            [source],
            needs=("name", "is_computed"),
        )
        if not rows:
            log.warning(
                "cannot see the columns of %s in sys.columns (the login has no permission on "
                "the table?): computed columns of capture instance %r cannot be detected, and "
                "would read NULL in change rows but their value in snapshots; GRANT SELECT on "
                "the table",
                source,
                instance.name,
            )
            return set()
        captured = {c.lower() for c in instance.columns}
        return {
            r["name"]
            for r in rows
            if r["is_computed"] and (not captured or str(r["name"]).lower() in captured)
        }

    # --- change rows ---

    def change_rows(self, capture_instance: str, low: Lsn, high: Lsn) -> int:
        """How many change rows the instance holds with ``low <= __$start_lsn <= high``."""
        table = change_table(capture_instance)
        value = self.scalar(
            f"SELECT COUNT_BIG(*) FROM {table} WHERE __$start_lsn >= @P1 AND __$start_lsn <= @P2",
            [low, high],
        )
        return int(str(value))

    def rows_per_commit(self, capture_instance: str, low: Lsn, high: Lsn) -> list[tuple[Lsn, int]]:
        """``(commit LSN, change rows)`` per commit of the range, in LSN order."""
        table = change_table(capture_instance)
        rows = self.table(
            f"SELECT __$start_lsn AS l, COUNT_BIG(*) AS n FROM {table} "
            "WHERE __$start_lsn >= @P1 AND __$start_lsn <= @P2 "
            "GROUP BY __$start_lsn ORDER BY __$start_lsn",
            [low, high],
        ).to_pylist()
        return [(Lsn(bytes(r["l"])), int(r["n"])) for r in rows]

    def changed_instances(
        self, capture_instances: Sequence[str], after: Lsn, upto: Lsn
    ) -> frozenset[str]:
        """The names among ``capture_instances`` whose change table holds a row with
        ``after < __$start_lsn <= upto``: one statement per :data:`CHANGED_PER_STATEMENT`
        instances (``sql.changed_instances_query``), none for an empty sequence.

        A purged range looks unchanged here: the caller applies the data-loss rule to the
        range first (``retention``), passes every capture instance of each table (a table's
        older instance holds its changes until the switch), and keeps ``upto`` at or below
        ``sys.fn_cdc_get_max_lsn()`` so that asking again gives the same answer.

        Raises:
            SqlServerError: from the server; an instance dropped since it was listed is error
                208 (invalid object name), a change table the login may not read is 229.
        """
        names = list(capture_instances)
        found: set[str] = set()
        for first in range(0, len(names), CHANGED_PER_STATEMENT):
            part = names[first : first + CHANGED_PER_STATEMENT]
            rows = self.rows(changed_instances_query(part), [after, upto], needs=("i",))
            found.update(part[int(r["i"])] for r in rows)
        return frozenset(found)


def _commit(row: dict[str, Any]) -> Commit:
    lsn = _lsn(row["start_lsn"])
    assert lsn is not None
    return Commit(lsn, row["tran_end_time"])


def _names(text: object) -> tuple[str, ...]:
    if not text:
        return ()
    names = []
    for part in re.findall(r"\[((?:[^\]]|\]\])*)\]|([^,\s][^,]*)", str(text)):
        bracketed, bare = part
        names.append(bracketed.replace("]]", "]") if bracketed else bare.strip())
    return tuple(names)
