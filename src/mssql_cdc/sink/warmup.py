"""Delta's table state computed ahead of the sink's next commit, on a background thread of the
driver (ADR 0177).

Each commit of the sink carries a transaction id (``txnAppId``, ``txnVersion``), and before it
commits Delta looks up the version the table recorded for that id. Open-source Delta answers
from the table's computed state, which it builds from the log once per table version (the last
checkpoint plus the JSON commits after it: one to three small Spark jobs), so in a stream it
builds it before every commit. On a stream of small micro-batches that is most of each
commit's time. The sink therefore hands the tables a batch committed to to :data:`WARMER` once
the batch's commits are done, and it has Delta compute the state of the versions just written
on a background thread: by the time the next batch commits (after the trigger's wait, the next
batch's planning and its read) the state is there, and the commit costs about what an append
without a transaction id costs.

It only reads. The next commit's check is unchanged: Delta still looks the id up on the
snapshot it commits on; if another writer committed in between, that is a newer version, whose
state Delta builds itself as before. A commit that starts while its table's state is still
being computed waits for that computation instead of starting a second one (Delta keeps the
state in a lazily computed field of the snapshot).

Only where the session reaches Delta's JVM classes (classic Spark with PySpark's pinned threads;
``txn_ids``); on Spark Connect, or where Delta lives under other class names, nothing is done.
The jobs run in the asking thread's job group (a streaming query's, so that stopping the query
cancels them) with the asking session active. They are cancelled without interrupting their
tasks' threads (ADR 0183): the job ends for the waiting thread at once all the same, and an
interrupted task's shuffle read would have Spark log an ``ERROR`` as the query stops. A
failure is logged at DEBUG under ``mssql_cdc.sink`` and forgotten: the next commit then builds
the state itself.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

from mssql_cdc.sink.txn_ids import compute_transactions, has_delta_jvm

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mssql_cdc.sink.tables import TableRef

__all__ = [
    "JOB_GROUP",
    "WARMER",
    "StateWarmer",
    "compute_state_ahead",
    "run_each",
    "start_beside",
]

log = logging.getLogger("mssql_cdc.sink")

#: the Spark job group of the warmer's jobs when the thread that asked had none
JOB_GROUP = "mssql_cdc-delta-state"
#: the job description Spark's UI shows for them
DESCRIPTION = "mssql_cdc: Delta table state for the sink's next commit"
#: the longest the interpreter's exit waits for a computation that started before it has its
#: jobs cancelled (:meth:`StateWarmer.finish`)
EXIT_WAIT = 5.0
#: the longest :meth:`StateWarmer.withdraw` waits for a computation of its table that started
#: (the commit after it would wait as long for Delta's lock on the same state)
WITHDRAW_WAIT = 600.0


def _first_line(exc: BaseException) -> str:
    """The error's first line; for a Java exception through py4j, the Java one's."""
    try:
        java = getattr(exc, "java_exception", None)
        text = str(java.toString() if java is not None else exc).strip()
    except Exception:  # the gateway itself may be gone
        text = ""
    return text.splitlines()[0][:300] if text else type(exc).__name__


def _pinned(spark: SparkSession) -> bool:
    """True when the session is classic and PySpark pins each Python thread to a JVM thread
    (``PYSPARK_PIN_THREAD``, on by default): only then are a thread's job group and active
    session its own."""
    if getattr(spark, "_jvm", None) is None:
        return False
    from py4j.clientserver import ClientServer
    from pyspark import SparkContext

    return isinstance(SparkContext._gateway, ClientServer)


class _Request(NamedTuple):
    spark: SparkSession
    ref: TableRef
    #: the requesting thread's job group (a streaming query's run id in ``foreachBatch``)
    group: str | None


class StateWarmer:
    """One daemon thread that has Delta compute the current state of the tables handed to
    :meth:`request`, in the order asked; a table asked for again while it waits is computed once.

    The computation's Spark jobs run in the job group of the thread that asked (in a
    ``foreachBatch``, the streaming query's, so ``query.stop()`` cancels them with the query's
    own; Delta holds a snapshot's lock while it computes its state, and a commit waiting for it
    could not be interrupted otherwise), or in :data:`JOB_GROUP`, cancelled without interrupting
    their tasks' threads (ADR 0183); and with the requesting session active (its settings and
    file system options are the ones Delta reads).

    Args:
        compute: ``(spark, location) -> bool``, the computation (``txn_ids.compute_transactions``;
            tests give another).
        available: ``spark -> bool``, whether the session reaches Delta's JVM classes
            (``txn_ids.has_delta_jvm``), asked before the table's location is looked up (for a
            table name, a catalog call).
        pinned: ``spark -> bool``, whether the session is classic with pinned threads.
    """

    def __init__(
        self,
        compute: Callable[[SparkSession, str], bool] = compute_transactions,
        available: Callable[[SparkSession], bool] = has_delta_jvm,
        pinned: Callable[[SparkSession], bool] | None = None,
    ) -> None:
        self._compute = compute
        self._available = available
        self._pinned = _pinned if pinned is None else pinned
        self._cond = threading.Condition()
        self._pending: dict[str, _Request] = {}
        self._busy = False
        #: the table whose state is being computed (``TableRef.text``), if any
        self._current: str | None = None
        #: the request being computed, if any
        self._asked: _Request | None = None
        self._thread: threading.Thread | None = None
        self._exit_hook = False
        #: the latest tables done and whether their state was computed (False: not a table, no
        #: JVM classes, or it failed), newest last
        self.done: deque[tuple[str, bool]] = deque(maxlen=64)

    def request(self, spark: SparkSession, ref: TableRef, *, first: bool = False) -> None:
        """Queues ``ref``'s state to be computed and returns at once (driver, after a commit).
        ``first``: ahead of the tables already waiting (a table every next batch commits to,
        such as a database stream's facts table, before tables that may not change again).

        Does nothing for a session without a JVM gateway (Spark Connect) or when PySpark does
        not pin threads (``PYSPARK_PIN_THREAD=false``)."""
        if not self._pinned(spark):
            return
        group = _local_property(spark, "spark.jobGroup.id")
        with self._cond:
            asked = _Request(spark, ref, group)
            if first:
                others = {k: v for k, v in self._pending.items() if k != ref.text}
                self._pending = {ref.text: asked, **others}
            else:
                self._pending[ref.text] = asked
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="mssql_cdc-delta-state", daemon=True
                )
                self._thread.start()
            if not self._exit_hook:
                # exit handlers run while the JVM is up: it stops when the interpreter's end closes
                # its standard input (on Windows PySpark's own handler, registered earlier, kills
                # it, and handlers run newest first)
                atexit.register(self.finish)
                self._exit_hook = True
            self._cond.notify_all()

    def withdraw(self, spark: SparkSession, ref: TableRef, timeout: float = WITHDRAW_WAIT) -> bool:
        """Driver, just before a commit to ``ref`` (ADR 0180): drops the request for ``ref``
        that the calling thread's job group queued, if its computation has not started, and
        waits (up to ``timeout`` seconds) for a computation of ``ref`` that has started. So no
        computation of ``ref`` starts after the commit (it would be of the version the commit
        writes); the one that started before it is of the version the commit reads, which the
        commit would wait for anyway. A request another query queued for the same table (a
        shared facts table) is left queued. Returns True if a request was dropped."""
        group = _local_property(spark, "spark.jobGroup.id")
        with self._cond:
            queued = self._pending.get(ref.text)
            dropped = queued is not None and queued.group == group
            if dropped:
                del self._pending[ref.text]
                self._cond.notify_all()
            self._cond.wait_for(lambda: self._current != ref.text, timeout)
        return dropped

    def wait_idle(self, timeout: float) -> bool:
        """True once nothing is queued or being computed; False after ``timeout`` seconds."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending and not self._busy, timeout)

    def finish(self, timeout: float = EXIT_WAIT) -> None:
        """Drops what is queued and lets a computation that started end, cancelling its jobs
        after ``timeout`` seconds. Runs at the interpreter's exit (registered on the first
        :meth:`request`), before the JVM stops: a job still launching tasks when the
        JVM stops has Spark log the rejected tasks as ``ERROR`` with a stack trace (a run that
        found nothing new can end while the state it had computed at its start is still being
        computed, ADR 0186)."""
        with self._cond:
            self._pending.clear()
            if self._cond.wait_for(lambda: not self._busy, timeout):
                return
            asked = self._asked
        if asked is not None:
            with contextlib.suppress(Exception):  # a stopped context has no jobs left
                asked.spark.sparkContext.cancelJobGroup(asked.group or JOB_GROUP)
        self.wait_idle(1.0)  # the cancelled job fails the waiting thread at once

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: bool(self._pending))
                key = next(iter(self._pending))
                asked = self._pending.pop(key)
                self._busy = True
                self._current = key
                self._asked = asked
            try:
                self._warm(asked)
            except BaseException as exc:  # never let the thread die with work queued
                log.debug("Delta state computation failed: %s", _first_line(exc))
            finally:
                with self._cond:
                    self._busy = False
                    self._current = None
                    self._asked = None
                    self._cond.notify_all()

    def _warm(self, asked: _Request) -> None:
        spark, ref = asked.spark, asked.ref
        started = time.monotonic()
        try:
            if not self._available(spark):  # Databricks' Delta: nothing to look up
                self.done.append((ref.text, False))
                return
            with _as(spark, asked.group):
                location = ref.location(spark)
                computed = location is not None and self._compute(spark, location)
        except Exception as exc:  # a stopped session or query, a dropped table
            log.debug(
                "the Delta state of %s was not computed ahead of its next commit: %s",
                ref.text,
                _first_line(exc),
            )
            self.done.append((ref.text, False))
            return
        self.done.append((ref.text, computed))
        if computed:
            log.debug(
                "Delta state of %s computed for its next commit in %d ms",
                ref.text,
                round((time.monotonic() - started) * 1000),
            )


def _local_property(spark: SparkSession, key: str) -> str | None:
    try:
        value = spark.sparkContext.getLocalProperty(key)
    except Exception:
        return None
    return None if value is None else str(value)


@contextlib.contextmanager
def _as(spark: SparkSession, group: str | None, description: str = DESCRIPTION) -> Iterator[None]:
    """This thread's jobs in ``group`` (else :data:`JOB_GROUP`), cancellable with it, and
    ``spark`` the JVM's active session, for the block."""
    context = spark.sparkContext
    # cancelling the group fails the job for the waiting thread at once either way; interrupting
    # the tasks' threads only adds Spark's ERROR for an interrupted local shuffle read (ADR 0183)
    context.setJobGroup(group or JOB_GROUP, description, interruptOnCancel=False)
    jvm = getattr(spark, "_jvm", None)
    session_class = None if jvm is None else jvm.org.apache.spark.sql.SparkSession
    if session_class is not None:
        session_class.setActiveSession(getattr(spark, "_jsparkSession", None))
    try:
        yield
    finally:
        if session_class is not None:
            session_class.clearActiveSession()
        context._jsc.clearJobGroup()


#: the driver's one warmer, shared by every sink of the process
WARMER = StateWarmer()


def compute_state_ahead(spark: SparkSession, *tables: TableRef | None) -> None:
    """Has Delta compute each table's current state on :data:`WARMER`'s thread and returns at
    once (``None`` entries skipped; a table that does not exist yet is done with nothing
    computed). ``to_delta`` calls it just before it starts its query, whose start (Spark starting
    the source's Python planning process) takes seconds: the first batch's checks and commits
    then find the state computed (ADR 0179). Driver; classic Spark with open-source Delta only,
    elsewhere nothing is done."""
    for ref in tables:
        if ref is not None:
            WARMER.request(spark, ref)


def start_beside(
    spark: SparkSession, work: Callable[[], None], what: str
) -> threading.Thread | None:
    """Runs ``work`` on a new daemon thread of the driver, beside the caller's own Spark jobs,
    and returns the started thread (the caller joins it before it needs what ``work`` does);
    ``None``, having started nothing, where the session is not classic with pinned threads (the
    caller then does the work itself, when it needs it). ``work``'s Spark jobs run in the
    calling thread's job group (a streaming query's, so that stopping the query cancels them)
    with ``spark`` active, as :class:`StateWarmer`'s do. A failure is logged at DEBUG under
    ``mssql_cdc.sink`` as ``what`` and forgotten: the caller's own step redoes what is missing.
    Driver only."""
    if not _pinned(spark):
        return None
    group = _local_property(spark, "spark.jobGroup.id")

    def run() -> None:
        try:
            with _as(spark, group):
                work()
        except BaseException as exc:  # the caller's own step does it again, and raises
            log.debug("%s failed: %s", what, _first_line(exc))

    thread = threading.Thread(target=run, name="mssql_cdc-sink-ahead", daemon=True)
    thread.start()
    return thread


def run_each(
    spark: SparkSession, works: Sequence[Callable[[], None]], workers: int
) -> list[BaseException | None]:
    """Runs each of ``works`` (one table's write of a database stream's batch) and returns its
    failure or ``None``, in order; at most ``workers`` at a time on threads of the driver, in the
    calling thread's job group (a streaming query's: stopping it cancels them) with ``spark``
    active, where the session is classic with pinned threads; elsewhere (Spark Connect,
    unpinned threads) or with one worker, one after the other in the calling thread. Returns
    once every work ended. Driver."""
    if workers <= 1 or len(works) <= 1 or not _pinned(spark):
        return [_outcome(work) for work in works]
    group = _local_property(spark, "spark.jobGroup.id")

    def run(work: Callable[[], None]) -> BaseException | None:
        with _as(spark, group, "mssql_cdc: a table's micro-batch of a database stream"):
            return _outcome(work)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mssql_cdc-table") as pool:
        return list(pool.map(run, works))


def _outcome(work: Callable[[], None]) -> BaseException | None:
    try:
        work()
    except Exception as exc:
        return exc
    return None
