"""The system views: the catalog views of :mod:`catalog_views` (``sys.objects``,
``sys.tables``, ``sys.columns``, ``sys.types``, ``INFORMATION_SCHEMA.TABLES`` and
``.COLUMNS``), ``sys.databases`` and ``sys.dm_cdc_log_scan_sessions``.

Each is built when a statement names it, from the emulator's state, as a subquery (so filters,
joins, ``TOP`` and ``ORDER BY`` run in the engine as on any table) that casts each column to
its type. A catalog view holds only the columns the statement names, and its rows reach the
engine as an Arrow table registered on the session's connection (a database of hundreds of
tables has thousands of ``sys.columns`` rows); the other views, and rows Arrow cannot hold,
are typed constants in the statement. Any other name in the ``sys`` or ``INFORMATION_SCHEMA``
schema is error 208, as for an object that does not exist. A view that has only some of its
documented columns (``partial``) refuses ``SELECT *`` (40517) rather than answer a shape SQL
Server would not:

* ``sys.databases`` ("sys.databases (Transact-SQL)", Microsoft docs): one row for the emulated
  database (the system databases all stand for it, docs/emulator.md), with ``name``,
  ``database_id``, ``snapshot_isolation_state`` (1 = ON, 0 = OFF) and its ``_desc`` and
  ``is_cdc_enabled``, in the page's order; partial. Every login sees it.
* ``sys.dm_cdc_log_scan_sessions`` ("sys.dm_cdc_log_scan_sessions (Transact-SQL)", Microsoft
  docs): a row per capture scan that read transactions since the server started
  (``session_id`` 1, 2, ...; a scan that found nothing adds to the last row's
  ``empty_scan_count``), and the aggregate row ``session_id = 0``; ``latency`` is the seconds
  from the last captured commit to the session's end. The view needs ``VIEW DATABASE STATE``;
  the emulator does not model that permission and lets only ``db_owner`` (and ``sa``) read it,
  others get error 300. Partial.
* ``sys.dm_exec_session_wait_stats`` ("sys.dm_exec_session_wait_stats (Transact-SQL)"): a
  row per session and wait type the session waited on since it opened (the emulator's waits
  are its table locks: ``LCK_M_S``, ``LCK_M_X``; ``signal_wait_time_ms`` 0). A login with the
  server permission (``VIEW SERVER STATE``; SQL Server 2022: ``VIEW SERVER PERFORMANCE
  STATE``: here ``sa``) sees every session, any other its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
from sqlglot import exp

from mssql_cdc.emulator.core.catalog import ColumnDef, TableDef
from mssql_cdc.emulator.core.errors import SqlError, invalid_object
from mssql_cdc.emulator.core.literals import storage_text, typed_literal
from mssql_cdc.emulator.engine.catalog_views import CATALOG_VIEWS
from mssql_cdc.emulator.protocol.temporal import datetime_text
from mssql_cdc.emulator.protocol.types import SqlType, as_float, scalar

if TYPE_CHECKING:
    from mssql_cdc.emulator.engine.database import Database

__all__ = ["SYSTEM_SCHEMAS", "VIEWS", "referenced_columns", "system_view", "view_table"]

#: schemas whose objects are SQL Server's views (or the engine's own, never shown)
SYSTEM_SCHEMAS = frozenset({"sys", "information_schema", "pg_catalog"})

_NAME = scalar("nvarchar", length=128)
_DATABASES: list[tuple[str, SqlType]] = [
    ("name", _NAME),
    ("database_id", scalar("int")),
    ("snapshot_isolation_state", scalar("tinyint")),
    ("snapshot_isolation_state_desc", scalar("nvarchar", length=60)),
    ("is_cdc_enabled", scalar("bit")),
]
_SCAN_SESSIONS: list[tuple[str, SqlType]] = [
    ("session_id", scalar("int")),
    ("start_time", scalar("datetime")),
    ("end_time", scalar("datetime")),
    ("duration", scalar("bigint")),
    ("scan_phase", scalar("nvarchar", length=200)),
    ("error_count", scalar("int")),
    ("tran_count", scalar("bigint")),
    ("last_commit_time", scalar("datetime")),
    ("latency", scalar("int")),
    ("empty_scan_count", scalar("int")),
]
_WAIT_STATS: list[tuple[str, SqlType]] = [
    ("session_id", scalar("smallint")),
    ("wait_type", scalar("nvarchar", length=60)),
    ("waiting_tasks_count", scalar("bigint")),
    ("wait_time_ms", scalar("bigint")),
    ("max_wait_time_ms", scalar("bigint")),
    ("signal_wait_time_ms", scalar("bigint")),
]
_STATIC = {
    ("sys", "databases"): _DATABASES,
    ("sys", "dm_cdc_log_scan_sessions"): _SCAN_SESSIONS,
    ("sys", "dm_exec_session_wait_stats"): _WAIT_STATS,
}
VIEWS = frozenset({("sys", "databases"), ("sys", "dm_cdc_log_scan_sessions"), *CATALOG_VIEWS})


def view_table(schema: str, name: str) -> TableDef | None:
    """The columns of system view ``schema.name`` as a table (``None`` if there is none)."""
    key = (schema.lower(), name.lower())
    view = CATALOG_VIEWS.get(key)
    columns = view.columns if view is not None else _STATIC.get(key)
    if columns is None:
        return None
    return TableDef(schema, name, [ColumnDef(c, t) for c, t in columns])


def referenced_columns(table: exp.Table) -> frozenset[str] | None:
    """The lower-cased names of the columns ``table``'s statement may take from it: those
    qualified by its alias and every unqualified one; ``None`` (all of them) when the statement
    selects ``*`` or ``<alias>.*``."""
    alias = table.alias_or_name.lower()
    root = table.root()
    if any(isinstance(star.parent, exp.Select) for star in root.find_all(exp.Star)):
        return None
    names = set()
    for column in root.find_all(exp.Column):
        if column.table.lower() not in ("", alias):
            continue
        if isinstance(column.this, exp.Star):
            return None
        names.add(column.name.lower())
    return frozenset(names)


def _named(
    columns: list[tuple[str, SqlType]],
    rows: Sequence[tuple[object, ...]],
    referenced: frozenset[str] | None,
) -> tuple[list[tuple[str, SqlType]], Sequence[tuple[object, ...]]]:
    """The columns a statement names, and the rows cut to them (a catalog view of a large
    database has thousands of rows of up to 40 columns, each a literal in the statement);
    the first column alone when it names none (``COUNT(*)``)."""
    if referenced is None:
        return columns, rows
    keep = [i for i, (c, _) in enumerate(columns) if c.lower() in referenced] or [0]
    if len(keep) == len(columns):
        return columns, rows
    return [columns[i] for i in keep], [tuple(row[i] for i in keep) for row in rows]


def system_view(  # noqa: PLR0917 (the view's name and the session's identity)
    db: Database,
    user: str,
    schema: str,
    name: str,
    alias: str,
    spid: int = 0,
    referenced: frozenset[str] | None = None,
    register: Callable[[pa.Table], str | None] | None = None,
) -> exp.Expression | None:
    """The subquery ``<schema>.<name>`` stands for (``None`` outside :data:`SYSTEM_SCHEMAS`);
    error 208 for a name the emulator does not have. A catalog view holds only the
    ``referenced`` columns (:func:`referenced_columns`; ``None``: all), its rows handed to
    the engine through ``register`` (``Context.register_rows``) when given."""
    key = (schema.lower(), name.lower())
    if key[0] not in SYSTEM_SCHEMAS:
        return None
    view = CATALOG_VIEWS.get(key)
    if view is not None:
        columns, rows = _named(view.columns, view.rows(db, user), referenced)
        registered = _registered(columns, rows, register)
        if registered is not None:
            return _over(registered, columns, alias, name, partial=view.partial)
        return _subquery(columns, rows, alias, name, partial=view.partial)
    lowered = key[1] if key[0] == "sys" else ""
    if lowered == "databases":
        snapshot = 1 if db.allow_snapshot_isolation else 0
        row = (db.name, 5, snapshot, "ON" if snapshot else "OFF", db.cdc.enabled)
        return _subquery(_DATABASES, [row], alias, name, partial=True)
    if lowered == "dm_cdc_log_scan_sessions":
        if not db.security.is_owner(user):
            raise SqlError(
                300,
                "VIEW DATABASE STATE permission was denied on object 'server', database "
                f"'{db.name}'.",
                state=1,
                klass=14,
            )
        return _subquery(_SCAN_SESSIONS, _scan_rows(db), alias, name, partial=True)
    if lowered == "dm_exec_session_wait_stats":
        return _subquery(_WAIT_STATS, _wait_rows(db, user, spid), alias, name)
    raise invalid_object(f"{schema}.{name}")


def _wait_rows(db: Database, user: str, spid: int) -> list[tuple[object, ...]]:
    with db.locks.cond:
        waits = {s: dict(w) for s, w in db.locks.waits.items()}
    rows: list[tuple[object, ...]] = []
    for session in sorted(waits):
        if user != "dbo" and session != spid:  # only sa holds the server permission
            continue
        for wait_type, stats in sorted(waits[session].items()):
            rows.append((session, wait_type, stats.count, stats.total_ms, stats.max_ms, 0))
    return rows


def _scan_rows(db: Database) -> list[tuple[object, ...]]:
    sessions = db.cdc.scan_sessions
    rows: list[tuple[object, ...]] = []
    for s in sessions:
        latency = 0
        if s.last_commit_time is not None:
            latency = max(int((s.end_time - s.last_commit_time).total_seconds()), 0)
        rows.append(
            (
                s.session_id,
                datetime_text(s.start_time),
                datetime_text(s.end_time),
                int((s.end_time - s.start_time).total_seconds()),
                "Done",
                0,
                s.tran_count,
                None if s.last_commit_time is None else datetime_text(s.last_commit_time),
                latency,
                s.empty_scans,
            )
        )
    if sessions:
        first, last = sessions[0], sessions[-1]
        aggregate = (
            0,
            datetime_text(first.start_time),
            datetime_text(last.end_time),
            sum(int(r[3]) for r in rows),  # type: ignore[call-overload]
            "Aggregate",
            0,
            sum(s.tran_count for s in sessions),
            rows[-1][7],
            rows[-1][8],
            last.empty_scans,
        )
        rows.insert(0, aggregate)
    return rows


#: the integer types a catalog view's column may have, held as int64 and cast
_INTEGERS = frozenset({"tinyint", "smallint", "int", "bigint"})


def _arrow_column(t: SqlType, values: list[object]) -> pa.Array:
    """A view column's values (storage form, as :func:`typed_literal` takes them) as Arrow:
    binary, bit, integers and floats as such, everything else as the text the engine casts to
    the column's type (:func:`storage_text`)."""
    if t.is_binary:
        return pa.array([None if v is None else bytes(v) for v in values], pa.binary())  # type: ignore[call-overload]
    if t.name == "bit":
        return pa.array([None if v is None else bool(v) for v in values], pa.bool_())
    if t.name in _INTEGERS:
        return pa.array(values, pa.int64())
    if t.name in ("real", "float"):
        return pa.array([None if v is None else as_float(v) for v in values], pa.float64())
    return pa.array([None if v is None else storage_text(t, v) for v in values], pa.string())


def _registered(
    columns: list[tuple[str, SqlType]],
    rows: Sequence[tuple[object, ...]],
    register: Callable[[pa.Table], str | None] | None,
) -> str | None:
    """The name under which ``rows`` were handed to the engine as an Arrow table, or ``None``
    (no ``register``, no rows, or a value Arrow cannot hold, such as a lone surrogate: the
    view is then built of literals, :func:`_subquery`)."""
    if register is None or not rows:
        return None
    try:
        arrays = [_arrow_column(t, [row[i] for row in rows]) for i, (_, t) in enumerate(columns)]
        table = pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(columns))])
    except (pa.ArrowException, UnicodeError, TypeError, ValueError):
        return None
    return register(table)


def _over(
    relation: str,
    columns: list[tuple[str, SqlType]],
    alias: str,
    name: str,
    *,
    partial: bool,
) -> exp.Expression:
    """``(SELECT CAST(c1 AS type1) AS c1, ... FROM <relation>) AS alias``: a view over rows the
    engine holds (:func:`_registered`)."""
    projections = [
        exp.alias_(
            exp.Cast(
                this=exp.column(f"c{i}", quoted=True),
                to=exp.DataType.build(t.storage(), dialect="duckdb"),
            ),
            c,
            quoted=True,
        )
        for i, (c, t) in enumerate(columns)
    ]
    # schema-qualified (DuckDB's ``temp`` holds registered tables), so that a user table of
    # the same name in dbo can never take its place when the statement's tables are qualified
    body = exp.select(*projections).from_(exp.table_(relation, db="temp", quoted=True))
    sub = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    sub.meta["tabledef"] = TableDef(
        "sys", name, [ColumnDef(c, t) for c, t in columns], partial=partial
    )
    return sub


def _bare(node: exp.Expression) -> exp.Expression:
    """``node`` without the type tags :func:`typed_literal` gave it (a lone surrogate's mark
    stays: the statement must still refuse to store it)."""
    for key in ("sqltype", "value", "constant"):
        node.meta.pop(key, None)
    return node


def _subquery(
    columns: list[tuple[str, SqlType]],
    rows: Sequence[tuple[object, ...]],
    alias: str,
    name: str,
    *,
    partial: bool = False,
) -> exp.Expression:
    """``(SELECT CAST(c1 AS type1) AS c1, ... FROM (VALUES ...) AS v(c1, ...)) AS alias``."""
    names = [f"c{i}" for i in range(len(columns))]
    # each column's engine type parsed once: a view of thousands of rows (sys.columns of a
    # database of hundreds of tables) spent most of its time parsing the same type names
    types = [exp.DataType.build(t.storage(), dialect="duckdb") for _, t in columns]
    projections = [
        exp.alias_(exp.Cast(this=exp.column(n, quoted=True), to=dt.copy()), c, quoted=True)
        for n, (c, _), dt in zip(names, columns, types, strict=True)
    ]
    source: list[tuple[object, ...]] = list(rows) or [tuple([None] * len(columns))]
    # the values bare: the projection's CAST gives each column its type, so neither a CAST
    # per value nor the literals' type tags are needed, and the statement, copied and printed
    # whole before the engine runs it, is a fraction of the size
    values = exp.Values(
        expressions=[
            exp.Tuple(
                expressions=[
                    _bare(typed_literal(t, v)) for (_, t), v in zip(columns, row, strict=True)
                ]
            )
            for row in source
        ],
        alias=exp.TableAlias(
            this=exp.to_identifier("v"),
            columns=[exp.to_identifier(n, quoted=True) for n in names],
        ),
    )
    body = exp.select(*projections).from_(values)
    if not rows:
        body = body.where(exp.false())
    sub = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    table = TableDef("sys", name, [ColumnDef(c, t) for c, t in columns], partial=partial)
    sub.meta["tabledef"] = table
    return sub
