"""Types of the public API (docs/reference/api.md): plain typing, no Spark.

* :class:`Offset`: a position in the change history, what ``snapshot()``, ``seed()`` and
  :func:`mssql_cdc.newest_snapshot` return and ``startingLsn`` takes (its ``lsn``);
* :data:`OnDataLoss`: the values of ``to_delta(on_data_loss=...)``;
* :class:`ApplyResult`: what :func:`mssql_cdc.apply_changes` did;
* :class:`BackfillStatus`: where a chunked snapshot stands after ``CdcStream.backfill()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, TypedDict

__all__ = [
    "BACKFILL_STATES",
    "ON_DATA_LOSS",
    "ApplyResult",
    "BackfillState",
    "BackfillStatus",
    "Offset",
    "OnDataLoss",
    "ScdType",
]


class Offset(TypedDict):
    """A position: ``lsn`` (``0x`` and 20 upper-case hex digits, the commit taken as
    processed) and ``commit_ts`` (its commit time, UTC ISO-8601 to the millisecond, ``Z``;
    ``""`` when no commit has that LSN)."""

    lsn: str
    commit_ts: str


#: what ``to_delta`` does when changes it needs were purged before the query started
OnDataLoss = Literal["fail", "resnapshot"]

#: the values of :data:`OnDataLoss`, in documentation order
ON_DATA_LOSS: tuple[OnDataLoss, ...] = ("fail", "resnapshot")

#: the values of ``apply_changes(scd_type=...)``
ScdType = Literal[1, 2]


@dataclass(frozen=True)
class ApplyResult:
    """What one :func:`mssql_cdc.apply_changes` call did.

    Attributes:
        rebuilt: silver was rebuilt (from a newer complete snapshot, or the first call that
            found bronze).
        applied_lsn: silver's position after the call: the highest bronze commit LSN applied
            (``None`` before anything was applied).
        finalized_until: silver's verdict (naive UTC), ``None`` before the first one.
        bronze_found: False when bronze does not exist yet (nothing was done).
        bronze_rows: bronze rows the call read (changes beyond the position, snapshot rows on
            a rebuild).
        inserted: silver rows the MERGE inserted.
        updated: silver rows the MERGE updated.
        deleted: silver rows the MERGE deleted.
    """

    rebuilt: bool
    applied_lsn: str | None
    finalized_until: datetime | None
    bronze_found: bool
    bronze_rows: int = 0
    inserted: int = 0
    updated: int = 0
    deleted: int = 0


#: the values of :attr:`BackfillStatus.state`
BackfillState = Literal["done", "running", "waiting_headroom", "waiting_metrics", "no_snapshot"]

#: the values of :data:`BackfillState`, in documentation order
BACKFILL_STATES: tuple[BackfillState, ...] = (
    "done",
    "running",
    "waiting_headroom",
    "waiting_metrics",
    "no_snapshot",
)

#: the states in which a ``backfill()`` call paused (:attr:`BackfillStatus.paused`)
_PAUSED_STATES: frozenset[BackfillState] = frozenset(
    {"waiting_headroom", "waiting_metrics", "no_snapshot"}
)


@dataclass(frozen=True)
class BackfillStatus:
    """Where a chunked snapshot stands after one ``CdcStream.backfill()`` call.

    Attributes:
        state: ``"done"`` (every chunk landed and the ``bootstrap`` facts row closed the
            snapshot: stop calling); ``"running"`` (``max_waves`` or ``max_seconds`` ran out:
            call again); ``"waiting_headroom"`` (paused: the stream's newest facts row shows
            less CDC retention headroom than ``min_headroom_hours``; call again later);
            ``"waiting_metrics"`` (paused: ``min_headroom_hours`` is set and the stream has
            written no micro-batch facts row yet); ``"no_snapshot"`` (paused: the stream has
            no chunked snapshot of the target: not opened yet, another target, ``app_id`` or
            facts table, or the stream bootstraps with ``snapshot="full"``). See ``reason``.
        snapshot: the snapshot's LSN S (downstream rebuilds from it once done); ``None`` in
            state ``"no_snapshot"``.
        chunks_done: chunks landed in bronze (over every call).
        chunks_total: chunks in the plan; ``None`` until the first ``backfill()`` call plans
            them.
        rows_done: rows of the landed chunks.
        rows_estimated: rows counted when the plan was made (``0`` before).
        eta_seconds: the time the remaining chunks take at the pace measured so far; ``0.0``
            when done, ``None`` before any pace is known.
        waves: waves this call read.
        reason: why the call paused (``None`` otherwise).
    """

    state: BackfillState
    snapshot: str | None
    chunks_done: int
    chunks_total: int | None
    rows_done: int
    rows_estimated: int
    eta_seconds: float | None
    waves: int = 0
    reason: str | None = None

    @property
    def done(self) -> bool:
        """Whether the snapshot is complete (state ``"done"``)."""
        return self.state == "done"

    @property
    def paused(self) -> bool:
        """Whether the call paused (a ``waiting_*`` state or ``"no_snapshot"``; see
        :attr:`reason`)."""
        return self.state in _PAUSED_STATES
