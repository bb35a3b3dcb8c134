"""Types of the public API (docs/api.md): plain typing, no Spark.

* :class:`Offset`: a position in the change history, what ``snapshot()``, ``seed()`` and
  :func:`mssql_cdc.newest_snapshot` return and ``startingLsn`` takes (its ``lsn``);
* :data:`OnDataLoss`, :data:`SnapshotMode`, :data:`Isolation`, :data:`Granularity`: the values
  of ``to_delta(on_data_loss=...)``, ``to_delta(snapshot=...)``, ``backfill(isolation=...)``
  and the finalization granularity;
* :class:`ApplyResult`: what :func:`mssql_cdc.apply_changes` did;
* :class:`BackfillStatus`: where a chunked snapshot stands after ``CdcStream.backfill()``;
* :class:`ResultMapping`: results read as attributes (``status.state``) and as read-only
  mappings (``status["state"]``, ``dict(status)``), as scripts written for the reference
  API read them;
* :data:`OPERATIONS`: the ``_operation`` codes and their names;
* :class:`SparkSessionLike`, :class:`StreamingQueryLike`: what every ``spark`` and ``query``
  parameter accepts (a classic or a Spark Connect session or query).

``ReconcileResult`` resolves here on first use (it lives with ``reconcile()``, which needs
Spark).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, TypedDict, runtime_checkable

if TYPE_CHECKING:
    from mssql_cdc import ReconcileResult

__all__ = [
    "BACKFILL_STATES",
    "GRANULARITIES",
    "ISOLATIONS",
    "ON_DATA_LOSS",
    "OPERATIONS",
    "SNAPSHOT_MODES",
    "ApplyResult",
    "BackfillState",
    "BackfillStatus",
    "Granularity",
    "Isolation",
    "Offset",
    "OnDataLoss",
    "ReconcileResult",
    "ResultMapping",
    "ScdType",
    "SnapshotMode",
    "SparkSessionLike",
    "StreamingQueryLike",
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

#: how ``to_delta(bootstrap=True)`` takes its snapshot: read whole before the query starts, or
#: opened for ``CdcStream.backfill()`` to read in chunks next to the stream
SnapshotMode = Literal["full", "chunked"]
#: the values of :data:`SnapshotMode`, in documentation order
SNAPSHOT_MODES: tuple[SnapshotMode, ...] = ("full", "chunked")

#: the isolation level of snapshot reads (``isolationLevel``, ``backfill(isolation=...)``;
#: any case at run time); never READ UNCOMMITTED
Isolation = Literal["snapshot", "readCommitted"]
#: the values of :data:`Isolation`, in documentation order
ISOLATIONS: tuple[Isolation, ...] = ("snapshot", "readCommitted")

#: the period a verdict is truncated to (``mssql_cdc.finalization``, ``apply_changes``; any
#: case at run time)
Granularity = Literal["minute", "hour", "day"]
#: the values of :data:`Granularity`, in documentation order
GRANULARITIES: tuple[Granularity, ...] = ("minute", "hour", "day")

#: the ``_operation`` codes of bronze rows and their names (0 is a snapshot row; an update is
#: two rows, 3 then 4)
OPERATIONS: Mapping[int, str] = MappingProxyType(
    {0: "snapshot", 1: "delete", 2: "insert", 3: "update_before", 4: "update_after"}
)


class ResultMapping(Mapping[str, Any]):
    """A result that reads as a read-only mapping too: ``result["state"]``, ``dict(result)``,
    ``result.items()``, ``"state" in result`` and ``result.get(...)`` give the attribute of
    that name, as the reference API's results (plain dicts) do.

    The keys are ``_KEYS``: the reference's keys first, in its order, then this product's
    additions; a later release may add keys, never remove or rename one. A key outside them is
    a ``KeyError``. Attribute access stays. Equality and hashing stay those of the dataclass
    (compare ``dict(result)`` with a dict).
    """

    __slots__ = ()
    _KEYS: ClassVar[tuple[str, ...]]

    def __getitem__(self, key: str) -> Any:  # noqa: ANN401 (values of several types, as a dict)
        if key not in self._KEYS:
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._KEYS)

    def __len__(self) -> int:
        return len(self._KEYS)


@dataclass(frozen=True)
class ApplyResult(ResultMapping):
    """What one :func:`mssql_cdc.apply_changes` call did (also a read-only mapping of these
    names, :class:`ResultMapping`).

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

    _KEYS: ClassVar[tuple[str, ...]] = (
        "rebuilt",
        "applied_lsn",
        "finalized_until",
        "bronze_found",
        "bronze_rows",
        "inserted",
        "updated",
        "deleted",
    )

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
class BackfillStatus(ResultMapping):
    """Where a chunked snapshot stands after one ``CdcStream.backfill()`` call (also a
    read-only mapping of these names and ``done`` and ``paused``, :class:`ResultMapping`).

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

    _KEYS: ClassVar[tuple[str, ...]] = (
        "snapshot",
        "chunks_done",
        "chunks_total",
        "done",
        "paused",
        "state",
        "reason",
        "rows_done",
        "rows_estimated",
        "eta_seconds",
        "waves",
    )

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


@runtime_checkable
class SparkSessionLike(Protocol):
    """A Spark session, classic (``pyspark.sql.SparkSession``) or Spark Connect
    (``pyspark.sql.connect.session.SparkSession``): what every ``spark`` parameter accepts.
    Only its public DataFrame, SQL and streaming API is used."""

    @property
    def version(self) -> str: ...

    @property
    def conf(self) -> object: ...

    @property
    def readStream(self) -> object: ...  # noqa: N802 (Spark API)

    @property
    def streams(self) -> object: ...

    def sql(self, sqlQuery: str, *args: object, **kwargs: object) -> object: ...  # noqa: N803


@runtime_checkable
class StreamingQueryLike(Protocol):
    """A running streaming query, classic or Spark Connect: what ``to_delta`` and
    ``start_many`` return and every ``query`` parameter accepts (``finalization.track``,
    ``await_all``, ``stop_all``)."""

    @property
    def id(self) -> str: ...

    @property
    def runId(self) -> str: ...  # noqa: N802 (Spark API)

    @property
    def name(self) -> str | None: ...

    @property
    def isActive(self) -> bool: ...  # noqa: N802 (Spark API)

    @property
    def lastProgress(self) -> object: ...  # noqa: N802 (Spark API)

    def awaitTermination(self, timeout: int | None = None) -> bool | None: ...  # noqa: N802

    def stop(self) -> None: ...

    def exception(self) -> object: ...


def __getattr__(name: str) -> object:
    if name == "ReconcileResult":  # with reconcile(), which imports Spark
        value: object = importlib.import_module("mssql_cdc").ReconcileResult
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
