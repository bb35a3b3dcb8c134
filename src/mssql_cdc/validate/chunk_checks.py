"""``reconcile()``'s chunk checks: the newest chunked snapshot of bronze, as its
``snapshot_chunk`` facts rows record it, against the rows bronze holds (docs/validation.md,
"Chunk checks"). No SQL Server read.

The facts are read before bronze, so a wave whose bronze commit lands between the two reads is
not a failure (bronze may hold chunks the facts do not list yet, unless the snapshot is
complete). Three failure types, one report row each:

* ``CHUNK_TILING``: the plan's ranges ``[lo, hi)`` must tile the key space once: no chunk
  recorded twice, none missing below the highest recorded, the first open below, each starting
  where the previous ended, and the last of a complete snapshot the plan's final one (open
  above).
* ``CHUNK_ROWS``: a chunk's recorded ``rows`` differ from the rows bronze holds for it; or, on a
  complete snapshot, bronze holds rows of a chunk the facts do not record.
* ``CHUNK_STAMP``: a chunk's stamp (the LSN its rows rank at, ``min_lsn``) is below the
  snapshot's LSN S.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mssql_cdc.sink import StreamTables, TargetLedger

if TYPE_CHECKING:
    from pyspark.sql import Row, SparkSession

    from mssql_cdc.sink import TableRef

__all__ = ["CHUNK_FAILURES", "ChunkFailure", "ChunkRecord", "check_chunks", "chunk_failures"]

#: the failure types of chunk rows in the reconcile report
CHUNK_FAILURES = ("CHUNK_TILING", "CHUNK_ROWS", "CHUNK_STAMP")


@dataclass(frozen=True)
class ChunkRecord:
    """One ``snapshot_chunk`` facts row: chunk number, recorded rows, stamp (``min_lsn``), the
    plan's bounds (lists of key values, ``None`` for an open end) and the plan's ``last`` flag."""

    chunk: int
    rows: int
    stamp: str
    lo: list[Any] | None
    hi: list[Any] | None
    last: bool

    @classmethod
    def of(cls, row: Row) -> ChunkRecord:
        """From a facts row (its ``detail`` JSON holds chunk, lo, hi and last)."""
        detail = json.loads(str(row["detail"]))
        return cls(
            chunk=int(detail["chunk"]),
            rows=int(row["rows"] or 0),
            stamp=str(row["min_lsn"]),
            lo=detail.get("lo"),
            hi=detail.get("hi"),
            last=bool(detail.get("last")),
        )


@dataclass(frozen=True)
class ChunkFailure:
    """One failed chunk check: its type (:data:`CHUNK_FAILURES`), the chunk (``None`` for one
    about the snapshot as a whole), the chunk's bounds and what was found (the report's
    ``detail``, with ``snapshot`` and ``chunk`` added)."""

    failure: str
    chunk: int | None
    lo: list[Any] | None
    hi: list[Any] | None
    found: dict[str, Any] = field(default_factory=dict)


def chunk_failures(
    snapshot_lsn: str,
    records: Sequence[ChunkRecord],
    bronze_rows: Mapping[int, int],
    *,
    complete: bool,
) -> list[ChunkFailure]:
    """The failed checks of one chunked snapshot (pure: the module doc's rules), ordered by
    chunk. ``bronze_rows``: rows bronze holds per chunk number of the snapshot, read after
    ``records``."""
    out: list[ChunkFailure] = []
    times = Counter(r.chunk for r in records)
    by_chunk = {r.chunk: r for r in records}

    def fail(kind: str, r: ChunkRecord | None, chunk: int | None, **found: object) -> None:
        lo, hi = (None, None) if r is None else (r.lo, r.hi)
        out.append(ChunkFailure(kind, chunk, lo, hi, found))

    top = max(by_chunk, default=-1)
    for n in range(top + 1):
        r = by_chunk.get(n)
        if r is None:
            fail("CHUNK_TILING", None, n, problem="missing: no facts row for this chunk")
            continue
        if times[n] > 1:
            fail("CHUNK_TILING", r, n, problem="recorded more than once", records=times[n])
        if n == 0 and r.lo is not None:
            fail("CHUNK_TILING", r, n, problem="the first chunk is not open below")
        before = by_chunk.get(n - 1)
        if before is not None and r.lo != before.hi:
            fail(
                "CHUNK_TILING",
                r,
                n,
                problem="does not start where the previous chunk ended",
                previous_hi=before.hi,
            )
        if r.stamp < snapshot_lsn:
            fail("CHUNK_STAMP", r, n, problem="stamp below the snapshot's LSN", stamp=r.stamp)
        held = bronze_rows.get(n, 0)
        if held != r.rows:
            fail("CHUNK_ROWS", r, n, problem="rows differ", facts_rows=r.rows, bronze_rows=held)
    if complete:
        final = by_chunk.get(top)
        if final is None or not final.last or final.hi is not None:
            fail(
                "CHUNK_TILING",
                final,
                None if final is None else top,
                problem="the snapshot is complete but its last chunk is not the plan's final one",
            )
        for n in sorted(set(bronze_rows) - set(by_chunk)):
            fail(
                "CHUNK_ROWS",
                None,
                n,
                problem="rows in bronze without a facts row",
                facts_rows=None,
                bronze_rows=bronze_rows[n],
            )
    return sorted(out, key=lambda f: (-1 if f.chunk is None else f.chunk, f.failure))


def check_chunks(
    spark: SparkSession, facts: TableRef, bronze: TableRef
) -> tuple[str | None, list[ChunkFailure]]:
    """Reads the facts (the newest chunked snapshot of ``bronze`` by any stream, and its
    ``snapshot_chunk`` rows), then bronze's rows per chunk of it, and checks them (driver; two
    Spark jobs, none without a chunked snapshot). Returns the snapshot's LSN (``None``: no
    chunked snapshot, nothing checked) and the failures."""
    ledger = TargetLedger(StreamTables(spark, bronze, facts))
    events = ledger.events()
    snap = events.newest_chunked()
    if snap is None:
        return None, []
    records = [ChunkRecord.of(r) for r in events.chunk_records(snap.snapshot_lsn)]
    held = {n: rows for n, (rows, _) in ledger.chunk_rows(snap.snapshot_lsn, None).items()}
    return snap.snapshot_lsn, chunk_failures(
        snap.snapshot_lsn, records, held, complete=snap.complete
    )
