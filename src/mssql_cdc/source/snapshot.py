"""The snapshot source: the tracked table's current rows in the stream's schema.

Rows get ``_operation = 0`` and ``_start_lsn`` = the snapshot LSN (``snapshotLsn``, default
``sys.fn_cdc_get_max_lsn()`` recorded before the read), ``_commit_ts`` its commit time, and
NULL ``_seqval`` / ``_command_id``. Reads (and the planning reads of the table) run under READ
COMMITTED (never NOLOCK) or SNAPSHOT (``isolationLevel``), with ``SET LOCK_TIMEOUT`` from
``lockTimeoutMs``.

Partitions (at most ``numPartitions``, ADR 0009): a single integer key is cut into uniform
MIN..MAX ranges; other keys (composite, strings, uniqueidentifier, dates, decimals, binary)
into ranges of about equal rows by keyset seeks, each bound the key ``COUNT/parts`` rows past
the previous one; a table without a usable key (no unique index and no ``snapshotKeys``, or a
key type that cannot be bound) reads in one partition. ``snapshotChunks`` reads only the given
``[chunk, lo, hi)`` ranges, one partition each, and adds ``_chunk``.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
import time
import uuid
from collections.abc import Iterator, Sequence
from decimal import Decimal

import pyarrow as pa

from mssql_cdc._metrics import metrics_dir
from mssql_cdc.errors import SqlServerError
from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.arrow import cast_to, constant, pylist
from mssql_cdc.source.catalog import find_instance
from mssql_cdc.source.client import CapturedColumn, CdcClient, is_permission_denied
from mssql_cdc.source.entra import with_task_token
from mssql_cdc.source.offsets import format_utc, parse_utc
from mssql_cdc.source.partitions import Bound, SnapshotRange
from mssql_cdc.source.positions import snapshot_lsn
from mssql_cdc.source.retry import with_retry
from mssql_cdc.source.schema import Column
from mssql_cdc.source.sql import (
    key_min_max,
    key_order,
    key_seek,
    row_count,
    snapshot_query,
    table_name,
)

__all__ = [
    "Key",
    "int_ranges",
    "key_of",
    "plan_snapshot",
    "read_snapshot",
    "session_setup",
    "to_bound",
]

log = logging.getLogger("mssql_cdc.source.snapshot")

_INTEGER_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})
_SIZED = frozenset({"char", "varchar", "nchar", "nvarchar", "binary", "varbinary"})
_PRECISE = frozenset({"decimal", "numeric"})
_FRACTIONAL = frozenset({"datetime2", "datetimeoffset", "time"})
#: key types a bound can be given for (as itself or as CAST-able text)
_RANGEABLE = (
    _INTEGER_TYPES
    | _SIZED
    | _PRECISE
    | _FRACTIONAL
    | {"bit", "uniqueidentifier", "date", "datetime", "smalldatetime", "money", "smallmoney"}
)
_ISOLATION = {"readCommitted": "READ COMMITTED", "snapshot": "SNAPSHOT"}
Key = tuple[tuple[str, str], ...]
Range = tuple[tuple[Bound, ...] | None, tuple[Bound, ...] | None]


def session_setup(options: ReaderOptions) -> tuple[str, ...]:
    """The ``SET`` statements every connection reading the table starts with."""
    setup = [f"SET TRANSACTION ISOLATION LEVEL {_ISOLATION[options.isolation_level]}"]
    if options.lock_timeout_ms is not None:
        setup.append(f"SET LOCK_TIMEOUT {int(options.lock_timeout_ms)}")
    return tuple(setup)


def int_ranges(lo: int, hi: int, parts: int) -> list[tuple[int | None, int | None]]:
    """``parts`` uniform ranges covering ``lo..hi`` (first and last open-ended)."""
    parts = max(1, min(parts, hi - lo + 1))
    if parts == 1:
        return [(None, None)]
    width = (hi - lo + 1) / parts
    bounds = [lo + round(width * i) for i in range(1, parts)]
    edges: list[int | None] = [None, *bounds, None]
    return [(edges[i], edges[i + 1]) for i in range(parts)]


def declared_type(column: CapturedColumn) -> str:
    """The column's T-SQL type as declared (``nvarchar(50)``, ``decimal(8,2)``, ...)."""
    kind = column.data_type
    if kind in _SIZED:
        size = column.max_length
        return f"{kind}({'max' if size is None or size < 0 else size})"
    if kind in _PRECISE:
        return f"{kind}({column.precision or 18},{column.scale or 0})"
    if kind in _FRACTIONAL and column.datetime_precision is not None:
        return f"{kind}({column.datetime_precision})"
    return kind


def to_bound(value: object, sql_type: str) -> Bound:  # noqa: PLR0911 (a dispatch over types)
    """A key value read from the server as a picklable bound (``None``: cannot be bound).

    Any increasing sequence of bounds tiles the table exactly, so a value rounded here (a
    ``datetime2`` read to microseconds) only moves a cut, never loses or repeats a row.
    """
    if isinstance(value, (bool, int, str, bytes)):
        return value
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dt.datetime):
        if sql_type.startswith(("datetime(", "smalldatetime")) or sql_type == "datetime":
            return value.isoformat(timespec="milliseconds")
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    return None


def key_of(keys: Sequence[str], captured: dict[str, CapturedColumn]) -> tuple[Key, str]:
    """``(column, declared type)`` per key column, or ``()`` and why it cannot be ranged."""
    if not keys:
        return (), "the table has no unique index CDC uses; set snapshotKeys"
    out = []
    for name in keys:
        column = captured.get(name.lower())
        if column is None:
            return (), f"the key column {name!r} is not a captured column"
        if column.data_type not in _RANGEABLE:
            return (), f"the key column {name!r} has type {column.data_type}, which has no bounds"
        out.append((column.name, declared_type(column)))
    return tuple(out), ""


def _chunk_bound(value: object, key: Key, text: str) -> tuple[Bound, ...] | None:
    if value is None:
        return None
    values = value if isinstance(value, list) else [value]
    allowed = (
        f"bounds of {len(key)} value(s) for the key ({key_order(key)}): "
        + ("a scalar or a list" if len(key) == 1 else "a list")
        + " of JSON scalars, or null for an open end"
    )
    if len(values) != len(key) or not all(isinstance(v, (bool, int, float, str)) for v in values):
        raise ValueError(f"Option 'snapshotChunks' has the value {text!r}; allowed: {allowed}")
    return tuple(repr(v) if isinstance(v, float) else v for v in values)  # type: ignore[misc]


def _chunk_ranges(options: ReaderOptions, key: Key, why: str) -> list[tuple[int, Range]]:
    chunks = options.snapshot_chunks or ()
    if not key:
        raise ValueError(f"Option 'snapshotChunks' needs key ranges, but {why}")
    out = []
    for chunk, lo, hi in chunks:
        text = repr([chunk, lo, hi])
        out.append((chunk, (_chunk_bound(lo, key, text), _chunk_bound(hi, key, text))))
    return out


def _keyset_ranges(client: CdcClient, table: tuple[str, str], key: Key, parts: int) -> list[Range]:
    """About equal row ranges by keyset seeks: each bound ``rows / parts`` keys past the
    previous one (one ``COUNT_BIG`` and ``parts - 1`` seeks, each reading only keys)."""
    schema, name = table
    total = int(str(client.scalar(row_count(schema, name))))
    step = math.ceil(total / parts) if total else 0
    bounds: list[tuple[Bound, ...]] = []
    while step and len(bounds) < parts - 1:
        previous = bounds[-1] if bounds else None
        sql = key_seek(schema, name, key, after=previous is not None)
        rows = pylist(client.table(sql, [step, *(previous or ())]))
        if not rows:
            break
        bound = tuple(to_bound(rows[0][c], t) for c, t in key)
        if any(b is None for b in bound) or bound == previous:
            break  # a NULL key part (sorted first) or a repeated value: stop cutting here
        bounds.append(bound)
    edges: list[tuple[Bound, ...] | None] = [None, *bounds, None]
    return [(edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


def plan_snapshot(
    options: ReaderOptions, columns: list[Column], default_partitions: int
) -> list[SnapshotRange]:
    """The snapshot's partitions. Runs on the driver, once per read.

    Raises
    ------
    ValueError
        ``snapshotChunks`` on a table whose key cannot be ranged, or with a malformed bound.
    SqlServerError
        For example 1222 when ``lockTimeoutMs`` passed while planning waited for a writer.
    """
    client = CdcClient(options, session_setup(options))
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
        stamp = snapshot_lsn(client.max_commit(), siblings)
    commit_ts = format_utc(client.commit_time(stamp))
    captured = {c.name.lower(): c for c in client.captured_columns(newest.name)}
    table = (newest.source_schema, newest.source_table)
    # a captured column dropped from the table reads NULL (docs/schema-changes.md)
    present = client.table_columns(*table)
    wanted = tuple(
        (c.name, captured[c.name.lower()].data_type)
        for c in columns
        if c.name.lower() in captured and c.name.lower() in present
    )
    key, why = key_of(options.snapshot_keys or newest.index_columns, captured)
    chunks: list[tuple[int | None, Range]] = []
    if options.snapshot_chunks is not None:
        chunks = list(_chunk_ranges(options, key, why))
    else:
        parts = options.num_partitions or max(default_partitions, 1)
        ranges: list[Range] = [(None, None)]
        if key and parts > 1 and len(key) == 1 and key[0][1] in _INTEGER_TYPES:
            row = client.table(key_min_max(table[0], table[1], key[0][0])).to_pylist()[0]
            if row["lo"] is not None:
                ranges = [
                    (None if lo is None else (lo,), None if hi is None else (hi,))
                    for lo, hi in int_ranges(int(row["lo"]), int(row["hi"]), parts)
                ]
        elif key and parts > 1:
            ranges = _keyset_ranges(client, table, key, parts)
        chunks = [(None, r) for r in ranges]
    return [
        SnapshotRange(
            index=i,
            capture_instance=options.capture_instance,
            source_schema=newest.source_schema,
            source_table=newest.source_table,
            columns=wanted,
            snapshot_lsn=str(stamp),
            commit_ts=commit_ts,
            keys=key,
            lo=lo,
            hi=hi,
            chunk=chunk,
        )
        for i, (chunk, (lo, hi)) in enumerate(chunks)
    ]


def _write_chunk_metrics(
    client: CdcClient, path: str, chunk: int, *, rows: int, nbytes: int, started: float
) -> None:
    """A chunk's metrics file (rows, bytes, seconds, ``max_lsn`` after the read); failures only
    WARN, as every metrics write (mssql_cdc._metrics)."""
    seconds = time.perf_counter() - started
    try:
        newest = client.max_commit()
        metrics_dir(path).write_chunk(
            chunk,
            {
                "rows": rows,
                "bytes": nbytes,
                "seconds": round(seconds, 3),
                "max_lsn": str(newest.lsn) if newest is not None else None,
            },
        )
    except (SqlServerError, OSError, ValueError) as exc:
        log.warning("could not write the metrics of snapshot chunk %d: %s", chunk, exc)


def read_snapshot(
    options: ReaderOptions, schema: pa.Schema, part: SnapshotRange
) -> Iterator[pa.RecordBatch]:
    """Yield the range's current rows. Runs on an executor, once per partition per attempt.

    Raises
    ------
    SqlServerError
        For example 1222 when ``lockTimeoutMs`` passed while a writer held a lock.
    """
    options = with_task_token(options, part.access_token)
    client = CdcClient(options, session_setup(options))
    try:
        sql = snapshot_query(
            part.source_schema,
            part.source_table,
            part.columns,
            part.keys,
            lo=part.lo is not None,
            hi=part.hi is not None,
        )
        params = [*(part.lo or ()), *(part.hi or ())]
        positions = {name.lower(): i for i, (name, _) in enumerate(part.columns)}
        meta: dict[str, object] = {
            "_capture_instance": part.capture_instance,
            "_start_lsn": part.snapshot_lsn,
            "_seqval": None,
            "_operation": 0,
            "_command_id": None,
            "_commit_ts": parse_utc(part.commit_ts),
            "_chunk": part.chunk,
        }
        started = time.perf_counter()
        rows = 0
        nbytes = 0
        try:
            for batch in client.batches(sql, params, options.arrow_batch_size):
                n = batch.num_rows
                if not n:
                    continue
                rows += n
                nbytes += batch.nbytes
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
            if part.chunk is not None and options.metrics_path:
                _write_chunk_metrics(
                    client,
                    options.metrics_path,
                    part.chunk,
                    rows=rows,
                    nbytes=nbytes,
                    started=started,
                )
        except SqlServerError as exc:
            if is_permission_denied(exc):
                raise PermissionError(
                    f"The login cannot read {part.source_schema}.{part.source_table}: run "
                    f"GRANT SELECT ON {table_name(part.source_schema, part.source_table)} TO "
                    f"<user>; SQL Server said: {exc}"
                ) from exc
            raise
    finally:
        client.close()
