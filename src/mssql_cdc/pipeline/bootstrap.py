"""``to_delta(bootstrap=True)``: the table's current rows appended to bronze once, before the
stream starts at the snapshot's LSN (docs/streaming.md#bootstrap; ADR 0022).

Runs on the driver, in the calling Python process, before the query starts:

1. find an earlier snapshot: this app_id's ``bootstrap`` facts row for this target (the same
   table in any spelling; ``to_delta`` has refused an app_id recorded for another target), else
   this app_id's snapshot
   commit in the target (``txnAppId`` ``<app_id>#events``), else operation-0 rows of any
   capture instance of the table; found, nothing is read (a missing ``bootstrap`` row is
   written from the target's rows);
2. otherwise record the snapshot LSN L (``sys.fn_cdc_get_max_lsn()``), write the
   ``snapshot_open`` facts row, read the table through ``format("mssql_cdc_snapshot")`` stamped
   with L, append it in one commit (``txnAppId`` ``<app_id>#events``, ``txnVersion`` 0, so a
   rerun after a crash cannot append it twice) and write the ``bootstrap`` facts row (same
   idempotency key, on the facts table).

The stream then starts with ``startingLsn`` = L, taken as already processed, so every change
committed during the read arrives as a change after it: the latest image per key is the
table's. Both ends log at INFO under ``mssql_cdc.pipeline``. Every read and write of bronze and
facts goes through ``mssql_cdc.sink``, which owns the tables and names the ``txnAppId`` values.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.options import ReaderOptions
from mssql_cdc.sink import (
    TableRef,
    bootstrap_lsn,
    find_snapshot,
    snapshot_rows,
    utc_now,
    write_bootstrap,
    write_snapshot,
    write_snapshot_open,
)
from mssql_cdc.source import snapshot_position

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Bootstrap", "bootstrap"]

log = logging.getLogger("mssql_cdc.pipeline")


@dataclass(frozen=True)
class Bootstrap:
    """The outcome: the snapshot LSN the stream starts after, and whether this run read the
    table (``rows`` is what it appended; ``None`` when it found an earlier snapshot)."""

    snapshot_lsn: str
    taken: bool
    rows: int | None = None


def _find(
    spark: SparkSession,
    options: ReaderOptions,
    target: TableRef,
    app_id: str,
    facts: TableRef | None,
) -> tuple[str | None, bool]:
    """The LSN of an earlier snapshot, and whether its ``bootstrap`` facts row is missing."""
    recorded = bootstrap_lsn(spark, facts, app_id, target)
    if recorded is not None:
        return recorded, False
    return find_snapshot(spark, target, app_id, lambda: snapshot_position(options).instances)


def _take(
    spark: SparkSession,
    raw: dict[str, str],
    options: ReaderOptions,
    *,
    target: TableRef,
    app_id: str,
    facts: TableRef | None,
) -> Bootstrap:
    position = snapshot_position(options)
    lsn = str(position.lsn)
    log.info(
        "%s: bootstrap of %s into %s: snapshot LSN %s, reading the table",
        app_id,
        options.capture_instance,
        target.text,
        lsn,
    )
    if facts is not None:
        write_snapshot_open(
            spark,
            facts,
            app_id=app_id,
            snapshot_lsn=lsn,
            commit_ts=position.commit_ts,
            target=target,
        )
    started_at, clock = utc_now(), time.monotonic()
    read_options = {k: v for k, v in raw.items() if k.lower() != "metricspath"}
    read_options["snapshotLsn"] = lsn
    df = spark.read.format("mssql_cdc_snapshot").options(**read_options).load()
    write_snapshot(
        spark,
        target,
        df,
        app_id=app_id,
        snapshot_lsn=lsn,
        capture_instance=options.capture_instance,
    )
    rows, _ = snapshot_rows(spark, target, lsn)
    duration_ms = round((time.monotonic() - clock) * 1000)
    if facts is not None:
        write_bootstrap(
            spark,
            facts,
            app_id=app_id,
            target=target,
            lsn=lsn,
            commit_ts=position.commit_ts,
            rows=rows,
            started_at=started_at,
            duration_ms=duration_ms,
        )
    log.info(
        "%s: bootstrap of %s done: %d rows at %s appended to %s in %.1f s",
        app_id,
        options.capture_instance,
        rows,
        lsn,
        target.text,
        duration_ms / 1000,
    )
    return Bootstrap(lsn, taken=True, rows=rows)


def bootstrap(
    spark: SparkSession,
    raw: dict[str, str],
    options: ReaderOptions,
    *,
    target: TableRef,
    app_id: str,
    facts: TableRef | None,
) -> Bootstrap:
    """Finds or takes the stream's bootstrap snapshot (see the module doc).

    Args:
        raw: the data source options (canonical names, string values), without
            ``startingLsn``.
        options: the same, parsed.

    Returns:
        The snapshot LSN for ``startingLsn`` and whether the table was read.

    Raises:
        ValueError, PermissionError, SqlServerError: from the source (unknown capture
            instance, missing grant, SQL Server errors after retries).
    """
    found, repair = _find(spark, options, target, app_id, facts)
    if found is None:
        return _take(spark, raw, options, target=target, app_id=app_id, facts=facts)
    log.info(
        "%s: bootstrap of %s: snapshot at %s already in %s; reading nothing",
        app_id,
        options.capture_instance,
        found,
        target.text,
    )
    if repair and facts is not None:
        rows, commit_ts = snapshot_rows(spark, target, found)
        write_bootstrap(
            spark,
            facts,
            app_id=app_id,
            target=target,
            lsn=found,
            commit_ts=commit_ts,
            rows=rows,
            started_at=None,
            duration_ms=None,
        )
    return Bootstrap(found, taken=False)
