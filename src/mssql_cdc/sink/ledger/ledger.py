"""The ledger: every commit the exactly-once pipeline makes, and every question it asks of what
already landed, bound to one stream's tables (``README.md`` here lists the invariants).

Runs on the driver (a micro-batch's steps also in Spark Connect's ``foreachBatch`` worker).
A :class:`TargetLedger` answers what one bronze table and its facts table record, whichever
stream wrote them (``apply_changes``, ``reconcile``, ``newest_snapshot``). A :class:`Ledger`
is that bound to a stream (its ``app_id``) in one generation: each of its commit methods picks
the commit's transaction (``ids``) and ``userMetadata`` (``metadata``) and appends through the
one writer of bronze or of the facts table; its read methods ask ``landed``,
``snapshot_events``, ``checkpoint`` and ``generations``. Feature code hands it rows and typed
facts rows and never names a transaction. Building either reads nothing.

Every commit calls :data:`commit_hook` (when set) just before it starts and just after it
landed, with its kind (:data:`CommitKind`) and transaction: the backfill and re-snapshot crash
tests stop a process at an exact commit point through it, and the overlapping-backfill tests
meet there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from mssql_cdc.sink.bronze import with_sink_columns
from mssql_cdc.sink.conflicts import is_conflict
from mssql_cdc.sink.facts import (
    BatchCounts,
    Bootstrapped,
    ChunkLanded,
    FactRow,
    Resnapshotted,
    SnapshotOpened,
    SnapshotPlanned,
)
from mssql_cdc.sink.ledger import checkpoint, identity, ids, landed, metadata, rewind
from mssql_cdc.sink.ledger.generations import Generations, GenerationState
from mssql_cdc.sink.ledger.landed import LastBatch, WaveCommit
from mssql_cdc.sink.ledger.rewind import Recorded, Verdict
from mssql_cdc.sink.ledger.snapshot_events import (
    SNAPSHOT_EVENTS,
    ChunkedSnapshot,
    SnapshotEvents,
    SnapshotOpen,
    chunked_snapshot,
    newest_snapshot_event,
    newest_snapshot_opened,
    open_chunked_snapshots,
)
from mssql_cdc.sink.stream_tables import StreamTables
from mssql_cdc.sink.tables import TableRef, Txn

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "BatchDecision",
    "CommitKind",
    "Ledger",
    "SnapshotCommit",
    "SnapshotKind",
    "TargetLedger",
    "WaveOvertakenError",
    "WaveRows",
    "commit_hook",
]

log = logging.getLogger("mssql_cdc.sink")

#: the kinds of commit, as :data:`commit_hook` names them
CommitKind = Literal[
    "batch",  # a micro-batch's bronze append
    "batch_facts",  # its facts row and event rows
    "snapshot_open",  # a full snapshot's snapshot_open row (no transaction)
    "snapshot_rows",  # a whole snapshot's bronze append: bootstrap, snapshot(), seed(),
    # re-snapshot, switch (the transaction tells which)
    "snapshot_closed",  # its bootstrap or resnapshot row; a chunked snapshot's too
    "chunked_open",  # a chunked snapshot's snapshot_open row
    "chunk_plan",  # its snapshot_plan row
    "chunk_wave",  # a wave's bronze append
    "chunk_facts",  # the wave's snapshot_chunk rows
    "database_members",  # a database stream's tables joining or leaving (ledger.database)
    "database_facts",  # a database stream's facts rows of a batch, every table's
    "database_parked",  # its table_parked rows of tables whose bootstrap failed at its start
]

#: called with ``(kind, "before" | "after", transaction)`` around every commit when set (a
#: test raises from it, or kills the process, to stand for a crash at that point)
commit_hook: Callable[[str, str, Txn | None], None] | None = None


def _commit(kind: CommitKind, txn: Txn | None, write: Callable[[], None]) -> None:
    """Runs ``write`` (one commit) between the two calls of :data:`commit_hook`."""
    if commit_hook is not None:
        commit_hook(kind, "before", txn)
    write()
    if commit_hook is not None:
        commit_hook(kind, "after", txn)


@dataclass(frozen=True)
class WaveRows:
    """A wave of a chunked snapshot to append: its chunk numbers (consecutive), its rows
    (lazy: read by the append), the capture instance they were read from, the ``backfill()``
    run's token and the stamp (LSN) the rows were read at."""

    chunks: Sequence[int]
    rows: DataFrame
    capture_instance: str
    run: str
    stamp: str


class WaveOvertakenError(Exception):
    """A wave of a chunked snapshot was not appended: bronze already holds chunks from its
    first one on, landed by another ``backfill()`` run of the same snapshot since this run last
    looked. Nothing was written; re-read what landed and go on after it."""

    def __init__(self, snapshot_lsn: str, first: int, landed: int) -> None:
        super().__init__(
            f"chunks from {first} of the snapshot at {snapshot_lsn} are already in bronze "
            f"(through chunk {landed})"
        )
        self.snapshot_lsn = snapshot_lsn
        self.first = first
        self.landed = landed


#: what a whole snapshot is for
SnapshotKind = Literal["bootstrap", "manual", "seed", "resnapshot", "switch"]


@dataclass(frozen=True)
class SnapshotCommit:
    """A whole snapshot's bronze commit, prepared by :meth:`Ledger.snapshot_commit` (its
    transaction picked then: a ``snapshot()`` or ``seed()`` reads the version it takes before
    the table is read) and handed back to :meth:`Ledger.append_snapshot`.

    Attributes:
        owner: the commit's ``userMetadata`` ``app_id``: the stream (its generation's sink id
            for a re-snapshot), ``mssql_cdc#snapshot`` for a ``snapshot()`` without an app_id,
            ``""`` for such a ``seed()``; the name the log lines give it.
        generation: the generation a re-snapshot opens (0 otherwise).
    """

    kind: SnapshotKind
    txn: Txn
    owner: str
    generation: int = 0
    batch_id: int | None = None

    @property
    def opens(self) -> bool:
        """Whether the read is announced by a ``snapshot_open`` facts row first (the
        bootstrap and a re-snapshot, with a facts table)."""
        return self.kind in ("bootstrap", "resnapshot")


@dataclass(frozen=True)
class BatchDecision:
    """What the tables record for a micro-batch's id, and so what the sink does with it.

    Attributes:
        recorded: what the facts table and Delta's logs hold for the sink (``None``: not read,
            the batch followed the one before in the same run).
        verdict: a new batch, or a replay of one whose facts commit landed (skipped).
    """

    recorded: Recorded | None = None
    verdict: Verdict = Verdict.NEW
    #: the batch's bronze commit already landed (a replay after a crash before its facts
    #: commit): Delta would skip the append, the facts row is written
    in_target: bool = field(default=False)


class TargetLedger:
    """What one bronze table and its facts table record, whichever stream wrote them: the
    snapshots complete and open, the micro-batch rows, the chunks landed. Each method is one
    read (a Spark job or a log listing) on the driver."""

    def __init__(self, tables: StreamTables) -> None:
        self.tables = tables

    @property
    def spark(self) -> SparkSession:
        """The session the tables are bound to."""
        return self.tables.spark

    @property
    def target(self) -> TableRef:
        """Bronze."""
        return self.tables.target

    def _facts(self) -> TableRef:
        if self.tables.facts is None:
            raise ValueError(f"{self.target.text}: no facts table")
        return self.tables.facts

    def events(self, kinds: Sequence[str] = SNAPSHOT_EVENTS) -> SnapshotEvents:
        """Every snapshot event row of ``kinds`` written for bronze, by any stream, in one
        read of the facts table (none when it does not exist)."""
        return SnapshotEvents.read(self.spark, self._facts(), self.target, kinds)

    def newest_complete(
        self, events: SnapshotEvents | None = None, after: str | None = None
    ) -> tuple[str, datetime | None] | None:
        """The newest complete snapshot of bronze (the point a downstream table rebuilds
        from): the newest of its whole operation-0 snapshots and, with a facts table, of the
        ``bootstrap``/``resnapshot`` rows written for it (the only trace of an empty table's
        snapshot); its LSN and commit time. ``events``: bronze's snapshot events already read
        (not read again); ``after``: only a snapshot newer than this LSN counts (``None`` when
        there is none)."""
        found: list[tuple[str, datetime | None]] = []
        whole = landed.newest_whole_snapshot(self.spark, self.target, after)
        if whole is not None:
            found.append(whole)
        if self.tables.facts is not None:
            event = (
                events.newest_done()
                if events is not None
                else newest_snapshot_event(self.spark, self.tables.facts, self.target)
            )
            if event is not None and (after is None or event[0] > after):
                found.append(event)
        return max(found, key=lambda f: f[0]) if found else None

    def newest_opened(self) -> SnapshotOpen | None:
        """The newest ``snapshot_open`` row written for bronze, by any stream (open until a
        ``bootstrap``/``resnapshot`` row reaches it: :meth:`newest_done`)."""
        return newest_snapshot_opened(self.spark, self._facts(), self.target)

    def newest_done(self) -> tuple[str, datetime | None] | None:
        """The newest ``bootstrap`` or ``resnapshot`` row written for bronze, by any stream:
        its snapshot LSN and commit time."""
        return newest_snapshot_event(self.spark, self._facts(), self.target)

    def last_batch(self, sink_id: str) -> LastBatch | None:
        """The newest micro-batch row of ``sink_id`` (the facts table must exist)."""
        return landed.last_batch(self.spark, self._facts(), sink_id)

    def chunk_rows(
        self, snapshot_lsn: str, chunks: Sequence[int] | None
    ) -> dict[int, tuple[int, str | None]]:
        """``(rows, stamp)`` per chunk of the chunked snapshot ``snapshot_lsn`` in bronze, for
        each of ``chunks`` (``(0, None)``: no rows), or for every chunk bronze holds rows of
        (``None``)."""
        return landed.chunk_rows(self.spark, self.target, snapshot_lsn, chunks)

    def open_snapshots(self) -> list[ChunkedSnapshot]:
        """Every stream's newest chunked snapshot of bronze not closed yet, by app_id."""
        return open_chunked_snapshots(self.spark, self._facts(), self.target)

    @staticmethod
    def open_everywhere(spark: SparkSession, facts: TableRef) -> list[ChunkedSnapshot]:
        """Every stream's newest chunked snapshot not closed yet, of any target the facts
        table records (``mssql-cdc status``)."""
        return open_chunked_snapshots(spark, facts)


class Ledger(TargetLedger):
    """Every commit of the stream ``app_id`` in ``generation`` (see the module doc).

    ``app_id`` is the stream's identity as the user gives it (``None``: a ``snapshot()`` or
    ``seed()`` for no stream); the generation's sink id (:attr:`sink_id`) is ``app_id`` in
    generation 0 and ``<app_id>.g<n>`` after. A ``DeltaSink`` binds its own sink id as
    ``app_id`` (generation 0: its ids derive from it).
    """

    def __init__(self, tables: StreamTables, app_id: str | None, generation: int = 0) -> None:
        super().__init__(tables)
        self.app_id = app_id
        self.generation = generation

    def __repr__(self) -> str:
        return (
            f"Ledger(target={self.target.text!r}, app_id={self.app_id!r}, "
            f"generation={self.generation})"
        )

    def at(self, generation: int) -> Ledger:
        """The same stream's ledger in ``generation``."""
        return Ledger(self.tables, self.app_id, generation)

    @property
    def stream(self) -> str:
        """The stream's app_id.

        Raises:
            ValueError: a ledger of no stream (``app_id`` ``None``).
        """
        if self.app_id is None:
            raise ValueError("this ledger belongs to no stream (no app_id)")
        return self.app_id

    @property
    def sink_id(self) -> str:
        """The generation's sink id: the facts rows' ``app_id`` and its micro-batches' id."""
        return ids.sink_id(self.stream, self.generation)

    def _check_generation(self, generation: int) -> None:
        """Refuses a row of another generation than the ledger's: its commit would carry the
        wrong transaction, and Delta would skip it (or a later one) silently.

        Raises:
            ValueError: ``generation`` is not the ledger's.
        """
        if generation != self.generation:
            raise ValueError(
                f"a row of generation {generation} committed through the ledger of generation "
                f"{self.generation} of {self.app_id!r}"
            )

    def owns(self, sink_id: str) -> bool:
        """Whether ``sink_id`` (a facts row's ``app_id``) is this stream's, in any
        generation."""
        return ids.belongs(self.stream, sink_id)

    # -- identity (ADR 0031) -------------------------------------------------------------------

    def check_facts_not_target(self) -> None:
        """Raises ``ValueError`` when the facts table is bronze in another spelling."""
        identity.check_facts_not_target(self.spark, self.target, self._facts())

    def check_one_target(self) -> None:
        """Raises ``ValueError`` when the facts table records the sink id writing to another
        target."""
        identity.check_one_target(self.spark, self.sink_id, self.target, self._facts())

    # -- micro-batches (ADRs 0010, 0030, 0090) ---------------------------------------------------

    def batch_end(self, location: str, batch_id: int) -> dict[str, str] | None:
        """Batch ``batch_id``'s end offset from the offset log of the checkpoint at
        ``location`` (``checkpoint.batch_end``: tolerant, ``None`` when unreadable)."""
        return checkpoint.batch_end(self.spark, location, batch_id)

    def decide(self, batch_id: int) -> BatchDecision:
        """What the tables record for the sink (``Recorded``) and the rewind rule's verdict
        for ``batch_id``: new, or a replay of a batch whose facts landed. Reads the facts
        commits' transaction version, the newest micro-batch row from there on and bronze's
        transaction version (three reads: only on the first batch of a run and after a gap).

        Raises:
            ValueError: the batch is a rewind (a checkpoint deleted or rewound under the same
                app_id).
        """
        facts, sink = self._facts(), self.sink_id
        facts_last, last_max, last_end, last_rows = -1, None, None, None
        facts_txn = landed.txn_version(self.spark, facts, ids.facts_id(sink))
        if self.tables.exists(facts):
            # the newest facts commit's batch: its row is the newest, found in the newest files
            last = landed.last_batch(self.spark, facts, sink, from_batch=facts_txn)
            if last is not None:
                facts_last, last_max, last_end = last.batch_id, last.max_lsn, last.end_lsn
                last_rows = last.rows
        recorded = Recorded(
            facts_last=facts_last,
            facts_txn=facts_txn,
            target_txn=landed.txn_version(self.spark, self.target, ids.bronze_id(sink)),
            last_max_lsn=last_max,
            last_end_lsn=last_end,
            last_rows=last_rows,
        )
        verdict = rewind.classify(
            sink, batch_id, recorded, target=self.target.text, facts_table=facts.text
        )
        return BatchDecision(recorded, verdict, in_target=recorded.target_txn == batch_id)

    def check_replay(
        self, batch_id: int, decision: BatchDecision, counts: BatchCounts, end_lsn: str | None
    ) -> None:
        """Checks that a batch :meth:`decide` called a replay ends where the recorded one did
        (``rewind.check_replay``).

        Raises:
            ValueError: it does not: the checkpoint was rewound or replaced.
        """
        assert decision.recorded is not None
        rewind.check_replay(
            self.sink_id,
            batch_id,
            decision.recorded,
            max_lsn=counts.max_lsn,
            end_lsn=end_lsn,
            rows=counts.rows,
            facts_table=self._facts().text,
        )

    def append_batch(self, rows: DataFrame, batch_id: int) -> None:
        """Appends micro-batch ``batch_id`` to bronze (its sink columns set), created first
        with its columns (``<sink>``, version the batch id; ``userMetadata`` ``{"app_id",
        "batch_id"}``)."""
        txn = ids.micro_batch(self.sink_id, batch_id)
        out = with_sink_columns(rows, batch_id=batch_id, snapshot=None)
        meta = metadata.batch(self.sink_id, batch_id)
        _commit("batch", txn, lambda: self.tables.bronze.append(out, txn, meta))

    def record_batch(
        self, rows: Sequence[FactRow], batch_id: int, counts: BatchCounts, written_at: datetime
    ) -> None:
        """Commits micro-batch ``batch_id``'s facts row and event rows (``<sink>#facts``,
        version the batch id; the counts as ``userMetadata``): the batch is done."""
        txn = ids.batch_facts(self.sink_id, batch_id)
        meta = metadata.batch_facts(counts, self.sink_id, batch_id)
        table = self.tables.facts_table
        _commit(
            "batch_facts",
            txn,
            lambda: table.append(
                rows,
                app_id=self.sink_id,
                target=self.target.text,
                txn=txn,
                metadata=meta,
                written_at=written_at,
            ),
        )

    # -- whole snapshots (ADRs 0022, 0100, 0103, 0131) ----------------------------------------

    def bootstrap_lsn(self) -> str | None:
        """The LSN of the stream's newest ``bootstrap`` row for bronze (any spelling);
        ``None`` without one or without a facts table."""
        return landed.bootstrap_lsn(self.spark, self.tables.facts, self.stream, self.target)

    def found_snapshot(
        self, instances: Callable[[], Sequence[str]], usable: Callable[[str], bool]
    ) -> tuple[str | None, bool]:
        """A snapshot already in bronze for the stream (or, without an app_id, for
        ``mssql_cdc#snapshot``): its LSN and whether one was found (``landed.find_snapshot``:
        the owner's snapshot commit, else the newest operation-0 rows of ``instances()`` that
        ``usable`` accepts)."""
        return landed.find_snapshot(self.spark, self.target, self.app_id, instances, usable)

    def whole_snapshot(self) -> tuple[str, Any] | None:
        """The newest whole snapshot in bronze (operation-0 rows not read as a chunk): its LSN
        and commit time."""
        return landed.newest_whole_snapshot(self.spark, self.target)

    def snapshot_rows(self, lsn: str) -> tuple[int, Any]:
        """Rows of the snapshot ``lsn`` in bronze and their commit time (``0, None`` before
        bronze exists)."""
        return landed.snapshot_rows(self.spark, self.target, lsn)

    def snapshot_commit(self, kind: SnapshotKind, batch_id: int | None = None) -> SnapshotCommit:
        """Prepares a whole snapshot's bronze commit: its transaction and owner.

        * ``bootstrap`` (generation 0): ``<app_id>#events``, version 0;
        * ``manual`` (``snapshot()``) and ``seed``: the next version of ``<app_id>#events``
          (``mssql_cdc#snapshot`` without an app_id), read now, before the table is read;
        * ``resnapshot`` (generation ``n`` >= 1): ``<app_id>#events``, version ``n``;
        * ``switch``: ``<sink>#switch``, version ``batch_id``.
        """
        if kind == "bootstrap":
            return SnapshotCommit(kind, ids.bootstrap(self.stream), self.stream)
        if kind in ("manual", "seed"):
            recorded = landed.snapshot_txn_version(
                self.spark, self.target, ids.owned_id(self.app_id)
            )
            owner = ids.owner(self.app_id) if kind == "manual" else (self.app_id or "")
            return SnapshotCommit(kind, ids.next_owned(self.app_id, recorded), owner)
        if kind == "resnapshot":
            txn = ids.resnapshot(self.stream, self.generation)
            return SnapshotCommit(kind, txn, self.sink_id, self.generation)
        assert batch_id is not None
        return SnapshotCommit(kind, ids.switch(self.sink_id, batch_id), self.sink_id, 0, batch_id)

    def open_full(self, opened: SnapshotOpened) -> None:
        """Appends a full snapshot's ``snapshot_open`` row before its read, without a
        transaction (each run that reads writes one); nothing without a facts table."""
        if self.tables.facts is None:
            return
        self._check_generation(opened.generation)
        table = self.tables.facts_table
        _commit(
            "snapshot_open",
            None,
            lambda: table.append([opened], app_id=self.sink_id, target=self.target.text, txn=None),
        )

    def append_snapshot(
        self, commit: SnapshotCommit, rows: DataFrame, lsn: str, capture_instance: str
    ) -> None:
        """Appends a whole snapshot's rows (operation 0, ``_snapshot`` = ``lsn``) in one commit
        under the transaction :meth:`snapshot_commit` picked; its ``userMetadata``
        ``{"app_id": owner, "event", "snapshot_lsn", "capture_instance", ...}``."""
        if commit.kind == "seed":
            extra: Mapping[str, object] = {"seed": capture_instance}
        elif commit.kind == "switch":
            extra = {"generation": 0, "batch_id": commit.batch_id}
        elif commit.kind == "manual":
            extra = {"generation": 0, "manual": True}
        else:
            extra = {"generation": commit.generation}
        event = {"resnapshot": "resnapshot", "switch": "switch_snapshot"}.get(
            commit.kind, "bootstrap"
        )
        meta = metadata.snapshot(commit.owner, event, lsn, capture_instance, extra)
        out = with_sink_columns(rows, batch_id=None, snapshot=lsn)
        bronze = self.tables.bronze
        _commit("snapshot_rows", commit.txn, lambda: bronze.append(out, commit.txn, meta))

    def close(self, row: Bootstrapped | Resnapshotted) -> None:
        """Appends the row that closes the stream's snapshot, once: ``bootstrap`` (generation
        0; ``<app_id>#events``, version 0) or the ``resnapshot`` row of this generation
        (``<app_id>#events``, version ``n``; ``app_id`` column the generation's sink id)."""
        if isinstance(row, Resnapshotted):
            self._check_generation(row.generation)
            txn = ids.resnapshot(self.stream, self.generation)
            meta = metadata.snapshot_fact(self.sink_id, "resnapshot", row.lsn, row.generation)
        else:
            self._check_generation(0)
            txn = ids.bootstrap(self.stream)
            meta = metadata.snapshot_fact(self.stream, "bootstrap", row.lsn)
        self._close(row, self.sink_id, txn, meta)

    def _close(self, row: Bootstrapped | Resnapshotted, sink_id: str, txn: Txn, meta: str) -> None:
        table = self.tables.facts_table
        _commit(
            "snapshot_closed",
            txn,
            lambda: table.append(
                [row], app_id=sink_id, target=self.target.text, txn=txn, metadata=meta
            ),
        )

    def switch_taken(self, batch_id: int) -> bool:
        """Whether the snapshot after micro-batch ``batch_id``'s capture-instance switch is in
        bronze already (its ``<sink>#switch`` version is recorded)."""
        switched = landed.snapshot_txn_version(self.spark, self.target, ids.switch_id(self.sink_id))
        return switched >= batch_id

    # -- chunked snapshots (ADRs 0160-0163) -----------------------------------------------------

    def chunked(self) -> ChunkedSnapshot | None:
        """The newest chunked snapshot the stream opened for bronze, in any generation, with
        its plan, landed chunks and whether it is closed."""
        return chunked_snapshot(self.spark, self._facts(), self.stream, self.target)

    def others_open(self) -> list[ChunkedSnapshot]:
        """The chunked snapshots of bronze other streams hold open."""
        return [s for s in self.open_snapshots() if not self.owns(s.app_id)]

    def open_chunked(self, opened: SnapshotOpened) -> None:
        """Appends the ``snapshot_open`` row of the stream's chunked snapshot in this
        generation, once (``<app_id>#snapshots``, version the generation; ``app_id`` column
        the generation's sink id). An open an interrupted run wrote wins: read it back."""
        self._check_generation(opened.generation)
        txn = ids.chunked_open(self.stream, self.generation)
        meta = metadata.snapshot_fact(self.sink_id, "snapshot_open", opened.lsn)
        table = self.tables.facts_table
        _commit(
            "chunked_open",
            txn,
            lambda: table.append(
                [opened], app_id=self.sink_id, target=self.target.text, txn=txn, metadata=meta
            ),
        )

    def plan(self, snap: ChunkedSnapshot, planned: SnapshotPlanned) -> dict[str, Any] | None:
        """Appends the ``snapshot_plan`` row of ``snap`` once (``<sink>#snapplan.<S>``,
        version 0) and reads the plan back: the recorded one (an earlier call's, if Delta
        skipped this one, or a concurrent call's, if it won the commit), or ``None`` when it
        does not read back."""
        lsn = snap.snapshot_lsn
        txn = ids.chunk_plan(snap.app_id, lsn)
        meta = metadata.snapshot_fact(snap.app_id, "snapshot_plan", lsn)
        table = self.tables.facts_table
        try:
            _commit(
                "chunk_plan",
                txn,
                lambda: table.append(
                    [planned], app_id=snap.app_id, target=self.target.text, txn=txn, metadata=meta
                ),
            )
        except Exception as exc:
            if not is_conflict(exc):
                raise
            lost: Exception | None = exc  # another call planned at the same moment
        else:
            lost = None
        again = chunked_snapshot(self.spark, self._facts(), snap.app_id, self.target)
        if again is None or again.plan is None:
            if lost is not None:
                raise lost
            return None
        return again.plan

    def newest_wave(self, snap: ChunkedSnapshot) -> WaveCommit | None:
        """The newest wave of ``snap`` bronze holds (``None``: none): the wave whose first chunk
        the ``<sink>#snapchunks.<S>`` version records (``landed.newest_wave``). Waves land in
        plan order, each right after the last (``ids.chunk_wave``), so bronze holds every
        chunk up to its last."""
        lsn = snap.snapshot_lsn
        first = landed.snapshot_txn_version(
            self.spark, self.target, ids.chunk_wave_id(snap.app_id, lsn)
        )
        if first < 0:
            return None
        return landed.newest_wave(self.spark, self.target, snap.app_id, lsn, first)

    def chunks_appended(self, snap: ChunkedSnapshot) -> int:
        """The last chunk number of ``snap`` bronze holds (``-1``: none)."""
        newest = self.newest_wave(snap)
        return -1 if newest is None else newest.last

    def append_wave(self, snap: ChunkedSnapshot, wave: WaveRows) -> None:
        """Appends a wave of ``snap`` (``wave.rows`` carrying their ``_chunk``;
        ``wave.chunks`` consecutive and starting right after the last chunk bronze holds) in
        one commit, ``_snapshot`` = its LSN, once (``<sink>#snapchunks.<S>``, version the
        wave's first chunk number; its ``userMetadata`` names the chunks, the run's token and
        the stamp).

        Delta skips the append, silently, when a wave from the same or a later chunk landed
        since the check below: then bronze holds other chunks than ``chunks``, and only
        :meth:`chunks_appended` says which (ADR 0200).

        Raises:
            WaveOvertakenError: bronze already holds chunks from the first of ``chunks`` on
                (another ``backfill()`` run landed them): nothing was read or written.
        """
        from pyspark.sql import functions as sf

        lsn, chunks = snap.snapshot_lsn, wave.chunks
        out = wave.rows.withColumn("_batch_id", sf.lit(None).cast("int")).withColumn(
            "_snapshot", sf.lit(lsn).cast("string")
        )
        txn = ids.chunk_wave(snap.app_id, lsn, chunks[0])
        meta = metadata.chunk_wave(
            snap.app_id, lsn, wave.capture_instance, chunks, run=wave.run, stamp=wave.stamp
        )
        bronze = self.tables.bronze

        def write() -> None:
            # asked before the rows are read (the read runs inside the append): a wave another
            # run landed is not read again; one landed after this question makes Delta skip
            # this append (its version is not above that wave's first chunk)
            landed_through = self.chunks_appended(snap)
            if landed_through >= chunks[0]:
                raise WaveOvertakenError(lsn, chunks[0], landed_through)
            bronze.append(out, txn, meta)

        _commit("chunk_wave", txn, write)

    def record_chunks(self, snap: ChunkedSnapshot, landed_chunks: Sequence[ChunkLanded]) -> None:
        """Appends the ``snapshot_chunk`` rows of consecutive chunks bronze holds, starting
        right after the last chunk the facts table records, in one commit
        (``<sink>#snapchunks.<S>`` on the facts table, version the first chunk number: Delta
        skips it, silently, when another run recorded from that chunk on first; re-read the
        facts to know)."""
        lsn = snap.snapshot_lsn
        txn = ids.chunk_facts(snap.app_id, lsn, min(c.chunk for c in landed_chunks))
        meta = metadata.snapshot_fact(snap.app_id, "snapshot_chunk", lsn)
        table = self.tables.facts_table
        _commit(
            "chunk_facts",
            txn,
            lambda: table.append(
                landed_chunks, app_id=snap.app_id, target=self.target.text, txn=txn, metadata=meta
            ),
        )

    def close_chunked(self, snap: ChunkedSnapshot, rows: int, detail: Mapping[str, Any]) -> None:
        """Appends the row that completes ``snap`` once its chunks all landed: ``bootstrap``
        (generation 0), or for a chunked re-snapshot (generation ``n`` > 0) its generation's
        ``resnapshot`` row, under the same transaction a full one of that generation takes;
        ``app_id`` column the snapshot's sink id as its rows record it."""
        n, lsn = snap.generation, snap.snapshot_lsn
        row: Bootstrapped | Resnapshotted
        if snap.kind == "resnapshot" and n > 0:
            row = Resnapshotted(
                n, lsn, snap.commit_ts, rows, None, None, snap.lost_from_ts, snap.lost_to_ts, detail
            )
            txn = ids.resnapshot(ids.stream_of(snap.app_id, n), n)
            meta = metadata.snapshot_fact(snap.app_id, "resnapshot", lsn, n)
        else:
            row = Bootstrapped(lsn, snap.commit_ts, rows, None, None, detail)
            txn = ids.bootstrap(snap.app_id)
            meta = metadata.snapshot_fact(snap.app_id, "bootstrap", lsn)
        self._close(row, snap.app_id, txn, meta)

    def headroom(self, sink_id: str) -> tuple[float | None, datetime] | None:
        """The retention headroom (hours) of ``sink_id``'s newest micro-batch row and when it
        was written (``None`` hours: unknown; ``None``: no batch row yet)."""
        return landed.newest_headroom(self.spark, self._facts(), sink_id)

    # -- generations (ADRs 0101, 0102, 0163) ---------------------------------------------------

    def generations(self, location: str) -> Generations:
        """The stream's generations in its checkpoint at ``location``."""
        return Generations(location, self.stream)

    def has_batches(self, sink_id: str) -> bool:
        """Whether the facts table records a micro-batch of ``sink_id``."""
        facts = self._facts()
        return (
            facts.exists(self.spark) and landed.last_batch(self.spark, facts, sink_id) is not None
        )

    def _events_version(self) -> int:
        """The highest version of the stream's snapshot commits in bronze
        (``<app_id>#events``: 0 the bootstrap, ``n`` the re-snapshot of generation ``n``)."""
        return landed.snapshot_txn_version(self.spark, self.target, ids.events_id(self.stream))

    def next_generation(self, state: GenerationState) -> int:
        """The generation a re-snapshot after data loss opens: above the live one and every
        re-snapshot bronze records."""
        return ids.next_generation(state.generation, self._events_version())

    def resnapshot_appended(self, generation: int) -> bool:
        """Whether bronze holds the re-snapshot of ``generation`` (or a later one)."""
        return self._events_version() >= generation

    def resnapshot_generation(self, recovering: int) -> int:
        """The generation a full re-snapshot about to read the table appends as: the one its
        recovery opened, or one above a re-snapshot already appended."""
        return ids.resnapshot_generation(recovering, self._events_version())
