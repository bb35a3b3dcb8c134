"""Facts rows of a bootstrap: ``snapshot_open`` (before the read) and ``bootstrap`` (after it).

Plain Python, no Spark: each function returns a tuple in the column order of the facts table
(``mssql_cdc.sink.comments.FACTS_COLUMNS``, docs/sink.md#the-facts-table).
The sink's ``facts`` module writes micro-batch and schema event rows only, so the two
snapshot rows are built here. Times are naive UTC ``datetime`` (TIMESTAMP_NTZ).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from mssql_cdc.sink.comments import FACTS_COLUMNS

__all__ = ["bootstrap_row", "snapshot_open_row"]

_NAMES = [name for name, _, _ in FACTS_COLUMNS]


def _row(values: dict[str, Any]) -> tuple[Any, ...]:
    unknown = set(values) - set(_NAMES)
    if unknown:
        raise KeyError(f"not facts columns: {sorted(unknown)}")
    return tuple(values.get(name) for name in _NAMES)


def _event(
    event: str,
    *,
    app_id: str,
    snapshot_lsn: str,
    commit_ts: datetime | None,
    target: str,
    written_at: datetime,
) -> dict[str, Any]:
    return {
        "app_id": app_id,
        "batch_id": None,
        "rows": 0,
        "min_lsn": snapshot_lsn,
        "max_lsn": snapshot_lsn,
        "min_commit_ts": commit_ts,
        "max_commit_ts": commit_ts,
        "deletes": 0,
        "inserts": 0,
        "updates": 0,
        "event": event,
        "end_lsn": snapshot_lsn,
        "end_commit_ts": commit_ts,
        "target": target,
        "written_at": written_at,
    }


def snapshot_open_row(
    *,
    app_id: str,
    snapshot_lsn: str,
    commit_ts: datetime | None,
    target: str,
    written_at: datetime,
) -> tuple[Any, ...]:
    """The ``snapshot_open`` row of a full bootstrap snapshot, written before the table is
    read: ``min_lsn`` = ``max_lsn`` = ``end_lsn`` = the snapshot LSN, ``rows`` 0, ``detail``
    ``{"mode": "full", "kind": "bootstrap", "generation": 0, ...}``."""
    values = _event(
        "snapshot_open",
        app_id=app_id,
        snapshot_lsn=snapshot_lsn,
        commit_ts=commit_ts,
        target=target,
        written_at=written_at,
    )
    values["detail"] = json.dumps(
        {
            "mode": "full",
            "kind": "bootstrap",
            "generation": 0,
            "lost_from_ts": None,
            "lost_to_ts": None,
        },
        sort_keys=True,
    )
    return _row(values)


def bootstrap_row(
    *,
    app_id: str,
    snapshot_lsn: str,
    commit_ts: datetime | None,
    rows: int,
    started_at: datetime | None,
    duration_ms: int | None,
    target: str,
    written_at: datetime,
) -> tuple[Any, ...]:
    """The ``bootstrap`` row: the snapshot's ``rows`` (0 for an empty table, whose only trace
    it is), ``min_lsn`` = ``max_lsn`` = ``end_lsn`` = the snapshot LSN; ``started_at`` and
    ``duration_ms`` of the read when this run took it (``None`` when a rerun repairs it)."""
    values = _event(
        "bootstrap",
        app_id=app_id,
        snapshot_lsn=snapshot_lsn,
        commit_ts=commit_ts,
        target=target,
        written_at=written_at,
    )
    values.update(rows=rows, started_at=started_at, duration_ms=duration_ms)
    return _row(values)
