"""Reading the tracked table into bronze as one whole snapshot: the step the bootstrap,
``snapshot()``, a re-snapshot and the switch snapshot share (docs/bootstrap.md).

Runs on the driver, in the calling Python process: the snapshot LSN is recorded before the
read (the caller's position), the bootstrap and a re-snapshot announce the read with a
``snapshot_open`` facts row first, the table is read through ``format("mssql_cdc_snapshot")``
stamped with that LSN and appended in one commit whose transaction the ledger picked
(``SnapshotCommit``), so a rerun after a crash cannot append it twice. Start and end are logged
at INFO under ``mssql_cdc.snapshots`` (rows, seconds). The caller closes the snapshot (the
``bootstrap`` or ``resnapshot`` row) through the ledger.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from mssql_cdc.sink import SnapshotOpened, utc_now
from mssql_cdc.source import SnapshotPosition, format_utc
from mssql_cdc.types import Offset

if TYPE_CHECKING:
    from mssql_cdc.sink import Ledger, SnapshotCommit
    from mssql_cdc.snapshots.reader import TableReader

__all__ = ["Taken", "offset_of", "take_snapshot"]

log = logging.getLogger("mssql_cdc.snapshots")

#: how the log lines name each kind of whole snapshot
_LABELS = {
    "bootstrap": "bootstrap",
    "manual": "snapshot",
    "resnapshot": "resnapshot",
    "switch": "snapshot after the capture-instance switch",
}


@dataclass(frozen=True)
class Taken:
    """A snapshot this run read: its LSN, commit time, rows and when and how long."""

    lsn: str
    commit_ts: datetime | None
    rows: int
    started_at: datetime
    duration_ms: int


def take_snapshot(
    reader: TableReader,
    ledger: Ledger,
    commit: SnapshotCommit,
    position: SnapshotPosition,
    lost: tuple[datetime | None, datetime | None] = (None, None),
) -> Taken:
    """Reads the table at ``position`` and appends it to bronze once (``commit``, prepared by
    ``ledger``); a bootstrap or re-snapshot writes its ``snapshot_open`` row first (with a
    facts table), a re-snapshot's recording its ``lost`` range.

    Raises:
        PermissionError, SqlServerError: from the read of SQL Server.
    """
    lsn = str(position.lsn)
    label = _LABELS[commit.kind]
    target = ledger.target.text
    log.info(
        "%s: %s of %s into %s started: snapshot LSN %s, reading the table",
        commit.owner,
        label,
        reader.capture_instance,
        target,
        lsn,
    )
    if commit.opens:
        ledger.open_full(SnapshotOpened(lsn, position.commit_ts, commit.generation, "full", *lost))
    started_at, clock = utc_now(), time.monotonic()
    ledger.append_snapshot(commit, reader.frame(lsn), lsn, reader.capture_instance)
    rows, _ = ledger.snapshot_rows(lsn)
    duration_ms = round((time.monotonic() - clock) * 1000)
    log.info(
        "%s: %s of %s done: %d rows at %s appended to %s in %.1f s",
        commit.owner,
        label,
        reader.capture_instance,
        rows,
        lsn,
        target,
        duration_ms / 1000,
    )
    return Taken(lsn, position.commit_ts, rows, started_at, duration_ms)


def offset_of(lsn: str, commit_ts: datetime | None) -> Offset:
    """The public :class:`~mssql_cdc.types.Offset` of a snapshot."""
    return {"lsn": lsn, "commit_ts": format_utc(commit_ts)}
