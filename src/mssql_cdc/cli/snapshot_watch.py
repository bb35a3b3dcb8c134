"""Progress of the work ``to_delta`` does before its query starts, in ``mssql-cdc stream``.

With ``--bootstrap``, ``to_delta`` reads the whole table (the snapshot) before it returns the
running query, which on a large table takes minutes to hours. :class:`SnapshotWatch` follows
that work in a background thread through the driver's status tracker
(``SparkContext.statusTracker()``: the active stages and their task counts; classic Spark
only, nothing on Spark Connect) and prints a line whenever the tasks done change: tasks done of
the tasks of the running stages, the time elapsed and an ETA at the pace measured so far. The
snapshot's Spark work is split in tasks (one per snapshot partition, ``snapshotPartitions``),
so a one-partition snapshot shows its elapsed time only. Short stages (the checks and facts
commits, under :data:`MIN_STAGE_SECONDS`) print nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.status import StatusTracker

__all__ = ["MIN_STAGE_SECONDS", "SnapshotWatch", "StageTally", "watch_line"]

#: seconds between looks at the status tracker
REFRESH_S = 1.0
#: a stage is shown once it has run this long (the checks and facts commits are shorter)
MIN_STAGE_SECONDS = 2.0


@dataclass(frozen=True)
class StageTally:
    """Tasks of the stages running at one look: ``total`` planned, ``done`` completed."""

    total: int
    done: int


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def watch_line(label: str, tally: StageTally, elapsed: float) -> str:
    """``<label>: 3 of 8 tasks done, 1m04s elapsed, ETA 1m47s`` (the ETA at the pace so far;
    ``-`` before the first task ends)."""
    eta = "-"
    if tally.done and tally.total > tally.done:
        eta = _duration(elapsed / tally.done * (tally.total - tally.done))
    elif tally.total and tally.done >= tally.total:
        eta = "0m00s"
    return (
        f"{label}: {tally.done:,} of {tally.total:,} tasks done, "
        f"{_duration(elapsed)} elapsed, ETA {eta}"
    )


def _tally(tracker: StatusTracker, stage_ids: Iterable[int]) -> StageTally:
    total = done = 0
    for stage_id in stage_ids:
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            total += int(info.numTasks)
            done += int(info.numCompletedTasks)
    return StageTally(total, done)


class SnapshotWatch:
    """Prints the progress of the Spark work running while the block runs (see the module doc).

    Args:
        spark: the session whose driver runs the work; on Spark Connect the watch is idle.
        label: the line's prefix (``bootstrap snapshot of dbo_orders``).
        out: where the lines go.
        clock: seconds, monotonic (tests pass their own).
    """

    def __init__(
        self,
        spark: SparkSession,
        label: str,
        out: TextIO,
        *,
        interval: float = REFRESH_S,
        min_seconds: float = MIN_STAGE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.out = out
        self.interval = interval
        self.min_seconds = min_seconds
        self.clock = clock
        self.tracker = _status_tracker(spark)
        self._first_seen: dict[int, float] = {}
        self._last: StageTally | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mssql-cdc-snapshot", daemon=True)

    def __enter__(self) -> SnapshotWatch:
        if self.tracker is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.look()
            except Exception:  # the session stopping under the watch: nothing to show
                return

    def look(self) -> str | None:
        """One look: the line printed, if the tasks done changed (``None`` otherwise)."""
        assert self.tracker is not None
        now = self.clock()
        active = list(self.tracker.getActiveStageIds())
        for stage_id in active:
            self._first_seen.setdefault(stage_id, now)
        shown = [s for s in active if now - self._first_seen[s] >= self.min_seconds]
        if not shown:
            return None
        tally = _tally(self.tracker, shown)
        if tally == self._last:
            return None
        self._last = tally
        started = min(self._first_seen[s] for s in shown)
        line = watch_line(self.label, tally, now - started)
        print(line, file=self.out, flush=True)
        return line


def _status_tracker(spark: SparkSession) -> StatusTracker | None:
    """The driver's status tracker, or ``None`` on Spark Connect (no SparkContext there)."""
    try:
        return spark.sparkContext.statusTracker()
    except Exception:  # Spark Connect: sparkContext is not available
        return None
