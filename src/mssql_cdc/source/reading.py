"""Reading one change range in a task (executor side).


:func:`read_changes` opens its own connection, checks that cleanup has not passed the range's
start, runs the change query (the change table, :func:`~mssql_cdc.source.sql.change_query`),
and yields each Arrow batch the native client decodes, cast to the declared schema with the
metadata columns filled in; then it checks retention again and writes the partition's metrics
file.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import pyarrow as pa

from mssql_cdc._metrics import PartitionMetrics, metrics_dir
from mssql_cdc._native import Lsn
from mssql_cdc.errors import SqlServerError
from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.arrow import cast_to, constant, lsn_text
from mssql_cdc.source.client import CdcClient, is_permission_denied, permission_error
from mssql_cdc.source.clock import ServerClock
from mssql_cdc.source.entra import with_task_token
from mssql_cdc.source.headroom import WATERMARK, headroom_hours, watermark_headroom_hours
from mssql_cdc.source.offsets import format_utc, parse_utc
from mssql_cdc.source.partitions import ChangeRange
from mssql_cdc.source.retention import Skip, data_loss_error, is_gone, record_skip
from mssql_cdc.source.sql import change_query

__all__ = ["ReadSpec", "read_changes"]

log = logging.getLogger("mssql_cdc.source")

_MB = 1024 * 1024


@dataclass(frozen=True)
class ReadSpec:
    """What every task of a query needs besides its partition (pickled with the reader)."""

    options: ReaderOptions
    schema: pa.Schema


def _clock(part: ChangeRange) -> ServerClock:
    return ServerClock(zone=part.zone or None, offset_minutes=part.offset_minutes)


class _Converter:
    """Turns the change query's batches into output batches, keeping the previous commit's
    UTC time across batches (fall-back hours)."""

    def __init__(self, spec: ReadSpec, part: ChangeRange) -> None:
        self.spec = spec
        self.part = part
        self.clock = _clock(part)
        self.previous = parse_utc(part.previous_commit_ts)
        self.positions = {name.lower(): i for i, (name, _) in enumerate(part.columns)}
        self.first_column = 5 if spec.options.include_command_id else 4

    def convert(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        cols = batch.columns
        commit_local = cols[self.first_column - 1]
        commit_utc, self.previous = self.clock.to_utc_array(commit_local, self.previous)
        meta = {
            "_capture_instance": lambda t: constant(self.part.capture_instance, t, n),
            "_start_lsn": lambda t: lsn_text(cols[0]),
            "_seqval": lambda t: lsn_text(cols[1]),
            "_operation": lambda t: cast_to(cols[2], t),
            "_command_id": lambda t: cast_to(cols[3], t),
            "_commit_ts": lambda t: cast_to(commit_utc, t),
        }
        arrays = []
        for field in self.spec.schema:
            make = meta.get(field.name)
            if make is not None:
                arrays.append(make(field.type))
                continue
            position = self.positions.get(field.name.lower())
            if position is None:
                arrays.append(pa.nulls(n, field.type))
            else:
                arrays.append(cast_to(cols[self.first_column + position], field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=self.spec.schema)


def _query(
    client: CdcClient, spec: ReadSpec, part: ChangeRange, low: Lsn, high: Lsn
) -> Iterator[pa.RecordBatch]:
    sql = change_query(
        part.capture_instance, part.columns, include_command_id=spec.options.include_command_id
    )
    converter = _Converter(spec, part)
    for batch in client.batches(sql, [low, high], spec.options.arrow_batch_size):
        if batch.num_rows:
            yield converter.convert(batch)


def read_changes(spec: ReadSpec, part: ChangeRange) -> Iterator[pa.RecordBatch]:
    """Yield the range's change rows as Arrow batches of the declared schema.

    Runs on an executor, once per partition per attempt, on its own connection (closed in
    ``finally``).

    Raises
    ------
    DataLossError
        Cleanup purged part of the range before or during the read (``failOnDataLoss=true``).
    PermissionError
        The login cannot read the change table; the message holds the GRANT.
    """
    options = with_task_token(spec.options, part.access_token)
    client = CdcClient(options)
    low, high = Lsn.parse(part.from_lsn), Lsn.parse(part.to_lsn)
    ci = part.capture_instance
    rows = 0
    warnings: list[str] = []
    try:
        rtt = client.ping_ms() if options.metrics_path else None
        before = client.stats()
        began = time.perf_counter()
        # The change table raises nothing for a range cleanup purged (the query function's
        # error 313): the instance's low endpoint is checked before the read and after it.
        min_lsn = client.min_lsn(ci)
        if is_gone(low, min_lsn):
            if options.fail_on_data_loss:
                raise data_loss_error(ci, low, min_lsn)
            record_skip(
                Skip(ci, low, min_lsn, certain=False, reason="purged before the task read it"),
                options.metrics_path,
            )
            warnings.append(f"{ci}: skipped {low}..{min_lsn.prev()} purged by CDC cleanup")
            low = min_lsn
        if low <= high:
            try:
                for batch in _query(client, spec, part, low, high):
                    rows += batch.num_rows
                    yield batch
            except SqlServerError as exc:
                if is_permission_denied(exc):
                    raise permission_error(options, ci, str(exc)) from exc
                raise
        read_seconds = time.perf_counter() - began
        min_lsn = client.min_lsn(ci)
        if is_gone(low, min_lsn):
            if options.fail_on_data_loss:
                raise data_loss_error(ci, low, min_lsn)
            record_skip(
                Skip(ci, low, min_lsn, certain=False, reason="cleanup ran during the read"),
                options.metrics_path,
            )
            warnings.append(f"{ci}: cleanup passed {low} during the read")
        if options.metrics_path:
            _write_metrics(client, part, _Read(rows, rtt, read_seconds, warnings), before, min_lsn)
    finally:
        client.close()


class _Read(NamedTuple):
    """What a partition's read measured: its rows, the round trip before it (ms), its seconds
    and the warnings it gave."""

    rows: int
    rtt: float | None
    read_seconds: float
    warnings: list[str]


def _write_metrics(
    client: CdcClient,
    part: ChangeRange,
    read: _Read,
    before: dict[str, float],
    min_lsn: Lsn,
) -> None:
    """Write the partition's metrics file (``before``: the client's counters before the
    read); failures only WARN."""
    rows, rtt, read_seconds, warnings = read
    options = client.options
    assert options.metrics_path is not None
    try:
        after = client.stats()
        received = after.get("bytes_received", 0.0) - before.get("bytes_received", 0.0)
        waited = after.get("network_wait_seconds", 0.0) - before.get("network_wait_seconds", 0.0)
        metrics = PartitionMetrics(
            from_lsn=part.from_lsn,
            to_lsn=part.to_lsn,
            rows=rows,
            source_rtt_ms=rtt,
            read_seconds=read_seconds,
            read_mb=received / _MB,
            network_wait_ms=round(waited * 1000),
            warnings=warnings,
        )
        if part.last:
            clock = _clock(part)
            metrics.last = True
            metrics.end_lsn = part.end_lsn or part.to_lsn
            metrics.end_commit_ts = part.end_commit_ts or None
            oldest = client.first_commit_from(min_lsn)
            watermark = None if oldest is None else clock.to_utc(oldest.local_time)
            if watermark is not None:
                metrics.retention_watermark_ts = format_utc(watermark)
            newest = client.max_commit()
            # SQL Server's clock, the clock of the commit times: the reader's own clock may be
            # skewed (docs/monitoring.md, "Capture lag")
            now = client.server_utc()
            newest_utc = None if newest is None else clock.to_utc(newest.local_time)
            if newest_utc is not None:
                metrics.source_max_commit_ts = format_utc(newest_utc)
                metrics.capture_lag_seconds = max((now - newest_utc).total_seconds(), 0.0)
            end_commit = parse_utc(part.end_commit_ts)
            if part.retention_minutes is not None:
                metrics.retention_headroom_hours = headroom_hours(
                    part.retention_minutes, now, end_commit, newest_utc
                )
            else:  # the login cannot read the cleanup job's retention
                metrics.retention_headroom_hours = watermark_headroom_hours(end_commit, watermark)
                if metrics.retention_headroom_hours is not None:
                    metrics.headroom_from = WATERMARK
        metrics_dir(options.metrics_path).write_partition(metrics)
    except (SqlServerError, OSError, ValueError) as exc:
        log.warning(
            "could not write the metrics of range %s..%s: %s", part.from_lsn, part.to_lsn, exc
        )
