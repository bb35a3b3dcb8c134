"""``to_delta(on_data_loss="resnapshot")``: the automatic re-snapshot before the query starts,
and the live generation every ``to_delta`` call runs in (docs/data-loss.md, docs/generations.md;
ADRs 0101, 0102).

Runs on the driver, in the calling Python process, before the query starts:

1. read the generation state (``Generations``, the ledger's view of the checkpoint); a recovery
   left ``recovering`` by a crash is finished first, reusing a snapshot it already appended;
2. otherwise find where the live generation resumes: its last committed offset, else its
   snapshot (generation > 0), an explicit ``startingLsn``, or this app_id's bootstrap
   snapshot; nothing to resume from: no check;
3. ask the source whether the changes after it are purged (``source.find_loss``); none are:
   start the live generation;
4. purged: refuse a second re-snapshot within ``resnapshot_interval_days`` of the last one (or
   of a failed one) with ``DataLossError``; else record ``recovering``, log a WARNING with the
   lost range, write ``snapshot_open``, read the table into the same bronze table (the
   ledger's ``resnapshot`` commit of the new generation ``n``, the number the ledger picks),
   write the ``resnapshot`` facts row (``app_id`` ``<app_id>.g<n>``,
   ``lost_from_ts``/``lost_to_ts``, under the same transaction) and record generation ``n``
   with its snapshot; the query then starts in
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
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from mssql_cdc._native import Lsn
from mssql_cdc.errors import DataLossError
from mssql_cdc.sink import (
    Generation,
    Generations,
    GenerationState,
    Recovering,
    Resnapshotted,
    SnapshotOpened,
    parse_utc,
    utc_now,
)
from mssql_cdc.snapshots.full import take_snapshot
from mssql_cdc.source import SnapshotPosition, format_utc

if TYPE_CHECKING:
    from mssql_cdc.sink import Ledger
    from mssql_cdc.snapshots.reader import TableReader

__all__ = ["Recovery", "recover"]

log = logging.getLogger("mssql_cdc.snapshots")


@dataclass(frozen=True)
class Recovery:
    """What a ``to_delta`` recovery works on: the table, the stream's ledger (generation 0,
    with a facts table), its generations, and whether the re-snapshot is chunked."""

    reader: TableReader
    ledger: Ledger
    generations: Generations
    #: ``snapshot="chunked"``: open a chunked re-snapshot instead of reading the table
    chunked: bool = False
    #: where the live generation resumes when no Spark checkpoint of its own records it (a
    #: database stream's table: the end of its newest facts row, or where it joined), as
    #: ``(lsn, commit_ts)`` (``""``: not known); ``None`` from it: resume from the generation's
    #: snapshot, ``startingLsn`` or the bootstrap. Unset: the generation's Spark checkpoint
    resume: Callable[[Generation], tuple[str, str] | None] | None = None
    #: called once the recovery is to write (a recovery under way, or changes purged), before
    #: anything is written: a database stream's table's one-target checks, which its
    #: ``to_delta`` makes before the recovery
    before_write: Callable[[], None] | None = None


def _resume_point(rec: Recovery, state: GenerationState) -> tuple[str, str] | None:
    """``(lsn, commit_ts)`` the live generation resumes after, or ``None`` (nothing to check)."""
    live = rec.generations.of(state)
    if rec.resume is not None:
        resumed = rec.resume(live)
        if resumed is not None:
            return resumed
    else:
        offset = rec.generations.committed_offset(live)
        if offset is not None:
            return offset["lsn"], offset["commit_ts"]
    if rec.resume is None and rec.ledger.has_batches(live.sink_id):
        raise ValueError(
            f"on_data_loss='resnapshot': the facts table records batches of {live.sink_id!r} "
            f"but Python finds no Spark commits in {live.checkpoint!r}: the checkpoint was "
            "deleted, or Spark and Python resolve the path to two places. A new checkpoint "
            "needs a new app_id"
        )
    if state.generation > 0 and state.snapshot_lsn:
        return state.snapshot_lsn, state.commit_ts
    start = rec.reader.options.starting_lsn
    if isinstance(start, Lsn):
        return str(start), ""
    found = rec.ledger.bootstrap_lsn()
    return (found, "") if found is not None else None


def _last_attempt(state: GenerationState) -> datetime | None:
    times = [parse_utc(state.failed_at)]
    if state.generation > 0:
        times.append(parse_utc(state.at))
    known = [t for t in times if t is not None]
    return max(known) if known else None


def recover(rec: Recovery, interval_days: float) -> Generation:
    """Runs the pre-flight of ``on_data_loss="resnapshot"`` (see the module doc) and returns
    the generation to start; with ``rec.chunked`` the re-snapshot is only opened
    (:func:`_open_chunked`) and ``backfill()`` reads it.

    Raises:
        DataLossError: changes are purged and the last re-snapshot (or failed attempt) was
            less than ``interval_days`` ago, or the re-snapshot's own LSN was purged before
            its read ended.
        ValueError: a checkpoint Python cannot read as Spark's, facts recording batches
            of a checkpoint Python cannot see, a full re-snapshot while the stream's chunked
            snapshot is open, or a chunked one while another stream's is open on the target.
    """
    ledger, app_id = rec.ledger, rec.ledger.stream
    state = rec.generations.state()
    if state.recovering is not None:
        log.info("%s: finishing the re-snapshot an earlier run began", app_id)
        if rec.before_write is not None:
            rec.before_write()
        return _resume(rec, state, state.recovering)
    point = _resume_point(rec, state)
    if point is None:
        return rec.generations.of(state)
    loss = rec.reader.loss_after(point[0])
    if loss is None:
        return rec.generations.of(state)
    if rec.before_write is not None:
        rec.before_write()
    from_ts = point[1] or format_utc(loss.after_ts)
    last = _last_attempt(state)
    if last is not None and utc_now() - last < timedelta(days=interval_days):
        raise DataLossError(
            f"{loss.error(from_ts)} on_data_loss='resnapshot' did not re-snapshot: the last "
            f"automatic re-snapshot (or a failed one) was at {last.isoformat()} UTC, less than "
            f"resnapshot_interval_days={interval_days:g} ago. Keep CDC retention longer than "
            "the stream's downtime; to re-snapshot now, pass resnapshot_interval_days=0"
        )
    if not rec.chunked:
        from mssql_cdc.snapshots.chunked import refuse_open_chunked

        refuse_open_chunked(ledger, "on_data_loss='resnapshot' with snapshot='full'")
    number = ledger.next_generation(state)
    recovering = Recovering(number, point[0], from_ts, format_utc(loss.lost_to_ts))
    rec.generations.record(state.but(recovering=recovering))
    log.warning(
        "%s: changes of %s after %s are purged by CDC cleanup (lost: commits after %s up to "
        "%s UTC, min_lsn now %s): re-snapshotting %s into generation %d (%s)",
        app_id,
        loss.capture_instance,
        point[0],
        from_ts or "?",
        recovering.lost_to_ts or "?",
        loss.min_lsn,
        ledger.target.text,
        number,
        ledger.at(number).sink_id,
    )
    return _resume(rec, state.but(recovering=recovering), recovering)


def _resume(rec: Recovery, state: GenerationState, recovering: Recovering) -> Generation:
    """Finishes ``recovering``: a full snapshot of it already in bronze is reused whatever the
    mode; else a chunked re-snapshot is opened, or a full one read."""
    if rec.chunked and not _reusable(rec, recovering):
        return _open_chunked(rec, state, recovering)
    return _finish(rec, state, recovering)


def _open_chunked(rec: Recovery, state: GenerationState, recovering: Recovering) -> Generation:
    """Opens the chunked re-snapshot of ``recovering.generation`` (or reuses the one an
    interrupted run opened, unless its own LSN is purged: then a newer one a generation
    further), records the generation with its snapshot LSN S and returns it: the stream starts
    at S at once, ``backfill()`` reads the table and writes the ``resnapshot`` row."""
    ledger, app_id, target = rec.ledger, rec.ledger.stream, rec.ledger.target
    number = recovering.generation
    found = ledger.chunked()
    reused: tuple[str, datetime | None] | None = None
    if found is not None and found.generation == number and found.kind == "resnapshot":
        if rec.reader.loss_after(found.snapshot_lsn) is None:
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
        others = ledger.others_open()
        if others:
            other = others[0]
            raise ValueError(
                f"on_data_loss='resnapshot' with snapshot='chunked': the stream {other.app_id!r} "
                f"has a chunked snapshot of {target.text} open (snapshot LSN "
                f"{other.snapshot_lsn}, generation {other.generation}); a second one would "
                "interleave its chunks. Finish it with backfill() first"
            )
        keys = rec.reader.chunk_key()
        position, recovering = _record_position(rec, state, recovering, number)
        ledger.at(number).open_chunked(
            SnapshotOpened(
                str(position.lsn),
                position.commit_ts,
                number,
                "chunked",
                parse_utc(recovering.from_ts),
                parse_utc(recovering.lost_to_ts),
                tuple(keys),
            )
        )
        # read back: an open of this generation an interrupted run wrote wins (Delta skipped
        # this one, same transaction)
        again = ledger.chunked()
        if again is not None and again.generation == number:
            reused = (again.snapshot_lsn, again.commit_ts)
        else:
            reused = (str(position.lsn), position.commit_ts)
    lsn, commit_ts = reused
    done = _record_done(rec, state, number, lsn, commit_ts)
    sink_id = ledger.at(number).sink_id
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
    return rec.generations.of(done)


def _record_position(
    rec: Recovery, state: GenerationState, recovering: Recovering, number: int
) -> tuple[SnapshotPosition, Recovering]:
    """Records in the checkpoint, before anything is read or opened, the snapshot position of
    generation ``number`` (``sys.fn_cdc_get_max_lsn()`` now), so an interrupted run finds it."""
    position = rec.reader.position()
    recovering = replace(
        recovering,
        generation=number,
        snapshot_lsn=str(position.lsn),
        commit_ts=format_utc(position.commit_ts),
    )
    rec.generations.record(state.but(recovering=recovering))
    return position, recovering


def _record_done(
    rec: Recovery,
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
    rec.generations.record(done)
    return done


def _reusable(rec: Recovery, recovering: Recovering) -> bool:
    """Whether the recovery's snapshot is in bronze already and still a start."""
    if recovering.snapshot_lsn is None:
        return False
    if not rec.ledger.resnapshot_appended(recovering.generation):
        return False
    return rec.reader.loss_after(recovering.snapshot_lsn) is None


def _finish(rec: Recovery, state: GenerationState, recovering: Recovering) -> Generation:
    ledger, app_id = rec.ledger, rec.ledger.stream
    lost_from, lost_to = parse_utc(recovering.from_ts), parse_utc(recovering.lost_to_ts)
    if _reusable(rec, recovering):
        assert recovering.snapshot_lsn is not None
        lsn, commit_ts = recovering.snapshot_lsn, parse_utc(recovering.commit_ts)
        rows: int | None = ledger.snapshot_rows(lsn)[0]
        started_at, duration_ms = None, None
        log.info("%s: reusing the re-snapshot at %s already in %s", app_id, lsn, ledger.target.text)
    else:
        number = ledger.resnapshot_generation(recovering.generation)
        position, recovering = _record_position(rec, state, recovering, number)
        at_n = ledger.at(number)
        taken = take_snapshot(
            rec.reader, at_n, at_n.snapshot_commit("resnapshot"), position, (lost_from, lost_to)
        )
        lsn, commit_ts, rows = taken.lsn, taken.commit_ts, taken.rows
        started_at, duration_ms = taken.started_at, taken.duration_ms
        gone = rec.reader.loss_after(position.lsn)
        if gone is not None:
            rec.generations.record(state.but(recovering=None, failed_at=_now()))
            raise DataLossError(
                f"{gone.error()} The re-snapshot at {lsn} took longer than CDC retention: its "
                "own changes were purged before the read ended (counted as a failed attempt). "
                "Lengthen the retention or add numPartitions, then rerun with "
                "resnapshot_interval_days=0"
            )
    number = recovering.generation
    at_n = ledger.at(number)
    at_n.close(
        Resnapshotted(number, lsn, commit_ts, rows, started_at, duration_ms, lost_from, lost_to)
    )
    done = _record_done(rec, state, number, lsn, commit_ts)
    log.info(
        "%s: re-snapshot done: generation %d (%s) starts after %s",
        app_id,
        number,
        at_n.sink_id,
        lsn,
    )
    return rec.generations.of(done)


def _now() -> str:
    return format_utc(utc_now())
