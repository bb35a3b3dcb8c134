"""``CdcStream.snapshot()``: a snapshot appended to bronze without starting a query, for a
checkpoint the user starts at its LSN (the manual way back after data loss,
docs/data-loss.md#the-manual-way).

Runs on the driver, in the calling Python process. Without ``resnapshot`` an earlier snapshot
of the table in the target is returned when a stream can still start after it (CDC holds
every change after it); otherwise the table is read (``snapshots.take_snapshot``) and appended
once (with ``resnapshot``, unless the target already holds a snapshot at the very LSN it would
be stamped with: CDC captured nothing since, and a second one would hold every row twice under
that LSN; that one is returned): ``<app_id>#events`` with an app_id (so
``to_delta(app_id=..., bootstrap=True)`` finds it), else ``mssql_cdc#snapshot``; the version is
the next one of that id, recorded before the read.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mssql_cdc._native import Lsn
from mssql_cdc.options import ReaderOptions
from mssql_cdc.pipeline.snapshots import SnapshotKind, offset_of, take_snapshot
from mssql_cdc.sink import (
    MANUAL_SNAPSHOT_APP_ID,
    TableRef,
    events_app_id,
    find_snapshot,
    snapshot_rows,
    snapshot_txn_version,
)
from mssql_cdc.source import find_loss, snapshot_position
from mssql_cdc.types import Offset

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["take_manual_snapshot"]

log = logging.getLogger("mssql_cdc.pipeline")


def take_manual_snapshot(
    spark: SparkSession,
    raw: dict[str, str],
    options: ReaderOptions,
    *,
    target: TableRef,
    app_id: str | None,
    facts: TableRef | None,
    resnapshot: bool,
) -> Offset:
    """See the module doc; ``facts`` is checked by the caller (it needs ``app_id``)."""
    owner = app_id if app_id is not None else MANUAL_SNAPSHOT_APP_ID
    if not resnapshot:
        found, _ = find_snapshot(
            spark,
            target,
            owner,
            lambda: snapshot_position(options).instances,
            usable=lambda lsn: find_loss(options, Lsn.parse(lsn)) is None,
        )
        if found is not None:
            log.info(
                "snapshot of %s: %s already holds one at %s; reading nothing",
                options.capture_instance,
                target.text,
                found,
            )
            return offset_of(found, snapshot_rows(spark, target, found)[1])
    position = snapshot_position(options)
    if resnapshot and target.exists(spark):
        rows, commit_ts = snapshot_rows(spark, target, str(position.lsn))
        if rows:
            # Rows of a snapshot are told apart by its LSN (``_snapshot``): a second one at
            # the same LSN would hold every row twice there.
            log.warning(
                "snapshot of %s: %s already holds a snapshot at %s and CDC has captured "
                "nothing since, so it is returned instead of a second one at the same LSN; "
                "take the new snapshot once a newer commit is captured",
                options.capture_instance,
                target.text,
                position.lsn,
            )
            return offset_of(str(position.lsn), commit_ts)
    txn_app = events_app_id(app_id) if app_id is not None else MANUAL_SNAPSHOT_APP_ID
    version = snapshot_txn_version(spark, target, txn_app) + 1
    taken = take_snapshot(
        spark,
        raw,
        options,
        position,
        target=target,
        app_id=owner,
        facts=None,
        txn=(txn_app, version),
        kind=SnapshotKind("bootstrap", extra={"manual": True}, label="snapshot"),
    )
    return offset_of(taken.lsn, taken.commit_ts)
