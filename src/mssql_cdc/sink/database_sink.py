"""``DatabaseSink``: the ``foreachBatch`` function of a database stream, which keeps many
capture instances of one database in bronze with one streaming query
(docs/many-tables.md#the-database-stream, ADR 0210).

The query reads the clock ``format("mssql_cdc_database")``, whose offset is the database's
newest commit; database batch ``B`` stands for every table's changes up to its end offset
``L_B``. Each table keeps its own sink id, ``txnAppId``, bronze table and facts rows: its
micro-batch goes through its own :class:`~mssql_cdc.sink.delta.DeltaSink` (the same checks,
commits, counts and replay rules as a single stream's), at its batch id ``B + offset``; the
offset is fixed when the table joins and recorded (``ledger.database``) before the table's first
commit, so a replayed database batch gives every table the batch id it had.

Per database batch, on the driver (or Spark Connect's ``foreachBatch`` worker), in this order:

1. ``L_B`` from the query's offset log; on a run's first batch, nothing more when the facts
   table records the batch (a replay of a finished batch), else each table's position (the end
   of its newest micro-batch row in the facts table, one aggregation for all tables), and the
   membership rows of tables that join or leave, committed before any table's commit;
2. which tables to read: those whose position is below the low-water mark of their capture
   instance (the read applies the data-loss rule), new tables, and those with changes in
   ``(position, L_B]`` (``DatabaseSource.changed``: a few statements for all tables);
3. each such table's changes ``(position, L_B]`` read (on the driver when small, else by
   ``spark.read``) and appended to its bronze table by its own sink, which hands its facts row
   back; up to ``settings.parallel`` tables at once;
4. one facts commit (``<D>#database``, ``B``): the tables' micro-batch rows, a 0-row micro-batch
   row ending at ``L_B`` for each idle table whose last row is older than
   ``heartbeat_seconds``, and a ``table_parked`` event row for each table that failed.

A table whose read or write fails with an error of its own (data loss, a schema change, a
revoked grant, a dropped capture instance, a rewound history) is *parked*: it is left out of the
run's later batches, its failure is logged and recorded, and the others go on; the next run
tries it again. A failure that is not the table's own (the connection, a deadlock, Spark) fails
the batch, and Spark replays it. A table whose bronze holds the batch without its facts row is
never parked: the batch fails, and its replay writes the facts row the commit lacks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from mssql_cdc._metrics import metrics_dir
from mssql_cdc.errors import DataLossError, SchemaChangedError, SqlServerError, find_error
from mssql_cdc.sink.database_report import DatabaseBatchReport, publish
from mssql_cdc.sink.delta import WARM_BETWEEN_BATCHES, WARM_WITHIN_BATCH, DeltaSink, warm_mode
from mssql_cdc.sink.facts import (
    BatchCounts,
    BatchRow,
    FactRow,
    FoldedMetrics,
    parse_utc,
    utc_now,
)
from mssql_cdc.sink.ledger import (
    DatabaseLedger,
    Member,
    TableBatch,
    TableRow,
    ids,
    member_row,
    parked_row,
)
from mssql_cdc.sink.tables import TableRef, table_ref
from mssql_cdc.sink.warmup import WARMER, run_each

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "DatabaseSettings",
    "DatabaseSink",
    "DatabaseSource",
    "DatabaseTable",
    "failure_text",
    "park_at_start",
    "parkable",
]

log = logging.getLogger("mssql_cdc.sink")

#: the errors that are a table's own: the table is parked, the others go on
_TABLE_ERRORS: tuple[type[BaseException], ...] = (
    DataLossError,
    SchemaChangedError,
    PermissionError,
    ValueError,
)
#: SQL Server errors of a table's own statement: 208 invalid object name (its capture instance
#: was dropped since it was listed), 229 and 230 a permission denied on its change table
_TABLE_SERVER_ERRORS = frozenset({208, 229, 230})


def parkable(exc: BaseException) -> bool:
    """Whether ``exc`` (as raised, or wrapped by Spark) is a table's own failure: data loss, a
    schema change, a permission, a ``ValueError`` of ours (a rewound history, a bad option), or
    SQL Server's error for the table's own objects (208, 229, 230, raised in this process).
    Anything else fails the batch, and Spark replays it: a lost connection, a login, a
    timeout, a deadlock, any other server error, Spark's own failures."""
    if isinstance(exc, _TABLE_ERRORS):  # raised as is (the sink's own rewind check)
        return True
    if isinstance(exc, SqlServerError):
        return exc.number in _TABLE_SERVER_ERRORS
    found = find_error(exc)
    return found is not None and issubclass(found.cls, _TABLE_ERRORS)


def failure_text(exc: BaseException) -> str:
    """A table's failure as a facts row and a log line carry it: the error of ours or SQL
    Server's found in ``exc`` (as raised, or wrapped by Spark, whose own text is a trace),
    else the exception's type and text."""
    found = find_error(exc)
    return str(found) if found is not None else f"{type(exc).__name__}: {exc}"


def park_at_start(name: str, table: DatabaseTable, what: str, exc: Exception) -> None:
    """Parks ``table`` for the run when ``exc``, raised by ``what`` (``"its bootstrap"``, ``"its
    re-snapshot after data loss"``) before the query of the database stream ``name`` started,
    is the table's own failure (:func:`parkable`): its ``parked`` reason set (the start writes
    its ``table_parked`` row) and an ERROR logged; the other tables go on.

    Raises:
        Exception: ``exc`` itself when it is not the table's own (nothing has started).
    """
    if not parkable(exc):
        raise exc
    table.parked = f"{what} failed: {failure_text(exc)}"
    log.error(
        "%s: parked %s (%s): %s; the other tables go on, the next run tries it again",
        name,
        table.capture_instance,
        table.sink_id,
        table.parked,
    )


class DatabaseSource(Protocol):
    """What the database sink asks SQL Server and Spark's readers (``pipeline.database`` builds
    it): runs where the sink runs."""

    def tables(self) -> Mapping[str, tuple[str, tuple[str, ...]]]:
        """Each listed capture instance's table as its read resolves it now: its low-water
        mark and the names of all its instances (a table between two instances has both), by
        the listed name; a name that resolves to none is left out."""

    def changed(self, names: Sequence[str], after: str, upto: str) -> set[str]:
        """The instance names among ``names`` with changes in ``(after, upto]``."""

    def read(
        self,
        spark: SparkSession,
        capture_instance: str,
        after: str | None,
        upto: str,
        upto_commit_ts: str = "",
    ) -> DataFrame | tuple[StructType, pa.Table]:
        """The instance's changes ``(after, upto]`` (``after`` ``None``: from the instance's
        ``startingLsn`` option): a DataFrame to read, or the rows already read, with their
        schema. ``upto_commit_ts``: the commit time of ``upto`` as the clock's offset gives it
        (the read's end for its metrics; ``""``: unknown)."""

    def start(self, capture_instance: str, upto: str, low: str | None = None) -> str | None:
        """Where a table new to the stream starts, joining in a batch ending at ``upto``, its
        capture instance's low-water mark ``low`` (``None``: unknown): an LSN taken as
        processed, or ``None`` (read from its ``startingLsn``: ``earliest``)."""


@dataclass
class DatabaseTable:
    """One capture instance of a database stream, its bronze table and its ``app_id`` (as the
    stream's template gives it), in its live generation (docs/generations.md): its sink id is
    ``app_id`` in generation 0, ``<app_id>.g<n>`` in generation ``n`` after a re-snapshot."""

    capture_instance: str
    target: TableRef
    app_id: str
    #: the table's live generation (``pipeline.database_generations`` sets it before the start)
    generation: int = 0
    #: why the table is left out of this run before it starts (its bootstrap failed; its
    #: ``table_parked`` row was written then, not by the sink)
    parked: str | None = None
    #: the table's metrics directory, its reads' ``metricsPath`` (``None``: no metric
    #: columns, no event rows)
    metrics_path: str | None = None

    @property
    def sink_id(self) -> str:
        """The sink id the table writes under (``txnAppId``, facts ``app_id``)."""
        return ids.sink_id(self.app_id, self.generation)


@dataclass(frozen=True)
class DatabaseSettings:
    """How a database stream paces its work.

    Attributes:
        heartbeat_seconds: how often an idle table gets a 0-row row (at most once per this
            many seconds).
        warm_state: as ``delta_sink``'s, for each table's sink.
        parallel: how many tables' writes run at once, on threads of the driver (classic
            Spark; one after the other on Spark Connect).
    """

    heartbeat_seconds: float = 300.0
    warm_state: bool | str = True
    parallel: int = 4


@dataclass
class _State:
    """A table's state within a run."""

    table: DatabaseTable
    sink: DeltaSink
    offset: int = 0
    position: str | None = None
    #: the newest micro-batch id recorded for the table (``-1``: none)
    last: int = -1
    #: whether the table's history since the run began is this run's own (after the run's first
    #: batch, or a table that just joined): its write need not read it again
    ours: bool = False
    written_at: datetime | None = None
    parked: str | None = None
    #: the table has more than one capture instance now (a switch under way): an idle table's
    #: position is recorded every batch, so that it passes the newer instance's start while the
    #: older instance still holds the range before it
    switching: bool = False
    #: the database batch of this run that last read the table (its bronze commit, or its
    #: empty range's row; ``-1``: none yet); a table read in two batches in a row is a busy one
    written_batch: int = -1

    def version(self, batch_id: int) -> int:
        return batch_id + self.offset


@dataclass
class _Batch:
    """What one database batch did, for its log line."""

    upto: str = ""
    read: list[str] = field(default_factory=list)
    parked: list[_State] = field(default_factory=list)
    heartbeats: int = 0
    #: milliseconds spent finding the changed tables, planning their reads, writing them (the
    #: last two summed over the tables, which run side by side) and committing the facts rows
    find_ms: int = 0
    plan_ms: int = 0
    write_ms: int = 0
    facts_ms: int = 0


class DatabaseSink:
    """The ``foreachBatch`` function of a database stream (see the module doc).

    Args:
        app_id: the database stream's own identity (its membership and heartbeat commits);
            never a table's.
        tables: the capture instances and their bronze tables, in order.
        facts: the facts table (required: the tables' positions are read from it).
        source: the server and the readers.
        checkpoint: the query's checkpoint location (each batch's end is read from its offset
            log).
        settings: heartbeat interval, state warming, parallel writes.
    """

    def __init__(
        self,
        app_id: str,
        tables: Sequence[DatabaseTable],
        facts: TableRef,
        source: DatabaseSource,
        checkpoint: str,
        *,
        settings: DatabaseSettings | None = None,
    ) -> None:
        self.app_id = app_id
        self.tables = list(tables)
        self.facts = facts
        self.source = source
        self.checkpoint = checkpoint
        self.settings = settings if settings is not None else DatabaseSettings()
        self._states: dict[str, _State] | None = None
        self._seen: set[TableRef] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"DatabaseSink(app_id={self.app_id!r}, tables={len(self.tables)})"

    def __getstate__(self) -> dict[str, object]:
        """What Spark Connect pickles to its ``foreachBatch`` worker: the arguments, no run
        state and no lock."""
        state = dict(self.__dict__)
        state.update(_states=None, _seen=set(), _lock=None)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def parked(self) -> dict[str, str]:
        """The tables parked in this run: their failure, by capture instance."""
        if self._states is None:
            return {}
        return {ci: s.parked for ci, s in self._states.items() if s.parked is not None}

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        batch_id = int(batch_id)
        clock, started_at = time.monotonic(), utc_now()
        spark = df.sparkSession
        ledger = DatabaseLedger(spark, self.facts, self.app_id, self._seen)
        end = ledger.batch_end(self.checkpoint, batch_id)
        if end is None:
            raise ValueError(
                f"{self.app_id}: the offset log of database batch {batch_id} in "
                f"{self.checkpoint} cannot be read; its tables' range is unknown"
            )
        upto = end["lsn"]
        done = _Batch()
        first = self._states is None
        if self._states is None:
            if self._decided(ledger, batch_id):
                return
            self._states = self._load(ledger, batch_id, upto)
            # (a table whose bootstrap failed had its row written before the query started)
            done.parked += [
                s for s in self._states.values() if s.parked is not None and s.table.parked is None
            ]
        todo = [
            s for s in self._states.values() if s.parked is None and s.version(batch_id) > s.last
        ]
        done.upto = upto
        found_at = time.monotonic()
        chosen = self._to_read(ledger, todo, batch_id, done)
        done.find_ms = round((time.monotonic() - found_at) * 1000)
        mode = warm_mode(self.settings.warm_state)
        if mode == WARM_WITHIN_BATCH and chosen:
            # the facts table's state for the batch's facts commit, beside the tables' writes
            WARMER.request(spark, self.facts)
        written = self._write_tables(spark, chosen, batch_id, end, done)
        beats = self._heartbeats(todo, batch_id, end, (started_at, clock), done)
        rows = [row for _, batch_rows in written for row in batch_rows]
        rows += [row for row, _ in beats] + [
            TableRow(
                s.table.sink_id,
                s.table.target.text,
                parked_row(
                    self.app_id,
                    batch_id,
                    s.version(batch_id),
                    upto,
                    (s.table.capture_instance, s.parked or ""),
                ),
            )
            for s in done.parked
        ]
        if rows:
            committing = time.monotonic()
            if mode == WARM_WITHIN_BATCH:
                WARMER.withdraw(spark, self.facts)  # begun: finished; else the commit's own
            # only a run's first batch can meet a commit of its batch id that landed before it
            # (``_decided`` read it); later ones are this run's own (the checkpoint is Spark's
            # to one query at a time)
            ledger.record_facts(rows, batch_id, utc_now(), verify=first)
            done.facts_ms = round((time.monotonic() - committing) * 1000)
        if mode == WARM_BETWEEN_BATCHES:  # before the states record this batch (``written_batch``)
            self._warm_next(spark, bool(rows), [s for s, _ in written], batch_id)
        now = utc_now()
        for state, _ in written:  # recorded: the batch is done for these tables
            state.position, state.last, state.ours, state.written_at = (
                upto,
                state.version(batch_id),
                True,
                now,
            )
            state.written_batch = batch_id
        for _, state in beats:
            state.last, state.written_at = state.version(batch_id), now
        # only a run's first batch can be a replay of a batch a crashed run began (bronze
        # commits landed, facts not): from here on every table's history is this run's own, so
        # no table's write reads it again (the rewind rule)
        for state in self._states.values():
            state.ours = True
        done.heartbeats = len(beats)
        publish(
            DatabaseBatchReport(
                self.app_id,
                batch_id,
                upto,
                end.get("commit_ts") or "",
                tuple(done.read),
                sum(r.row.counts.rows for r in rows if isinstance(r.row, BatchRow)),
                done.heartbeats,
                tuple(s.table.capture_instance for s in done.parked),
                sum(1 for s in self._states.values() if s.parked is not None),
                round((time.monotonic() - clock) * 1000),
            )
        )
        log.info(
            "%s: database batch %d to %s: %d table(s) read %s (%d ms finding them, %d ms "
            "planning their reads, %d ms writing them, %d ms the facts commit), %d heartbeat "
            "row(s)%s in %d ms",
            self.app_id,
            batch_id,
            upto,
            len(done.read),
            done.read[:10],
            done.find_ms,
            done.plan_ms,
            done.write_ms,
            done.facts_ms,
            done.heartbeats,
            f", parked {[s.table.capture_instance for s in done.parked]}" if done.parked else "",
            round((time.monotonic() - clock) * 1000),
        )

    def _warm_next(
        self, spark: SparkSession, committed: bool, written: Sequence[_State], batch_id: int
    ) -> None:
        """After the batch's commits (ADR 0177): the facts table's state (the next batch's facts
        commit needs it), ahead of everything queued, computed while the query waits for its
        next trigger; then bronze's state of each table written in the database batch before
        this one too (a busy one): most tables of a database change once in a while, and the
        one warming thread is the busy tables' and the facts table's (ADR 0212)."""
        if committed:
            WARMER.request(spark, self.facts, first=True)
        for state in written:
            # (not ``last``: a table that just joined has its previous micro-batch id as
            # ``last`` too, and a first run's batch would warm every table it created)
            if 0 <= state.written_batch == batch_id - 1:
                WARMER.request(spark, state.table.target)

    # -- a run's first batch --------------------------------------------------------------------

    def _decided(self, ledger: DatabaseLedger, batch_id: int) -> bool:
        """Whether the run's first batch is a replay of one whose facts commit landed (the
        batch is done for every table it wrote; the others' positions in the facts table put
        their work into the next batch): nothing is written again.

        Raises:
            ValueError: the facts table records a later batch of this stream: its checkpoint
                was replaced or rewound under the same name.
        """
        recorded = ledger.facts_version()
        if recorded > batch_id:
            raise ValueError(
                f"database stream {self.app_id!r}: its batch {batch_id} is below the batch "
                f"{recorded} {self.facts.text} records for it: the checkpoint was deleted or "
                "rewound under the same name; give a new checkpoint a new name"
            )
        if recorded == batch_id:
            log.info(
                "%s: database batch %d already committed to %s; skipped (replay)",
                self.app_id,
                batch_id,
                self.facts.text,
            )
            return True
        return False

    def _load(self, ledger: DatabaseLedger, batch_id: int, upto: str) -> dict[str, _State]:
        """Each table's position, newest batch id and offset; the membership rows of tables
        that join (and of members no longer listed) committed before any table's commit.

        Raises:
            ValueError: a member no longer listed has a batch in bronze without its facts row
                (it must be finished before the table leaves).
        """
        sinks = [t.sink_id for t in self.tables]
        members = ledger.members()
        leaving = [sid for sid, m in members.items() if m.joined and sid not in set(sinks)]
        last = ledger.last_batches(sinks + leaving)
        states: dict[str, _State] = {}
        rows: list[TableRow] = []
        joining: list[_State] = []
        lows: dict[str, str] | None = None
        for table in self.tables:
            state = self._state(table, last.get(table.sink_id))
            member = members.get(table.sink_id)
            if table.parked is not None:  # a table new to the stream: nothing of it to hold
                state.parked = table.parked
                states[table.capture_instance] = state
                continue
            ci = table.capture_instance
            if member is not None and member.joined:
                state.offset = member.version - member.database_batch
                if state.last < 0:  # joined, no micro-batch row yet: where its join said
                    state.position = (
                        member.start
                        if member.start_recorded
                        else self.source.start(ci, member.lsn or upto)
                    )
            else:
                if state.last < 0:  # its startingLsn (or bootstrap snapshot), recorded
                    if lows is None:  # one listing for all the tables that join
                        lows = {n: low for n, (low, _) in self.source.tables().items()}
                    state.position = self.source.start(ci, upto, lows.get(ci))
                self._join(ledger, state, batch_id, upto, rows)
                if state.parked is None:
                    joining.append(state)
            states[ci] = state
        for sink_id in leaving:
            rows.append(self._leave(ledger, sink_id, members[sink_id], last.get(sink_id), batch_id))
        self._after_parking(ledger, states, members, batch_id, rows)
        if rows:
            self._record_members(ledger, batch_id, rows, joining)
        for state in states.values():
            if state.parked is None and state.last > state.version(batch_id):
                state.parked = (
                    f"the facts table records its micro-batch {state.last}, after the "
                    f"{state.version(batch_id)} this stream would write now: another stream "
                    "wrote it since it joined (run it in one stream at a time; to move it "
                    "out, use leave_database)"
                )
        self._check_identity(ledger, states, batch_id)
        log.info(
            "%s: %d table(s), %d joining or leaving at database batch %d",
            self.app_id,
            len(states),
            len(rows),
            batch_id,
        )
        return states

    def _after_parking(
        self,
        ledger: DatabaseLedger,
        states: Mapping[str, _State],
        members: Mapping[str, Member],
        batch_id: int,
        rows: list[TableRow],
    ) -> None:
        """The tables an earlier run parked (``parked_tables`` lists them until a row of
        theirs is newer): one listed again gets a row in its first batch (a heartbeat, if
        idle), and one never joined and no longer listed gets a ``database_left`` row in
        ``rows``."""
        parked = ledger.parked()
        if not parked:
            return
        listed = {s.table.sink_id: s for s in states.values()}
        for sink_id, table in parked.items():
            state = listed.get(sink_id)
            if state is not None:
                state.written_at = None
            elif not (sink_id in members and members[sink_id].joined):  # a member's: above
                row = member_row(self.app_id, batch_id, -1, joined=False, lsn=None)
                rows.append(TableRow(sink_id, table.target, row))

    def _join(
        self, ledger: DatabaseLedger, state: _State, batch_id: int, upto: str, rows: list[TableRow]
    ) -> None:
        """A table new to the stream: its offset puts its first batch id right after every
        one it has (facts rows, facts and bronze commits) and its ``database_joined`` row goes
        into ``rows``; or it is parked when its bronze holds a batch without its facts row
        (its single stream stopped inside a batch: only that stream's replay finishes it)."""
        table = state.table
        recorded = max(state.last, ledger.facts_txn(table.sink_id))
        bronze = ledger.bronze_version(table.target, table.sink_id)
        if bronze > recorded:
            state.parked = (
                f"its micro-batch {bronze} is in {table.target.text} without its facts row (a "
                "stream of it stopped inside that batch): run that stream (its to_delta) once "
                "more to finish the batch, then this stream takes the table"
            )
            return
        state.offset = recorded + 1 - batch_id
        row = member_row(
            self.app_id, batch_id, recorded + 1, joined=True, lsn=upto, start=state.position
        )
        rows.append(TableRow(table.sink_id, table.target.text, row))

    def _leave(
        self,
        ledger: DatabaseLedger,
        sink_id: str,
        member: Member,
        last: TableBatch | None,
        batch_id: int,
    ) -> TableRow:
        """The ``database_left`` row of a member no longer listed (or listed in a later
        generation: a re-snapshot replaced it, and a batch of it in bronze without its facts
        row is left with its generation, as a single stream's older generation is: the
        re-snapshot holds the table as of after it).

        Raises:
            ValueError: its bronze holds a batch without its facts row (this stream stopped
                inside that batch): only this stream's replay with the table listed finishes it.
        """
        newest = -1 if last is None else last.batch_id
        replaced = any(
            t.generation > 0 and t.sink_id != sink_id and ids.belongs(t.app_id, sink_id)
            for t in self.tables
        )
        if member.target and not replaced:
            bronze = ledger.bronze_version(table_ref(member.target, "target"), sink_id)
            if bronze > newest:
                raise ValueError(
                    f"database stream {self.app_id!r}: {sink_id}'s micro-batch {bronze} is in "
                    f"{member.target} without its facts row (the stream stopped inside that "
                    "batch): run the stream once more with the table listed, then leave it out"
                )
        row = member_row(self.app_id, batch_id, member.version, joined=False, lsn=None)
        return TableRow(sink_id, member.target or "", row)

    @staticmethod
    def _record_members(
        ledger: DatabaseLedger, batch_id: int, rows: Sequence[TableRow], joining: Sequence[_State]
    ) -> None:
        """Commits the membership rows, then reads back what was recorded (a replayed batch's
        commit is skipped by Delta): a joining table takes the recorded offset, or is parked
        for the run when its joining is not recorded."""
        ledger.record_members(rows, batch_id)
        recorded = ledger.members()
        for state in joining:
            member = recorded.get(state.table.sink_id)
            if member is None or not member.joined:
                # this batch's membership commit landed in an earlier run, without this table:
                # its batch ids cannot be recorded before its first commit now
                state.parked = (
                    f"its joining could not be recorded in database batch {batch_id} (a replay "
                    "of a batch whose membership commit landed without it); it joins on the "
                    "stream's next run"
                )
            else:
                if member.version - member.database_batch == state.offset:
                    state.ours = True  # a new batch id above all it recorded: no rewind check
                else:
                    state.offset = member.version - member.database_batch
                if state.last < 0 and member.start_recorded:
                    state.position = member.start  # the recorded join's start wins

    def _check_identity(
        self, ledger: DatabaseLedger, states: Mapping[str, _State], batch_id: int
    ) -> None:
        """Each table's one-target rule (ADR 0031), as its sink's first batch would check it:
        the facts table is not its bronze table, and its sink id writes no other target (one
        read of the targets the facts table records for all the sink ids); a table that
        breaks it is parked (never one whose bronze holds this batch: ``_hold``)."""
        recorded = ledger.recorded_targets([s.table.sink_id for s in states.values()])
        for state in states.values():
            if state.parked is not None:
                continue
            table = state.table
            others = recorded.get(table.sink_id, set()) - {table.target.text}
            try:
                ledger.check_identity(table.target, table.sink_id, checked_others=bool(others))
            except ValueError as exc:
                self._hold(ledger, state, batch_id)
                state.parked = str(exc)

    def _state(self, table: DatabaseTable, last: TableBatch | None) -> _State:
        sink = DeltaSink(
            table.target,
            table.sink_id,
            self.facts,
            None if table.metrics_path is None else metrics_dir(table.metrics_path),
            None,
            warm_state=self.settings.warm_state,
            identity_checked=True,  # by _check_identity, for all tables at once
        )
        state = _State(table, sink)
        if last is not None:
            state.last = last.batch_id
            state.position = last.end_lsn
            state.written_at = last.written_at
            if last.end_lsn is None:
                state.parked = (
                    f"its newest micro-batch row ({last.batch_id}) records no end LSN: "
                    "the database stream cannot tell where to go on; run it as a single "
                    "stream (to_delta) once"
                )
        return state

    # -- which tables to read -------------------------------------------------------------------

    def _to_read(
        self, ledger: DatabaseLedger, todo: Sequence[_State], batch_id: int, done: _Batch
    ) -> list[_State]:
        """The tables of the batch to read, in the order given: new ones, those below their
        table's low-water mark, those with changes in ``(position, upto]`` in any instance of
        their table (the listed one, and a newer one it switches to); a table whose instance
        is gone, or whose change tables the probe may not read, is parked. A table whose start
        is past the batch's end (a bootstrap snapshot, ``latest`` below an instance enabled
        later, a single stream ahead), or new with an instance that begins after it, waits."""
        if not todo:
            return []
        upto = done.upto
        tables = self.source.tables()
        chosen: set[str] = set()
        by_position: dict[str, list[tuple[_State, tuple[str, ...]]]] = {}
        for state in todo:
            ci = state.table.capture_instance
            if ci not in tables:
                reason = (
                    f"capture instance {ci!r} does not exist or the login may not read it "
                    "(sys.sp_cdc_help_change_data_capture does not list it, nor a newer "
                    "instance of its table under its default name)"
                )
                self._park(ledger, state, batch_id, reason, done)
                continue
            low, names = tables[ci]
            state.switching = len(names) > 1
            if state.position is None and low > upto:
                # a new table whose capture instance begins after this batch (enabled while
                # the stream is behind): nothing of it to read yet, and no row; it waits
                continue
            if state.position is not None and state.position >= upto:
                continue  # ahead of this batch (a start past it): nothing to read yet
            if state.position is None or low > state.position:
                chosen.add(ci)
            else:
                by_position.setdefault(state.position, []).append((state, names))
        for after, states in by_position.items():
            chosen |= self._changed(ledger, states, (after, upto), batch_id, done)
        return [s for s in todo if s.table.capture_instance in chosen and s.parked is None]

    def _changed(
        self,
        ledger: DatabaseLedger,
        states: Sequence[tuple[_State, tuple[str, ...]]],
        bounds: tuple[str, str],
        batch_id: int,
        done: _Batch,
    ) -> set[str]:
        """The listed instances of ``states`` (each with its table's instance names) whose
        table has changes in ``bounds``, asked in one statement for all; when that statement
        fails for a table's own reason (a change table dropped or no longer readable), each
        table is asked alone and the failing ones are parked."""
        names = [n for _, of in states for n in of]
        try:
            found = self.source.changed(names, *bounds)
        except Exception as exc:
            if not parkable(exc):
                raise
            if len(states) == 1:
                state, of = states[0]
                # an instance disabled since this batch listed them (the switch's last step):
                # the table's instances listed again, asked once more
                again = self.source.tables().get(state.table.capture_instance)
                if again is not None and again[1] != of:
                    return self._changed(ledger, [(state, again[1])], bounds, batch_id, done)
                self._park(ledger, state, batch_id, failure_text(exc), done)
                return set()
            out: set[str] = set()
            for one in states:
                out |= self._changed(ledger, [one], bounds, batch_id, done)
            return out
        return {s.table.capture_instance for s, of in states if found.intersection(of)}

    # -- one table's batch ----------------------------------------------------------------------

    def _write_tables(
        self,
        spark: SparkSession,
        chosen: Sequence[_State],
        batch_id: int,
        end: dict[str, str],
        done: _Batch,
    ) -> list[tuple[_State, list[TableRow]]]:
        """Reads and writes each chosen table's batch (its bronze commit; its facts rows handed
        back for the batch's one facts commit), up to ``settings.parallel`` tables at a time; parks
        the tables that fail with an error of their own.

        Raises:
            Exception: the first failure that is not a table's own (after every table's write
                ended).
        """
        out: list[tuple[_State, list[TableRow]] | None] = [None] * len(chosen)

        def work(i: int, state: _State) -> Callable[[], None]:
            def run() -> None:
                out[i] = self._write(spark, state, batch_id, end, done)

            return run

        failures = run_each(
            spark, [work(i, s) for i, s in enumerate(chosen)], self.settings.parallel
        )
        raised = next((f for f in failures if f is not None), None)
        if raised is not None:
            raise raised
        return [w for w in out if w is not None]

    def _write(
        self, spark: SparkSession, state: _State, batch_id: int, end: dict[str, str], done: _Batch
    ) -> tuple[_State, list[TableRow]] | None:
        """Reads and writes one table's batch: its bronze commit, and its facts rows returned
        (``None``: parked on a failure of its own)."""
        ci, version = state.table.capture_instance, state.version(batch_id)
        upto = end["lsn"]
        facts: list[FactRow] = []
        try:
            began, started_at = time.monotonic(), utc_now()
            state.sink.clear_partition_files()  # the read writes the batch's own
            read = self.source.read(spark, ci, state.position, upto, end.get("commit_ts") or "")
            planned = time.monotonic()
            if isinstance(read, tuple) and read[1].num_rows == 0 and (state.ours or state.last < 0):
                # nothing to append (a new table whose change table is empty, a range whose
                # changes were not the read's): its facts row alone, no Spark job
                state.sink.record_empty_batch(version, end, facts, started_at)
            else:
                rows = (
                    spark.createDataFrame(read[1], schema=read[0])
                    if isinstance(read, tuple)
                    else read
                )
                state.sink.write_table_batch(
                    rows,
                    version,
                    end,
                    checked=state.ours,
                    facts_rows=facts,
                    metered=isinstance(read, tuple),  # read here: its files written
                )
            finished = time.monotonic()
        except Exception as exc:
            if not parkable(exc) or self._bronze_landed(spark, state, version):
                raise
            ledger = DatabaseLedger(spark, self.facts, self.app_id, self._seen)
            self._park(ledger, state, batch_id, failure_text(exc), done)
            return None
        with self._lock:
            done.plan_ms += round((planned - began) * 1000)
            done.write_ms += round((finished - planned) * 1000)
            done.read.append(ci)
        return state, [TableRow(state.table.sink_id, state.table.target.text, r) for r in facts]

    def _park(
        self, ledger: DatabaseLedger, state: _State, batch_id: int, reason: str, done: _Batch
    ) -> None:
        """Leaves the table out of the run's later batches; its ``table_parked`` row goes
        into this batch's facts commit.

        Raises:
            ValueError: its bronze holds this batch (``_hold``).
        """
        self._hold(ledger, state, batch_id)
        state.parked = reason
        with self._lock:
            done.parked.append(state)
        log.error(
            "%s: parked %s (%s): %s; the other tables go on, the next run tries it again",
            self.app_id,
            state.table.capture_instance,
            state.table.sink_id,
            reason,
        )

    @staticmethod
    def _hold(ledger: DatabaseLedger, state: _State, batch_id: int) -> None:
        """Refuses to park a table whose bronze holds its batch of ``batch_id`` without the
        facts row (a crashed run's, this batch replays it): parked, its position would stay
        before rows bronze holds, and a later batch would write them again.

        Raises:
            ValueError: bronze holds the batch; the batch fails, and its replay finishes it.
        """
        version = state.version(batch_id)
        if state.last < version and ledger.bronze_holds(
            state.table.target, state.table.sink_id, version
        ):
            raise ValueError(
                f"{state.table.sink_id}: its micro-batch {version} is in "
                f"{state.table.target.text} without its facts row, and the table cannot be "
                "read now; the batch fails, and its replay finishes the table's batch once the "
                "table can be read"
            )

    def _bronze_landed(self, spark: SparkSession, state: _State, version: int) -> bool:
        """Whether the table's bronze commit of ``version`` landed (its facts row did not):
        parking it would leave that commit without its facts row, so the batch fails
        instead and its replay writes the row."""
        ledger = DatabaseLedger(spark, self.facts, self.app_id, self._seen)
        return ledger.bronze_holds(state.table.target, state.table.sink_id, version)

    # -- heartbeats -----------------------------------------------------------------------------

    def _heartbeats(
        self,
        todo: Sequence[_State],
        batch_id: int,
        end: dict[str, str],
        began: tuple[datetime, float],
        done: _Batch,
    ) -> list[tuple[TableRow, _State]]:
        """The 0-row rows of the idle tables due a heartbeat, each with its table's state (an
        idle table's position moves to the batch's end either way). Nothing is marked written
        here: the caller does once the rows' commit landed."""
        upto = end["lsn"]
        now = utc_now()
        folded = FoldedMetrics(end_lsn=upto, end_commit_ts=parse_utc(end.get("commit_ts") or None))
        started_at, clock = began
        duration = round((time.monotonic() - clock) * 1000)
        rows: list[tuple[TableRow, _State]] = []
        for state in todo:
            if state.parked is not None or state.table.capture_instance in done.read:
                continue
            if state.position is None or state.position > upto:
                continue
            state.position = upto
            due = (
                state.switching
                or state.written_at is None
                or (now - state.written_at).total_seconds() >= self.settings.heartbeat_seconds
            )
            if due:
                row = BatchRow(
                    state.version(batch_id), BatchCounts(rows=0), folded, started_at, duration
                )
                rows.append((TableRow(state.table.sink_id, state.table.target.text, row), state))
                state.written_at = now
        return rows
