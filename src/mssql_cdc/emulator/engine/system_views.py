"""The system views a pre-flight check reads: ``sys.databases`` and
``sys.dm_cdc_log_scan_sessions``.

Each is built when a statement names it, from the emulator's state, as a subquery of typed
constants (so filters, ``TOP`` and ``ORDER BY`` run in the engine as on any table):

* ``sys.databases`` ("sys.databases (Transact-SQL)", Microsoft docs): one row for the emulated
  database (the system databases all stand for it, docs/emulator.md), with ``name``,
  ``database_id``, ``is_cdc_enabled`` and ``snapshot_isolation_state`` (1 = ON, 0 = OFF) and
  its ``_desc``. Every login sees it.
* ``sys.dm_cdc_log_scan_sessions`` ("sys.dm_cdc_log_scan_sessions (Transact-SQL)", Microsoft
  docs): a row per capture scan that read transactions since the server started
  (``session_id`` 1, 2, ...; a scan that found nothing adds to the last row's
  ``empty_scan_count``), and the aggregate row ``session_id = 0``; ``latency`` is the seconds
  from the last captured commit to the session's end. The view needs ``VIEW DATABASE STATE``;
  the emulator does not model that permission and lets only ``db_owner`` (and ``sa``) read it,
  others get error 300.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlglot import exp

from mssql_cdc.emulator.core.catalog import ColumnDef, TableDef
from mssql_cdc.emulator.core.errors import SqlError
from mssql_cdc.emulator.core.literals import typed_literal
from mssql_cdc.emulator.protocol.temporal import datetime_text
from mssql_cdc.emulator.protocol.types import SqlType, scalar

if TYPE_CHECKING:
    from mssql_cdc.emulator.engine.database import Database

__all__ = ["VIEWS", "system_view"]

_NAME = scalar("nvarchar", length=128)
_DATABASES: list[tuple[str, SqlType]] = [
    ("name", _NAME),
    ("database_id", scalar("int")),
    ("is_cdc_enabled", scalar("bit")),
    ("snapshot_isolation_state", scalar("tinyint")),
    ("snapshot_isolation_state_desc", scalar("nvarchar", length=60)),
]
_SCAN_SESSIONS: list[tuple[str, SqlType]] = [
    ("session_id", scalar("int")),
    ("start_time", scalar("datetime")),
    ("end_time", scalar("datetime")),
    ("duration", scalar("int")),
    ("scan_phase", scalar("nvarchar", length=200)),
    ("error_count", scalar("int")),
    ("tran_count", scalar("bigint")),
    ("last_commit_time", scalar("datetime")),
    ("empty_scan_count", scalar("int")),
    ("latency", scalar("int")),
]
VIEWS = frozenset({"databases", "dm_cdc_log_scan_sessions"})


def system_view(db: Database, user: str, name: str, alias: str) -> exp.Expression | None:
    """The subquery ``sys.<name>`` stands for (``None`` if the emulator has no such view)."""
    lowered = name.lower()
    if lowered == "databases":
        snapshot = 1 if db.allow_snapshot_isolation else 0
        row = (db.name, 5, db.cdc.enabled, snapshot, "ON" if snapshot else "OFF")
        return _subquery(_DATABASES, [row], alias)
    if lowered == "dm_cdc_log_scan_sessions":
        if not db.security.is_owner(user):
            raise SqlError(
                300,
                "VIEW DATABASE STATE permission was denied on object 'server', database "
                f"'{db.name}'.",
                state=1,
                klass=14,
            )
        return _subquery(_SCAN_SESSIONS, _scan_rows(db), alias)
    return None


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
                s.empty_scans,
                latency,
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
            last.empty_scans,
            rows[-1][9],
        )
        rows.insert(0, aggregate)
    return rows


def _subquery(
    columns: list[tuple[str, SqlType]], rows: Sequence[tuple[object, ...]], alias: str
) -> exp.Expression:
    def select(values: Sequence[object]) -> exp.Select:
        return exp.select(
            *[
                exp.alias_(
                    exp.Cast(
                        this=typed_literal(t, v),
                        to=exp.DataType.build(t.storage(), dialect="duckdb"),
                    ),
                    c,
                    quoted=True,
                )
                for (c, t), v in zip(columns, values, strict=True)
            ]
        )

    if rows:
        body: exp.Query = select(rows[0])
        for row in rows[1:]:
            body = exp.union(body, select(row), distinct=False)
    else:
        body = select([None] * len(columns)).where(exp.false())
    sub = exp.Subquery(this=body, alias=exp.TableAlias(this=exp.to_identifier(alias)))
    sub.meta["tabledef"] = TableDef("sys", alias, [ColumnDef(c, t) for c, t in columns])
    return sub
