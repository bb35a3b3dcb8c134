"""``CdcStream.backfill()``: reading an open chunked snapshot in waves, next to the running
stream (docs/bootstrap.md#chunked-snapshots-and-backfill; ADRs 0160-0162).

Runs on the driver, in the calling Python process (it must reach SQL Server). One call:

1. finds the stream's newest chunked snapshot of the target in the facts table
   (``Ledger.chunked``); none returns state ``no_snapshot`` at once
   (paused, with the reason: not opened yet, another target/app_id/facts table, or a stream
   that bootstraps with ``snapshot="full"``), a closed one returns ``done``;
2. plans it once: the first call cuts the table into chunks of ``chunk_rows`` keys
   (:func:`mssql_cdc.source.plan_chunks`) and records the plan in the ``snapshot_plan`` facts
   row; every later call, after any crash, reads the plan back and never plans again;
3. brings the facts up to bronze (after a crash between a wave's append and its facts rows,
   or another run's wave): the ledger says which chunks bronze holds (the version of the wave
   commits is the newest wave's first chunk, the wave's own commit lists its chunks, and chunks
   land in plan order), and the ``snapshot_chunk`` rows from the one after the last the facts
   record are written from the rows bronze holds;
4. reads waves: before each, pauses (``waiting_headroom``) when the stream's newest facts row
   shows less retention headroom than ``min_headroom_hours`` (minus that row's age), or
   (``waiting_metrics``) when the stream has written no micro-batch facts row yet; stops with
   ``running`` when ``max_waves``/``max_seconds`` ran out; records the wave's stamp L
   (``sys.fn_cdc_get_max_lsn()``, >= S), reads the next chunks through
   ``format("mssql_cdc_snapshot")`` with ``snapshotChunks`` (one partition per chunk, rows
   stamped L), appends them in one commit (keyed by the wave's first chunk: a replay is
   skipped by Delta, and so is a wave another run landed from the same or a later chunk), then
   brings the facts up to bronze as in 3 (one ``snapshot_chunk`` row per chunk, keyed by the
   first chunk of the rows written, on the facts table);
5. after the last chunk, writes the row that makes the snapshot complete
   (``TargetLedger.newest_complete``; min = max = S, rows = the chunks' sum):
   ``bootstrap``, or for a chunked re-snapshot after data loss (generation ``n`` > 0, opened by
   ``snapshots.resnapshot``; its rows carry ``<app_id>.g<n>``) the generation's ``resnapshot``
   row (ADR 0163).

Two calls on one snapshot at once follow each other: a wave another run landed first (the
ledger's check before the append, :class:`~mssql_cdc.sink.WaveOvertakenError`), landed after
that check (Delta skips this run's append: ADR 0200) or committed at the same moment (a Delta
conflict) is not written again; the call re-reads the facts and goes on after it
(docs/bootstrap.md, "Overlapping runs").

The headroom pause reads the newest micro-batch row of the snapshot's generation; a NULL
headroom there is unknown, not short: no pause, one WARNING (ADR 0164).

Every wave logs at INFO on the ``mssql_cdc`` logger when it starts and ends (chunks, rows,
seconds). A change committed while a chunk is read is both in the chunk (stamped L, taken
before the read) and in the stream after L: the latest image per key is the table's.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.sink import (
    ChunkedSnapshot,
    ChunkFact,
    ChunkLanded,
    SnapshotPlanned,
    WaveCommit,
    WaveOvertakenError,
    WaveRows,
    is_conflict,
    utc_now,
)
from mssql_cdc.snapshots.reader import TableReader
from mssql_cdc.types import BackfillState, BackfillStatus

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mssql_cdc.sink import Ledger, TableRef

__all__ = ["BackfillArgs", "backfill", "check_backfill_args", "open_progress"]

log = logging.getLogger("mssql_cdc.snapshots")

#: ``chunk_rows`` when the first call gives none
DEFAULT_CHUNK_ROWS = 1_000_000
#: ``target_wave_seconds`` when none is given
DEFAULT_WAVE_SECONDS = 300.0
_ISOLATIONS = {"snapshot": "snapshot", "readcommitted": "readCommitted"}

#: sink ids already warned that their headroom is unknown (one WARNING per process)
_unknown_headroom_warned: set[str] = set()


@dataclass(frozen=True)
class BackfillArgs:
    """``backfill()``'s budget and pacing arguments, checked."""

    chunk_rows: int | None = None
    max_waves: int | None = None
    max_seconds: float | None = None
    target_wave_seconds: float = DEFAULT_WAVE_SECONDS
    min_headroom_hours: float | None = None
    isolation: str | None = None


def _positive_int(name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1 (or None), got {value!r}")
    return value


def _number(name: str, value: object, *, allow_zero: bool) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number or None, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound} (or None), got {value!r}")
    return float(value)


def check_backfill_args(
    *,
    chunk_rows: object,
    max_waves: object,
    max_seconds: object,
    target_wave_seconds: object,
    min_headroom_hours: object,
    isolation: object,
) -> BackfillArgs:
    """Checks ``backfill()``'s keyword arguments (each error names the argument and what is
    allowed).

    Raises:
        TypeError, ValueError: a bad argument.
    """
    chosen_isolation = None
    if isolation is not None:
        if not isinstance(isolation, str) or isolation.lower() not in _ISOLATIONS:
            raise ValueError(
                f"isolation must be 'snapshot', 'readCommitted' (any case) or None (the "
                f"stream's isolationLevel option), got {isolation!r}"
            )
        chosen_isolation = _ISOLATIONS[isolation.lower()]
    wave = _number("target_wave_seconds", target_wave_seconds, allow_zero=True)
    return BackfillArgs(
        chunk_rows=_positive_int("chunk_rows", chunk_rows),
        max_waves=_positive_int("max_waves", max_waves),
        max_seconds=_number("max_seconds", max_seconds, allow_zero=False),
        target_wave_seconds=DEFAULT_WAVE_SECONDS if wave is None else wave,
        min_headroom_hours=_number("min_headroom_hours", min_headroom_hours, allow_zero=True),
        isolation=chosen_isolation,
    )


@dataclass
class _Run:
    """One ``backfill()`` call: the table, the ledger of the stream, its arguments and the sink
    id the snapshot's rows carry (the user's app_id, or ``<app_id>.g<n>`` for a re-snapshot)."""

    reader: TableReader
    ledger: Ledger
    args: BackfillArgs
    sink_id: str
    #: this call's token in its waves' ``userMetadata``: its own wave told from another run's
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def target(self) -> TableRef:
        return self.ledger.target


def _status(
    snap: ChunkedSnapshot,
    plan: dict[str, Any] | None,
    chunks: dict[int, ChunkFact],
    state: BackfillState,
    *,
    waves: int,
    reason: str | None = None,
) -> BackfillStatus:
    planned = None if plan is None else len(plan["chunks"])
    done_rows = sum(c.rows for c in chunks.values())
    estimate = max(int((plan or {}).get("rows") or 0), done_rows)
    eta: float | None = None
    if state == "done":
        eta = 0.0
    elif planned is not None:
        paces = {c.wave: (c.wave_ms, c.wave_chunks) for c in chunks.values() if c.wave_ms}
        if paces:
            ms = sum(p[0] for p in paces.values() if p[0] is not None)
            count = sum(p[1] for p in paces.values())
            eta = ms / 1000.0 / max(count, 1) * (planned - len(chunks))
    return BackfillStatus(
        state=state,
        snapshot=snap.snapshot_lsn,
        chunks_done=len(chunks),
        chunks_total=planned,
        rows_done=done_rows,
        rows_estimated=estimate,
        eta_seconds=eta,
        waves=waves,
        reason=reason,
    )


def open_progress(spark: SparkSession, facts: TableRef) -> list[tuple[str, str, BackfillStatus]]:
    """``(app_id, target, status)`` of every chunked snapshot the facts table holds open (the
    progress ``mssql-cdc status`` shows): state ``running`` (call ``backfill()`` again), with
    ``chunks_total`` ``None`` and a note before the first call planned it."""
    from mssql_cdc.sink import TargetLedger

    out = []
    for snap in TargetLedger.open_everywhere(spark, facts):
        reason = None if snap.plan is not None else "not planned yet: run backfill()"
        status = _status(snap, snap.plan, snap.chunks, "running", waves=0, reason=reason)
        out.append((snap.app_id, snap.target, status))
    return out


def _plan(run: _Run, snap: ChunkedSnapshot) -> dict[str, Any]:
    """The recorded plan, checked against the table's key; planned and recorded first when
    there is none."""
    if snap.plan is not None:
        keys = run.reader.chunk_key()
        if [k.lower() for k in keys] != [str(k).lower() for k in snap.plan.get("keys", [])]:
            raise ValueError(
                f"{run.target.text}: the chunked snapshot at {snap.snapshot_lsn} was planned on "
                f"the key ({', '.join(map(str, snap.plan.get('keys', [])))}) but the table is "
                f"now read by ({', '.join(keys)}): its chunks no longer tile the table. Take a "
                "new snapshot"
            )
        if run.args.chunk_rows is not None and run.args.chunk_rows != snap.plan.get("chunk_rows"):
            log.warning(
                "%s: chunk_rows=%d ignored: the chunked snapshot at %s was planned with "
                "chunk_rows=%s, and its plan never changes",
                run.sink_id,
                run.args.chunk_rows,
                snap.snapshot_lsn,
                snap.plan.get("chunk_rows"),
            )
        return snap.plan
    size = run.args.chunk_rows or DEFAULT_CHUNK_ROWS
    started = utc_now()
    planned = run.reader.plan_chunks(size)
    keys = [name for name, _ in planned.key]
    plan: dict[str, Any] = {
        "snapshot": snap.snapshot_lsn,
        "kind": "keyset",
        "keys": keys,
        "chunk_rows": size,
        "rows": planned.rows,
        "chunks": [[lo, hi] for lo, hi in planned.chunks],
    }
    recorded = run.ledger.plan(
        snap,
        SnapshotPlanned(
            snap.snapshot_lsn, snap.commit_ts, plan, started, round(planned.seconds * 1000)
        ),
    )
    log.info(
        "%s: chunked snapshot at %s planned: %d chunks of up to %d rows over %d rows (key %s) "
        "in %.1f s",
        run.sink_id,
        snap.snapshot_lsn,
        len(planned.chunks),
        size,
        planned.rows,
        ", ".join(keys),
        planned.seconds,
    )
    # read back, so every call (this one too) runs on the recorded plan
    return plan if recorded is None else recorded


@dataclass(frozen=True)
class _Wave:
    """A wave this run read: its chunks, the stamp L they were read at, the server's max LSN
    after the read, when it started and how long it took."""

    numbers: list[int]
    stamp: str
    max_lsn: str
    ms: int
    started_at: datetime


def _record(
    run: _Run,
    snap: ChunkedSnapshot,
    plan: dict[str, Any],
    numbers: list[int],
    *,
    newest: WaveCommit,
    wave: _Wave | None,
) -> None:
    """Writes the ``snapshot_chunk`` rows of ``numbers`` (consecutive, landed in bronze, from
    the one after the last the facts record, through ``newest``'s last) from the rows bronze
    holds. ``wave``: this run's wave when ``newest`` is its commit; its chunks get the wave's
    stamp and pace. Any other chunk (landed by another run, or by a wave whose facts a crash
    lost) gets its rows' stamp, else (no rows) ``newest``'s stamp when it is in that wave,
    else the snapshot's LSN, and no pace."""
    landed = run.ledger.chunk_rows(snap.snapshot_lsn, numbers)
    facts = []
    for n in numbers:
        rows, stamp = landed[n]
        if wave is not None and n in wave.numbers:
            facts.append(
                ChunkFact(
                    n, rows, wave.numbers[-1], wave.stamp, wave.max_lsn, wave.ms, len(wave.numbers)
                )
            )
            continue
        if stamp is None and newest.first <= n <= newest.last:
            stamp = newest.stamp
        at = stamp or snap.snapshot_lsn
        facts.append(ChunkFact(n, rows, numbers[-1], at, at, None, len(numbers)))
    bounds = [(lo, hi) for lo, hi in plan["chunks"]]
    last = len(bounds) - 1
    run.ledger.record_chunks(
        snap,
        [
            ChunkLanded(
                snap.snapshot_lsn,
                snap.commit_ts,
                c.chunk,
                c.wave,
                c.rows,
                c.stamp,
                c.max_lsn,
                bounds[c.chunk][0],
                bounds[c.chunk][1],
                c.chunk == last,
                c.wave_chunks,
                c.wave_ms,
                wave.started_at if wave is not None and c.wave_ms is not None else None,
            )
            for c in facts
        ],
    )


def _headroom_pause(run: _Run, sink_id: str) -> tuple[BackfillState, str] | None:
    """The state and reason why the next wave waits for retention headroom, or ``None``:
    ``waiting_metrics`` while the stream has written no micro-batch facts row,
    ``waiting_headroom`` while its newest row's headroom is short."""
    wanted = run.args.min_headroom_hours
    if wanted is None:
        return None
    found = run.ledger.headroom(sink_id)
    if found is None:
        return (
            "waiting_metrics",
            f"min_headroom_hours={wanted:g}: the stream {sink_id!r} has written no micro-batch "
            "facts row yet, so its retention headroom is unknown: run the stream (one "
            "micro-batch) and call backfill() again",
        )
    hours, written_at = found
    if hours is None:
        if sink_id not in _unknown_headroom_warned:
            _unknown_headroom_warned.add(sink_id)
            log.warning(
                "%s: min_headroom_hours=%g not applied: the stream's newest micro-batch facts "
                "row holds no retention headroom (the login cannot read the cleanup job's "
                "retention: sys.sp_cdc_help_jobs needs db_owner; or the stream has no metrics "
                "directory); backfill goes on without pausing. Watch CDC retention yourself",
                sink_id,
                wanted,
            )
        return None
    age = max((utc_now() - written_at).total_seconds() / 3600.0, 0.0)
    left = hours - age
    if left < wanted:
        return (
            "waiting_headroom",
            f"retention headroom {left:.2f} h (the stream's newest facts row: {hours:.2f} h, "
            f"{age:.2f} h old) is below min_headroom_hours={wanted:g}: the stream must catch "
            "up before more chunks are read",
        )
    return None


def _default_parallelism(spark: SparkSession) -> int:
    """Spark's default parallelism; 2 where the session has no SparkContext (Spark Connect)."""
    try:
        return max(int(spark.sparkContext.defaultParallelism), 1)
    except Exception:  # Spark Connect: no SparkContext on the client
        return 2


def _wave_size(run: _Run, chunks: dict[int, ChunkFact]) -> int:
    """Chunks per wave: whole rounds of ``numPartitions`` chunks, as many rounds as
    ``target_wave_seconds`` holds at the last wave's pace (one round before a pace is known)."""
    parts = run.reader.options.num_partitions or _default_parallelism(run.reader.spark)
    paced = [c for c in chunks.values() if c.wave_ms]
    if not paced or run.args.target_wave_seconds <= 0:
        return parts
    last = max(paced, key=lambda c: c.wave)
    per_chunk = (last.wave_ms or 0) / 1000.0 / max(last.wave_chunks, 1)
    if per_chunk <= 0:
        return parts
    rounds = max(1, int(run.args.target_wave_seconds / (per_chunk * parts)))
    return parts * rounds


def _read_wave(run: _Run, snap: ChunkedSnapshot, plan: dict[str, Any], numbers: list[int]) -> _Wave:
    """Reads the chunks ``numbers`` at a fresh stamp and appends them to bronze (the ledger
    raises ``WaveOvertakenError`` when bronze holds them already; Delta skips the append, and
    reads nothing, when another run's wave landed from one of them since: only the wave's
    commit in bronze tells, :func:`_catch_up`)."""
    stamp = str(run.reader.position().lsn)
    stamp = max(stamp, snap.snapshot_lsn)
    started_at, clock = utc_now(), time.monotonic()
    log.info(
        "%s: backfill wave of chunks %d-%d (of %d) of the snapshot at %s started, stamp %s",
        run.sink_id,
        numbers[0],
        numbers[-1],
        len(plan["chunks"]),
        snap.snapshot_lsn,
        stamp,
    )
    df = run.reader.chunks_frame(stamp, [[n, *plan["chunks"][n]] for n in numbers])
    run.ledger.append_wave(
        snap, WaveRows(numbers, df, run.reader.capture_instance, run.token, stamp)
    )
    max_lsn = str(run.reader.position().lsn)
    wave_ms = round((time.monotonic() - clock) * 1000)
    return _Wave(numbers, stamp, max_lsn, wave_ms, started_at)


def _close(run: _Run, snap: ChunkedSnapshot, chunks: dict[int, ChunkFact]) -> None:
    """Writes the completion row: ``bootstrap`` (generation 0), or ``resnapshot`` for a
    re-snapshot after data loss (the transaction a full re-snapshot of its generation takes:
    ``Ledger.close_chunked``)."""
    rows = sum(c.rows for c in chunks.values())
    last_lsn = max((c.max_lsn for c in chunks.values()), default=snap.snapshot_lsn)
    detail: dict[str, Any] = {
        "snapshot": snap.snapshot_lsn,
        "chunks": len(chunks),
        "rows": rows,
        "last_lsn": last_lsn,
    }
    run.ledger.close_chunked(snap, rows, detail)
    log.info(
        "%s: chunked %s of %s at %s complete: %d chunks, %d rows",
        run.sink_id,
        "re-snapshot" if snap.kind == "resnapshot" else "snapshot",
        run.target.text,
        snap.snapshot_lsn,
        len(chunks),
        rows,
    )


def _refuse_open_full(run: _Run) -> None:
    """Raises ``ValueError`` when the stream's newest snapshot of the target is a full one still
    open (a ``snapshot_open`` row of mode ``full`` that no ``bootstrap``/``resnapshot`` row has
    reached: a ``to_delta`` bootstrap or re-snapshot interrupted while it read the table)."""
    opened = run.ledger.newest_opened()
    if opened is None or opened.mode != "full" or not run.ledger.owns(opened.app_id):
        return
    closed = run.ledger.newest_done()
    if closed is not None and closed[0] >= opened.lsn:
        return
    raise ValueError(
        f"backfill(): the stream {run.sink_id!r} has a full snapshot of {run.target.text} open "
        f"(snapshot LSN {opened.lsn}, written by {opened.app_id!r}): its read was interrupted "
        "and backfill() reads chunked snapshots only. Finish it by running to_delta(...) again "
        "with the same arguments"
    )


def _no_snapshot(run: _Run) -> BackfillStatus:
    """State ``no_snapshot``: the stream has no chunked snapshot of the target in the facts
    table; the reason says whether it took a whole (``snapshot="full"``) one instead."""
    whole = run.ledger.bootstrap_lsn()
    if whole is not None:
        why = (
            f"the stream {run.sink_id!r} took a full snapshot of {run.target.text} at {whole} "
            "(snapshot='full'): there is nothing to backfill"
        )
    else:
        facts = run.ledger.tables.facts
        assert facts is not None
        why = (
            f"the stream {run.sink_id!r} has no chunked snapshot of {run.target.text} in the "
            f"facts table {facts.text}: open one with to_delta(..., bootstrap=True, "
            "snapshot='chunked', facts_table=...) and pass backfill() the same target, app_id "
            "and facts_table"
        )
    log.warning("%s: backfill() read nothing: %s", run.sink_id, why)
    return BackfillStatus(
        state="no_snapshot",
        snapshot=None,
        chunks_done=0,
        chunks_total=None,
        rows_done=0,
        rows_estimated=0,
        eta_seconds=None,
        waves=0,
        reason=why,
    )


def backfill(reader: TableReader, ledger: Ledger, args: BackfillArgs) -> BackfillStatus:
    """Reads the stream's open chunked snapshot in waves (see the module doc).

    Args:
        reader: the table, read with the stream's options.
        ledger: the stream's ledger (its original app_id; it has a facts table).

    Returns state ``no_snapshot`` (paused, with the reason) at once when the stream has no
    chunked snapshot of the target in the facts table.

    Raises:
        ValueError: the stream has a full snapshot of the target open (an interrupted
            ``to_delta`` bootstrap or re-snapshot: rerun it), or the table's key changed since
            the plan.
        RuntimeError: the facts record the plan's last chunk with others missing (written
            by hand, or by overlapping runs of an earlier build).
    """
    if args.isolation is not None:
        reader = reader.with_isolation(args.isolation)
    run = _Run(reader, ledger, args, ledger.stream)
    snap = ledger.chunked()
    if snap is None:
        _refuse_open_full(run)
        return _no_snapshot(run)
    run.sink_id = snap.app_id  # a re-snapshot's rows and headroom are its generation's
    plan = _plan(run, snap)
    chunks = dict(snap.chunks)
    if snap.complete:
        return _status(snap, plan, chunks, "done", waves=0)
    snap, chunks, _ = _catch_up(run, snap, plan, None)
    planned = len(plan["chunks"])
    clock, waves = time.monotonic(), 0
    while len(chunks) < planned:
        if args.max_waves is not None and waves >= args.max_waves:
            return _status(snap, plan, chunks, "running", waves=waves)
        if args.max_seconds is not None and time.monotonic() - clock >= args.max_seconds:
            return _status(snap, plan, chunks, "running", waves=waves)
        pause = _headroom_pause(run, run.sink_id)
        if pause is not None:
            state, reason = pause
            log.info("%s: backfill paused (%s): %s", run.sink_id, state, reason)
            return _status(snap, plan, chunks, state, waves=waves, reason=reason)
        first = max(chunks, default=-1) + 1
        if first >= planned:  # the facts record the plan's last chunk but not every chunk
            raise RuntimeError(
                f"{run.sink_id}: the facts table records chunks of the snapshot at "
                f"{snap.snapshot_lsn} with gaps (missing: "
                f"{sorted(set(range(planned)) - set(chunks))[:20]}): written by hand or by "
                "overlapping backfill() runs of an earlier build. Check it with "
                "reconcile(..., facts_table=...) (its CHUNK_TILING rows), then open a new "
                "snapshot (CdcStream.snapshot(..., resnapshot=True))"
            )
        numbers = list(range(first, min(first + _wave_size(run, chunks), planned)))
        landed, snap, chunks = _wave(run, snap, plan, chunks, numbers)
        waves += landed
    if not snap.complete:  # another run may have closed it while this one followed
        snap, chunks = _finish(run, snap, plan, chunks)
    return _status(snap, plan, chunks, "done", waves=waves)


def _wave(
    run: _Run,
    snap: ChunkedSnapshot,
    plan: dict[str, Any],
    chunks: dict[int, ChunkFact],
    numbers: list[int],
) -> tuple[bool, ChunkedSnapshot, dict[int, ChunkFact]]:
    """Reads and lands the wave ``numbers``, then brings the facts up to bronze
    (:func:`_catch_up`): ``(True, snap, chunks)`` when bronze's newest wave is this run's
    (it landed), ``(False, ...)`` when another run committed chunks from its first one first
    (or landed a wave after it); ``snap`` and ``chunks`` as the facts table then has them."""
    try:
        wave: _Wave | None = _read_wave(run, snap, plan, numbers)
    except Exception as exc:
        if not isinstance(exc, WaveOvertakenError) and not is_conflict(exc):
            raise
        log.info(
            "%s: another backfill() run of the snapshot at %s committed chunks from %d while "
            "this one was about to (%s); its rows stand, this run goes on after them",
            run.sink_id,
            snap.snapshot_lsn,
            numbers[0],
            type(exc).__name__,
        )
        wave = None
    snap, chunks, landed = _catch_up(run, snap, plan, wave)
    if wave is not None and not landed:
        log.info(
            "%s: bronze's newest wave of the snapshot at %s is another backfill() run's, not "
            "this run's wave from chunk %d (Delta skipped this run's append, or the other run's "
            "wave followed it); the rows in bronze stand, this run goes on after them",
            run.sink_id,
            snap.snapshot_lsn,
            numbers[0],
        )
    elif wave is not None:
        done = [chunks[n] for n in wave.numbers if n in chunks]
        log.info(
            "%s: backfill wave of chunks %d-%d done: %d chunks, %d rows in %.1f s",
            run.sink_id,
            numbers[0],
            numbers[-1],
            len(done),
            sum(f.rows for f in done),
            wave.ms / 1000,
        )
    return landed, snap, chunks


def _finish(
    run: _Run, snap: ChunkedSnapshot, plan: dict[str, Any], chunks: dict[int, ChunkFact]
) -> tuple[ChunkedSnapshot, dict[int, ChunkFact]]:
    """Writes the completion row; a conflict with another run that wrote it is success."""
    try:
        _close(run, snap, chunks)
    except Exception as exc:
        if not is_conflict(exc):
            raise
        log.info(
            "%s: another backfill() run completed the snapshot at %s at the same moment (%s)",
            run.sink_id,
            snap.snapshot_lsn,
            type(exc).__name__,
        )
        snap, chunks, _ = _catch_up(run, snap, plan, None)
        if not snap.complete:
            raise
    return snap, chunks


#: how many times in a row :func:`_catch_up` re-reads while other runs keep committing
_CATCH_UP_READS = 20


def _catch_up(
    run: _Run, snap: ChunkedSnapshot, plan: dict[str, Any], wave: _Wave | None
) -> tuple[ChunkedSnapshot, dict[int, ChunkFact], bool]:
    """Re-reads the facts and writes the ``snapshot_chunk`` rows of the chunks bronze holds
    past the last one they record (this run's ``wave``, another run's, or a wave whose facts a
    crash lost), until the facts reach what bronze held when asked. Another run recording the
    same chunks first makes Delta skip this run's rows (or report a conflict): read again.

    Returns the snapshot and its chunks as the facts table then has them, and whether
    ``wave`` is in bronze as this run's commit (bronze's newest wave names this run's token).

    Raises:
        ValueError: the stream's chunked snapshot is no longer ``snap`` (another run closed
            it and a new one opened).
        RuntimeError: the facts kept changing for :data:`_CATCH_UP_READS` reads.
    """
    landed: int | None = None
    mine = False
    for _ in range(_CATCH_UP_READS):
        fresh = run.ledger.chunked()
        if fresh is None or fresh.snapshot_lsn != snap.snapshot_lsn:
            raise ValueError(
                f"{run.sink_id}: the chunked snapshot at {snap.snapshot_lsn} of "
                f"{run.target.text} is no longer the stream's open one (another run closed it "
                "and a new one opened): call backfill() again"
            )
        chunks = dict(fresh.chunks)
        recorded = max(chunks, default=-1)
        if fresh.complete or (landed is not None and recorded >= landed):
            return fresh, chunks, mine
        newest = run.ledger.newest_wave(fresh)
        if newest is None:
            return fresh, chunks, mine
        landed = newest.last
        mine = mine or (wave is not None and newest.run == run.token)
        if recorded >= landed:
            return fresh, chunks, mine
        missing = list(range(recorded + 1, landed + 1))
        if not mine or not set(missing) <= set(wave.numbers if wave else ()):
            log.info(
                "%s: chunks %d-%d of the snapshot at %s are in %s without their facts rows "
                "(landed by another backfill() run, or a wave a crash interrupted): recording "
                "them from bronze",
                run.sink_id,
                missing[0],
                missing[-1],
                snap.snapshot_lsn,
                run.target.text,
            )
        try:
            _record(run, fresh, plan, missing, newest=newest, wave=wave if mine else None)
        except Exception as exc:
            if not is_conflict(exc):
                raise
    raise RuntimeError(
        f"{run.sink_id}: the snapshot at {snap.snapshot_lsn} kept changing under this "
        f"backfill() run ({_CATCH_UP_READS} reads): another run is committing to it; call "
        "backfill() again when that run is done"
    )
