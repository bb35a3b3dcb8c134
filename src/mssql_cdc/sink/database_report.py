"""What each database batch did, handed to the observers in the driver process.

``DatabaseSink`` publishes one :class:`DatabaseBatchReport` per database batch, after the
batch's facts commit, to every callable registered with :func:`observe_batches` in the process
that
runs the ``foreachBatch`` function: on classic Spark the driver's Python process that started
the query (``mssql-cdc stream --database-stream`` draws its progress panel from them); on Spark
Connect the server's ``foreachBatch`` worker, where no one observes. The facts table stays the
record; a report is only a view of it as it happens.

An observer runs on the query's ``foreachBatch`` thread: it must be quick, and whatever it
raises is logged at DEBUG under ``mssql_cdc.sink`` and never fails the batch.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["DatabaseBatchReport", "observe_batches", "publish"]

log = logging.getLogger("mssql_cdc.sink")


@dataclass(frozen=True)
class DatabaseBatchReport:
    """One database batch of the stream ``stream``.

    Attributes:
        stream: the database stream's name (its query's name).
        batch_id: the database batch id.
        end_lsn: the batch's end (``0x`` and 20 hex digits); end_commit_ts: its commit time as
            the clock's offset gives it (ISO-8601 UTC; ``""``: none yet).
        tables: the capture instances read and written in the batch, in the order their
            writes finished.
        rows: change rows those tables landed in bronze.
        heartbeats: idle tables given a 0-row row.
        parked: the capture instances parked in this batch; parked_total: those parked in
            this run so far (this batch's included).
        duration_ms: the batch's time in the sink, milliseconds.
    """

    stream: str
    batch_id: int
    end_lsn: str
    end_commit_ts: str
    tables: tuple[str, ...]
    rows: int
    heartbeats: int
    parked: tuple[str, ...]
    parked_total: int
    duration_ms: int


_lock = threading.Lock()
_observers: list[Callable[[DatabaseBatchReport], None]] = []


def observe_batches(callback: Callable[[DatabaseBatchReport], None]) -> Callable[[], None]:
    """Hands every later report of this process to ``callback``; returns the function that
    stops it (idempotent)."""
    with _lock:
        _observers.append(callback)

    def stop() -> None:
        with _lock:
            if callback in _observers:
                _observers.remove(callback)

    return stop


def publish(report: DatabaseBatchReport) -> None:
    """Hands ``report`` to each observer; an observer's failure is logged, never raised."""
    with _lock:
        observers = list(_observers)
    for callback in observers:
        try:
            callback(report)
        except Exception as exc:  # an observer never fails the batch
            log.debug("a database batch observer failed: %s", exc)
