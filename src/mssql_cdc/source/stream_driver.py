"""The driver side of the stream: offsets and batch plans.

One :class:`StreamPlanner` lives in the driver's long-running Python worker for the life of a
query, with one connection (re-opened after a transient error, see :mod:`retry`). Every public
method is one driver-side call Spark makes, retried as a whole.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from mssql_cdc._native import Lsn
from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.catalog import find_instance
from mssql_cdc.source.client import CapturedColumn, CaptureInstance, CdcClient, Commit
from mssql_cdc.source.clock import ServerClock
from mssql_cdc.source.headroom import RetentionReader
from mssql_cdc.source.max_lsn import SharedPoll
from mssql_cdc.source.offsets import format_utc, make_offset, offset_lsn, offset_time, parse_utc
from mssql_cdc.source.partitions import ChangeRange
from mssql_cdc.source.planning import (
    MIN_ROWS_PER_PARTITION,
    instance_segments,
    partition_count,
    split_commits,
)
from mssql_cdc.source.positions import earliest_position, latest_position
from mssql_cdc.source.retention import first_held
from mssql_cdc.source.retry import DELAYS, with_retry
from mssql_cdc.source.schema import Column
from mssql_cdc.source.schema_changes import review_batch

__all__ = ["StreamPlanner"]

log = logging.getLogger("mssql_cdc.source")
T = TypeVar("T")


@dataclass
class _Batch:
    """What ``latestOffset`` saw, reused by ``reportLatestOffset`` (no extra query)."""

    newest: Commit | None = None


class StreamPlanner:
    """Offsets and plans for one streaming query (driver side)."""

    def __init__(
        self,
        options: ReaderOptions,
        columns: list[Column],
        default_partitions: int,
        min_rows_per_partition: int = MIN_ROWS_PER_PARTITION,
        retry_delays: tuple[float, ...] = DELAYS,
        *,
        retention: RetentionReader | None = None,
    ) -> None:
        self.options = options
        self.columns = columns
        self.client = CdcClient(options)
        self.max_partitions = options.num_partitions or max(default_partitions, 1)
        self.min_rows = min_rows_per_partition
        self.retry_delays = retry_delays
        self._clock: ServerClock | None = None
        self._captured: dict[str, list[CapturedColumn]] = {}
        #: ``(schema, table)`` of the capture instance, once found (a disabled custom name)
        self._table: tuple[str, str] | None = None
        self.seen = _Batch()
        self.target: Commit | None = None
        #: the newest-commit poll, shared with the other streams of this source (ADR 0170)
        self.poll = SharedPoll(options)
        #: the cleanup job's retention, for the facts' retention headroom (ADR 0171); a caller
        #: that plans many reads passes one reader for all (it reads at most once an hour)
        self.retention = retention if retention is not None else RetentionReader(self.client)

    def close(self) -> None:
        self.client.close()

    # --- helpers ---

    def _retry(self, what: str, call: Callable[[], T]) -> T:
        return with_retry(self.client, what, call, delays=self.retry_delays)

    def clock(self, *, refresh: bool = False) -> ServerClock:
        """The server clock (resolved once; re-read per batch in the offset fallback)."""
        if self._clock is None or (refresh and self._clock.zone is None):
            clock = self.client.server_clock()
            if self._clock is not None and clock != self._clock:
                log.warning(
                    "the server's UTC offset changed from %+d to %+d min",
                    self._clock.offset_minutes,
                    clock.offset_minutes,
                )
            self._clock = clock
        return self._clock

    def _offset(self, commit: Commit, previous_ts: str = "") -> dict[str, str]:
        utc = self.clock().to_utc(commit.local_time, parse_utc(previous_ts))
        return make_offset(commit.lsn, format_utc(utc))

    # --- offsets ---

    def initial_offset(self) -> dict[str, str]:
        """The offset before the first batch, from ``startingLsn`` (already processed)."""

        def call() -> dict[str, str]:
            start = self.options.starting_lsn
            if isinstance(start, Lsn):
                commit = self.client.commit_at_or_before(start)
                ts = self._offset(commit)["commit_ts"] if commit and commit.lsn == start else ""
                return make_offset(start, ts)
            siblings = self._instances()
            if start == "earliest":
                return make_offset(earliest_position(siblings), "")
            newest = self.client.max_commit()
            lsn = latest_position(newest, siblings)
            if newest is None or newest.lsn != lsn:
                return make_offset(lsn, "")
            return self._offset(newest)

        return self._retry("initialOffset", call)

    def latest_offset(self, start: dict[str, str], max_commits: int | None) -> dict[str, str]:
        """The end of the next batch: after ``start``, at most ``max_commits`` commits, never
        past ``sys.fn_cdc_get_max_lsn()`` (nor the availableNow target). One query when idle,
        or none when another stream of the same source polled since this call began.
        """
        since = time.monotonic_ns()

        def call() -> dict[str, str]:
            begin = offset_lsn(start)
            newest = self._newest(since)
            self.seen.newest = newest
            cap = newest
            if self.target is not None and (cap is None or self.target.lsn < cap.lsn):
                cap = self.target
            if cap is None or cap.lsn <= begin:
                return make_offset(begin, offset_time(start))
            end = cap
            if max_commits is not None:
                nth = self.client.nth_commit(begin, max_commits, cap.lsn)
                end = nth if nth is not None else cap
            return self._offset(end, offset_time(start))

        return self._retry("latestOffset", call)

    def ending_offset(self, start: dict[str, str]) -> dict[str, str]:
        """The end of a batch read of changes after ``start`` (``endingLsn``): ``latest``, the
        newest commit now; an LSN, itself. Never before ``start`` (an empty read then).

        Raises:
            ValueError: ``endingLsn`` is past the newest commit the capture job recorded
                (``sys.fn_cdc_get_max_lsn()``): changes up to it may still be uncaptured.
        """

        def call() -> dict[str, str]:
            begin = offset_lsn(start)
            newest = self.client.max_commit()
            end = self.options.ending_lsn
            if end == "latest":
                if newest is None or newest.lsn <= begin:
                    return make_offset(begin, offset_time(start))
                return self._offset(newest, offset_time(start))
            if newest is None or newest.lsn < end:
                raise ValueError(
                    f"endingLsn {end} is past the newest commit the capture job has recorded "
                    f"({'none yet' if newest is None else newest.lsn}): its changes may not be "
                    "captured yet; give an LSN at or below sys.fn_cdc_get_max_lsn(), or latest"
                )
            return make_offset(max(end, begin), "")

        return self._retry("endingOffset", call)

    def reported_offset(self) -> dict[str, str] | None:
        """The newest offset the last ``latest_offset`` saw (no query)."""
        newest = self.seen.newest
        return None if newest is None else self._offset(newest)

    def prepare_available_now(self) -> None:
        """Record ``max_lsn`` now as the end of an availableNow run."""

        since = time.monotonic_ns()

        def call() -> None:
            self.target = self._newest(since)

        self._retry("prepareForTriggerAvailableNow", call)

    def _newest(self, since_ns: int) -> Commit | None:
        """``max_lsn``'s commit from a poll started at or after ``since_ns`` and not older than
        what this stream saw (:mod:`mssql_cdc.source.max_lsn`)."""
        seen = self.seen.newest
        return self.poll.newest(self.client.max_commit, since_ns, seen.lsn if seen else None)

    # --- planning ---

    def _instances(self) -> list[CaptureInstance]:
        """The table's capture instances, oldest first (one catalog query)."""
        chosen, siblings = find_instance(self.client, self._table)
        self._table = (chosen.source_schema, chosen.source_table)
        return siblings

    def _column_types(self, instance: str) -> dict[str, str]:
        if instance not in self._captured:
            self._captured[instance] = self.client.captured_columns(instance)
        return {c.name.lower(): c.data_type for c in self._captured[instance]}

    def plan(self, start: dict[str, str], end: dict[str, str]) -> list[ChangeRange]:
        """The partitions of the batch ``start < lsn <= end``: retention checked first."""
        low, high = offset_lsn(start).next(), offset_lsn(end)
        if offset_lsn(end) <= offset_lsn(start):
            return []
        return self._retry("partitions", lambda: self._plan(start, end, low, high))

    def _plan(
        self, start: dict[str, str], end: dict[str, str], low: Lsn, high: Lsn
    ) -> list[ChangeRange]:
        clock = self.clock(refresh=True)
        siblings = self._instances()
        low = first_held(
            self.client,
            clock,
            siblings,
            low,
            lost_from_ts=offset_time(start),
            fail=self.options.fail_on_data_loss,
            metrics_path=self.options.metrics_path,
        )
        segments = instance_segments([(i.name, i.start_lsn) for i in siblings], low, high)
        ranges: list[tuple[str, Lsn, Lsn]] = []
        for name, seg_low, seg_high in segments:
            total = self.client.change_rows(name, seg_low, seg_high)
            parts = partition_count(total, self.max_partitions, self.min_rows)
            counts = self.client.rows_per_commit(name, seg_low, seg_high) if parts > 1 else []
            ranges += [(name, lo, hi) for lo, hi in split_commits(counts, seg_low, seg_high, parts)]
        if not ranges:
            ranges = [(siblings[-1].name, low, high)]
        captured = [c for c in self.columns if c.name not in _METADATA]
        review_batch(
            self.client,
            clock,
            captured,
            siblings,
            [name for name, _, _ in ranges],
            (low, high),
            self._captured,
        )
        retention = self.retention.minutes() if self.options.metrics_path else None
        out = []
        for index, (name, lo, hi) in enumerate(ranges):
            types = self._column_types(name)
            columns = tuple(
                (c.name, types[c.name.lower()]) for c in captured if c.name.lower() in types
            )
            last = index == len(ranges) - 1
            out.append(
                ChangeRange(
                    index=index,
                    capture_instance=name,
                    from_lsn=str(lo),
                    to_lsn=str(hi),
                    columns=columns,
                    previous_commit_ts=offset_time(start) if index == 0 else "",
                    last=last,
                    end_lsn=str(high) if last else "",
                    end_commit_ts=offset_time(end) if last else "",
                    zone=clock.zone or "",
                    offset_minutes=clock.offset_minutes,
                    retention_minutes=retention if last else None,
                )
            )
        return out


_METADATA = frozenset(
    {"_capture_instance", "_start_lsn", "_seqval", "_operation", "_command_id", "_commit_ts"}
)
