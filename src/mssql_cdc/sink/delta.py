"""``delta_sink``: the exactly-once ``foreachBatch`` function that appends a CDC stream's
micro-batches to a Delta bronze table and records each in the facts table.

Everything runs on the driver, once per micro-batch, in this order (docs/sink.md); every
question of what landed and every commit goes through the sink's ``Ledger`` (``sink.ledger``),
bound to the batch's session:

1. started_at; on the first batch of a run the table checks (the facts table is not the
   target, the app_id writes to no other target: ADR 0031); on the first batch of a run (or
   after a gap in batch ids) the rewind rule (``Ledger.decide``) against what the facts table
   and Delta's logs record for ``app_id``; the batch's end offset from Spark's offset log when
   the checkpoint is known (``Ledger.batch_end``, ADR 0030);
2. the partition files of earlier attempts are deleted from the metrics directory (this
   attempt's tasks have not run yet; event files, which planning writes before the sink runs
   and whose names are keyed, stay);
3. the batch is read once, nothing persisted (ADR 0090): once the target exists, a batch is
   appended to it (``Ledger.append_batch``: keyed by ``app_id`` and the batch id), its counts
   and ranges observed in that same pass (``counts.ObservedCounts``; an empty batch makes an
   empty commit). Where nothing is to be written (a replay, a batch already in the target) or
   the target does not exist yet (an empty batch must not create it), one aggregation is the
   read (``counts.count_batch``) and a batch with rows is then appended, the table created
   first with comments;
4. the metrics files the read wrote are folded, Spark's offset log entry giving the end;
5. the facts row plus the batch's event rows are appended in one commit
   (``Ledger.record_batch``: keyed by ``<app_id>#facts`` and the batch id, the counts as
   ``userMetadata``): the batch is done;
6. the metrics directory is cleared.

Once the batch's commits (steps 3 and 5) are done, the tables committed to are handed to
``warmup.WARMER``, which has Delta compute the state of the versions just written on a
background thread, so that the next batch's commits do not build it first (ADR 0177). In a
query that stops after its batches (``warm_state="within_batch"``) nothing is computed after
the commits; the facts table's state is computed during the batch's bronze write instead, for
the facts commit that follows it (ADR 0180). A facts table that does not exist yet (the first
batch of a new one) is created, and its state computed, on a thread of its own beside the
bronze write, joined before the facts commit (ADR 0199).

Steps 1-6 are timed; the sink logs them per batch at DEBUG under ``mssql_cdc.sink``. Within a
run the sink remembers what it learnt: the tables checked and seen to exist (created tables
are not looked up again) and the next batch id it expects (the rewind check reads the tables
only for the first batch and after a gap).

A crash between any two steps is repaired by Spark replaying the batch: step 3 is skipped by
Delta when it already landed, step 5 too, and a batch whose facts already landed is skipped
whole.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Final, Literal

from mssql_cdc._metrics import MetricsDir, metrics_dir
from mssql_cdc.sink.bronze import clashing_columns
from mssql_cdc.sink.counts import ObservedCounts, count_batch
from mssql_cdc.sink.facts import (
    BatchCounts,
    BatchRow,
    EventRow,
    FactRow,
    FoldedMetrics,
    event_warnings,
    fold_metrics,
    parse_utc,
    utc_now,
)
from mssql_cdc.sink.facts_table import ensure_facts_table
from mssql_cdc.sink.ledger import BatchDecision, Ledger, Verdict, sink_arguments
from mssql_cdc.sink.stream_tables import StreamTables
from mssql_cdc.sink.tables import TableRef
from mssql_cdc.sink.txn_ids import compute_transactions
from mssql_cdc.sink.warmup import WARMER, start_beside

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "WARM_BETWEEN_BATCHES",
    "WARM_WITHIN_BATCH",
    "DeltaSink",
    "WarmState",
    "delta_sink",
    "warm_mode",
    "warm_state_for",
]

log = logging.getLogger("mssql_cdc.sink")

#: when the sink has Delta compute its tables' state ahead of its commits
WarmState = Literal["between_batches", "within_batch"]
#: ``warm_state``: after a batch's commits, both tables' state for the next batch (ADR 0177)
WARM_BETWEEN_BATCHES: Final = "between_batches"
#: ``warm_state``: during a batch's bronze write, the facts table's state for its facts commit;
#: nothing after the commits (a query that stops after its batches; ADR 0180)
WARM_WITHIN_BATCH: Final = "within_batch"
_WARM_MODES: tuple[WarmState, ...] = (WARM_BETWEEN_BATCHES, WARM_WITHIN_BATCH)


def warm_mode(value: object) -> WarmState | None:
    """The ``warm_state`` argument as one of :data:`_WARM_MODES` or ``None`` (off): ``True`` is
    :data:`WARM_BETWEEN_BATCHES`, ``False`` off.

    Raises:
        TypeError: neither a bool nor a str.
        ValueError: a str that is not one of the modes.
    """
    if isinstance(value, bool):
        return WARM_BETWEEN_BATCHES if value else None
    if not isinstance(value, str):
        raise TypeError(
            f"warm_state must be True, False, {WARM_BETWEEN_BATCHES!r} or {WARM_WITHIN_BATCH!r}, "
            f"got {type(value).__name__}"
        )
    for mode in _WARM_MODES:
        if value == mode:
            return mode
    raise ValueError(
        f"warm_state must be True, False, {WARM_BETWEEN_BATCHES!r} or {WARM_WITHIN_BATCH!r}, "
        f"got {value!r}"
    )


def warm_state_for(trigger: Mapping[str, object] | None) -> WarmState:
    """The ``warm_state`` for a query with ``trigger`` (checked ``DataStreamWriter.trigger``
    arguments; ``None``: Spark's default): :data:`WARM_BETWEEN_BATCHES` for a query that keeps
    running (the default trigger, ``processingTime``), :data:`WARM_WITHIN_BATCH` for one that
    stops after its batches (``availableNow``, ``once``), where a computation after the last
    commits would be left unused, and still running when the application stops Spark."""
    if trigger is None or "processingTime" in trigger:
        return WARM_BETWEEN_BATCHES
    return WARM_WITHIN_BATCH


class _Steps:
    """Milliseconds per step of one batch, for the DEBUG line."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self._laps: list[tuple[str, int]] = []

    def lap(self, step: str) -> None:
        now = time.monotonic()
        self._laps.append((step, round((now - self._last) * 1000)))
        self._last = now

    def __str__(self) -> str:
        return ", ".join(f"{step} {ms} ms" for step, ms in self._laps)


def delta_sink(
    target: str,
    app_id: str,
    facts_table: str | None = None,
    *,
    metrics_path: str | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    warm_state: bool | str = True,
) -> Callable[[DataFrame, int], None]:
    """Returns the ``foreachBatch`` function that writes a CDC stream into Delta exactly once.

    Args:
        target: the bronze table: a catalog name (``bronze.orders``), ``delta.`<path>``` or a
            path. Created by the first batch with rows.
        app_id: the sink's identity, Delta's ``txnAppId``; keep it for the life of the
            checkpoint and give a new checkpoint a new one.
        facts_table: table name or path of the facts table (one row per batch, empty ones
            included, plus event rows); ``None`` writes no facts and cannot detect a rewound
            checkpoint.
        metrics_path: the reader's ``metricsPath``, used by this stream alone; its files are
            folded into the facts and deleted.
        checkpoint: the query's checkpoint location; the sink reads each batch's end offset
            from Spark's offset log there, so that an empty batch records where it ended and a
            rewound checkpoint is told from a replay (``to_delta`` passes it).
        warm_state: when to have Delta compute the tables' state ahead of the sink's commits,
            on a background thread of the driver (classic Spark with open-source Delta only).
            ``True`` or ``"between_batches"``: after each batch's commits, for the next batch's
            (a query that keeps running: ``processingTime``; ADR 0177). ``"within_batch"``:
            the facts table's during each batch's bronze write, for its facts commit, and
            nothing after the commits (a query that stops after its batches: ``availableNow``,
            ``once``; ADR 0180). ``False``: never (where no Spark job may run outside the
            query's own).

    Returns:
        A callable ``(df, batch_id) -> None`` for ``DataStreamWriter.foreachBatch``; it runs on
        the driver and never connects to SQL Server.

    Raises:
        TypeError: an argument has the wrong type.
        ValueError: an empty ``app_id`` or table, ``facts_table`` equal to ``target``, a
            ``warm_state`` string that is not one of the two modes, or a ``metrics_path`` that
            cannot be opened (see ``mssql_cdc._metrics.metrics_dir``).
            The returned function raises ``ValueError``, before writing, on the first batch of
            a checkpoint that was deleted or rewound under the same ``app_id``, when the facts
            table is the target in another spelling, or when the facts table records the
            ``app_id`` writing to another target (docs/sink.md).
    """
    target_ref, app_id, facts_ref = sink_arguments(target, app_id, facts_table)
    if metrics_path is not None and not isinstance(metrics_path, str):
        raise TypeError(f"metrics_path must be a str, got {type(metrics_path).__name__}")
    if isinstance(checkpoint, os.PathLike):
        checkpoint = os.fspath(checkpoint)
    if checkpoint is not None and not isinstance(checkpoint, str):
        raise TypeError(f"checkpoint must be a path (str), got {type(checkpoint).__name__}")
    if checkpoint is not None and not checkpoint.strip():
        raise ValueError("checkpoint is empty; give the query's checkpointLocation or None")
    warm_mode(warm_state)
    metrics = None if metrics_path is None else metrics_dir(metrics_path)
    return DeltaSink(target_ref, app_id, facts_ref, metrics, checkpoint, warm_state=warm_state)


def _join(threads: list[threading.Thread]) -> None:
    """Waits for ``threads`` (the work started beside a batch's bronze write) and forgets them."""
    while threads:
        threads.pop().join()


class DeltaSink:
    """The ``foreachBatch`` function :func:`delta_sink` returns (see the module doc).

    Holds per-run state only: the next batch id it expects (a batch with another id is checked
    against the tables), whether the tables were checked and seen to exist.
    """

    def __init__(
        self,
        target: TableRef,
        app_id: str,
        facts: TableRef | None,
        metrics: MetricsDir | None,
        checkpoint: str | None = None,
        *,
        warm_state: bool | str = True,
        identity_checked: bool = False,
    ) -> None:
        """Args as :func:`delta_sink`'s (checked there); ``identity_checked``: the caller has
        just run ``Ledger.check_facts_not_target`` and ``check_one_target`` for this
        ``app_id``, so the first batch does not run them again (``to_delta``)."""
        self.target = target
        self.app_id = app_id
        self.facts = facts
        self.metrics = metrics
        self.checkpoint = checkpoint
        self._checked = identity_checked
        self._expected: int | None = None
        self._existing: set[TableRef] = set()
        self._warned_no_metrics = False
        self._warm_state = warm_mode(warm_state)
        #: where a database stream's batch wants its facts rows (not committed here)
        self._deferred: list[FactRow] | None = None
        #: a database stream's batch whose read wrote no metrics files (``write_table_batch``)
        self._unmetered = False

    def __repr__(self) -> str:
        return (
            f"DeltaSink(target={self.target.text!r}, app_id={self.app_id!r}, "
            f"facts_table={None if self.facts is None else self.facts.text!r})"
        )

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        beside: list[threading.Thread] = []
        try:
            self._batch(df, int(batch_id), beside)
        finally:  # a thread started beside the bronze write never outlives its batch
            _join(beside)

    def write_table_batch(
        self,
        df: DataFrame,
        batch_id: int,
        end: dict[str, str],
        *,
        checked: bool,
        facts_rows: list[FactRow],
        metered: bool = True,
    ) -> None:
        """One micro-batch of a table of a database stream (``sink.database_sink``): the steps
        of the module doc, with the batch's end given (the database stream's offset, not this
        table's offset log), and the facts rows handed back in ``facts_rows`` instead of
        committed (the database stream commits every table's rows of a batch in one commit).
        ``checked``: the table's newest micro-batch was committed by this run (the rewind rule
        need not read the tables: batch ids of a table in a database stream skip the batches
        it was idle in); else the rule reads them, as on a run's first batch. Nothing is warmed:
        the database stream has the states computed after its facts commit. The metrics
        partition files are not deleted first: the database stream did before its read
        (``clear_partition_files``). ``metered``: the read wrote metrics files (a read on the
        driver); else (a batch read by Spark's tasks, which writes none) the metric columns
        stay NULL without a warning."""
        if checked:
            self._expected = batch_id
        self._unmetered = not metered
        beside: list[threading.Thread] = []
        self._deferred = facts_rows
        try:
            self._batch(df, int(batch_id), beside, end)
        finally:
            self._deferred = None
            self._unmetered = False
            _join(beside)

    def record_empty_batch(
        self, batch_id: int, end: dict[str, str], facts_rows: list[FactRow], started_at: datetime
    ) -> None:
        """A micro-batch of a table of a database stream that holds no rows, known without
        Spark (its range read on the driver came back empty): its facts row (0 rows, ending at
        ``end``) handed back in ``facts_rows``, and no bronze commit, as for an empty batch to
        a target that does not exist yet; the facts row decides its replay (rewind rule: a
        target behind the facts is a batch of no rows). Only for a batch whose history needs
        no check: the table's newest micro-batch was this run's, or it has none."""
        counts = BatchCounts(rows=0)
        duration_ms = round((utc_now() - started_at).total_seconds() * 1000)
        facts_rows.append(
            BatchRow(batch_id, counts, self._fold(counts, end), started_at, duration_ms)
        )
        if self.metrics is not None:  # the read's events (a range skipped, a schema change)
            facts_rows += EventRow.from_files(batch_id, self.metrics.events())
            self.metrics.clear()
        self._expected = batch_id + 1

    def clear_partition_files(self) -> None:
        """Deletes the metrics partition files of earlier attempts (as a batch's first step
        does), for a database stream to call before it reads the table's range on the driver:
        the files that read writes are the batch's, which ``write_table_batch`` then folds."""
        if self.metrics is not None:
            self._delete_partition_files(self.metrics)

    def _batch(
        self,
        df: DataFrame,
        batch_id: int,
        beside: list[threading.Thread],
        given_end: dict[str, str] | None = None,
    ) -> None:
        """One micro-batch, the steps of the module doc; a thread started beside the bronze
        write (``_facts_ahead``) goes into ``beside``; ``given_end``: the batch's end, when
        not from this sink's offset log."""
        started_at, clock = utc_now(), time.monotonic()
        steps = _Steps()
        spark = df.sparkSession
        ledger = self._ledger(spark)
        # a database stream's batch (``given_end``) deleted the old files before its read
        decision, end = self._prepare(ledger, df, batch_id, clear=given_end is None)
        if given_end is not None:
            end = given_end
        steps.lap("checks")
        # the bronze commit already landed (a replay): Delta would skip the append
        in_target = decision.in_target
        counts: BatchCounts | None = None
        committed: list[TableRef] = []
        if decision.verdict is Verdict.REPLAY or in_target:
            # nothing to write: one aggregation is the only read
            counts = count_batch(df)
            steps.lap("count")
        elif not ledger.tables.exists(self.target) and not df.head(1):
            # an empty batch does not create the target; asking costs the first partition's
            # read up to one row (a limit of one), not the batch's, which the write below reads
            # once with its counts. (``DataFrame.isEmpty`` reads every partition on Spark 4.)
            counts = BatchCounts(rows=0)
            steps.lap("empty")
        if decision.verdict is Verdict.REPLAY:
            assert counts is not None
            self._skip_replay(ledger, batch_id, decision, counts, end)
        else:
            if in_target:
                log.info(
                    "%s: micro-batch %d is already in %s (replay after a crash before its "
                    "facts commit); writing its facts row",
                    self.app_id,
                    batch_id,
                    self.target.text,
                )
            elif counts is None:  # the counts come from the write (which may create the target)
                self._facts_ahead(spark, beside)
                counts = self._write(spark, df, batch_id, observe=self.facts is not None)
                committed.append(self.target)
                steps.lap("bronze")
            elif counts.rows:
                self._facts_ahead(spark, beside)
                self._write(spark, df, batch_id, observe=False)
                committed.append(self.target)
                steps.lap("bronze")
            duration_ms = round((time.monotonic() - clock) * 1000)
            if self.facts is not None:
                if counts is None:  # the write was skipped by Delta: count instead
                    counts = count_batch(df)
                    steps.lap("count")
                _join(beside)  # the facts table's creation beside the bronze write
                self._append_facts(
                    spark,
                    self.facts,
                    batch_id=batch_id,
                    counts=counts,
                    folded=self._fold(counts, end),
                    started_at=started_at,
                    duration_ms=duration_ms,
                )
                if self._deferred is None:  # else the database stream's commit, later
                    committed.append(self.facts)
                steps.lap("facts")
        self._warm(spark, committed)
        if self.metrics is not None:
            self.metrics.clear()
            steps.lap("clear")
        self._expected = batch_id + 1
        log.debug(
            "%s: micro-batch %d: %s rows in %d ms (%s)",
            self.app_id,
            batch_id,
            "?" if counts is None else counts.rows,
            round((time.monotonic() - clock) * 1000),
            steps,
        )

    # -- steps ---------------------------------------------------------------------------------

    def _ledger(self, spark: SparkSession) -> Ledger:
        """The ledger of this sink's tables on ``spark`` (reads nothing; the tables seen to
        exist are remembered across batches)."""
        return Ledger(StreamTables(spark, self.target, self.facts, self._existing), self.app_id)

    def _prepare(
        self, ledger: Ledger, df: DataFrame, batch_id: int, *, clear: bool = True
    ) -> tuple[BatchDecision, dict[str, str] | None]:
        """Steps 1 and 2: the checks, the rewind rule's verdict (with what the tables record
        when it was read) and the batch's end from the offset log; old partition files gone
        (``clear``)."""
        self._check_columns(df)
        if self.facts is not None and not self._checked:
            ledger.check_facts_not_target()
            ledger.check_one_target()
            self._checked = True
        end = None
        if self.facts is not None and self.checkpoint is not None:
            end = ledger.batch_end(self.checkpoint, batch_id)
        decision = BatchDecision()
        if self.facts is not None and batch_id != self._expected:
            decision = ledger.decide(batch_id)
        if self.metrics is not None and clear:
            self._delete_partition_files(self.metrics)
        return decision, end

    def _skip_replay(
        self,
        ledger: Ledger,
        batch_id: int,
        decision: BatchDecision,
        counts: BatchCounts,
        end: dict[str, str] | None,
    ) -> None:
        """A batch whose facts already landed: checked to be the recorded one, then skipped."""
        assert self.facts is not None
        ledger.check_replay(batch_id, decision, counts, self._fold(counts, end).end_lsn)
        log.info(
            "%s: micro-batch %d already committed to %s and %s; skipped (replay)",
            self.app_id,
            batch_id,
            self.target.text,
            self.facts.text,
        )

    def _warm(self, spark: SparkSession, tables: list[TableRef]) -> None:
        """Has the states of the tables this batch committed to computed for the next batch's
        commits, in the background, once this batch's commits are done: a computation beside
        the facts commit slowed it more than it gained (``between_batches``, ADR 0177)."""
        if self._warm_state == WARM_BETWEEN_BATCHES and self._deferred is None:
            for table in tables:
                WARMER.request(spark, table)

    def _warm_facts_ahead(self, spark: SparkSession) -> None:
        """Has the facts table's state computed in the background while the bronze write that
        precedes the facts commit runs (``within_batch``, ADR 0180): Delta needs it at the start
        of the facts commit (its transaction id), bronze's at the start of the write itself."""
        if self._warm_state == WARM_WITHIN_BATCH and self.facts is not None:
            WARMER.request(spark, self.facts)

    def _facts_ahead(self, spark: SparkSession, beside: list[threading.Thread]) -> None:
        """Just before the bronze write: has the work the facts commit would do first done
        beside that write. Where the facts table exists (the first batch's checks looked it up;
        a run's later batches created it), that is its Delta state (``within_batch``: ADR
        0180). Where it does not exist yet (the first batch of a new facts table), the table is
        created from its declaration on a thread of its own (``warmup.start_beside``) and its
        state computed there (not queued to the warmer, whose queue may hold other tables),
        beside the bronze write instead of first thing in the facts step (ADR 0199); if it
        failed, the facts commit creates the table itself, as before. With ``warm_state`` off
        nothing runs beside the batch's own jobs. The thread started goes into ``beside``:
        joined before the facts commit, and when the batch fails before it."""
        facts = self.facts
        if facts is None or self._warm_state is None or self._deferred is not None:
            # a database stream's table: the stream's one facts commit has its state warmed
            # by the stream (``sink.database_sink``), not by each table's write
            return
        if facts in self._existing:
            self._warm_facts_ahead(spark)
            return

        def create() -> None:
            ensure_facts_table(spark, facts, seen=self._existing)
            location = facts.location(spark)
            if location is not None:
                compute_transactions(spark, location)

        thread = start_beside(spark, create, f"creating the facts table {facts.text}")
        if thread is not None:
            beside.append(thread)

    def _check_columns(self, df: DataFrame) -> None:
        clash = clashing_columns(df.columns)
        if clash:
            raise ValueError(
                f"delta_sink {self.app_id!r}: the batch already has column(s) {clash}, which the "
                "sink adds; leave them out of the source's columns"
            )

    def _delete_partition_files(self, metrics: MetricsDir) -> None:
        """Deletes ``part-*.json`` files left by earlier attempts of a batch."""
        import pyarrow.fs as pafs

        try:
            infos = metrics.fs.get_file_info(pafs.FileSelector(metrics.base, allow_not_found=True))
        except OSError as exc:
            log.warning("could not list metrics directory %s: %s", metrics.display, exc)
            return
        for info in infos:
            if info.type == pafs.FileType.File and info.base_name.startswith("part-"):
                try:
                    metrics.fs.delete_file(info.path)
                except OSError as exc:
                    log.warning("could not delete metrics file %s: %s", info.path, exc)

    def _fold(self, counts: BatchCounts, end: dict[str, str] | None) -> FoldedMetrics:
        """The metrics files, read after the batch was (and only once it was); ``end``, Spark's
        own record of the batch's end (empty batches too), wins over theirs."""
        folded = self._fold_files(counts)
        if end is not None:
            folded.end_lsn = end["lsn"]
            folded.end_commit_ts = folded.end_commit_ts or parse_utc(end["commit_ts"] or None)
        return folded

    def _fold_files(self, counts: BatchCounts) -> FoldedMetrics:
        if self.metrics is None:
            return FoldedMetrics()
        # a database stream's batch read by Spark's tasks wrote no partition files (its
        # planning's warnings, written on the driver, are folded all the same)
        parts = [] if self._unmetered else self.metrics.partitions()
        if (
            not parts
            and counts.rows
            and self.facts is not None
            and not self._unmetered
            and not self._warned_no_metrics
        ):
            self._warned_no_metrics = True
            log.warning(
                "%s: a batch with rows found no metrics file in %s: the reader's metricsPath "
                "must be this directory, shared by every node; the facts' metric columns stay "
                "NULL",
                self.app_id,
                self.metrics.display,
            )
        folded = fold_metrics(parts)
        # the planning warnings of this run, each once, before the partitions' own
        planning = event_warnings(self.metrics.events())
        if planning:
            folded.warnings = planning + [w for w in folded.warnings if w not in planning]
        return folded

    def _write(
        self, spark: SparkSession, df: DataFrame, batch_id: int, *, observe: bool
    ) -> BatchCounts | None:
        """Appends the batch to the target; with ``observe``, returns the counts observed in
        that same pass (``None``: the write brought none, Delta skipped it)."""
        observed = ObservedCounts(df) if observe else None
        self._ledger(spark).append_batch(df if observed is None else observed.df, batch_id)
        if observed is None:
            return None
        counts = observed.result()
        if counts is None:
            log.warning(
                "%s: the append of micro-batch %d to %s observed no rows: Delta skipped it as "
                "already written (another writer with this app_id?); counting the batch instead",
                self.app_id,
                batch_id,
                self.target.text,
            )
        return counts

    def _append_facts(
        self,
        spark: SparkSession,
        facts: TableRef,
        *,
        batch_id: int,
        counts: BatchCounts,
        folded: FoldedMetrics,
        started_at: datetime,
        duration_ms: int,
    ) -> None:
        written_at = utc_now()
        rows: list[FactRow] = [
            BatchRow(batch_id, counts, folded, started_at, duration_ms),
        ]
        if self.metrics is not None:
            rows += EventRow.from_files(batch_id, self.metrics.events())
        if self._deferred is not None:  # a database stream's batch commits them
            self._deferred.extend(rows)
            return
        if self._warm_state == WARM_WITHIN_BATCH:
            # not started by now: the commit builds the state itself; started: it is finished
            # first. None starts after the commit (of the version it writes, of no use here)
            WARMER.withdraw(spark, facts)
        self._ledger(spark).record_batch(rows, batch_id, counts, written_at)
