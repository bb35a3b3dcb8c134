"""The JSON payloads the facts table's ``detail`` column and a chunked wave's bronze commit
carry, as ``TypedDict`` s (plain dicts at run time): read ``json.loads(row.detail)`` with them.

Keys are only ever added; a key a later release added is optional (``total=False`` parts) and
read with a default. Key values of chunk bounds (``lo``, ``hi``, ``max``) are JSON: a scalar for
one key column, a list for a composite key, ``null`` for an open bound; values JSON has no type
for (dates, decimals) are text, binary is ``0x`` hex.

Which row carries which payload (docs/monitoring.md, "The facts table"):

========================== =========================================
``event``                  ``detail``
========================== =========================================
NULL (micro-batch)         :class:`BatchDetail`, or NULL without warnings
``snapshot_open``          :class:`SnapshotOpenDetail`
``snapshot_plan``          :class:`SnapshotPlanDetail`
``snapshot_chunk``         :class:`SnapshotChunkDetail`
``bootstrap``/``resnapshot`` :class:`SnapshotCompletionDetail` (chunked snapshots)
``data_skipped``           :class:`DataSkippedDetail`
========================== =========================================

Plain typing; importing this module imports nothing else.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

__all__ = [
    "BatchDetail",
    "DataSkippedDetail",
    "IntExtent",
    "KeysetExtent",
    "SnapshotChunkDetail",
    "SnapshotCompletionDetail",
    "SnapshotExtent",
    "SnapshotKind",
    "SnapshotOpenDetail",
    "SnapshotPlanDetail",
    "WaveChunk",
    "WaveMetadata",
]

#: what a snapshot is for: the stream's first (generation 0) or a re-snapshot after data loss
SnapshotKind = Literal["bootstrap", "resnapshot"]


class IntExtent(TypedDict):
    """An integer key's extent: ``lo`` (MIN), ``hi`` (MAX; the last chunk ends at MAX + 1),
    ``rows`` (the metadata's row estimate)."""

    kind: Literal["int"]
    lo: Any
    hi: Any
    rows: int


class KeysetExtent(TypedDict):
    """Another key's extent: ``max`` (the key's MAX; ``None``: one chunk, the whole table)."""

    kind: Literal["keyset"]
    max: Any


#: the key extent recorded when a chunked snapshot opens
SnapshotExtent = IntExtent | KeysetExtent


class _SnapshotOpenRequired(TypedDict):
    mode: Literal["full", "chunked"]
    kind: SnapshotKind
    generation: int
    lost_from_ts: str | None
    lost_to_ts: str | None


class SnapshotOpenDetail(_SnapshotOpenRequired, total=False):
    """``snapshot_open``: ``mode`` (a row without it reads as ``"chunked"``), ``kind``,
    ``generation`` (0 for the bootstrap), ``lost_from_ts`` / ``lost_to_ts`` (UTC ISO-8601 of a
    re-snapshot's gap, else ``None``); on chunked opens ``keys`` (the key columns the chunks
    tile) and, where written, ``plan`` (the key extent; this product plans the extent at the
    first ``backfill()`` call and writes it in :class:`SnapshotPlanDetail` instead)."""

    keys: list[str]
    plan: SnapshotExtent


class _SnapshotPlanRequired(TypedDict):
    snapshot: str
    kind: Literal["int", "keyset"]
    keys: list[str]
    chunk_rows: int
    chunks: list[list[Any]]


class SnapshotPlanDetail(_SnapshotPlanRequired, total=False):
    """``snapshot_plan``: the snapshot LSN S, how the chunks were cut, the key columns,
    ``chunk_rows`` (at most this many rows per chunk) and ``chunks`` (``[lo, hi]`` in plan
    order, ``lo`` inclusive, ``hi`` exclusive); fixed while the snapshot is open. ``rows``:
    the rows counted when planning."""

    rows: int


class _SnapshotChunkRequired(TypedDict):
    snapshot: str
    wave: int
    chunk: int
    lo: Any
    hi: Any
    last: bool


class SnapshotChunkDetail(_SnapshotChunkRequired, total=False):
    """``snapshot_chunk``: the snapshot LSN, the wave (from 0), the chunk's plan index and
    bounds, ``last`` (the plan's final chunk); ``wave_chunks``: how many chunks the wave
    read."""

    wave_chunks: int


class SnapshotCompletionDetail(TypedDict, total=False):
    """``bootstrap`` / ``resnapshot`` closing a chunked snapshot: ``snapshot`` (S), ``chunks``,
    ``rows`` (all chunks), ``last_lsn`` (the newest chunk stamp); ``generation`` on
    re-snapshots."""

    snapshot: str
    chunks: int
    rows: int
    last_lsn: str
    generation: int


class _DataSkippedRequired(TypedDict):
    certain: bool


# ``from`` is a keyword, hence the functional form
_DataSkippedBounds = TypedDict("_DataSkippedBounds", {"from": str, "to": str})


class DataSkippedDetail(_DataSkippedBounds, _DataSkippedRequired, total=False):
    """``data_skipped`` (``failOnDataLoss=false``): the LSNs ``from`` and ``to`` of the
    skipped range, ``certain`` (found at planning; ``False``: a task found after its read that
    cleanup may have run), ``reason`` (only when not certain)."""

    reason: str


class BatchDetail(TypedDict):
    """A micro-batch row's ``detail`` when the run logged warnings since the previous row:
    ``warnings`` (human text: unknown options, computed or unread columns, the server clock's
    offset taken or changed)."""

    warnings: list[str]


class WaveChunk(TypedDict, total=False):
    """One chunk of a wave, as the reference's wave metadata lists it: ``chunk`` (plan index),
    ``lo``, ``hi``, ``last``, ``rows`` (``None`` where counts are unknown), ``high_lsn``,
    ``read_seconds``, ``read_mb``. This product records per-chunk figures in the wave's
    ``snapshot_chunk`` facts rows instead; see :class:`WaveMetadata`."""

    chunk: int
    lo: Any
    hi: Any
    last: bool
    rows: int | None
    high_lsn: str | None
    read_seconds: float | None
    read_mb: float | None


class WaveMetadata(TypedDict, total=False):
    """The ``userMetadata`` of a chunked snapshot wave's bronze commit. This product writes
    ``app_id`` (the generation's sink id), ``event`` (``"snapshot_chunk"``), ``snapshot_lsn``
    (S), ``capture_instance``, ``chunks`` (the plan indexes the wave holds), ``attempt`` (the
    ``backfill()`` call's token: which run's wave it is) and ``lsn`` (the wave's stamp); the
    reference's ``backfill``, ``wave`` and per-chunk :class:`WaveChunk` entries are not
    written (the wave's ``snapshot_chunk`` facts rows hold those figures)."""

    app_id: str
    event: Literal["snapshot_chunk"]
    snapshot_lsn: str
    capture_instance: str
    chunks: list[int] | list[WaveChunk]
    backfill: str
    wave: int
    lsn: str
    attempt: str
