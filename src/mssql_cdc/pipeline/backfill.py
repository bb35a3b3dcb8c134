"""``CdcStream.backfill()``: reading an open chunked snapshot in waves, next to the running
stream (docs/bootstrap.md#chunked-snapshots-and-backfill; ADRs 0160-0162).

Runs on the driver, in the calling Python process (it must reach SQL Server). One call:

1. finds the stream's newest chunked snapshot of the target in the facts table
   (:func:`mssql_cdc.sink.chunked_snapshot`); none returns state ``no_snapshot`` at once
   (paused, with the reason: not opened yet, another target/app_id/facts table, or a stream
   that bootstraps with ``snapshot="full"``), a closed one returns ``done``;
2. plans it once: the first call cuts the table into chunks of ``chunk_rows`` keys
   (:func:`mssql_cdc.source.plan_chunks`) and records the plan in the ``snapshot_plan`` facts
   row; every later call, after any crash, reads the plan back and never plans again;
3. repairs a crash between a wave's bronze append and its facts rows: bronze's ``txnVersion``
   under ``<app_id>#snapchunks.<S>`` says which chunks landed (chunks land in plan order, the
   version is the wave's last chunk), the missing ``snapshot_chunk`` rows are written from the
   rows bronze holds;
4. reads waves: before each, pauses (``waiting_headroom``) when the stream's newest facts row
   shows less retention headroom than ``min_headroom_hours`` (minus that row's age), or
   (``waiting_metrics``) when the stream has written no micro-batch facts row yet; stops with
   ``running`` when ``max_waves``/``max_seconds`` ran out; records the wave's stamp L
   (``sys.fn_cdc_get_max_lsn()``, >= S), reads the next chunks through
   ``format("mssql_cdc_snapshot")`` with ``snapshotChunks`` (one partition per chunk, rows
   stamped L), appends them in one commit (``txnVersion`` the wave's last chunk: a replay is
   skipped by Delta), then writes one ``snapshot_chunk`` row per chunk (same idempotency key
   on the facts table);
5. after the last chunk, writes the row that makes the snapshot complete
   (``pipeline.snapshots.newest_complete_snapshot``; min = max = S, rows = the chunks' sum):
   ``bootstrap``, or for a chunked re-snapshot after data loss (generation ``n`` > 0, opened by
   ``pipeline.recovery``; its rows carry ``<app_id>.g<n>``) the generation's ``resnapshot``
   row (ADR 0163).

The headroom pause reads the newest micro-batch row of the snapshot's generation; a NULL
headroom there is unknown, not short: no pause, one WARNING (ADR 0164).

Every wave logs at INFO on the ``mssql_cdc`` logger when it starts and ends (chunks, rows,
seconds). A change committed while a chunk is read is both in the chunk (stamped L, taken
before the read) and in the stream after L: the latest image per key is the table's.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.options import ReaderOptions, parse_options
from mssql_cdc.pipeline.snapshots import read_options
from mssql_cdc.sink import (
    ChunkedSnapshot,
    ChunkFact,
    TableRef,
    bootstrap_lsn,
    chunk_rows,
    chunked_snapshot,
    ids,
    newest_headroom,
    newest_snapshot_event,
    newest_snapshot_opened,
    snapshot_txn_version,
    utc_now,
    write_bootstrap,
    write_chunks,
    write_resnapshot,
    write_snapshot_chunks,
    write_snapshot_plan,
)
from mssql_cdc.source import chunk_key, plan_chunks, snapshot_position
from mssql_cdc.types import BackfillState, BackfillStatus

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["BackfillArgs", "backfill", "check_backfill_args", "open_progress"]

log = logging.getLogger("mssql_cdc.pipeline")

#: ``chunk_rows`` when the first call gives none
DEFAULT_CHUNK_ROWS = 1_000_000
#: ``target_wave_seconds`` when none is given
DEFAULT_WAVE_SECONDS = 300.0
_ISOLATIONS = {"snapshot": "snapshot", "readcommitted": "readCommitted"}

#: sink ids already warned that their headroom is unknown (one WARNING per process)
_unknown_headroom_warned: set[str] = set()

#: test hook: called with ``"before_append"`` / ``"after_append"`` and the wave's last chunk,
#: and with ``"before_close"`` and the last chunk once every chunk's facts row is written (a
#: test raises from it, or kills the process, to stand for a crash at that point)
crash_point: Callable[[str, int], None] | None = None


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
    spark: SparkSession
    raw: dict[str, str]
    options: ReaderOptions
    target: TableRef
    #: the snapshot's sink id: the user's app_id, or ``<app_id>.g<n>`` for a re-snapshot
    app_id: str
    facts: TableRef
    args: BackfillArgs


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
    from mssql_cdc.sink import open_chunked_snapshots

    out = []
    for snap in open_chunked_snapshots(spark, facts):
        reason = None if snap.plan is not None else "not planned yet: run backfill()"
        status = _status(snap, snap.plan, snap.chunks, "running", waves=0, reason=reason)
        out.append((snap.app_id, snap.target, status))
    return out


def _plan(run: _Run, snap: ChunkedSnapshot) -> dict[str, Any]:
    """The recorded plan, checked against the table's key; planned and recorded first when
    there is none."""
    if snap.plan is not None:
        keys = [name for name, _ in chunk_key(run.options)]
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
                run.app_id,
                run.args.chunk_rows,
                snap.snapshot_lsn,
                snap.plan.get("chunk_rows"),
            )
        return snap.plan
    size = run.args.chunk_rows or DEFAULT_CHUNK_ROWS
    started = utc_now()
    planned = plan_chunks(run.options, size)
    keys = [name for name, _ in planned.key]
    plan: dict[str, Any] = {
        "snapshot": snap.snapshot_lsn,
        "kind": "keyset",
        "keys": keys,
        "chunk_rows": size,
        "rows": planned.rows,
        "chunks": [[lo, hi] for lo, hi in planned.chunks],
    }
    write_snapshot_plan(
        run.spark,
        run.facts,
        app_id=run.app_id,
        snapshot_lsn=snap.snapshot_lsn,
        commit_ts=snap.commit_ts,
        target=run.target,
        plan=plan,
        started_at=started,
        duration_ms=round(planned.seconds * 1000),
    )
    log.info(
        "%s: chunked snapshot at %s planned: %d chunks of up to %d rows over %d rows (key %s) "
        "in %.1f s",
        run.app_id,
        snap.snapshot_lsn,
        len(planned.chunks),
        size,
        planned.rows,
        ", ".join(keys),
        planned.seconds,
    )
    # read back, so every call (this one too) runs on the recorded plan
    again = chunked_snapshot(run.spark, run.facts, run.app_id, run.target)
    return plan if again is None or again.plan is None else again.plan


def _record(
    run: _Run,
    snap: ChunkedSnapshot,
    plan: dict[str, Any],
    numbers: list[int],
    *,
    stamp: str,
    max_lsn: str,
    wave_ms: int | None,
    started_at: datetime | None,
) -> list[ChunkFact]:
    """Writes the ``snapshot_chunk`` rows of chunks ``numbers`` (landed in bronze) from the rows
    bronze holds."""
    counts = chunk_rows(run.spark, run.target, snap.snapshot_lsn, numbers)
    wave = numbers[-1]
    facts = [ChunkFact(n, counts[n], wave, stamp, max_lsn, wave_ms, len(numbers)) for n in numbers]
    bounds = [(lo, hi) for lo, hi in plan["chunks"]]
    write_snapshot_chunks(
        run.spark,
        run.facts,
        app_id=run.app_id,
        snapshot_lsn=snap.snapshot_lsn,
        commit_ts=snap.commit_ts,
        target=run.target,
        chunks=facts,
        bounds=bounds,
        last=len(bounds) - 1,
        started_at=started_at,
    )
    return facts


def _repair(
    run: _Run, snap: ChunkedSnapshot, plan: dict[str, Any], chunks: dict[int, ChunkFact]
) -> None:
    """Writes the facts rows of chunks bronze holds but the facts lack (a crash between a
    wave's append and its facts commit)."""
    landed = snapshot_txn_version(
        run.spark, run.target, ids.chunk_wave_id(run.app_id, snap.snapshot_lsn)
    )
    missing = [n for n in range(landed + 1) if n not in chunks]
    if not missing:
        return
    log.info(
        "%s: chunks %d-%d of the snapshot at %s are in %s without their facts rows (an "
        "interrupted wave): recording them from bronze",
        run.app_id,
        missing[0],
        missing[-1],
        snap.snapshot_lsn,
        run.target.text,
    )
    for fact in _record(
        run,
        snap,
        plan,
        missing,
        stamp=snap.snapshot_lsn,
        max_lsn=snap.snapshot_lsn,
        wave_ms=None,
        started_at=None,
    ):
        chunks[fact.chunk] = fact


def _headroom_pause(run: _Run, sink_id: str) -> tuple[BackfillState, str] | None:
    """The state and reason why the next wave waits for retention headroom, or ``None``:
    ``waiting_metrics`` while the stream has written no micro-batch facts row,
    ``waiting_headroom`` while its newest row's headroom is short."""
    wanted = run.args.min_headroom_hours
    if wanted is None:
        return None
    found = newest_headroom(run.spark, run.facts, sink_id)
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
    parts = run.options.num_partitions or _default_parallelism(run.spark)
    paced = [c for c in chunks.values() if c.wave_ms]
    if not paced or run.args.target_wave_seconds <= 0:
        return parts
    last = max(paced, key=lambda c: c.wave)
    per_chunk = (last.wave_ms or 0) / 1000.0 / max(last.wave_chunks, 1)
    if per_chunk <= 0:
        return parts
    rounds = max(1, int(run.args.target_wave_seconds / (per_chunk * parts)))
    return parts * rounds


def _read_wave(
    run: _Run, snap: ChunkedSnapshot, plan: dict[str, Any], numbers: list[int]
) -> list[ChunkFact]:
    stamp = str(snapshot_position(run.options).lsn)
    stamp = max(stamp, snap.snapshot_lsn)
    started_at, clock = utc_now(), time.monotonic()
    log.info(
        "%s: backfill wave of chunks %d-%d (of %d) of the snapshot at %s started, stamp %s",
        run.app_id,
        numbers[0],
        numbers[-1],
        len(plan["chunks"]),
        snap.snapshot_lsn,
        stamp,
    )
    options = read_options(run.raw)
    options["snapshotLsn"] = stamp
    options["snapshotChunks"] = json.dumps([[n, *plan["chunks"][n]] for n in numbers])
    df = run.spark.read.format("mssql_cdc_snapshot").options(**options).load()
    txn = ids.chunk_wave(run.app_id, snap.snapshot_lsn, numbers[-1])
    if crash_point is not None:
        crash_point("before_append", numbers[-1])
    write_chunks(
        run.spark,
        run.target,
        df,
        app_id=run.app_id,
        snapshot_lsn=snap.snapshot_lsn,
        capture_instance=run.options.capture_instance,
        txn=txn,
        chunks=numbers,
    )
    if crash_point is not None:
        crash_point("after_append", numbers[-1])
    max_lsn = str(snapshot_position(run.options).lsn)
    wave_ms = round((time.monotonic() - clock) * 1000)
    facts = _record(
        run,
        snap,
        plan,
        numbers,
        stamp=stamp,
        max_lsn=max_lsn,
        wave_ms=wave_ms,
        started_at=started_at,
    )
    log.info(
        "%s: backfill wave of chunks %d-%d done: %d chunks, %d rows in %.1f s",
        run.app_id,
        numbers[0],
        numbers[-1],
        len(numbers),
        sum(f.rows for f in facts),
        wave_ms / 1000,
    )
    return facts


def _close(run: _Run, snap: ChunkedSnapshot, chunks: dict[int, ChunkFact]) -> None:
    """Writes the completion row: ``bootstrap`` (generation 0), or ``resnapshot`` for a
    re-snapshot after data loss (same idempotency key as a full re-snapshot of its
    generation: ``<app_id>#events``, version ``n``)."""
    rows = sum(c.rows for c in chunks.values())
    last_lsn = max((c.max_lsn for c in chunks.values()), default=snap.snapshot_lsn)
    detail: dict[str, Any] = {
        "snapshot": snap.snapshot_lsn,
        "chunks": len(chunks),
        "rows": rows,
        "last_lsn": last_lsn,
    }
    if snap.kind == "resnapshot" and snap.generation > 0:
        write_resnapshot(
            run.spark,
            run.facts,
            app_id=ids.stream_of(snap.app_id, snap.generation),
            generation=snap.generation,
            sink_id=snap.app_id,
            target=run.target,
            lsn=snap.snapshot_lsn,
            commit_ts=snap.commit_ts,
            rows=rows,
            started_at=None,
            duration_ms=None,
            lost_from_ts=snap.lost_from_ts,
            lost_to_ts=snap.lost_to_ts,
            detail=detail,
        )
    else:
        write_bootstrap(
            run.spark,
            run.facts,
            app_id=run.app_id,
            target=run.target,
            lsn=snap.snapshot_lsn,
            commit_ts=snap.commit_ts,
            rows=rows,
            started_at=None,
            duration_ms=None,
            detail=detail,
        )
    log.info(
        "%s: chunked %s of %s at %s complete: %d chunks, %d rows",
        run.app_id,
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
    opened = newest_snapshot_opened(run.spark, run.facts, run.target)
    if opened is None or opened.mode != "full" or not ids.belongs(run.app_id, opened.app_id):
        return
    closed = newest_snapshot_event(run.spark, run.facts, run.target)
    if closed is not None and closed[0] >= opened.lsn:
        return
    raise ValueError(
        f"backfill(): the stream {run.app_id!r} has a full snapshot of {run.target.text} open "
        f"(snapshot LSN {opened.lsn}, written by {opened.app_id!r}): its read was interrupted "
        "and backfill() reads chunked snapshots only. Finish it by running to_delta(...) again "
        "with the same arguments"
    )


def _no_snapshot(run: _Run) -> BackfillStatus:
    """State ``no_snapshot``: the stream has no chunked snapshot of the target in the facts
    table; the reason says whether it took a whole (``snapshot="full"``) one instead."""
    whole = bootstrap_lsn(run.spark, run.facts, run.app_id, run.target)
    if whole is not None:
        why = (
            f"the stream {run.app_id!r} took a full snapshot of {run.target.text} at {whole} "
            "(snapshot='full'): there is nothing to backfill"
        )
    else:
        why = (
            f"the stream {run.app_id!r} has no chunked snapshot of {run.target.text} in the "
            f"facts table {run.facts.text}: open one with to_delta(..., bootstrap=True, "
            "snapshot='chunked', facts_table=...) and pass backfill() the same target, app_id "
            "and facts_table"
        )
    log.warning("%s: backfill() read nothing: %s", run.app_id, why)
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


def backfill(
    spark: SparkSession,
    raw: dict[str, str],
    *,
    target: TableRef,
    app_id: str,
    facts: TableRef,
    args: BackfillArgs,
) -> BackfillStatus:
    """Reads the stream's open chunked snapshot in waves (see the module doc).

    Returns state ``no_snapshot`` (paused, with the reason) at once when the stream has no
    chunked snapshot of ``target`` in ``facts``.

    Raises:
        ValueError: the stream has a full snapshot of ``target`` open (an interrupted
            ``to_delta`` bootstrap or re-snapshot: rerun it), or the table's key changed since
            the plan.
    """
    raw = dict(raw)
    if args.isolation is not None:
        raw["isolationLevel"] = args.isolation
    run = _Run(spark, raw, parse_options(raw), target, app_id, facts, args)
    snap = chunked_snapshot(spark, facts, app_id, target)
    if snap is None:
        _refuse_open_full(run)
        return _no_snapshot(run)
    run.app_id = snap.app_id  # a re-snapshot's rows and headroom are its generation's
    plan = _plan(run, snap)
    chunks = dict(snap.chunks)
    if snap.complete:
        return _status(snap, plan, chunks, "done", waves=0)
    _repair(run, snap, plan, chunks)
    planned = len(plan["chunks"])
    clock, waves = time.monotonic(), 0
    while len(chunks) < planned:
        if args.max_waves is not None and waves >= args.max_waves:
            return _status(snap, plan, chunks, "running", waves=waves)
        if args.max_seconds is not None and time.monotonic() - clock >= args.max_seconds:
            return _status(snap, plan, chunks, "running", waves=waves)
        pause = _headroom_pause(run, run.app_id)
        if pause is not None:
            state, reason = pause
            log.info("%s: backfill paused (%s): %s", run.app_id, state, reason)
            return _status(snap, plan, chunks, state, waves=waves, reason=reason)
        first = max(chunks, default=-1) + 1
        numbers = list(range(first, min(first + _wave_size(run, chunks), planned)))
        for fact in _read_wave(run, snap, plan, numbers):
            chunks[fact.chunk] = fact
        waves += 1
    if crash_point is not None:
        crash_point("before_close", planned - 1)
    _close(run, snap, chunks)
    return _status(snap, plan, chunks, "done", waves=waves)
