"""``mssql-cdc status``: what a facts table says about each stream (docs/monitoring.md).

Runs on the driver with Spark: one aggregation per stream over the micro-batch rows
(``event IS NULL``) and the newest event rows (the facts table, docs/sink.md). Prints a text
table, or JSON (``--json``), or a live view that refreshes (``--watch``, with ``rich``).
Thresholds (:class:`Thresholds`) turn figures into breaches; any breach makes the exit code
:data:`BREACH_EXIT` so a scheduler can alert on it.

Retention headroom: the facts column is the hours, as of the batch's read, before cleanup
deletes the first change after the batch's end, measured by the stream from the cleanup job's
retention; NULL when the stream's login cannot read the retention, and, in rows written by
earlier versions, ``end_commit_ts - retention_watermark_ts`` (the instance's age while it is
younger than the retention period). Given the retention period (``--retention-hours``;
``mssql-cdc check`` prints it), :func:`headroom_hours` computes it as of now from the row's
times, whatever wrote the row; without, it is the column less the hours since the row was
written.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from mssql_cdc.cli.streams import stream_of
from mssql_cdc.cli.text import table_text

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "BREACH_EXIT",
    "DEFAULT_RETENTION_HOURS",
    "HEADROOM_NOTE",
    "LAG_NOTE",
    "StreamStatus",
    "Thresholds",
    "breaches",
    "headroom_hours",
    "read_status",
    "recent_events",
    "status_json",
    "status_rows",
    "status_text",
]

#: exit code of ``mssql-cdc status`` when a threshold is breached (1 is an error)
BREACH_EXIT = 3
#: SQL Server's default cleanup retention, 4320 minutes ("sys.sp_cdc_change_job")
DEFAULT_RETENTION_HOURS = 72.0
#: the footnote under the text table when the retention period is not given
HEADROOM_NOTE = (
    "headroom: the retention headroom of the stream's last facts row less the hours since that "
    "row. Empty when the stream's login cannot read the cleanup job's retention; in rows of "
    "earlier versions, the capture instance's age while it is younger than the retention. "
    "--retention-hours makes it the hours left before unread changes are deleted."
)
#: the footnote on the lag columns under the text table
LAG_NOTE = (
    "ingestion lag: how far the batch's end is behind the newest commit CDC captured; capture "
    "lag: how far that commit is behind the reader's clock, which grows while the database has "
    "no captured writes (a quiet database, not a broken one, unless a heartbeat writes)."
)


@dataclass(frozen=True)
class StreamStatus:
    """One stream (``app_id``) of a facts table: its micro-batches (over all its generations)
    and its newest one; ``sink_id`` is the id the newest row was written under (``app_id``, or
    ``<app_id>.g<n>`` in generation ``n``; ``None``: the same as ``app_id``)."""

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
    retention_watermark_ts: dt.datetime | None = None
    end_commit_ts: dt.datetime | None = None
    last_duration_ms: int | None = None
    sink_id: str | None = None


def group_generations(rows: Sequence[StreamStatus]) -> list[StreamStatus]:
    """One :class:`StreamStatus` per stream from one per sink id: a stream's generations
    (``mssql_cdc.sink.stream_of_sink``) are summed (batches, rows) and its newest row (by
    ``last_written_at``; batch ids restart in each generation) gives the rest, under the
    stream's ``app_id`` with ``sink_id`` the generation that wrote it. Ordered by ``app_id``."""
    groups: dict[str, list[StreamStatus]] = {}
    for row in rows:
        groups.setdefault(stream_of(row.app_id), []).append(row)
    out = []
    for app_id, members in sorted(groups.items()):
        newest = max(members, key=lambda m: (m.last_written_at is not None, m.last_written_at))
        out.append(
            replace(
                newest,
                app_id=app_id,
                sink_id=newest.app_id,
                batches=sum(m.batches for m in members),
                rows=sum(m.rows for m in members),
            )
        )
    return out


@dataclass(frozen=True)
class Thresholds:
    """Alert thresholds (``None``: not checked): the newest row's ingestion lag, the hours
    before unread changes are deleted (:func:`headroom_hours`), and the age of the newest
    micro-batch row (a stream that stopped writing rows)."""

    max_lag_minutes: float | None = None
    min_headroom_hours: float | None = None
    max_batch_age_minutes: float | None = None


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)


def read_status(spark: SparkSession, facts_table: str) -> list[StreamStatus]:
    """Per stream (its generations grouped, :func:`group_generations`), the micro-batch rows'
    totals and the newest row's lags and headroom.

    Raises:
        ValueError: ``facts_table`` is empty or not a Delta table.
    """
    from mssql_cdc.sink import stream_summaries

    return group_generations(
        [
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
                retention_watermark_ts=r["last"]["retention_watermark_ts"],
                end_commit_ts=r["last"]["end_commit_ts"],
                last_duration_ms=r["last"]["duration_ms"],
            )
            for r in stream_summaries(spark, facts_table)
        ]
    )


def recent_events(spark: SparkSession, facts_table: str, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` event rows (``event IS NOT NULL``), newest first."""
    from mssql_cdc.sink import recent_events as read_events

    return read_events(spark, facts_table, limit)


def _hours(later: dt.datetime, earlier: dt.datetime) -> float:
    return (later - earlier).total_seconds() / 3600.0


def headroom_hours(
    s: StreamStatus, now: dt.datetime, retention_hours: float | None = None
) -> float | None:
    """Hours, from ``now``, before cleanup deletes changes the stream has not read (module
    docstring); ``None`` without the metrics.

    With ``retention_hours``: the retention less the hours since the oldest change the stream
    may not have read was committed: after ``end_commit_ts`` (the newest change read) when the
    row saw newer commits (ingestion lag above 0), else after the row was written (the stream
    was current). Without: the row's headroom less the hours since it was written (a lower
    bound while the instance is younger than the retention period).
    """
    if retention_hours is not None and s.end_commit_ts is not None:
        oldest_unread = s.end_commit_ts
        current = s.ingestion_lag_seconds is not None and s.ingestion_lag_seconds <= 0
        if current and s.last_written_at is not None:
            oldest_unread = max(oldest_unread, s.last_written_at)
        return retention_hours - _hours(now, oldest_unread)
    if s.retention_headroom_hours is None:
        return None
    since = 0.0 if s.last_written_at is None else _hours(now, s.last_written_at)
    return s.retention_headroom_hours - since


def breaches(
    s: StreamStatus,
    thresholds: Thresholds,
    now: dt.datetime,
    retention_hours: float | None = None,
) -> list[str]:
    """The thresholds ``s`` breaches, as sentences (empty: healthy). A figure that is unknown
    (no metrics) breaches a threshold set on it: the alert must not stay silent."""
    out: list[str] = []
    t = thresholds
    if t.max_lag_minutes is not None:
        lag = s.ingestion_lag_seconds
        if lag is None:
            out.append("ingestion lag unknown (no metrics on the newest row)")
        elif lag / 60.0 > t.max_lag_minutes:
            out.append(f"ingestion lag {lag / 60.0:,.1f} min > {t.max_lag_minutes:g} min")
    if t.min_headroom_hours is not None:
        headroom = headroom_hours(s, now, retention_hours)
        if headroom is None:
            out.append("retention headroom unknown (no metrics on the newest row)")
        elif headroom < t.min_headroom_hours:
            out.append(f"retention headroom {headroom:,.1f} h < {t.min_headroom_hours:g} h")
    if t.max_batch_age_minutes is not None:
        if s.last_written_at is None:
            out.append("no micro-batch row")
        else:
            age = (now - s.last_written_at).total_seconds() / 60.0
            if age > t.max_batch_age_minutes:
                out.append(f"newest batch {age:,.1f} min old > {t.max_batch_age_minutes:g} min")
    return out


def _number(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="milliseconds")


def status_json(
    streams: Sequence[StreamStatus],
    events: Sequence[dict[str, Any]],
    *,
    thresholds: Thresholds | None = None,
    now: dt.datetime | None = None,
    retention_hours: float | None = None,
) -> dict[str, Any]:
    """The status as a JSON-ready dict: ``now`` (UTC), ``ok`` (no breach), ``streams`` (each
    with ``seconds_since_last``, ``headroom_hours`` and its ``breaches``) and ``events``."""
    current = now or _utcnow()
    t = thresholds or Thresholds()
    out = []
    for s in streams:
        item = asdict(s)
        for key in ("last_written_at", "retention_watermark_ts", "end_commit_ts"):
            item[key] = _iso(item[key])
        item["seconds_since_last"] = (
            None if s.last_written_at is None else (current - s.last_written_at).total_seconds()
        )
        item["headroom_hours"] = headroom_hours(s, current, retention_hours)
        item["breaches"] = breaches(s, t, current, retention_hours)
        out.append(item)
    return {
        "now": _iso(current),
        "ok": not any(item["breaches"] for item in out),
        "thresholds": asdict(t),
        "retention_hours": retention_hours,
        "streams": out,
        "events": [
            {k: (_iso(v) if isinstance(v, dt.datetime) else v) for k, v in e.items()}
            for e in events
        ],
    }


def status_rows(
    streams: Sequence[StreamStatus],
    now: dt.datetime,
    thresholds: Thresholds,
    retention_hours: float | None = None,
) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The table's header and one row of cells per stream (the text table and the live view)."""
    header: tuple[str, ...] = (
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
        "alerts",
    )
    body: list[tuple[str, ...]] = [
        (
            s.app_id,
            s.target,
            f"{s.batches:,}",
            f"{s.rows:,}",
            "-" if s.last_batch is None else str(s.last_batch),
            f"{s.last_rows:,}",
            "-"
            if s.last_written_at is None
            else _number((now - s.last_written_at).total_seconds(), 0),
            _number(s.ingestion_lag_seconds),
            _number(s.capture_lag_seconds),
            _number(headroom_hours(s, now, retention_hours)),
            "; ".join(breaches(s, thresholds, now, retention_hours)) or "ok",
        )
        for s in streams
    ]
    return header, body


def status_text(
    streams: list[StreamStatus],
    events: list[dict[str, Any]],
    now: Callable[[], dt.datetime] | None = None,
    *,
    thresholds: Thresholds | None = None,
    retention_hours: float | None = None,
) -> str:
    """The status as text: a table of streams, then the recent events."""
    current = (now or _utcnow)()
    header, body = status_rows(streams, current, thresholds or Thresholds(), retention_hours)
    out = [table_text(header, body) if body else "no micro-batch rows"]
    if body:
        out.append(LAG_NOTE)
    if body and retention_hours is None:
        out.append(HEADROOM_NOTE)
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
