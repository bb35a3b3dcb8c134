"""The source side of a bootstrap: the snapshot LSN and the table's capture instances.

Runs in the calling Python process (the driver), on one connection of the native client,
before the snapshot is read (docs/streaming.md#bootstrap).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from mssql_cdc._native import Lsn
from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.clock import resolve_clock
from mssql_cdc.source.planner import find_instance
from mssql_cdc.source.retry import with_retry

__all__ = ["SnapshotPosition", "snapshot_position"]


@dataclass(frozen=True)
class SnapshotPosition:
    """Where a snapshot stands: ``lsn`` (taken as processed by the stream that follows it),
    its commit time in UTC (``None`` when no commit has that LSN) and the capture instances of
    the table, oldest first."""

    lsn: Lsn
    commit_ts: dt.datetime | None
    instances: tuple[str, ...]


def _position(client: CdcClient) -> SnapshotPosition:
    _, siblings = find_instance(client)
    newest = siblings[-1]
    top = client.max_commit()
    lsn = top.lsn if top is not None else Lsn(bytes(10))
    if lsn < newest.start_lsn:  # capture has not reached the newest instance yet
        lsn = newest.start_lsn.prev()
    commit_ts = None
    commit = client.commit_at_or_before(lsn)
    if commit is not None and commit.lsn == lsn:
        options = client.options
        clock = resolve_clock(
            options.source_time_zone,
            lambda: client.scalar("SELECT CURRENT_TIMEZONE_ID()"),
            lambda: client.scalar("SELECT DATEDIFF(MINUTE, SYSUTCDATETIME(), SYSDATETIME())"),
        )
        commit_ts = clock.to_utc(commit.local_time)
    return SnapshotPosition(lsn, commit_ts, tuple(i.name for i in siblings))


def snapshot_position(options: ReaderOptions) -> SnapshotPosition:
    """Records the snapshot LSN: ``sys.fn_cdc_get_max_lsn()``, or the newest capture instance's
    first LSN minus one when capture has not reached it.

    Raises:
        ValueError: the capture instance does not exist.
        PermissionError: the login cannot read its change data.
        SqlServerError: after the driver-side retries of transient errors.
    """
    client = CdcClient(options)
    try:
        return with_retry(client, "snapshot position", lambda: _position(client))
    finally:
        client.close()
