"""Facts rows, every kind of them, as typed plain Python values (docs/sink.md#the-facts-table):
a micro-batch's :class:`BatchRow` and :class:`EventRow` rows, a snapshot's
:class:`SnapshotOpened` row, a chunked snapshot's :class:`SnapshotPlanned` and
:class:`ChunkLanded` rows, and the :class:`Bootstrapped` (first snapshot or seed) or
:class:`Resnapshotted` (after data loss) row that closes a snapshot; plus the metrics folding
(:func:`fold_metrics`) of a batch's row.

No Spark here. Each row kind knows its own columns (``values()``); :func:`facts_row` adds the
columns one commit shares (``app_id``, ``target``, ``written_at``) and returns the tuple in the
column order of ``schemas.FACTS`` that ``facts_table.FactsTable`` appends. Times are naive
``datetime`` in UTC (TIMESTAMP_NTZ).

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
from typing import Any, ClassVar, Literal, Protocol

from mssql_cdc._metrics import WARNING_EVENT, PartitionMetrics
from mssql_cdc.sink.schemas import FACTS

__all__ = [
    "EVENT_KINDS",
    "FACTS_DDL",
    "BatchCounts",
    "BatchRow",
    "Bootstrapped",
    "ChunkLanded",
    "EventRow",
    "FactRow",
    "FoldedMetrics",
    "Resnapshotted",
    "SnapshotOpened",
    "SnapshotPlanned",
    "event_warnings",
    "facts_row",
    "fold_metrics",
    "metadata_json",
    "parse_utc",
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


#: fields of :class:`FoldedMetrics` that are not facts columns: they reach the row's ``detail``
_DETAIL_ONLY = ("warnings", "headroom_from")


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


# -- typed facts rows --------------------------------------------------------------------------


class FactRow(Protocol):
    """One facts row of a known kind: the columns it sets itself. The writer adds the columns
    every row of one commit shares (``app_id``, ``target``, ``written_at``;
    ``facts_table.FactsTable.append``); unset columns are NULL."""

    @property
    def event(self) -> str | None:
        """The ``event`` column (``None``: a micro-batch row)."""
        ...

    def values(self) -> dict[str, Any]:
        """The row's own columns, by name."""
        ...


def _at(lsn: str | None, commit_ts: datetime | None) -> dict[str, Any]:
    """The columns of an event at one LSN: ``min_lsn`` = ``max_lsn`` = ``end_lsn``, the
    commit-time columns its commit time, counts 0, no batch."""
    return {
        "batch_id": None,
        "rows": 0,
        "min_lsn": lsn,
        "max_lsn": lsn,
        "min_commit_ts": commit_ts,
        "max_commit_ts": commit_ts,
        "deletes": 0,
        "inserts": 0,
        "updates": 0,
        "end_lsn": lsn,
        "end_commit_ts": commit_ts,
    }


@dataclass(frozen=True)
class BatchRow:
    """A micro-batch's row: its counts and ranges, the folded metrics (their warnings and
    ``headroom_from`` as ``detail``), when it started and how long it took (ms)."""

    event: ClassVar[str | None] = None

    batch_id: int
    counts: BatchCounts
    metrics: FoldedMetrics
    started_at: datetime
    duration_ms: int

    def values(self) -> dict[str, Any]:
        values: dict[str, Any] = asdict(self.counts)
        values.update(
            {k: v for k, v in asdict(self.metrics).items() if k not in _DETAIL_ONLY},
            batch_id=self.batch_id,
            started_at=self.started_at,
            duration_ms=self.duration_ms,
            detail=self.metrics.detail,
        )
        return values


@dataclass(frozen=True)
class EventRow:
    """An event a micro-batch carries (``schema_change``, ``capture_instance_switched``,
    ``data_skipped``), written in the batch's own facts commit: ``rows`` 0, ``min_lsn`` =
    ``max_lsn`` = ``end_lsn`` = the event's LSN, the commit-time columns its commit time."""

    batch_id: int
    kind: str
    lsn: str | None
    commit_ts: datetime | None
    lost_from_ts: datetime | None
    lost_to_ts: datetime | None
    detail: str | None

    @property
    def event(self) -> str:
        """The event's kind."""
        return self.kind

    def values(self) -> dict[str, Any]:
        values = _at(self.lsn, self.commit_ts)
        values.update(
            batch_id=self.batch_id,
            event=self.kind,
            lost_from_ts=self.lost_from_ts,
            lost_to_ts=self.lost_to_ts,
            detail=self.detail,
        )
        return values

    @classmethod
    def from_files(cls, batch_id: int, events: Sequence[Mapping[str, Any]]) -> list[EventRow]:
        """One row per event file (``MetricsDir.events()``, keys in the module doc), ordered by
        LSN then ``kind/key``. Planning warnings (:func:`event_warnings`) make no row; files
        of another kind are skipped with a WARNING."""
        found: list[tuple[str, str, EventRow]] = []
        for event in events:
            kind = event.get("kind")
            if kind == WARNING_EVENT:
                continue
            if kind not in EVENT_KINDS:
                log.warning("ignoring metrics event file of unknown kind %r", kind)
                continue
            lsn = event.get("lsn") or event.get("from")
            row = cls(
                batch_id=batch_id,
                kind=str(kind),
                lsn=lsn,
                commit_ts=parse_utc(event.get("commit_ts")),
                lost_from_ts=parse_utc(event.get("lost_from_ts")),
                lost_to_ts=parse_utc(event.get("lost_to_ts")),
                detail=_detail(event),
            )
            found.append((str(lsn or ""), f"{kind}/{event.get('key', '')}", row))
        return [row for _, _, row in sorted(found, key=lambda r: (r[0], r[1]))]


@dataclass(frozen=True)
class SnapshotOpened:
    """A snapshot's ``snapshot_open`` row, written before the table is read: ``detail``
    ``{"mode", "kind", "generation", "lost_from_ts", "lost_to_ts"}`` (``kind`` ``resnapshot``
    in a generation > 0, else ``bootstrap``) plus a chunked snapshot's ``keys``; a re-snapshot
    also fills the ``lost_*`` columns."""

    event: ClassVar[str | None] = "snapshot_open"

    lsn: str
    commit_ts: datetime | None
    generation: int = 0
    mode: Literal["full", "chunked"] = "full"
    lost_from_ts: datetime | None = None
    lost_to_ts: datetime | None = None
    #: a chunked snapshot's key columns (its plan cuts by them)
    keys: tuple[str, ...] = ()

    def values(self) -> dict[str, Any]:
        values = _at(self.lsn, self.commit_ts)
        detail: dict[str, Any] = {
            "mode": self.mode,
            "kind": "resnapshot" if self.generation > 0 else "bootstrap",
            "generation": self.generation,
            "lost_from_ts": _iso(self.lost_from_ts),
            "lost_to_ts": _iso(self.lost_to_ts),
        }
        if self.mode == "chunked":
            detail["keys"] = list(self.keys)
        values.update(
            event=self.event,
            lost_from_ts=self.lost_from_ts,
            lost_to_ts=self.lost_to_ts,
            detail=json.dumps(detail, sort_keys=True),
        )
        return values


@dataclass(frozen=True)
class SnapshotPlanned:
    """A chunked snapshot's ``snapshot_plan`` row: the plan as ``detail`` (``{snapshot, kind,
    keys, chunk_rows, rows, chunks}``), when planning started and how long it took (ms)."""

    event: ClassVar[str | None] = "snapshot_plan"

    lsn: str
    commit_ts: datetime | None
    plan: Mapping[str, Any]
    started_at: datetime
    duration_ms: int

    def values(self) -> dict[str, Any]:
        values = _at(self.lsn, self.commit_ts)
        values.update(
            event=self.event,
            started_at=self.started_at,
            duration_ms=self.duration_ms,
            detail=json.dumps(dict(self.plan), sort_keys=True),
        )
        return values


@dataclass(frozen=True)
class ChunkLanded:
    """One landed chunk's ``snapshot_chunk`` row: its rows, ``min_lsn`` the stamp it was read
    at, ``max_lsn`` the server's max LSN after the read, its wave's start and duration (ms),
    ``detail`` ``{snapshot, chunk, wave, lo, hi, last, wave_chunks}`` (``lo``/``hi`` the plan's
    bounds, ``last`` whether it is the plan's last chunk)."""

    event: ClassVar[str | None] = "snapshot_chunk"

    lsn: str
    commit_ts: datetime | None
    chunk: int
    wave: int
    rows: int
    stamp: str
    max_lsn: str
    lo: Any
    hi: Any
    last: bool
    wave_chunks: int = 1
    wave_ms: int | None = None
    started_at: datetime | None = None

    def values(self) -> dict[str, Any]:
        values = _at(self.lsn, self.commit_ts)
        detail = {
            "snapshot": self.lsn,
            "chunk": self.chunk,
            "wave": self.wave,
            "lo": self.lo,
            "hi": self.hi,
            "last": self.last,
            "wave_chunks": self.wave_chunks,
        }
        values.update(
            event=self.event,
            rows=self.rows,
            min_lsn=self.stamp or self.lsn,
            max_lsn=self.max_lsn or self.lsn,
            started_at=self.started_at,
            duration_ms=self.wave_ms,
            detail=json.dumps(detail, sort_keys=True),
        )
        return values


@dataclass(frozen=True)
class Bootstrapped:
    """The ``bootstrap`` row that closes a stream's first snapshot (or seed): its ``rows``
    (0 for an empty table, whose only trace it is); ``started_at`` and ``duration_ms`` of the
    read when this run took it (``None`` when a rerun repairs it, or a chunked snapshot
    closes); a chunked snapshot's ``detail`` ``{snapshot, chunks, rows, last_lsn}``."""

    event: ClassVar[str | None] = "bootstrap"

    lsn: str
    commit_ts: datetime | None
    rows: int
    started_at: datetime | None = None
    duration_ms: int | None = None
    detail: Mapping[str, Any] | None = None

    def values(self) -> dict[str, Any]:
        values = _at(self.lsn, self.commit_ts)
        values.update(
            event=self.event,
            rows=self.rows,
            started_at=self.started_at,
            duration_ms=self.duration_ms,
        )
        if self.detail is not None:
            values["detail"] = json.dumps(dict(self.detail), sort_keys=True)
        return values


@dataclass(frozen=True)
class Resnapshotted:
    """The ``resnapshot`` row of the re-snapshot that opens ``generation`` after data loss:
    its ``rows``, the lost range (``lost_from_ts``: commit time of the last offset processed,
    ``None`` when unknown; ``lost_to_ts``: of the oldest change CDC still held), ``detail``
    ``{"generation": n}`` plus a chunked re-snapshot's ``{snapshot, chunks, rows,
    last_lsn}``."""

    event: ClassVar[str | None] = "resnapshot"

    generation: int
    lsn: str
    commit_ts: datetime | None
    rows: int | None
    started_at: datetime | None
    duration_ms: int | None
    lost_from_ts: datetime | None
    lost_to_ts: datetime | None
    detail: Mapping[str, Any] | None = None

    def values(self) -> dict[str, Any]:
        values = _at(self.lsn, self.commit_ts)
        values.update(
            event=self.event,
            rows=self.rows,
            started_at=self.started_at,
            duration_ms=self.duration_ms,
            lost_from_ts=self.lost_from_ts,
            lost_to_ts=self.lost_to_ts,
            detail=json.dumps(
                {"generation": self.generation, **(self.detail or {})}, sort_keys=True
            ),
        )
        return values


def facts_row(row: FactRow, *, app_id: str, target: str, written_at: datetime) -> tuple[Any, ...]:
    """``row`` as a facts table row (a tuple in ``schemas.FACTS`` column order), with the
    columns its commit shares: ``app_id`` (the sink id of the stream that writes it),
    ``target`` (the bronze table as the stream names it) and ``written_at``.

    Raises:
        KeyError: the row names a column the facts table does not have.
    """
    values = row.values()
    values.update(app_id=app_id, target=target, written_at=written_at)
    return _row(values)


def _row(values: Mapping[str, Any]) -> tuple[Any, ...]:
    unknown = set(values) - set(_FACT_NAMES)
    if unknown:
        raise KeyError(f"not facts columns: {sorted(unknown)}")
    return tuple(values.get(name) for name in _FACT_NAMES)


def _detail(event: Mapping[str, Any]) -> str | None:
    detail = event.get("detail")
    if detail is None and event.get("kind") == "data_skipped":
        detail = {k: event[k] for k in ("from", "to", "certain", "reason") if k in event}
    if detail is None or isinstance(detail, str):
        return detail
    return json.dumps(detail, sort_keys=True)


def event_warnings(events: Sequence[Mapping[str, Any]]) -> list[str]:
    """The planning warnings among the event files: their messages, sorted, each once."""
    messages = {
        str(event["message"])
        for event in events
        if event.get("kind") == WARNING_EVENT and event.get("message")
    }
    return sorted(messages)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="milliseconds")
