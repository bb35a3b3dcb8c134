"""A database stream's tables in their generations: the live one of each, and the automatic
re-snapshot after data loss (``start_database(on_data_loss="resnapshot")``;
docs/many-tables.md#re-snapshots-after-data-loss, ADR 0214).

A table of a database stream has the generations its single stream would have
(docs/generations.md): generation ``n`` writes under the sink id ``<app_id>.g<n>`` and starts
after the snapshot that opened it. Its state file is the single stream's
(``_mssql_cdc_generation.json``), kept in ``<checkpoint>/_mssql_cdc_tables/<app_id>`` under the
query's one checkpoint (``locations.database_table_dir``).

Runs on the driver before the query starts:

1. :func:`place_generations`, once the arguments are checked: each table's live generation,
   read from its state file (no file: generation 0): its sink id and, in a generation ``n``
   >= 1, its ``startingLsn``, the snapshot it starts after;
2. after the catalog check and before the bootstrap, :func:`recover_tables`
   (``on_data_loss="resnapshot"`` only): each table's recovery as its ``to_delta`` runs it
   (``snapshots.resnapshot.recover``), except where it resumes from: the end of its newest
   micro-batch row in the facts table (one aggregation for all the tables),
   else the start its joining recorded, else its generation's snapshot, its ``startingLsn`` or
   its bootstrap. A table whose changes after that point are purged is re-snapshotted into its
   bronze table (or its chunked re-snapshot opened, for ``backfill()`` to read) and goes on in
   the new generation from the snapshot's LSN: the sink sees a new sink id that joins and an
   old one that leaves, and writes both membership rows in the run's first batch. A table
   whose recovery fails for a reason of its own (a second loss within
   ``resnapshot_interval_days``, the re-snapshot's own changes purged) is parked for the run.

The check runs only at the start, as a single stream's does: changes purged while the query
runs park the table with the data-loss error, and the next start re-snapshots it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from mssql_cdc.pipeline.locations import database_table_dir
from mssql_cdc.sink import (
    DatabaseLedger,
    DatabaseTable,
    Generation,
    Generations,
    GenerationState,
    Ledger,
    StreamTables,
    park_at_start,
)
from mssql_cdc.source import format_utc

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mssql_cdc.pipeline.arguments import Recovery
    from mssql_cdc.sink import TableRef

__all__ = [
    "leaving_generation",
    "place_generations",
    "record_left_generation",
    "recover_tables",
]

log = logging.getLogger("mssql_cdc.pipeline")


def place_generations(
    location: str, members: Sequence[DatabaseTable], per_table: Mapping[str, dict[str, str]]
) -> None:
    """Sets each table's live generation as its state file under ``location`` records it, and
    in a generation ``n`` >= 1 its ``startingLsn`` option (in ``per_table``, by capture
    instance) to the snapshot the generation starts after.

    Raises:
        ValueError: a state file this package did not write.
    """
    for member in members:
        state = _generations(location, member).state()
        _place(member, per_table[member.capture_instance], state.generation, state.snapshot_lsn)


def _checks(ledger: Ledger) -> Callable[[], None]:
    """The one-target checks of a table about to be re-snapshotted (``to_delta`` and the
    bootstrap make them first; the sink makes them for all tables in the first batch, after
    this)."""

    def check() -> None:
        ledger.check_facts_not_target()
        ledger.check_one_target()

    return check


def _generations(location: str, member: DatabaseTable) -> Generations:
    return Generations(database_table_dir(location, member.app_id), member.app_id)


def _place(
    member: DatabaseTable, options: dict[str, str], generation: int, snapshot_lsn: str | None
) -> None:
    member.generation = generation
    if generation > 0 and snapshot_lsn:
        for key in [k for k in options if k.lower() == "startinglsn"]:
            del options[key]
        options["startingLsn"] = snapshot_lsn


def recover_tables(  # noqa: PLR0917 (the start's parts, as start_database has them)
    spark: SparkSession,
    name: str,
    location: str,
    members: Sequence[DatabaseTable],
    per_table: Mapping[str, dict[str, str]],
    facts: TableRef,
    recovery: Recovery,
) -> None:
    """Runs each table's recovery (see the module doc, step 2), one table after the other, and
    moves a re-snapshotted table to its new generation (:func:`_place`).

    Args:
        name: the database stream's name (its membership rows say where tables joined).
        location: the query's checkpoint (the tables' state files are under it).
        per_table: each table's options by capture instance (a new generation sets its
            ``startingLsn``).
        recovery: ``resnapshot_interval_days`` and ``snapshot`` (``"chunked"``: open a chunked
            re-snapshot for ``backfill()``).

    Raises:
        Exception: a failure that is not a table's own (the connection, Spark): nothing has
            started. A table's own (``sink.parkable``: data loss within the interval, a
            target the one-target rule refuses, another stream's chunked snapshot open on its
            bronze table) parks it.
    """
    from mssql_cdc.options import parse_options
    from mssql_cdc.snapshots.reader import TableReader
    from mssql_cdc.snapshots.resnapshot import Recovery as TableRecovery
    from mssql_cdc.snapshots.resnapshot import recover

    chunked = recovery.snapshot == "chunked"
    todo = [m for m in members if m.parked is None]
    ledger = DatabaseLedger(spark, facts, name, set())
    last = ledger.last_batches([m.sink_id for m in todo])
    joined = {sid: m for sid, m in ledger.members().items() if m.joined}

    def resume(live: Generation) -> tuple[str, str] | None:
        batch = last.get(live.sink_id)
        if batch is not None and batch.end_lsn is not None:
            ts = batch.end_commit_ts
            return batch.end_lsn, "" if ts is None else format_utc(ts)
        member = joined.get(live.sink_id)
        if member is not None and member.start_recorded and member.start is not None:
            return member.start, ""
        return None

    for member in todo:
        options = per_table[member.capture_instance]
        table_ledger = Ledger(StreamTables(spark, member.target, facts), member.app_id)
        generations = _generations(location, member)
        try:
            reader = TableReader(spark, options, parse_options(options))
            table = TableRecovery(
                reader, table_ledger, generations, chunked, resume, _checks(table_ledger)
            )
            live = recover(table, recovery.interval_days)
        except Exception as exc:
            park_at_start(name, member, "its re-snapshot after data loss", exc)
            continue
        if live.number != member.generation:
            before = member.sink_id
            _place(member, options, live.number, live.starting_lsn)
            log.warning(
                "%s: %s goes on in generation %d (%s, was %s) after its snapshot at %s",
                name,
                member.capture_instance,
                live.number,
                member.sink_id,
                before,
                live.starting_lsn,
            )


def leaving_generation(
    database_checkpoint: str, checkpoint: str, app_id: str
) -> tuple[Generation, GenerationState]:
    """The generation a table leaving the database stream goes on in as a single stream with
    ``checkpoint``: its live generation in the database stream (its sink id, and the Spark
    checkpoint that generation has under ``checkpoint``), with the state to record in
    ``checkpoint`` (for a generation >= 1: :func:`record_left_generation`).

    Raises:
        ValueError: a re-snapshot of the table is under way (an interrupted start): run the
            database stream once more first; in a generation >= 1, a ``checkpoint`` that is
            not absent or empty (the state file goes at its top), unless it holds only what
            an interrupted leave seeded (removed, to be seeded again).
    """
    import os

    state = Generations(database_table_dir(database_checkpoint, app_id), app_id).state()
    if state.recovering is not None:
        raise ValueError(
            f"{app_id}: its re-snapshot into generation {state.recovering.generation} is under "
            "way (a start of the database stream was interrupted): run the database stream "
            "once more to finish it, then move the table"
        )
    live = Generations(checkpoint, app_id).of(state)
    if state.generation > 0 and os.path.isdir(checkpoint) and os.listdir(checkpoint):
        if _interrupted_leave(checkpoint, live):
            import shutil

            log.warning(
                "%s: %s holds only the generation checkpoint an interrupted leave_database "
                "seeded; seeding it again",
                live.sink_id,
                checkpoint,
            )
            shutil.rmtree(live.checkpoint)
        else:
            raise ValueError(
                f"checkpoint {checkpoint!r} is not empty: a table in generation "
                f"{state.generation} moves to a new, empty checkpoint"
            )
    return live, state


def _interrupted_leave(checkpoint: str, live: Generation) -> bool:
    """Whether ``checkpoint`` holds nothing but ``live``'s Spark checkpoint
    (``_generations/<n>``, no state file): what a ``leave_database`` killed between its two
    writes leaves (a single stream's checkpoint records its state before any generation's
    directory exists)."""
    import os

    top, number = os.path.split(os.path.relpath(live.checkpoint, checkpoint))
    if os.listdir(checkpoint) != [top]:
        return False
    return os.listdir(os.path.join(checkpoint, top)) == [number]


def record_left_generation(checkpoint: str, app_id: str, state: GenerationState) -> None:
    """Records ``state`` (a generation >= 1) in the single stream's ``checkpoint``, after its
    generation's Spark checkpoint was seeded: ``to_delta`` then runs that generation."""
    if state.generation > 0:
        Generations(checkpoint, app_id).record(state)
