"""Snapshots as the facts rows record them: opened (``snapshot_open``), planned
(``snapshot_plan``), chunks landed (``snapshot_chunk``) and closed (``bootstrap`` or
``resnapshot``), read back for one stream or for every stream of a target
(docs/bootstrap.md#chunked-snapshots-and-backfill; ADRs 0160, 0173).

Runs on the driver. :func:`chunked_snapshot` is everything a ``backfill()`` call and the
recovery need of a stream's chunked snapshot; :class:`SnapshotEvents` answers the questions
``apply_changes`` and ``reconcile`` ask of a target from one read. A chunked re-snapshot's rows
carry its generation's sink id ``<app_id>.g<n>``: a stream's rows are its app_id's and every
generation's (``ids.belongs``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.sink.ledger import ids
from mssql_cdc.sink.tables import TableRef, same_table, table_ref

if TYPE_CHECKING:
    from pyspark.sql import Column, Row, SparkSession

__all__ = [
    "SNAPSHOT_EVENTS",
    "ChunkFact",
    "ChunkedSnapshot",
    "SnapshotEvents",
    "SnapshotOpen",
    "chunked_snapshot",
    "newest_snapshot_event",
    "newest_snapshot_opened",
    "open_chunked_snapshots",
]


@dataclass(frozen=True)
class ChunkFact:
    """One landed chunk: its number, rows, wave, the stamp it was read at (``min_lsn``), the
    server's ``max_lsn`` after the read, and its wave's duration and chunk count (the pace)."""

    chunk: int
    rows: int
    wave: int
    stamp: str
    max_lsn: str
    wave_ms: int | None = None
    wave_chunks: int = 1


@dataclass(frozen=True)
class ChunkedSnapshot:
    """The newest chunked snapshot a stream opened for a target, as the facts record it."""

    app_id: str
    snapshot_lsn: str
    commit_ts: datetime | None
    generation: int
    open_detail: dict[str, Any]
    plan: dict[str, Any] | None = None
    chunks: dict[int, ChunkFact] = field(default_factory=dict)
    complete: bool = False
    #: the target as the ``snapshot_open`` row names it
    target: str = ""
    #: ``bootstrap`` (generation 0) or ``resnapshot`` (a re-snapshot after data loss)
    kind: str = "bootstrap"
    #: a re-snapshot's lost range, as its ``snapshot_open`` row records it
    lost_from_ts: datetime | None = None
    lost_to_ts: datetime | None = None

    @property
    def rows_done(self) -> int:
        """Rows of the landed chunks."""
        return sum(c.rows for c in self.chunks.values())


@dataclass(frozen=True)
class SnapshotOpen:
    """The newest ``snapshot_open`` row of a target: its LSN, the stream (``app_id``) that
    wrote it and its mode (``full`` or ``chunked``)."""

    lsn: str
    app_id: str
    mode: str


def _same_target(spark: SparkSession, text: object, target: TableRef) -> bool:
    return isinstance(text, str) and same_table(spark, table_ref(text, "target"), target)


def _json(text: object) -> dict[str, Any]:
    try:
        value = json.loads(str(text)) if text is not None else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _stream_rows(app_id: str) -> Column:
    """The facts rows of the stream ``app_id`` in every generation: ``app_id`` itself and its
    generations' sink ids ``<app_id>.g<n>``."""
    from pyspark.sql import functions as sf

    return (sf.col("app_id") == app_id) | sf.col("app_id").rlike(ids.generations_regex(app_id))


#: the facts columns a chunked snapshot is read back from
_SNAPSHOT_COLUMNS = (
    "app_id",
    "event",
    "rows",
    "min_lsn",
    "max_lsn",
    "max_commit_ts",
    "duration_ms",
    "detail",
    "target",
    "end_lsn",
    "lost_from_ts",
    "lost_to_ts",
)
#: the events of a snapshot's life: opened, planned, chunks landed, closed
SNAPSHOT_EVENTS = ("snapshot_open", "snapshot_plan", "snapshot_chunk", "bootstrap", "resnapshot")


def chunked_snapshot(
    spark: SparkSession, facts: TableRef, app_id: str, target: TableRef
) -> ChunkedSnapshot | None:
    """The newest chunked snapshot the stream ``app_id`` opened for ``target`` (in any
    spelling) in any generation (a chunked re-snapshot's rows carry ``<app_id>.g<n>``), with its
    plan, landed chunks and whether a ``bootstrap``/``resnapshot`` row of the stream closes it;
    ``None`` without one (or without a facts table)."""
    from pyspark.sql import functions as sf

    if not facts.exists(spark):
        return None
    rows = [
        r
        for r in facts.read(spark)
        .where(
            sf.col("event").isin(*SNAPSHOT_EVENTS)
            & _stream_rows(app_id)
            & sf.col("max_lsn").isNotNull()
        )
        .select(*_SNAPSHOT_COLUMNS)
        .collect()
        if _same_target(spark, r["target"], target)
    ]
    return _chunked_from_rows(rows)


def _chunked_from_rows(rows: Sequence[Row]) -> ChunkedSnapshot | None:
    """:func:`chunked_snapshot` from the rows it reads (one stream's, of one target, with a
    ``max_lsn``)."""
    opens = [
        r
        for r in rows
        if r["event"] == "snapshot_open" and _json(r["detail"]).get("mode") == "chunked"
    ]
    if not opens:
        return None
    newest = max(opens, key=lambda r: str(r["min_lsn"]))
    lsn = str(newest["min_lsn"])
    detail = _json(newest["detail"])
    plan = None
    chunks: dict[int, ChunkFact] = {}
    complete = False
    for r in rows:
        info = _json(r["detail"])
        if r["event"] == "snapshot_plan" and r["min_lsn"] == lsn:
            plan = info
        elif r["event"] == "snapshot_chunk" and info.get("snapshot") == lsn:
            number = int(info["chunk"])
            chunks[number] = ChunkFact(
                chunk=number,
                rows=int(r["rows"] or 0),
                wave=int(info.get("wave") or 0),
                stamp=str(r["min_lsn"]),
                max_lsn=str(r["max_lsn"]),
                wave_ms=None if r["duration_ms"] is None else int(r["duration_ms"]),
                wave_chunks=int(info.get("wave_chunks") or 1),
            )
        elif r["event"] in ("bootstrap", "resnapshot") and str(r["max_lsn"]) >= lsn:
            complete = True
    generation = int(detail.get("generation") or 0)
    return ChunkedSnapshot(
        app_id=str(newest["app_id"]),
        snapshot_lsn=lsn,
        commit_ts=newest["max_commit_ts"],
        generation=generation,
        open_detail=detail,
        plan=plan,
        chunks=chunks,
        complete=complete,
        target=str(newest["target"]),
        kind=str(detail.get("kind") or ("resnapshot" if generation > 0 else "bootstrap")),
        lost_from_ts=newest["lost_from_ts"],
        lost_to_ts=newest["lost_to_ts"],
    )


@dataclass(frozen=True)
class SnapshotEvents:
    """Every snapshot event row (:data:`SNAPSHOT_EVENTS`) written for one target by any stream,
    read with one query: the questions ``apply_changes`` asks of the facts in one call (the
    newest complete snapshot, the newest opened one, the open chunked ones) answered from it
    (driver)."""

    rows: tuple[Row, ...]

    @classmethod
    def read(
        cls,
        spark: SparkSession,
        facts: TableRef,
        target: TableRef,
        events: Sequence[str] = SNAPSHOT_EVENTS,
    ) -> SnapshotEvents:
        """One query of the facts table (none when it does not exist), of the rows of
        ``events`` (a subset of :data:`SNAPSHOT_EVENTS`) only."""
        from pyspark.sql import functions as sf

        if not facts.exists(spark):
            return cls(())
        found = (
            facts.read(spark)
            .where(
                sf.col("event").isin(*events)
                & (sf.col("min_lsn").isNotNull() | sf.col("max_lsn").isNotNull())
            )
            .select(*_SNAPSHOT_COLUMNS)
            .collect()
        )
        same: dict[str, bool] = {}
        rows = []
        for r in found:
            text = r["target"]
            if not isinstance(text, str):
                continue
            if text not in same:
                same[text] = _same_target(spark, text, target)
            if same[text]:
                rows.append(r)
        return cls(tuple(rows))

    def newest_done(self) -> tuple[str, datetime | None] | None:
        """The newest ``bootstrap``/``resnapshot`` row's snapshot LSN and commit time
        (:func:`newest_snapshot_event`); ``None`` without one."""
        done = [
            (str(r["max_lsn"]), r["max_commit_ts"])
            for r in self.rows
            if r["event"] in ("bootstrap", "resnapshot") and r["max_lsn"] is not None
        ]
        return max(done, key=lambda d: d[0]) if done else None

    def newest_opened(self) -> SnapshotOpen | None:
        """The newest ``snapshot_open`` row (:func:`newest_snapshot_opened`); ``None``
        without one."""
        opens = [r for r in self.rows if r["event"] == "snapshot_open" and r["min_lsn"] is not None]
        if not opens:
            return None
        r = max(opens, key=lambda r: str(r["min_lsn"]))
        mode = _json(r["detail"]).get("mode")
        return SnapshotOpen(str(r["min_lsn"]), str(r["app_id"]), str(mode or "full"))

    def open_chunked(self) -> list[ChunkedSnapshot]:
        """As :func:`open_chunked_snapshots` for the target: every stream's newest chunked
        snapshot not closed yet, ordered by app_id."""
        return [snap for snap in self._chunked() if not snap.complete]

    def newest_chunked(self) -> ChunkedSnapshot | None:
        """The newest chunked snapshot of the target by any stream (highest LSN), open or
        complete; ``None`` without one."""
        return max(self._chunked(), key=lambda snap: snap.snapshot_lsn, default=None)

    def chunk_records(self, snapshot_lsn: str) -> list[Row]:
        """The ``snapshot_chunk`` rows of the chunked snapshot at ``snapshot_lsn``, as written
        (a chunk recorded twice is there twice)."""
        return [
            r
            for r in self.rows
            if r["event"] == "snapshot_chunk" and _json(r["detail"]).get("snapshot") == snapshot_lsn
        ]

    def _chunked(self) -> list[ChunkedSnapshot]:
        """Every stream's newest chunked snapshot, ordered by app_id."""
        streams = sorted(
            {
                _opening_stream(r["app_id"], r["detail"])
                for r in self.rows
                if r["event"] == "snapshot_open"
                and r["app_id"] is not None
                and _json(r["detail"]).get("mode") == "chunked"
            }
        )
        out: list[ChunkedSnapshot] = []
        seen: set[str] = set()
        for app_id in streams:
            snap = _chunked_from_rows(
                [
                    r
                    for r in self.rows
                    if r["max_lsn"] is not None
                    and isinstance(r["app_id"], str)
                    and ids.belongs(app_id, r["app_id"])
                ]
            )
            if snap is not None and snap.app_id not in seen:
                seen.add(snap.app_id)
                out.append(snap)
        return out


def _opening_stream(sink_id: object, detail: object) -> str:
    """The stream (its app_id, as the user passes it) whose ``snapshot_open`` row this is: a
    re-snapshot's row carries its generation's sink id ``<app_id>.g<n>`` and ``n`` in its
    detail. Each stream's snapshots are then looked at together, so a chunked snapshot an
    older generation left open is superseded by the newer generation's."""
    generation = _json(detail).get("generation")
    number = generation if isinstance(generation, int) else 0
    return ids.stream_of(str(sink_id), number)


def newest_snapshot_event(
    spark: SparkSession, facts: TableRef, target: TableRef
) -> tuple[str, datetime | None] | None:
    """The newest ``bootstrap`` or ``resnapshot`` row written for ``target`` (in any spelling),
    by any stream: its snapshot LSN and commit time; ``None`` without one. One query of the
    facts table (the rule: ``SnapshotEvents.newest_done``)."""
    return SnapshotEvents.read(spark, facts, target, ("bootstrap", "resnapshot")).newest_done()


def newest_snapshot_opened(
    spark: SparkSession, facts: TableRef, target: TableRef
) -> SnapshotOpen | None:
    """The newest ``snapshot_open`` row written for ``target`` (in any spelling), by any
    stream; ``None`` without one. Open until a ``bootstrap``/``resnapshot`` row for the target
    reaches it (:func:`newest_snapshot_event`). One query of the facts table (the rule:
    ``SnapshotEvents.newest_opened``)."""
    return SnapshotEvents.read(spark, facts, target, ("snapshot_open",)).newest_opened()


def open_chunked_snapshots(
    spark: SparkSession, facts: TableRef, target: TableRef | None = None
) -> list[ChunkedSnapshot]:
    """Every stream's newest chunked snapshot not closed yet (of ``target`` when given, in any
    spelling), ordered by app_id."""
    from pyspark.sql import functions as sf

    if not facts.exists(spark):
        return []
    found = (
        facts.read(spark)
        .where(
            (sf.col("event") == "snapshot_open")
            & (sf.get_json_object("detail", "$.mode") == "chunked")
        )
        .select("app_id", "target", "detail")
        .collect()
    )
    streams = {
        (_opening_stream(r["app_id"], r["detail"]), str(r["target"]))
        for r in found
        if r["target"] is not None and r["app_id"] is not None
    }
    out = []
    seen: set[tuple[str, str]] = set()
    for app_id, text in sorted(streams):
        ref = table_ref(text, "target")
        if target is not None and not same_table(spark, ref, target):
            continue
        snap = chunked_snapshot(spark, facts, app_id, ref)
        # one target written in two spellings finds the same snapshot: listed once
        if snap is not None and not snap.complete and (snap.app_id, snap.target) not in seen:
            seen.add((snap.app_id, snap.target))
            out.append(snap)
    return out
