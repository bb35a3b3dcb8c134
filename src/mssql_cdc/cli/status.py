"""``mssql-cdc status``: what a facts table says about each stream.

Runs on the driver with Spark: one aggregation per stream over the micro-batch rows
(``event IS NULL``) and the newest event rows (the facts table,
docs/sink.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc.cli.text import table_text

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["StreamStatus", "read_status", "recent_events", "status_text"]


@dataclass(frozen=True)
class StreamStatus:
    """One stream (``app_id``) of a facts table: its micro-batches and its newest one."""

    app_id: str
    target: str
    batches: int
    rows: int
    last_batch: int | None
    last_rows: int
    last_written_at: dt.datetime | None
    ingestion_lag_seconds: float | None
    capture_lag_seconds: float | None
    retention_headroom_hours: float | None


def read_status(spark: SparkSession, facts_table: str) -> list[StreamStatus]:
    """Per ``app_id``, the micro-batch rows' totals and the newest row's lags and headroom.

    Raises:
        ValueError: ``facts_table`` is empty or not a Delta table.
    """
    from mssql_cdc.sink import stream_summaries

    return [
        StreamStatus(
            app_id=r["app_id"],
            target=r["last"]["target"],
            batches=int(r["n"]),
            rows=int(r["rows"] or 0),
            last_batch=r["last"]["batch_id"],
            last_rows=int(r["last"]["rows"] or 0),
            last_written_at=r["last"]["written_at"],
            ingestion_lag_seconds=r["last"]["ingestion_lag_seconds"],
            capture_lag_seconds=r["last"]["capture_lag_seconds"],
            retention_headroom_hours=r["last"]["retention_headroom_hours"],
        )
        for r in stream_summaries(spark, facts_table)
    ]


def recent_events(spark: SparkSession, facts_table: str, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` event rows (``event IS NOT NULL``), newest first."""
    from mssql_cdc.sink import recent_events as read_events

    return read_events(spark, facts_table, limit)


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def status_text(
    streams: list[StreamStatus],
    events: list[dict[str, Any]],
    now: Callable[[], dt.datetime] | None = None,
) -> str:
    """The status as text: a table of streams, then the recent events."""
    current = (now or (lambda: dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)))()
    header = (
        "app_id",
        "target",
        "batches",
        "rows",
        "last batch",
        "last rows",
        "since last (s)",
        "ingestion lag (s)",
        "capture lag (s)",
        "headroom (h)",
    )
    body = [
        (
            s.app_id,
            s.target,
            f"{s.batches:,}",
            f"{s.rows:,}",
            "-" if s.last_batch is None else str(s.last_batch),
            f"{s.last_rows:,}",
            "-"
            if s.last_written_at is None
            else _number((current - s.last_written_at).total_seconds(), 0),
            _number(s.ingestion_lag_seconds),
            _number(s.capture_lag_seconds),
            _number(s.retention_headroom_hours),
        )
        for s in streams
    ]
    out = [table_text(header, body) if body else "no micro-batch rows"]
    if events:
        out += ["", "recent events:"]
        out.append(
            table_text(
                ("written_at", "app_id", "event", "rows", "lsn", "detail"),
                [
                    (
                        str(e["written_at"])[:19],
                        str(e["app_id"]),
                        str(e["event"]),
                        "-" if e["rows"] is None else f"{e['rows']:,}",
                        str(e["max_lsn"]),
                        (e["detail"] or "")[:60],
                    )
                    for e in events
                ],
            )
        )
    return "\n".join(out)
