"""Finalization: the completeness verdict of a CDC-fed table, in a control table.

``finalized_until`` says every period ending at or before it is complete: the stream has read
past it and, since batches never pass ``sys.fn_cdc_get_max_lsn()`` and capture writes in commit
order, no commit at or before it can still arrive (docs/sink.md, "Finalization";
ADR 0012). The verdict is the commit time of a batch's end offset truncated to the
granularity, and it only moves forward.

* :func:`advance` MERGEs a batch end into the control table (batch mode: after an availableNow
  run, with :func:`end_offset_from_progress` of ``query.lastProgress``);
* :func:`track` advances after every batch of a running query (continuous mode) from a
  ``StreamingQueryListener`` that hands progress to one worker thread;
* :func:`finalized_until`, :func:`is_final` read the verdict; :func:`candidate` computes one;
  :func:`freshness` is the verdict's age, for alerts.

Everything runs on the driver. Times are naive ``datetime`` in UTC (TIMESTAMP_NTZ). Logs go to
``mssql_cdc.finalization``.
"""

from __future__ import annotations

import ast
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

from mssql_cdc.sink import (
    DatabaseLedger,
    ensure_control_table,
    is_conflict,
    merge_verdict,
    merge_verdicts,
    parse_utc,
    read_verdict,
    read_verdicts,
    table_ref,
    utc_now,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.listener import (
        QueryIdleEvent,
        QueryProgressEvent,
        QueryStartedEvent,
        QueryTerminatedEvent,
        StreamingQueryListener,
    )
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = [
    "GRANULARITIES",
    "FinalizationListener",
    "advance",
    "candidate",
    "end_offset_from_progress",
    "finalize_database",
    "finalized_until",
    "freshness",
    "is_final",
    "offset_from_text",
    "retry_conflicts",
    "track",
    "track_database",
    "truncate",
]

log = logging.getLogger("mssql_cdc.finalization")

GRANULARITIES = ("minute", "hour", "day")

T = TypeVar("T")

#: how long :func:`advance` retries a MERGE that lost a concurrent-commit conflict
RETRY_SECONDS = 60.0
#: at most one WARNING per this many seconds while the tracker keeps failing
_WARN_EVERY_SECONDS = 600.0


_sleep = time.sleep  # tests replace it
_monotonic = time.monotonic
_merge = merge_verdict  # the control table's writer (mssql_cdc.sink.control); tests replace it
_merge_all = merge_verdicts  # the same, many tables in one commit


def _granularity(granularity: str) -> str:
    value = granularity.lower() if isinstance(granularity, str) else granularity
    if value not in GRANULARITIES:
        raise ValueError(
            f"granularity {granularity!r} is not one of {', '.join(map(repr, GRANULARITIES))}"
        )
    return str(value)


def _has_commit_time(end_offset: Mapping[str, Any]) -> bool:
    value = end_offset.get("commit_ts")
    return not (value is None or (isinstance(value, str) and not value.strip()))


def candidate(
    end_offset: Mapping[str, Any] | None, *, granularity: str = "hour"
) -> datetime | None:
    """The verdict a batch end allows: its ``commit_ts`` truncated to the granularity.

    Args:
        end_offset: an offset mapping with ``lsn`` and ``commit_ts`` (ISO-8601 UTC), or None.
        granularity: ``"minute"``, ``"hour"`` or ``"day"`` (any case).

    Returns:
        Naive UTC ``datetime``; ``None`` for a ``None`` offset and for an offset without a
        commit time (``commit_ts`` empty or missing: the stream stands before its first commit,
        as after a first run that read nothing, so nothing can be declared complete yet).

    Raises:
        ValueError: an unknown granularity, or a ``commit_ts`` that is not an ISO-8601 time.
    """
    unit = _granularity(granularity)
    if end_offset is None or not _has_commit_time(end_offset):
        return None
    text = end_offset.get("commit_ts")
    commit_ts = parse_utc(text)
    if commit_ts is None:
        raise ValueError(
            f"end offset at LSN {end_offset.get('lsn')!r}: commit_ts {text!r} is not an "
            "ISO-8601 time"
        )
    return truncate(commit_ts, unit)


def truncate(moment: datetime, granularity: str = "hour") -> datetime:
    """``moment`` truncated to the granularity (``"minute"``, ``"hour"``, ``"day"``, any
    case): seconds and microseconds zeroed, then minutes (hour, day), then hours (day).

    Raises:
        ValueError: an unknown granularity (naming the choices).
    """
    unit = _granularity(granularity)
    out = moment.replace(second=0, microsecond=0)
    if unit in ("hour", "day"):
        out = out.replace(minute=0)
    if unit == "day":
        out = out.replace(hour=0)
    return out


def offset_from_text(text: str) -> object:
    """An offset as ``SourceProgress`` holds it: JSON, or on PySpark 4.0/4.1 (whose
    ``StreamingQueryProgress.fromJson`` applies ``str()`` to the parsed offset) a Python dict
    literal such as ``{'lsn': '0x...', 'commit_ts': '...'}``."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return None


def end_offset_from_progress(progress: object, *, source_index: int = 0) -> dict[str, str] | None:
    """The end offset of one source in a ``StreamingQueryProgress``.

    Args:
        progress: ``query.lastProgress`` or a listener event's ``progress`` (a mapping, an
            object with ``.json``, or JSON text); ``None`` gives ``None``.
        source_index: which of ``progress["sources"]``.

    Returns:
        ``{"lsn": ..., "commit_ts": ...}``, or ``None`` when there is no progress (``None``,
        empty text, a query that has run no batch), no such source or no end offset yet.
        ``commit_ts`` is ``""`` when the stream stands before its first commit;
        :func:`advance` and :func:`candidate` take that as nothing to finalize.
    """
    data: Any = progress
    if progress is None:
        return None
    if not isinstance(progress, Mapping | str):
        raw = getattr(progress, "json", None)
        data = raw() if callable(raw) else raw
    if isinstance(data, str):
        data = json.loads(data) if data.strip() else None
    if not isinstance(data, Mapping):
        return None
    sources = data.get("sources") or []
    if not 0 <= source_index < len(sources) or not isinstance(sources[source_index], Mapping):
        return None
    end = sources[source_index].get("endOffset")
    if isinstance(end, str):
        end = None if end.strip() in ("", "None", "null") else offset_from_text(end)
    if not isinstance(end, Mapping) or "lsn" not in end or "commit_ts" not in end:
        return None
    return {"lsn": str(end["lsn"]), "commit_ts": str(end["commit_ts"])}


def finalized_until(spark: SparkSession, control_table: str, table_name: str) -> datetime | None:
    """The verdict of ``table_name`` (naive UTC), or ``None`` before the first one (or when
    the control table does not exist)."""
    return read_verdict(spark, table_ref(control_table, "control_table"), table_name)


def is_final(
    spark: SparkSession, control_table: str, table_name: str, period_end: datetime
) -> bool:
    """True when the period ending at ``period_end`` is complete (``period_end <=
    finalized_until``); an aware ``period_end`` is converted to UTC, a naive one is UTC."""
    if period_end.tzinfo is not None:
        period_end = period_end.astimezone(timezone.utc).replace(tzinfo=None)
    verdict = finalized_until(spark, control_table, table_name)
    return verdict is not None and period_end <= verdict


def freshness(
    spark: SparkSession,
    control_table: str,
    table_name: str,
    *,
    now: datetime | None = None,
) -> float | None:
    """How far the verdict of ``table_name`` trails the clock: seconds from
    ``finalized_until`` to ``now`` (default: the current UTC time; an aware ``now`` is
    converted to UTC, a naive one is UTC), or ``None`` before the first verdict.

    It grows with the granularity (an ``"hour"`` verdict is at least the time since the hour
    began), the trigger or schedule, and any stall of the stream or of capture; alert on it
    above granularity + schedule + a margin (docs/monitoring.md, "Verdict freshness"). Reads
    the control table on the driver; never connects to SQL Server.
    """
    verdict = finalized_until(spark, control_table, table_name)
    if verdict is None:
        return None
    if now is None:
        now = utc_now()
    elif now.tzinfo is not None:
        now = now.astimezone(timezone.utc).replace(tzinfo=None)
    return (now - verdict).total_seconds()


def advance(
    spark: SparkSession,
    control_table: str,
    table_name: str,
    end_offset: Mapping[str, Any] | None,
    *,
    granularity: str = "hour",
) -> datetime | None:
    """Moves ``table_name``'s verdict forward to the candidate of ``end_offset``.

    Creates the control table if needed, then MERGEs on ``table_name``: inserts the row, or
    updates it only when the candidate is later (or the verdict is NULL). Call it only after the
    batch's data is committed. A MERGE that loses a concurrent-commit conflict is retried with
    backoff for up to :data:`RETRY_SECONDS`.

    Args:
        control_table: control table name or path.
        table_name: the row's key, usually the target exactly as passed to the sink.
        end_offset: ``{"lsn", "commit_ts"}`` of a committed batch's end; ``None``, or an
            offset whose ``commit_ts`` is empty (a run that has read no commit yet), only reads
            (the latter logged at INFO as nothing to finalize).
        granularity: ``"minute"``, ``"hour"`` (default) or ``"day"``.

    Returns:
        The verdict after the MERGE (naive UTC), ``None`` before the first one.

    Raises:
        ValueError: bad granularity, or a ``commit_ts`` that is not an ISO-8601 time.
        Exception: a MERGE failure other than a conflict, or a conflict still losing after
            :data:`RETRY_SECONDS`.
    """
    proposed = candidate(end_offset, granularity=granularity)
    ref = table_ref(control_table, "control_table")
    ensure_control_table(spark, ref)
    current = finalized_until(spark, control_table, table_name)
    if end_offset is not None and proposed is None:
        log.info(
            "advance %s: nothing to finalize: the end offset (LSN %s) has no commit time, the "
            "stream has read no commit yet; the verdict stays %s",
            table_name,
            end_offset.get("lsn"),
            current,
        )
    if proposed is None or end_offset is None or (current is not None and current >= proposed):
        return current
    row = (
        table_name,
        proposed,
        str(end_offset.get("lsn")),
        parse_utc(end_offset.get("commit_ts")),
        utc_now(),
    )
    retry_conflicts(lambda: _merge(spark, ref, row), f"advance {table_name}")
    return finalized_until(spark, control_table, table_name)


def finalize_database(
    spark: SparkSession,
    control_table: str,
    *,
    name: str,
    facts_table: str,
    granularity: str = "hour",
) -> dict[str, datetime | None]:
    """Moves the verdict of each table of the database stream ``name`` forward to the
    candidate of its own newest micro-batch facts row (its bronze commit's end, or its
    heartbeat's): a table is complete up to where it landed, whatever the query's offset. A
    parked table, one that left the stream and one with no micro-batch row yet are left alone.
    All tables' verdicts move in one MERGE (retried as :func:`advance`'s), keyed by each
    table's bronze table as the facts rows name it (``target``; ADR 0215).

    Reads the facts table (a few aggregations: the membership rows, the parked tables, each
    table's newest row) and the control table; runs on the driver, after a run (batch mode) or
    from :func:`track_database` (continuous mode).

    Returns:
        The verdict of each table of the stream after the MERGE (naive UTC; ``None`` before
        its first; a parked table's as it kept it), by target.

    Raises:
        ValueError: a bad granularity or table name, or the facts table records no table of
            a database stream ``name`` (a typo, a single stream's name, or a stream that has
            not run yet).
    """
    unit = _granularity(granularity)
    facts = table_ref(facts_table, "facts_table")
    ref = table_ref(control_table, "control_table")
    targets, ends = DatabaseLedger(spark, facts, name, set()).table_ends()
    if not targets:
        raise ValueError(
            f"{facts.text} records no table of a database stream named {name!r} (a typo, a "
            "single stream's name, or a stream that has not run yet)"
        )
    ensure_control_table(spark, ref)
    current = read_verdicts(spark, ref, targets)
    now = utc_now()
    rows = []
    for target, last in sorted(ends.items()):
        if last.end_commit_ts is None or last.end_lsn is None:
            continue  # before its first commit: nothing to declare complete
        proposed = truncate(last.end_commit_ts, unit)
        verdict = current.get(target)
        if verdict is None or verdict < proposed:
            rows.append((target, proposed, last.end_lsn, last.end_commit_ts, now))
    if rows:
        retry_conflicts(
            lambda: _merge_all(spark, ref, rows), f"finalize the database stream {name}"
        )
        current = read_verdicts(spark, ref, targets)
        log.info("finalize %s: %d of %d table(s) moved forward", name, len(rows), len(targets))
    return {target: current.get(target) for target in targets}


def retry_conflicts(action: Callable[[], T], what: str) -> T:
    """Runs ``action`` (one Delta commit, e.g. a MERGE), running it again with backoff (0.25 s
    doubling to 8 s) while it loses a concurrent-commit conflict, for up to
    :data:`RETRY_SECONDS`: in open-source Delta two MERGEs into one table conflict even when
    they touch different rows. Any other failure, or a conflict still losing at the deadline,
    is raised. ``what`` names the commit in the log."""
    deadline, delay = _monotonic() + RETRY_SECONDS, 0.25
    while True:
        try:
            return action()
        except Exception as exc:
            if not is_conflict(exc) or _monotonic() + delay > deadline:
                raise
            log.info("%s: MERGE lost a concurrent commit; retrying in %.2fs", what, delay)
            _sleep(delay)
            delay = min(delay * 2, 8.0)


class FinalizationListener:
    """Advances a table's verdict after every batch of one query run (made by :func:`track`).

    The Spark listener only hands the newest progress to a worker thread (no Spark work on the
    listener bus); a newer progress replaces a waiting one and an end offset already applied is
    skipped. Failures never touch the query: ``last_error`` and ``failures`` record them, the
    first of a streak is logged at ERROR, then at most one WARNING per 10 minutes, and the next
    progress retries. At the query's termination the worker applies what is left, stops and
    removes the listener.

    Attributes:
        last_error: the exception of the last attempt, ``None`` once one succeeds.
        failures: consecutive failed attempts.
    """

    def __init__(
        self,
        spark: SparkSession,
        run_id: str,
        control_table: str,
        table_name: str,
        *,
        granularity: str = "hour",
        apply: Callable[[dict[str, str]], object] | None = None,
    ) -> None:
        self.spark = spark
        self.run_id = str(run_id)
        self.control_table = control_table
        self.table_name = table_name
        self.granularity = _granularity(granularity)
        #: what a batch end does (default: :func:`advance` of ``table_name``)
        self._advance = apply if apply is not None else self._advance_table
        self.last_error: BaseException | None = None
        self.failures = 0
        self._cond = threading.Condition()
        self._pending: dict[str, str] | None = None
        self._applied: dict[str, str] | None = None
        self._terminated = False
        self._last_warning = float("-inf")
        self.spark_listener = _spark_listener(self)
        self._thread = threading.Thread(
            target=self._run, name=f"mssql_cdc-finalization-{table_name}", daemon=True
        )
        self._thread.start()

    def __repr__(self) -> str:
        return (
            f"FinalizationListener(run_id={self.run_id!r}, table_name={self.table_name!r}, "
            f"failures={self.failures})"
        )

    def offer(self, progress: object) -> None:
        """Hands a progress to the worker (cheap; safe on the listener bus)."""
        end = end_offset_from_progress(progress)
        if end is None:
            return
        with self._cond:
            if end != self._applied:
                self._pending = end
                self._cond.notify()

    def finish(self) -> None:
        """The query ended: apply what is waiting, then stop."""
        with self._cond:
            self._terminated = True
            self._cond.notify()

    def join(self, *, timeout: float | None = None) -> bool:
        """Waits for the worker to stop; ``False`` when ``timeout`` seconds passed first."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._terminated:
                    self._cond.wait()
                end, self._pending = self._pending, None
                stop = self._terminated and end is None
            if stop:
                break
            if end is not None:
                self._apply(end)
        try:
            self.spark.streams.removeListener(self.spark_listener)
        except Exception as exc:  # the session may be gone
            log.debug("could not remove the finalization listener: %s", exc)

    def _advance_table(self, end: dict[str, str]) -> None:
        advance(self.spark, self.control_table, self.table_name, end, granularity=self.granularity)

    def _apply(self, end: dict[str, str]) -> None:
        try:
            self._advance(end)
        except Exception as exc:
            self.last_error = exc
            self.failures += 1
            now = _monotonic()
            if self.failures == 1:
                log.exception(
                    "finalization of %s failed; retried at the next progress", self.table_name
                )
                self._last_warning = now
            elif now - self._last_warning >= _WARN_EVERY_SECONDS:
                log.warning(
                    "finalization of %s still failing (%d attempts): %s",
                    self.table_name,
                    self.failures,
                    exc,
                )
                self._last_warning = now
            return
        self.last_error, self.failures = None, 0
        with self._cond:
            self._applied = end


def _run_id(progress: object) -> str | None:
    if isinstance(progress, Mapping):
        value = progress.get("runId")
    else:
        value = getattr(progress, "runId", None)
    return None if value is None else str(value)


def _spark_listener(owner: FinalizationListener) -> StreamingQueryListener:
    """A ``StreamingQueryListener`` forwarding ``owner``'s run's events (pyspark imported here,
    so importing this module does not need it)."""
    from pyspark.sql.streaming.listener import StreamingQueryListener

    class _Listener(StreamingQueryListener):
        def onQueryStarted(self, event: QueryStartedEvent) -> None:  # noqa: N802 (PySpark's name)
            pass

        def onQueryProgress(self, event: QueryProgressEvent) -> None:  # noqa: N802
            if _run_id(event.progress) == owner.run_id:
                owner.offer(event.progress)

        def onQueryIdle(self, event: QueryIdleEvent) -> None:  # noqa: N802
            pass

        def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:  # noqa: N802
            if str(event.runId) == owner.run_id:
                owner.finish()

    return _Listener()


def track(
    spark: SparkSession,
    query: StreamingQuery | str,
    control_table: str,
    table_name: str,
    *,
    granularity: str = "hour",
) -> FinalizationListener:
    """Advances ``table_name``'s verdict after every batch of ``query`` (continuous mode).

    Creates the control table, registers a listener for this run of the query (a restarted
    query needs a new ``track``), offers ``query.lastProgress`` at once, and when the query has
    already stopped applies that and stops.

    Args:
        query: a ``StreamingQuery``, or the name of an active one.

    Raises:
        ValueError: no active query has that name, or a bad granularity.
    """
    query = _query(spark, query)
    ensure_control_table(spark, table_ref(control_table, "control_table"))
    listener = FinalizationListener(
        spark, str(query.runId), control_table, table_name, granularity=granularity
    )
    return _listen(spark, query, listener)


def _query(spark: SparkSession, query: StreamingQuery | str) -> StreamingQuery:
    """``query``, or the active query of that name.

    Raises:
        ValueError: no active query has that name.
    """
    if not isinstance(query, str):
        return query
    found = [q for q in spark.streams.active if q.name == query]
    if not found:
        raise ValueError(f"no active streaming query is named {query!r}")
    return found[0]


def _listen(
    spark: SparkSession, query: StreamingQuery, listener: FinalizationListener
) -> FinalizationListener:
    """Registers ``listener`` for ``query``'s run, offers its last progress at once, and
    finishes it when the query has already stopped."""
    spark.streams.addListener(listener.spark_listener)
    listener.offer(query.lastProgress)
    if not query.isActive:
        listener.finish()
    return listener


def track_database(
    spark: SparkSession,
    query: StreamingQuery | str,
    control_table: str,
    *,
    facts_table: str,
    granularity: str = "hour",
) -> FinalizationListener:
    """Runs :func:`finalize_database` after every batch of the database stream ``query``
    (``start_database``'s; continuous mode), on one worker thread as :func:`track` does: the
    newest progress replaces a waiting one, failures never touch the query. Each run reads the
    facts table (a few aggregations) and MERGEs the tables that moved in one commit.

    Args:
        query: the database stream's ``StreamingQuery``, or its name (``start_database``'s
            ``name``, which is also the stream's name in the facts table).

    Raises:
        ValueError: no active query has that name, or a bad granularity.
    """
    query = _query(spark, query)
    name = str(query.name)
    ensure_control_table(spark, table_ref(control_table, "control_table"))
    table_ref(facts_table, "facts_table")

    def apply(end: dict[str, str]) -> None:
        # a batch ran: its tables joined, so none means not a database stream of this name
        finalize_database(
            spark, control_table, name=name, facts_table=facts_table, granularity=granularity
        )

    listener = FinalizationListener(
        spark,
        str(query.runId),
        control_table,
        f"database stream {name}",
        granularity=granularity,
        apply=apply,
    )
    return _listen(spark, query, listener)
