"""Where a reader starts: the rules that turn the server's LSNs into a first position
(docs/data-loss.md#where-a-stream-or-snapshot-starts).

* ``sys.fn_cdc_get_max_lsn()`` is NULL until capture writes its first ``cdc.lsn_time_mapping``
  row; it counts as the zero LSN.
* A capture instance's ``start_lsn`` (``cdc.change_tables``; ``sys.fn_cdc_get_min_lsn`` returns
  the same column) is NULL until capture has processed the instance's creation; such an
  instance is left out. With none of the table's instances set, no position is taken: any LSN
  chosen could lie below the start capture sets later, and the next read would look like a
  loss (``ValueError``, retry once capture ran).
* When capture has not reached an instance yet (``max_lsn`` below its ``start_lsn``), the
  position is the LSN just before the instance's ``start_lsn``, never lower: the instance holds
  nothing at or below its start, so a read from there loses nothing, and the data-loss rule
  (:mod:`mssql_cdc.source.retention`: a first LSN below the oldest instance's ``start_lsn``
  is gone) stays exact.

The stream's ``startingLsn=earliest|latest`` and the snapshot LSN (``snapshotLsn`` unset, and a
bootstrap's :func:`snapshot_position`) use these rules; nothing else computes a first position.
A seed's position (:func:`seed_position`) is the user's: the last commit at or before the time
the copy was read, or an LSN recorded before it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from mssql_cdc._native import Lsn
from mssql_cdc.errors import DataLossError
from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.catalog import find_instance
from mssql_cdc.source.client import CaptureInstance, CdcClient, Commit
from mssql_cdc.source.retry import with_retry

__all__ = [
    "ZERO",
    "SnapshotPosition",
    "earliest_position",
    "latest_position",
    "seed_position",
    "snapshot_lsn",
    "snapshot_position",
]

_UTC = dt.timezone.utc

#: the zero LSN: what a NULL ``max_lsn`` counts as
ZERO = Lsn(bytes(10))


def _established(instances: Sequence[CaptureInstance]) -> list[CaptureInstance]:
    """The table's instances whose ``start_lsn`` capture has set, oldest first;
    ``ValueError`` when it has set none."""
    out = sorted((i for i in instances if i.start_lsn != ZERO), key=lambda i: bytes(i.start_lsn))
    if not out:
        names = ", ".join(repr(i.name) for i in instances)
        raise ValueError(
            f"Capture instance {names} has no start_lsn yet: the capture job has not "
            "processed its creation (sys.fn_cdc_get_min_lsn returns 0x00000000000000000000). "
            "Start the capture job (SQL Server Agent, or EXEC sys.sp_cdc_scan) and retry once "
            "it ran"
        )
    return out


def _high(max_commit: Commit | None) -> Lsn:
    """``sys.fn_cdc_get_max_lsn()``, the zero LSN while capture never wrote a commit."""
    return max_commit.lsn if max_commit is not None else ZERO


def _at_or_before_start(max_commit: Commit | None, instance: CaptureInstance) -> Lsn:
    high = _high(max_commit)
    return instance.start_lsn.prev() if high < instance.start_lsn else high


def earliest_position(instances: Sequence[CaptureInstance]) -> Lsn:
    """``startingLsn=earliest``: just before the oldest instance's ``start_lsn``."""
    return _established(instances)[0].start_lsn.prev()


def latest_position(max_commit: Commit | None, instances: Sequence[CaptureInstance]) -> Lsn:
    """``startingLsn=latest``: ``max_lsn``, or just before the oldest instance's
    ``start_lsn`` while capture has not reached it (a NULL ``max_lsn`` included)."""
    return _at_or_before_start(max_commit, _established(instances)[0])


def snapshot_lsn(max_commit: Commit | None, instances: Sequence[CaptureInstance]) -> Lsn:
    """The default snapshot LSN: ``max_lsn``, or just before the newest instance's
    ``start_lsn`` while capture has not reached it (a NULL ``max_lsn`` included)."""
    return _at_or_before_start(max_commit, _established(instances)[-1])


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
    lsn = snapshot_lsn(client.max_commit(), siblings)
    return SnapshotPosition(lsn, client.commit_time(lsn), tuple(i.name for i in siblings))


def snapshot_position(options: ReaderOptions) -> SnapshotPosition:
    """The snapshot LSN (:func:`snapshot_lsn`) and the table's capture instances, for a
    bootstrap. Runs in the calling Python process (the driver), before the snapshot is read.

    Raises:
        ValueError: the capture instance does not exist, or capture has not set its start.
        PermissionError: the login cannot read its change data.
        SqlServerError: after the driver-side retries of transient errors.
    """
    client = CdcClient(options)
    try:
        return with_retry(client, "snapshot position", lambda: _position(client))
    finally:
        client.close()


def _server_local(client: CdcClient, as_of: dt.datetime) -> dt.datetime:
    """``as_of`` (aware: converted; naive: UTC) on the server's clock, naive."""
    utc = as_of.astimezone(dt.timezone.utc) if as_of.tzinfo else as_of.replace(tzinfo=_UTC)
    clock = client.server_clock()
    if clock.zone is None:
        return utc.replace(tzinfo=None) + dt.timedelta(minutes=clock.offset_minutes)
    if clock.is_utc:
        return utc.replace(tzinfo=None)
    return utc.astimezone(ZoneInfo(clock.zone)).replace(tzinfo=None)


def _seed(client: CdcClient, as_of: dt.datetime | Lsn) -> SnapshotPosition:
    _, siblings = find_instance(client)
    names = tuple(i.name for i in siblings)
    newest = client.max_commit()
    if isinstance(as_of, Lsn):
        if as_of > _high(newest):
            raise ValueError(
                f"as_of {as_of} is after sys.fn_cdc_get_max_lsn() ({_high(newest)}): not "
                "recorded yet. Give the LSN recorded before the copy was read (SELECT "
                "CONVERT(varchar(22), sys.fn_cdc_get_max_lsn(), 1))"
            )
        return SnapshotPosition(as_of, client.commit_time(as_of), names)
    local = _server_local(client, as_of)
    text = local.strftime("%Y-%m-%dT%H:%M:%S.") + f"{local.microsecond // 1000:03d}"
    found = client.scalar(
        "SELECT sys.fn_cdc_map_time_to_lsn('largest less than or equal', @P1)", [text]
    )
    if not isinstance(found, (bytes, bytearray)):
        raise DataLossError(
            f"cdc.lsn_time_mapping holds no commit at or before {as_of.isoformat()} "
            f"({text} on the server's clock): the copy is older than what CDC holds. Seed from "
            "a newer copy"
        )
    lsn = Lsn(bytes(found))
    return SnapshotPosition(lsn, client.commit_time(lsn), names)


def seed_position(options: ReaderOptions, as_of: dt.datetime | Lsn) -> SnapshotPosition:
    """The position of a copy read from the table: ``as_of`` an LSN recorded before the read
    (exact), or the time the read started (the last commit at or before it in
    ``cdc.lsn_time_mapping``, on the server's clock, to the millisecond; ``sourceTimeZone``
    says how the server's clock maps to UTC).

    Raises:
        DataLossError: no commit at or before the time.
        ValueError: an LSN after ``sys.fn_cdc_get_max_lsn()``; an unknown capture instance.
        PermissionError, SqlServerError: from the source.
    """
    client = CdcClient(options)
    try:
        return with_retry(client, "seed position", lambda: _seed(client, as_of))
    finally:
        client.close()
