"""``to_delta(bootstrap=True)``: the table's current rows appended to bronze once, before the
stream starts at the snapshot's LSN (docs/bootstrap.md; ADR 0022).

Runs on the driver, in the calling Python process, before the query starts:

1. find an earlier snapshot: this app_id's ``bootstrap`` facts row for this target (the same
   table in any spelling; ``to_delta`` has refused an app_id recorded for another target), else
   this app_id's snapshot
   commit in the target (``txnAppId`` ``<app_id>#events``), else operation-0 rows of any
   capture instance of the table, as long as CDC still holds every change after them (a
   snapshot another stream took before changes were purged is no start: a new app_id after a
   ``DataLossError`` takes a new snapshot, ADR 0100); found, nothing is read (a missing
   ``bootstrap`` row is written from the target's rows);
2. otherwise record the snapshot LSN L (``sys.fn_cdc_get_max_lsn()``), write the
   ``snapshot_open`` facts row, read the table through ``format("mssql_cdc_snapshot")`` stamped
   with L, append it in one commit (``txnAppId`` ``<app_id>#events``, ``txnVersion`` 0, so a
   rerun after a crash cannot append it twice) and write the ``bootstrap`` facts row (same
   idempotency key, on the facts table).

The stream then starts with ``startingLsn`` = L, taken as already processed, so every change
committed during the read arrives as a change after it: the latest image per key is the
table's. Both ends log at INFO under ``mssql_cdc.snapshots`` (``snapshots.full``). Every
read and write of bronze and facts goes through the stream's ``Ledger`` (``mssql_cdc.sink``),
which owns the tables and picks every commit's transaction.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.sink import Bootstrapped
from mssql_cdc.snapshots.full import take_snapshot

if TYPE_CHECKING:
    from mssql_cdc.sink import Ledger
    from mssql_cdc.snapshots.reader import TableReader

__all__ = ["Bootstrap", "bootstrap"]

log = logging.getLogger("mssql_cdc.snapshots")


@dataclass(frozen=True)
class Bootstrap:
    """The outcome: the snapshot LSN the stream starts after, and whether this run read the
    table (``rows`` is what it appended; ``None`` when it found an earlier snapshot)."""

    snapshot_lsn: str
    taken: bool
    rows: int | None = None


def _still_a_start(reader: TableReader, app_id: str, lsn: str) -> bool:
    """Whether a stream can start after the snapshot ``lsn`` without ``DataLossError``."""
    loss = reader.loss_after(lsn)
    if loss is None:
        return True
    log.info(
        "%s: the snapshot at %s in bronze is older than what CDC holds (%s min_lsn %s): "
        "taking a new snapshot",
        app_id,
        lsn,
        loss.capture_instance,
        loss.min_lsn,
    )
    return False


def _find(reader: TableReader, ledger: Ledger) -> tuple[str | None, bool]:
    """The LSN of an earlier snapshot, and whether its ``bootstrap`` facts row is missing."""
    recorded = ledger.bootstrap_lsn()
    if recorded is not None:
        return recorded, False
    return ledger.found_snapshot(
        reader.instances, lambda lsn: _still_a_start(reader, ledger.stream, lsn)
    )


def _take(reader: TableReader, ledger: Ledger) -> Bootstrap:
    commit = ledger.snapshot_commit("bootstrap")
    taken = take_snapshot(reader, ledger, commit, reader.position())
    if ledger.tables.facts is not None:
        ledger.close(
            Bootstrapped(
                taken.lsn, taken.commit_ts, taken.rows, taken.started_at, taken.duration_ms
            )
        )
    return Bootstrap(taken.lsn, taken=True, rows=taken.rows)


def bootstrap(reader: TableReader, ledger: Ledger) -> Bootstrap:
    """Finds or takes the stream's bootstrap snapshot (see the module doc).

    Args:
        reader: the table, read with the stream's options (without ``startingLsn``).
        ledger: the stream's ledger (generation 0).

    Returns:
        The snapshot LSN for ``startingLsn`` and whether the table was read.

    Raises:
        ValueError, PermissionError, SqlServerError: from the source (unknown capture
            instance, missing grant, SQL Server errors after retries).
    """
    found, repair = _find(reader, ledger)
    if found is None:
        return _take(reader, ledger)
    log.info(
        "%s: bootstrap of %s: snapshot at %s already in %s; reading nothing",
        ledger.stream,
        reader.capture_instance,
        found,
        ledger.target.text,
    )
    if repair and ledger.tables.facts is not None:
        rows, commit_ts = ledger.snapshot_rows(found)
        ledger.close(Bootstrapped(found, commit_ts, rows, None, None))
    return Bootstrap(found, taken=False)
