"""Planning a chunked snapshot: fixed key ranges over the key the snapshot source reads by
(docs/bootstrap.md#chunked-snapshots-and-backfill; ADR 0161).

Runs on the driver, in the calling Python process, once per chunked snapshot (the plan is
recorded in a ``snapshot_plan`` facts row and reused by every later ``backfill()`` call). The
key is the one ``format("mssql_cdc_snapshot")`` ranges by (``snapshotKeys``, else the unique
index the capture instance uses). Each chunk ends ``chunk_rows`` keys after the previous one:
a server-side seek (``ORDER BY key OFFSET n ROWS FETCH NEXT 1 ROWS ONLY`` past the previous
bound) that transfers one key per chunk, so the bounds follow SQL Server's own order of the key
(integers, composite keys in column order, ``uniqueidentifier`` in its byte-group order).
Chunk ``i`` is ``[bound[i-1], bound[i])``, the first open below, the last open above, which is
what ``snapshotChunks`` reads: exact for keys without NULLs (rows with a NULL key part sort
first and fall in chunk 0).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.arrow import pylist
from mssql_cdc.source.catalog import find_instance
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.retry import with_retry
from mssql_cdc.source.snapshot import Key, key_of, session_setup, to_bound
from mssql_cdc.source.sql import key_seek, row_count

__all__ = ["ChunkPlan", "chunk_bounds", "chunk_key", "plan_chunks"]

#: chunks' ``[lo, hi)`` bounds, each a list of key values or ``None`` for an open end
Bounds = tuple[tuple[list[object] | None, list[object] | None], ...]
#: JSON scalars a chunk bound can hold (what ``snapshotChunks`` takes)
_JSON_SCALARS = (bool, int, str)


@dataclass(frozen=True)
class ChunkPlan:
    """A chunked snapshot's plan: the key (``(column, declared type)`` in order), the rows
    counted when planning, and each chunk's ``[lo, hi)`` (a list of key values per bound, or
    ``None`` for an open end), in key order."""

    key: Key
    rows: int
    chunks: Bounds
    seconds: float


def chunk_bounds(bounds: list[list[object]]) -> Bounds:
    """The chunks between increasing ``bounds``: ``[None, b1), [b1, b2), ..., [bn, None)``."""
    edges: list[list[object] | None] = [None, *bounds, None]
    return tuple((edges[i], edges[i + 1]) for i in range(len(edges) - 1))


def _key(client: CdcClient) -> Key:
    _, siblings = find_instance(client)
    newest = siblings[-1]
    captured = {c.name.lower(): c for c in client.captured_columns(newest.name)}
    key, why = key_of(client.options.snapshot_keys or newest.index_columns, captured)
    if not key:
        raise ValueError(
            f"{client.options.capture_instance}: a chunked snapshot needs a key to cut the "
            f"table by, but {why}; use snapshot='full', or seed() from a copy"
        )
    return key


def chunk_key(options: ReaderOptions) -> Key:
    """The key a chunked snapshot of the capture instance is cut by (see the module doc).

    Raises:
        ValueError: the table has no key that can be ranged.
    """
    client = CdcClient(options, session_setup(options))
    try:
        return with_retry(client, "chunk key", lambda: _key(client))
    finally:
        client.close()


def _plan(client: CdcClient, chunk_rows: int) -> ChunkPlan:
    started = time.monotonic()
    key = _key(client)
    _, siblings = find_instance(client)
    schema, table = siblings[-1].source_schema, siblings[-1].source_table
    total = int(str(client.scalar(row_count(schema, table))))
    bounds: list[list[object]] = []
    while total and len(bounds) * chunk_rows < total:
        previous = bounds[-1] if bounds else None
        sql = key_seek(schema, table, key, after=previous is not None)
        found = pylist(client.table(sql, [chunk_rows, *(previous or ())]))
        if not found:
            break
        bound: list[object] = [to_bound(found[0][c], t) for c, t in key]
        if not all(isinstance(b, _JSON_SCALARS) for b in bound):
            raise ValueError(
                f"{client.options.capture_instance}: the key ({', '.join(c for c, _ in key)}) "
                "holds a NULL or a binary value, which a chunk bound cannot hold; use "
                "snapshot='full', or seed() from a copy"
            )
        bounds.append(bound)
    return ChunkPlan(key, total, chunk_bounds(bounds), time.monotonic() - started)


def plan_chunks(options: ReaderOptions, chunk_rows: int) -> ChunkPlan:
    """Cuts the table into chunks of ``chunk_rows`` rows (the last one may hold fewer, and
    rows inserted later above the last bound fall into it).

    Raises:
        ValueError: no key to cut by, or a key value a bound cannot hold.
        SqlServerError: after the driver-side retries.
    """
    client = CdcClient(options, session_setup(options))
    try:
        return with_retry(client, "chunk planning", lambda: _plan(client, chunk_rows))
    finally:
        client.close()
