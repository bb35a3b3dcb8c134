"""``CdcStream.snapshot()``: a snapshot appended to bronze without starting a query, for a
checkpoint the user starts at its LSN (the manual way back after data loss,
docs/data-loss.md#the-manual-way).

Runs on the driver, in the calling Python process. Without ``resnapshot`` an earlier snapshot
of the table in the target is returned when a stream can still start after it (CDC holds
every change after it); otherwise the table is read (``full.take_snapshot``) and appended
once (with ``resnapshot``, unless the target already holds a snapshot at the very LSN it would
be stamped with: CDC captured nothing since, and a second one would hold every row twice under
that LSN; that one is returned), under the transaction the ledger picks before the read (the
stream's when an app_id is given, so ``to_delta(app_id=..., bootstrap=True)`` finds it;
``Ledger.snapshot_commit``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mssql_cdc.snapshots.full import offset_of, take_snapshot
from mssql_cdc.types import Offset

if TYPE_CHECKING:
    from mssql_cdc.sink import Ledger
    from mssql_cdc.snapshots.reader import TableReader

__all__ = ["take_manual_snapshot"]

log = logging.getLogger("mssql_cdc.snapshots")


def take_manual_snapshot(reader: TableReader, ledger: Ledger, *, resnapshot: bool) -> Offset:
    """See the module doc; ``ledger`` is the stream's (``app_id`` ``None``: no stream). No
    facts row is written."""
    if not resnapshot:
        found, _ = ledger.found_snapshot(
            reader.instances, usable=lambda lsn: reader.loss_after(lsn) is None
        )
        if found is not None:
            log.info(
                "snapshot of %s: %s already holds one at %s; reading nothing",
                reader.capture_instance,
                ledger.target.text,
                found,
            )
            return offset_of(found, ledger.snapshot_rows(found)[1])
    position = reader.position()
    if resnapshot:
        rows, commit_ts = ledger.snapshot_rows(str(position.lsn))
        if rows:
            # Rows of a snapshot are told apart by its LSN (``_snapshot``): a second one at
            # the same LSN would hold every row twice there.
            log.warning(
                "snapshot of %s: %s already holds a snapshot at %s and CDC has captured "
                "nothing since, so it is returned instead of a second one at the same LSN; "
                "take the new snapshot once a newer commit is captured",
                reader.capture_instance,
                ledger.target.text,
                position.lsn,
            )
            return offset_of(str(position.lsn), commit_ts)
    commit = ledger.snapshot_commit("manual")
    taken = take_snapshot(reader, ledger, commit, position)
    return offset_of(taken.lsn, taken.commit_ts)
