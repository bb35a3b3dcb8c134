"""The snapshot source: the tracked table's current rows in the stream's schema.

Rows get ``_operation = 0`` and ``_start_lsn`` = the snapshot LSN (``snapshotLsn``, default
``sys.fn_cdc_get_max_lsn()`` recorded before the read), ``_commit_ts`` its commit time, and
NULL ``_seqval`` / ``_command_id``. Reads run under READ COMMITTED (never NOLOCK) or SNAPSHOT
(``isolationLevel``), with ``SET LOCK_TIMEOUT`` from ``lockTimeoutMs``. A single integer key
splits the table into uniform key ranges; other keys read in one partition.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from mssql_cdc._native import Lsn
from mssql_cdc.errors import SqlServerError
from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.arrow import cast_to, constant
from mssql_cdc.source.client import PERMISSION_DENIED, CdcClient, quote_name
from mssql_cdc.source.clock import resolve_clock
from mssql_cdc.source.offsets import format_utc, parse_utc
from mssql_cdc.source.partitions import SnapshotRange
from mssql_cdc.source.planner import find_instance
from mssql_cdc.source.retry import with_retry
from mssql_cdc.source.schema import Column
from mssql_cdc.source.sql import snapshot_query

__all__ = ["int_ranges", "plan_snapshot", "read_snapshot"]

_INTEGER_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})
_ISOLATION = {"readCommitted": "READ COMMITTED", "snapshot": "SNAPSHOT"}


def int_ranges(lo: int, hi: int, parts: int) -> list[tuple[int | None, int | None]]:
    """``parts`` uniform ranges covering ``lo..hi`` (first and last open-ended)."""
    parts = max(1, min(parts, hi - lo + 1))
    if parts == 1:
        return [(None, None)]
    width = (hi - lo + 1) / parts
    bounds = [lo + round(width * i) for i in range(1, parts)]
    edges: list[int | None] = [None, *bounds, None]
    return [(edges[i], edges[i + 1]) for i in range(parts)]


def plan_snapshot(
    options: ReaderOptions, columns: list[Column], default_partitions: int
) -> list[SnapshotRange]:
    """The snapshot's partitions. Runs on the driver, once per read."""
    client = CdcClient(options)
    try:
        return with_retry(
            client, "snapshot planning", lambda: _plan(client, columns, default_partitions)
        )
    finally:
        client.close()


def _plan(client: CdcClient, columns: list[Column], default_partitions: int) -> list[SnapshotRange]:
    options = client.options
    _, siblings = find_instance(client)
    newest = siblings[-1]
    if options.snapshot_lsn is not None:
        stamp = options.snapshot_lsn
    else:
        top = client.max_commit()
        stamp = top.lsn if top is not None else Lsn(bytes(10))
        if stamp < newest.start_lsn:
            stamp = newest.start_lsn.prev()
    commit = client.commit_at_or_before(stamp)
    commit_ts = ""
    if commit is not None and commit.lsn == stamp:
        clock = resolve_clock(
            options.source_time_zone,
            lambda: client.scalar("SELECT CURRENT_TIMEZONE_ID()"),
            lambda: client.scalar("SELECT DATEDIFF(MINUTE, SYSUTCDATETIME(), SYSDATETIME())"),
        )
        commit_ts = format_utc(clock.to_utc(commit.local_time))
    types = {c.name.lower(): c.data_type for c in client.captured_columns(newest.name)}
    wanted = tuple((c.name, types[c.name.lower()]) for c in columns if c.name.lower() in types)
    keys = options.snapshot_keys or newest.index_columns
    key = keys[0] if len(keys) == 1 and types.get(keys[0].lower()) in _INTEGER_TYPES else ""
    parts = options.num_partitions or max(default_partitions, 1)
    ranges: list[tuple[int | None, int | None]] = [(None, None)]
    if key and parts > 1:
        table = f"{quote_name(newest.source_schema)}.{quote_name(newest.source_table)}"
        row = client.table(
            f"SELECT MIN({quote_name(key)}) AS lo, MAX({quote_name(key)}) AS hi FROM {table}"
        ).to_pylist()[0]
        if row["lo"] is not None:
            ranges = int_ranges(int(row["lo"]), int(row["hi"]), parts)
    return [
        SnapshotRange(
            index=i,
            capture_instance=options.capture_instance,
            source_schema=newest.source_schema,
            source_table=newest.source_table,
            columns=wanted,
            snapshot_lsn=str(stamp),
            commit_ts=commit_ts,
            key=key,
            lo=lo,
            hi=hi,
        )
        for i, (lo, hi) in enumerate(ranges)
    ]


def read_snapshot(
    options: ReaderOptions, schema: pa.Schema, part: SnapshotRange
) -> Iterator[pa.RecordBatch]:
    """Yield the range's current rows. Runs on an executor, once per partition per attempt.

    Raises
    ------
    SqlServerError
        For example 1222 when ``lockTimeoutMs`` passed while a writer held a lock.
    """
    client = CdcClient(options)
    try:
        client.connection.execute(
            f"SET TRANSACTION ISOLATION LEVEL {_ISOLATION[options.isolation_level]}"
        )
        if options.lock_timeout_ms is not None:
            client.connection.execute(f"SET LOCK_TIMEOUT {int(options.lock_timeout_ms)}")
        sql = snapshot_query(
            part.source_schema,
            part.source_table,
            part.columns,
            part.key,
            lo=part.lo is not None,
            hi=part.hi is not None,
        )
        params = [b for b in (part.lo, part.hi) if b is not None]
        positions = {name.lower(): i for i, (name, _) in enumerate(part.columns)}
        stamp_ts = parse_utc(part.commit_ts)
        try:
            for batch in client.batches(sql, params, options.arrow_batch_size):
                n = batch.num_rows
                if not n:
                    continue
                meta = {
                    "_capture_instance": part.capture_instance,
                    "_start_lsn": part.snapshot_lsn,
                    "_seqval": None,
                    "_operation": 0,
                    "_command_id": None,
                    "_commit_ts": stamp_ts,
                }
                arrays = []
                for field in schema:
                    if field.name in meta:
                        arrays.append(constant(meta[field.name], field.type, n))
                        continue
                    position = positions.get(field.name.lower())
                    if position is None:
                        arrays.append(pa.nulls(n, field.type))
                    else:
                        arrays.append(cast_to(batch.column(position), field.type))
                yield pa.RecordBatch.from_arrays(arrays, schema=schema)
        except SqlServerError as exc:
            if exc.number == PERMISSION_DENIED:
                raise PermissionError(
                    f"The login cannot read {part.source_schema}.{part.source_table}: run "
                    f"GRANT SELECT ON {quote_name(part.source_schema)}."
                    f"{quote_name(part.source_table)} TO <user>; SQL Server said: {exc}"
                ) from exc
            raise
    finally:
        client.close()
