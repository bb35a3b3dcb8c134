"""``to_delta(on_data_loss="resnapshot")``: the automatic re-snapshot before the query starts,
and the live generation every ``to_delta`` call runs in (docs/data-loss.md, docs/generations.md;
ADRs 0101, 0102).

Runs on the driver, in the calling Python process, before the query starts:

1. read the generation state (``generations``); a recovery left ``recovering`` by a crash is
   finished first, reusing a snapshot it already appended;
2. otherwise find where the live generation resumes: its last committed offset, else its
   snapshot (generation > 0), an explicit ``startingLsn``, or this app_id's bootstrap
   snapshot; nothing to resume from: no check;
3. ask the source whether the changes after it are purged (``source.find_loss``); none are:
   start the live generation;
4. purged: refuse a second re-snapshot within ``resnapshot_interval_days`` of the last one (or
   of a failed one) with ``DataLossError``; else record ``recovering``, log a WARNING with the
   lost range, write ``snapshot_open``, read the table into the same bronze table
   (``<app_id>#events``, ``txnVersion`` the new generation ``n``), write the ``resnapshot``
   facts row (``app_id`` ``<app_id>.g<n>``, ``lost_from_ts``/``lost_to_ts``, same idempotency
   key) and record generation ``n`` with its snapshot; the query then starts in
   ``<checkpoint>/_generations/<n>`` at the snapshot's LSN.

With ``snapshot="chunked"`` step 4 reads nothing: it writes a chunked ``snapshot_open`` row
for generation ``n`` (``app_id`` ``<app_id>.g<n>``, ``kind`` ``resnapshot``, the lost range)
and records generation ``n`` at its LSN S; ``backfill()`` reads the table and writes the
``resnapshot`` row (ADR 0163).

The check runs only here: changes purged while a query runs still stop it with
``DataLossError``, and the next ``to_delta`` recovers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from mssql_cdc._native import Lsn
from mssql_cdc.errors import DataLossError
from mssql_cdc.options import ReaderOptions
from mssql_cdc.pipeline.generations import (
    GenerationState,
    Recovering,
    generation_checkpoint,
    last_committed_offset,
    read_state,
    write_state,
)
from mssql_cdc.pipeline.snapshots import SnapshotKind, take_snapshot
from mssql_cdc.sink import (
    TableRef,
    bootstrap_lsn,
    chunked_snapshot,
    ids,
    last_batch,
    open_chunked_snapshots,
    parse_utc,
    snapshot_rows,
    snapshot_txn_version,
    utc_now,
    write_chunked_open,
    write_resnapshot,
)
from mssql_cdc.source import (
    SnapshotPosition,
    chunk_key,
    find_loss,
    format_utc,
    snapshot_position,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Generation", "live_generation", "recover"]

log = logging.getLogger("mssql_cdc.pipeline")


@dataclass(frozen=True)
class Generation:
    """Where the query runs: generation ``number``, its sink id and Spark checkpoint, and the
    ``startingLsn`` it must start at (its snapshot's LSN; ``None`` in generation 0)."""

    number: int
    sink_id: str
    checkpoint: str
    starting_lsn: str | None


def live_generation(checkpoint: str, app_id: str) -> Generation:
    """The generation the state file records (generation 0 without one)."""
    return _generation(read_state(checkpoint), checkpoint, app_id)


def _generation(state: GenerationState, checkpoint: str, app_id: str) -> Generation:
    n = state.generation
    return Generation(
        n,
        ids.sink_id(app_id, n),
        generation_checkpoint(checkpoint, n),
        state.snapshot_lsn if n > 0 else None,
    )


@dataclass(frozen=True)
class _Stream:
    """The arguments of one ``to_delta`` call the recovery needs."""

    spark: SparkSession
    raw: dict[str, str]
    options: ReaderOptions
    target: TableRef
    app_id: str
    facts: TableRef
    checkpoint: str
    #: ``snapshot="chunked"``: open a chunked re-snapshot instead of reading the table
    chunked: bool = False


def _resume_point(stream: _Stream, state: GenerationState) -> tuple[str, str] | None:
    """``(lsn, commit_ts)`` the live generation resumes after, or ``None`` (nothing to check)."""
    live = _generation(state, stream.checkpoint, stream.app_id)
    offset = last_committed_offset(live.checkpoint)
    if offset is not None:
        return offset["lsn"], offset["commit_ts"]
    facts_exist = stream.facts.exists(stream.spark)
    if facts_exist and last_batch(stream.spark, stream.facts, live.sink_id) is not None:
        raise ValueError(
            f"on_data_loss='resnapshot': the facts table records batches of {live.sink_id!r} "
            f"but Python finds no Spark commits in {live.checkpoint!r}: the checkpoint was "
            "deleted, or Spark and Python resolve the path to two places. A new checkpoint "
            "needs a new app_id"
        )
    if state.generation > 0 and state.snapshot_lsn:
        return state.snapshot_lsn, state.commit_ts
    start = stream.options.starting_lsn
    if isinstance(start, Lsn):
        return str(start), ""
    found = bootstrap_lsn(stream.spark, stream.facts, stream.app_id, stream.target)
    return (found, "") if found is not None else None


def _last_attempt(state: GenerationState) -> datetime | None:
    times = [parse_utc(state.failed_at)]
    if state.generation > 0:
        times.append(parse_utc(state.at))
    known = [t for t in times if t is not None]
    return max(known) if known else None


def recover(
    spark: SparkSession,
    raw: dict[str, str],
    options: ReaderOptions,
    *,
    target: TableRef,
    app_id: str,
    facts: TableRef,
    checkpoint: str,
    interval_days: float,
    chunked: bool = False,
) -> Generation:
    """Runs the pre-flight of ``on_data_loss="resnapshot"`` (see the module doc) and returns
    the generation to start; with ``chunked`` the re-snapshot is only opened
    (:func:`_open_chunked`) and ``backfill()`` reads it.

    Raises:
        DataLossError: changes are purged and the last re-snapshot (or failed attempt) was
            less than ``interval_days`` ago, or the re-snapshot's own LSN was purged before
            its read ended.
        ValueError: a checkpoint Python cannot read as Spark's, facts recording batches
            of a checkpoint Python cannot see, a full re-snapshot while the stream's chunked
            snapshot is open, or a chunked one while another stream's is open on ``target``.
    """
    stream = _Stream(spark, raw, options, target, app_id, facts, checkpoint, chunked)
    state = read_state(checkpoint)
    if state.recovering is not None:
        log.info("%s: finishing the re-snapshot an earlier run began", app_id)
        return _resume(stream, state, state.recovering)
    point = _resume_point(stream, state)
    if point is None:
        return _generation(state, checkpoint, app_id)
    loss = find_loss(options, Lsn.parse(point[0]))
    if loss is None:
        return _generation(state, checkpoint, app_id)
    from_ts = point[1] or format_utc(loss.after_ts)
    last = _last_attempt(state)
    if last is not None and utc_now() - last < timedelta(days=interval_days):
        raise DataLossError(
            f"{loss.error(from_ts)} on_data_loss='resnapshot' did not re-snapshot: the last "
            f"automatic re-snapshot (or a failed one) was at {last.isoformat()} UTC, less than "
            f"resnapshot_interval_days={interval_days:g} ago. Keep CDC retention longer than "
            "the stream's downtime; to re-snapshot now, pass resnapshot_interval_days=0"
        )
    if not chunked:
        from mssql_cdc.pipeline.chunked import refuse_open_chunked

        what = "on_data_loss='resnapshot' with snapshot='full'"
        refuse_open_chunked(spark, facts, app_id, target, what)
    number = ids.next_generation(
        state.generation, snapshot_txn_version(spark, target, ids.events_id(app_id))
    )
    recovering = Recovering(number, point[0], from_ts, format_utc(loss.lost_to_ts))
    write_state(checkpoint, state.but(recovering=recovering))
    log.warning(
        "%s: changes of %s after %s are purged by CDC cleanup (lost: commits after %s up to "
        "%s UTC, min_lsn now %s): re-snapshotting %s into generation %d (%s)",
        app_id,
        loss.capture_instance,
        point[0],
        from_ts or "?",
        recovering.lost_to_ts or "?",
        loss.min_lsn,
        target.text,
        number,
        ids.sink_id(app_id, number),
    )
    return _resume(stream, state.but(recovering=recovering), recovering)


def _resume(stream: _Stream, state: GenerationState, recovering: Recovering) -> Generation:
    """Finishes ``recovering``: a full snapshot of it already in bronze is reused whatever the
    mode; else a chunked re-snapshot is opened, or a full one read."""
    if stream.chunked and not _reusable(stream, recovering):
        return _open_chunked(stream, state, recovering)
    return _finish(stream, state, recovering)


def _open_chunked(stream: _Stream, state: GenerationState, recovering: Recovering) -> Generation:
    """Opens the chunked re-snapshot of ``recovering.generation`` (or reuses the one an
    interrupted run opened, unless its own LSN is purged: then a newer one a generation
    further), records the generation with its snapshot LSN S and returns it: the stream starts
    at S at once, ``backfill()`` reads the table and writes the ``resnapshot`` row."""
    spark, target, app_id, facts = stream.spark, stream.target, stream.app_id, stream.facts
    number = recovering.generation
    found = chunked_snapshot(spark, facts, app_id, target)
    reused: tuple[str, datetime | None] | None = None
    if found is not None and found.generation == number and found.kind == "resnapshot":
        if find_loss(stream.options, Lsn.parse(found.snapshot_lsn)) is None:
            reused = (found.snapshot_lsn, found.commit_ts)
            log.info(
                "%s: reusing the chunked re-snapshot at %s opened for generation %d",
                app_id,
                found.snapshot_lsn,
                number,
            )
        else:
            number += 1  # its own changes are purged already: abandoned
    if reused is None:
        others = [
            s
            for s in open_chunked_snapshots(spark, facts, target)
            if not ids.belongs(app_id, s.app_id)
        ]
        if others:
            other = others[0]
            raise ValueError(
                f"on_data_loss='resnapshot' with snapshot='chunked': the stream {other.app_id!r} "
                f"has a chunked snapshot of {target.text} open (snapshot LSN "
                f"{other.snapshot_lsn}, generation {other.generation}); a second one would "
                "interleave its chunks. Finish it with backfill() first"
            )
        key = chunk_key(stream.options)
        position, recovering = _record_position(stream, state, recovering, number)
        write_chunked_open(
            spark,
            facts,
            app_id=ids.sink_id(app_id, number),
            snapshot_lsn=str(position.lsn),
            commit_ts=position.commit_ts,
            target=target,
            keys=[name for name, _ in key],
            generation=number,
            stream_app_id=app_id,
            lost_from_ts=parse_utc(recovering.from_ts),
            lost_to_ts=parse_utc(recovering.lost_to_ts),
        )
        # read back: an open of this generation an interrupted run wrote wins (Delta skipped
        # this one, same txnVersion)
        again = chunked_snapshot(spark, facts, app_id, target)
        if again is not None and again.generation == number:
            reused = (again.snapshot_lsn, again.commit_ts)
        else:
            reused = (str(position.lsn), position.commit_ts)
    lsn, commit_ts = reused
    done = _record_done(stream, state, number, lsn, commit_ts)
    sink_id = ids.sink_id(app_id, number)
    log.info(
        "%s: chunked re-snapshot of %s opened at %s: generation %d (%s) starts there now; call "
        "backfill(target, app_id=%r, facts_table=...) until it returns 'done' to read the table",
        app_id,
        target.text,
        lsn,
        number,
        sink_id,
        app_id,
    )
    return _generation(done, stream.checkpoint, app_id)


def _record_position(
    stream: _Stream, state: GenerationState, recovering: Recovering, number: int
) -> tuple[SnapshotPosition, Recovering]:
    """Records in the checkpoint, before anything is read or opened, the snapshot position of
    generation ``number`` (``sys.fn_cdc_get_max_lsn()`` now), so an interrupted run finds it."""
    position = snapshot_position(stream.options)
    recovering = replace(
        recovering,
        generation=number,
        snapshot_lsn=str(position.lsn),
        commit_ts=format_utc(position.commit_ts),
    )
    write_state(stream.checkpoint, state.but(recovering=recovering))
    return position, recovering


def _record_done(
    stream: _Stream,
    state: GenerationState,
    number: int,
    lsn: str,
    commit_ts: datetime | None,
) -> GenerationState:
    """Records in the checkpoint that generation ``number`` starts after the snapshot ``lsn``
    (the re-snapshot is no longer ``recovering``) and returns that state."""
    done = GenerationState(
        generation=number,
        snapshot_lsn=lsn,
        commit_ts=format_utc(commit_ts),
        at=_now(),
        failed_at=state.failed_at,
    )
    write_state(stream.checkpoint, done)
    return done


def _reusable(stream: _Stream, recovering: Recovering) -> bool:
    """Whether the recovery's snapshot is in bronze already and still a start."""
    if recovering.snapshot_lsn is None:
        return False
    appended = snapshot_txn_version(stream.spark, stream.target, ids.events_id(stream.app_id))
    if appended < recovering.generation:
        return False
    return find_loss(stream.options, Lsn.parse(recovering.snapshot_lsn)) is None


def _finish(stream: _Stream, state: GenerationState, recovering: Recovering) -> Generation:
    spark, target, app_id = stream.spark, stream.target, stream.app_id
    lost_from, lost_to = parse_utc(recovering.from_ts), parse_utc(recovering.lost_to_ts)
    if _reusable(stream, recovering):
        assert recovering.snapshot_lsn is not None
        lsn, commit_ts = recovering.snapshot_lsn, parse_utc(recovering.commit_ts)
        rows: int | None = snapshot_rows(spark, target, lsn)[0]
        started_at, duration_ms = None, None
        log.info("%s: reusing the re-snapshot at %s already in %s", app_id, lsn, target.text)
    else:
        appended = snapshot_txn_version(spark, target, ids.events_id(app_id))
        number = ids.resnapshot_generation(recovering.generation, appended)
        position, recovering = _record_position(stream, state, recovering, number)
        taken = take_snapshot(
            spark,
            stream.raw,
            stream.options,
            position,
            target=target,
            app_id=ids.sink_id(app_id, number),
            facts=stream.facts,
            txn=ids.resnapshot(app_id, number),
            kind=SnapshotKind("resnapshot", number, lost_from, lost_to),
        )
        lsn, commit_ts, rows = taken.lsn, taken.commit_ts, taken.rows
        started_at, duration_ms = taken.started_at, taken.duration_ms
        gone = find_loss(stream.options, position.lsn)
        if gone is not None:
            write_state(stream.checkpoint, state.but(recovering=None, failed_at=_now()))
            raise DataLossError(
                f"{gone.error()} The re-snapshot at {lsn} took longer than CDC retention: its "
                "own changes were purged before the read ended (counted as a failed attempt). "
                "Lengthen the retention or add numPartitions, then rerun with "
                "resnapshot_interval_days=0"
            )
    number = recovering.generation
    sink_id = ids.sink_id(app_id, number)
    write_resnapshot(
        spark,
        stream.facts,
        app_id=app_id,
        generation=number,
        sink_id=sink_id,
        target=target,
        lsn=lsn,
        commit_ts=commit_ts,
        rows=rows,
        started_at=started_at,
        duration_ms=duration_ms,
        lost_from_ts=lost_from,
        lost_to_ts=lost_to,
    )
    done = _record_done(stream, state, number, lsn, commit_ts)
    log.info(
        "%s: re-snapshot done: generation %d (%s) starts after %s", app_id, number, sink_id, lsn
    )
    return _generation(done, stream.checkpoint, app_id)


def _now() -> str:
    return format_utc(utc_now())
