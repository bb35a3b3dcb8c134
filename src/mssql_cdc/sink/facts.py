"""Facts rows, every kind of them, as plain Python values: a micro-batch's counts and metrics,
its event rows, a snapshot's ``snapshot_open`` row and its ``bootstrap`` (first snapshot or
seed) or ``resnapshot`` (after data loss) row.

No Spark here: :func:`batch_row`, :func:`event_rows`, :func:`snapshot_open_row` and
:func:`bootstrap_row` return tuples in the column order of ``schemas.FACTS``
(docs/sink.md#the-facts-table) that ``facts_table`` turns into one DataFrame and appends in one
commit. Times are naive ``datetime`` in UTC (TIMESTAMP_NTZ).

Event files (``MetricsDir.events()``) are read with these keys: ``kind`` (``schema_change``,
``capture_instance_switched``, ``data_skipped``, or ``warning``: a planning warning, which is
not a row but a line of the batch's ``detail.warnings``, with its text in ``message``),
``key``, ``lsn`` (the event's LSN), ``commit_ts`` (its commit time, ISO-8601 UTC),
``detail`` (text, or a JSON value written as JSON), and for ``data_skipped``
``lost_from_ts``/``lost_to_ts`` and, without ``detail``, ``from``/``to``/``certain``/
``reason`` which become its ``{from, to, certain}`` detail.
"""

from __future__ import annotations

import json
import logging
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from mssql_cdc._metrics import WARNING_EVENT, PartitionMetrics
from mssql_cdc.sink.schemas import FACTS

__all__ = [
    "EVENT_KINDS",
    "FACTS_DDL",
    "BatchCounts",
    "FoldedMetrics",
    "batch_row",
    "bootstrap_row",
    "event_rows",
    "event_warnings",
    "fold_metrics",
    "metadata_json",
    "parse_utc",
    "resnapshot_row",
    "snapshot_event_row",
    "snapshot_open_row",
    "utc_now",
]

log = logging.getLogger("mssql_cdc.sink")

#: the events a micro-batch can carry, written in the batch's own facts commit
EVENT_KINDS = ("schema_change", "capture_instance_switched", "data_skipped")

#: the facts table's schema as a Spark DDL string, in column order
FACTS_DDL = FACTS.ddl

_FACT_NAMES = list(FACTS.names)


def utc_now() -> datetime:
    """The current time as a naive UTC ``datetime`` (what TIMESTAMP_NTZ columns hold)."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def parse_utc(value: object) -> datetime | None:
    """An ISO-8601 time (``...Z``, an offset, or naive taken as UTC) as naive UTC; ``None``
    for ``None`` or text that is not a time."""
    if value is None:
        return None
    if isinstance(value, datetime):
        parsed = value
    else:
        try:
            parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
        except ValueError:
            return None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(timezone.utc).replace(tzinfo=None)
    return parsed


@dataclass(frozen=True)
class BatchCounts:
    """What a micro-batch wrote: row counts per operation and its LSN and commit-time ranges
    (``None`` when ``rows`` is 0)."""

    rows: int
    min_lsn: str | None = None
    max_lsn: str | None = None
    min_commit_ts: datetime | None = None
    max_commit_ts: datetime | None = None
    deletes: int = 0
    inserts: int = 0
    updates: int = 0


def metadata_json(counts: BatchCounts, app_id: str, batch_id: int) -> str:
    """The facts commit's ``userMetadata``: the counts plus ``batch_id`` and ``app_id``, times
    as ISO-8601 with milliseconds (bronze commits carried it too before ADR 0090)."""
    payload: dict[str, Any] = asdict(counts)
    payload.update(batch_id=batch_id, app_id=app_id)
    for key in ("min_commit_ts", "max_commit_ts"):
        value = payload[key]
        payload[key] = None if value is None else value.isoformat(timespec="milliseconds")
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


@dataclass
class FoldedMetrics:
    """The metrics files of one batch folded into facts columns (all ``None`` without files)."""

    source_rtt_ms: float | None = None
    read_seconds: float | None = None
    read_mb: float | None = None
    network_wait_ms: int | None = None
    retention_watermark_ts: datetime | None = None
    retention_headroom_hours: float | None = None
    source_max_commit_ts: datetime | None = None
    capture_lag_seconds: float | None = None
    ingestion_lag_seconds: float | None = None
    end_lsn: str | None = None
    end_commit_ts: datetime | None = None
    warnings: list[str] = field(default_factory=list)
    #: ``"cleanup_watermark"`` when the headroom was measured from the cleanup watermark
    headroom_from: str | None = None

    @property
    def detail(self) -> str | None:
        """``{"warnings": [...]}`` when there are warnings, plus ``"headroom_from"`` when the
        headroom was measured from the cleanup watermark; else ``None``."""
        payload: dict[str, object] = {"warnings": self.warnings} if self.warnings else {}
        if self.headroom_from is not None:
            payload["headroom_from"] = self.headroom_from
        return json.dumps(payload) if payload else None


def _hours(later: datetime | None, earlier: datetime | None) -> float | None:
    if later is None or earlier is None:
        return None
    return (later - earlier).total_seconds() / 3600.0


def fold_metrics(parts: Sequence[PartitionMetrics]) -> FoldedMetrics:
    """Folds a batch's partition files into the facts' metric columns.

    Median round trip; summed read seconds, megabytes and network wait (``None`` when a
    partition could not measure its wait); the last partition's (greatest ``to_lsn`` among those
    marked ``last``) end position, retention watermark and source max commit; the largest
    capture lag; the last partition's retention headroom (measured by the reader from the
    cleanup job's retention, mssql_cdc.source.headroom; ``None`` without it); ingestion lag =
    source max commit - end commit in seconds; warnings of every partition, each once, in order.
    """
    folded = FoldedMetrics()
    if not parts:
        return folded
    rtts = [p.source_rtt_ms for p in parts if p.source_rtt_ms is not None]
    folded.source_rtt_ms = float(statistics.median(rtts)) if rtts else None
    reads = [p.read_seconds for p in parts if p.read_seconds is not None]
    folded.read_seconds = float(sum(reads)) if reads else None
    sizes = [p.read_mb for p in parts if p.read_mb is not None]
    folded.read_mb = float(sum(sizes)) if sizes else None
    waits = [p.network_wait_ms for p in parts]
    folded.network_wait_ms = None if None in waits else sum(w for w in waits if w is not None)
    lags = [p.capture_lag_seconds for p in parts if p.capture_lag_seconds is not None]
    folded.capture_lag_seconds = float(max(lags)) if lags else None
    for part in parts:
        for warning in part.warnings:
            if warning not in folded.warnings:
                folded.warnings.append(warning)
    lasts = [p for p in parts if p.last]
    if lasts:
        last = max(lasts, key=lambda p: p.to_lsn)
        folded.end_lsn = last.end_lsn or last.to_lsn
        folded.end_commit_ts = parse_utc(last.end_commit_ts)
        folded.retention_watermark_ts = parse_utc(last.retention_watermark_ts)
        folded.source_max_commit_ts = parse_utc(last.source_max_commit_ts)
        folded.retention_headroom_hours = last.retention_headroom_hours
        folded.headroom_from = last.headroom_from
        lag_hours = _hours(folded.source_max_commit_ts, folded.end_commit_ts)
        folded.ingestion_lag_seconds = None if lag_hours is None else lag_hours * 3600.0
    return folded


def _row(values: Mapping[str, Any]) -> tuple[Any, ...]:
    unknown = set(values) - set(_FACT_NAMES)
    if unknown:
        raise KeyError(f"not facts columns: {sorted(unknown)}")
    return tuple(values.get(name) for name in _FACT_NAMES)


def batch_row(
    *,
    app_id: str,
    batch_id: int,
    counts: BatchCounts,
    metrics: FoldedMetrics,
    started_at: datetime,
    duration_ms: int,
    target: str,
    written_at: datetime,
) -> tuple[Any, ...]:
    """The micro-batch's facts row (``event`` NULL), in facts column order."""
    values: dict[str, Any] = asdict(counts)
    values.update(
        {k: v for k, v in asdict(metrics).items() if k not in ("warnings", "headroom_from")},
        app_id=app_id,
        batch_id=batch_id,
        started_at=started_at,
        duration_ms=duration_ms,
        detail=metrics.detail,
        target=target,
        written_at=written_at,
    )
    return _row(values)


def _detail(event: Mapping[str, Any]) -> str | None:
    detail = event.get("detail")
    if detail is None and event.get("kind") == "data_skipped":
        detail = {k: event[k] for k in ("from", "to", "certain", "reason") if k in event}
    if detail is None or isinstance(detail, str):
        return detail
    return json.dumps(detail, sort_keys=True)


def event_rows(
    *,
    app_id: str,
    batch_id: int,
    events: Sequence[Mapping[str, Any]],
    target: str,
    written_at: datetime,
) -> list[tuple[Any, ...]]:
    """One facts row per event file, ordered by LSN: ``rows`` 0,
    ``min_lsn`` = ``max_lsn`` = ``end_lsn`` = the event's LSN, the commit-time columns its
    commit time. Planning warnings (:func:`event_warnings`) make no row; files of another kind
    are skipped with a WARNING."""
    rows: list[tuple[str, str, tuple[Any, ...]]] = []
    for event in events:
        kind = event.get("kind")
        if kind == WARNING_EVENT:
            continue
        if kind not in EVENT_KINDS:
            log.warning("ignoring metrics event file of unknown kind %r", kind)
            continue
        lsn = event.get("lsn") or event.get("from")
        commit_ts = parse_utc(event.get("commit_ts"))
        values = {
            "app_id": app_id,
            "batch_id": batch_id,
            "rows": 0,
            "min_lsn": lsn,
            "max_lsn": lsn,
            "min_commit_ts": commit_ts,
            "max_commit_ts": commit_ts,
            "deletes": 0,
            "inserts": 0,
            "updates": 0,
            "event": kind,
            "lost_from_ts": parse_utc(event.get("lost_from_ts")),
            "lost_to_ts": parse_utc(event.get("lost_to_ts")),
            "end_lsn": lsn,
            "end_commit_ts": commit_ts,
            "detail": _detail(event),
            "target": target,
            "written_at": written_at,
        }
        rows.append((str(lsn or ""), f"{kind}/{event.get('key', '')}", _row(values)))
    return [row for _, _, row in sorted(rows, key=lambda r: (r[0], r[1]))]


def event_warnings(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """The planning warnings among the event files: their messages, sorted, each once."""
    messages = {
        str(event["message"])
        for event in events
        if event.get("kind") == WARNING_EVENT and event.get("message")
    }
    return sorted(messages)


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
    kind: str = "bootstrap",
    generation: int = 0,
    lost_from_ts: datetime | None = None,
    lost_to_ts: datetime | None = None,
    mode: str = "full",
    extra: Mapping[str, Any] | None = None,
) -> tuple[Any, ...]:
    """The ``snapshot_open`` row, written before the table is read: ``min_lsn`` = ``max_lsn``
    = ``end_lsn`` = the snapshot LSN, ``rows`` 0, ``detail`` ``{"mode": "full"|"chunked",
    "kind": "bootstrap"|"resnapshot", "generation": n, "lost_from_ts", "lost_to_ts"}`` plus
    ``extra`` (a chunked snapshot's ``keys``); a re-snapshot also fills the ``lost_*``
    columns."""
    values = _event(
        "snapshot_open",
        app_id=app_id,
        snapshot_lsn=snapshot_lsn,
        commit_ts=commit_ts,
        target=target,
        written_at=written_at,
    )
    values.update(lost_from_ts=lost_from_ts, lost_to_ts=lost_to_ts)
    values["detail"] = json.dumps(
        {
            "mode": mode,
            "kind": kind,
            "generation": generation,
            "lost_from_ts": _iso(lost_from_ts),
            "lost_to_ts": _iso(lost_to_ts),
            **(extra or {}),
        },
        sort_keys=True,
    )
    return _row(values)


def snapshot_event_row(
    event: str,
    *,
    app_id: str,
    snapshot_lsn: str,
    commit_ts: datetime | None,
    target: str,
    written_at: datetime,
    detail: Mapping[str, Any],
    rows: int = 0,
    min_lsn: str | None = None,
    max_lsn: str | None = None,
    started_at: datetime | None = None,
    duration_ms: int | None = None,
) -> tuple[Any, ...]:
    """A chunked snapshot's ``snapshot_plan`` or ``snapshot_chunk`` row: ``min_lsn`` /
    ``max_lsn`` default to the snapshot LSN (a chunk gives its stamp and the server's
    ``max_lsn`` after the read), ``end_lsn`` the snapshot LSN, ``detail`` as JSON."""
    values = _event(
        event,
        app_id=app_id,
        snapshot_lsn=snapshot_lsn,
        commit_ts=commit_ts,
        target=target,
        written_at=written_at,
    )
    values.update(
        rows=rows,
        min_lsn=min_lsn or snapshot_lsn,
        max_lsn=max_lsn or snapshot_lsn,
        started_at=started_at,
        duration_ms=duration_ms,
        detail=json.dumps(dict(detail), sort_keys=True),
    )
    return _row(values)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="milliseconds")


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
    detail: Mapping[str, Any] | None = None,
) -> tuple[Any, ...]:
    """The ``bootstrap`` row: the snapshot's ``rows`` (0 for an empty table, whose only trace
    it is), ``min_lsn`` = ``max_lsn`` = ``end_lsn`` = the snapshot LSN; ``started_at`` and
    ``duration_ms`` of the read when this run took it (``None`` when a rerun repairs it);
    a chunked snapshot's ``detail`` ``{snapshot, chunks, rows, last_lsn}``."""
    values = _event(
        "bootstrap",
        app_id=app_id,
        snapshot_lsn=snapshot_lsn,
        commit_ts=commit_ts,
        target=target,
        written_at=written_at,
    )
    values.update(rows=rows, started_at=started_at, duration_ms=duration_ms)
    if detail is not None:
        values["detail"] = json.dumps(dict(detail), sort_keys=True)
    return _row(values)


def resnapshot_row(
    *,
    app_id: str,
    snapshot_lsn: str,
    commit_ts: datetime | None,
    rows: int | None,
    started_at: datetime | None,
    duration_ms: int | None,
    lost_from_ts: datetime | None,
    lost_to_ts: datetime | None,
    generation: int,
    target: str,
    written_at: datetime,
    detail: Mapping[str, Any] | None = None,
) -> tuple[Any, ...]:
    """The ``resnapshot`` row of the re-snapshot that opens ``generation`` after data loss:
    ``app_id`` the generation's sink id (``<app_id>.g<n>``), ``min_lsn`` = ``max_lsn`` =
    ``end_lsn`` = the snapshot LSN, the lost range in ``lost_from_ts`` (commit time of the last
    offset processed; ``None`` when unknown) and ``lost_to_ts`` (of the oldest change CDC still
    held), ``detail`` ``{"generation": n}`` plus ``detail`` (a chunked re-snapshot's
    ``{snapshot, chunks, rows, last_lsn}``)."""
    values = _event(
        "resnapshot",
        app_id=app_id,
        snapshot_lsn=snapshot_lsn,
        commit_ts=commit_ts,
        target=target,
        written_at=written_at,
    )
    values.update(
        rows=rows,
        started_at=started_at,
        duration_ms=duration_ms,
        lost_from_ts=lost_from_ts,
        lost_to_ts=lost_to_ts,
        detail=json.dumps({"generation": generation, **(detail or {})}, sort_keys=True),
    )
    return _row(values)
