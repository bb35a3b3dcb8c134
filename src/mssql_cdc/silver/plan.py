"""What one ``apply_changes`` call reads from bronze: the newest complete snapshot, the change
rows beyond the silver position, and a key's latest image (docs/silver.md).

Runs on the driver and builds DataFrames; no row reaches Python except a few aggregates. The
bronze ordering rule: ``(_start_lsn, _command_id, _seqval, _operation)``, ``_command_id`` only
where bronze has it (docs/sink.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from mssql_cdc.silver.rules import DELETE_COLUMN, order_columns
from mssql_cdc.sink import StreamTables, TargetLedger, snapshot_rows_condition

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import Column, DataFrame, SparkSession

    from mssql_cdc.sink import SnapshotEvents, TableRef

__all__ = [
    "Scan",
    "Snapshot",
    "changes",
    "latest_images",
    "newest_snapshot",
    "scan",
    "snapshot_is_open",
    "transaction_images",
]

log = logging.getLogger("mssql_cdc.silver")


@dataclass(frozen=True)
class Snapshot:
    """A complete snapshot in bronze: its LSN (``_snapshot`` of its rows) and commit time."""

    lsn: str
    commit_ts: datetime | None


@dataclass(frozen=True)
class Scan:
    """The change rows beyond a position: the highest LSN among them (``None``: none), their
    number, and the capture instances they came from (lower case)."""

    upper: str | None
    rows: int
    instances: frozenset[str]


def newest_snapshot(
    spark: SparkSession,
    bronze: TableRef,
    facts: TableRef | None,
    events: SnapshotEvents | None = None,
    after: str | None = None,
) -> Snapshot | None:
    """The newest complete snapshot of bronze: whole-snapshot rows (operation 0, not a chunk;
    written in one commit, so complete once seen) or, with a facts table, the newest
    ``bootstrap``/``resnapshot`` row written for bronze (the only trace of an empty table's
    snapshot; from ``events`` when the call has read them). ``after``: only one newer than this
    LSN (the one silver rebuilt from), whose files are then skipped."""
    found = TargetLedger(StreamTables(spark, bronze, facts)).newest_complete(events, after)
    return None if found is None else Snapshot(*found)


def snapshot_is_open(
    spark: SparkSession,
    bronze: TableRef,
    facts: TableRef,
    done: Snapshot | None,
    lost_after: Callable[[str], bool] | None = None,
    *,
    events: SnapshotEvents | None = None,
) -> bool:
    """True when the facts table records a ``snapshot_open`` for bronze newer than its newest
    complete snapshot ``done`` that is not abandoned (``silver.held``; checked only with
    ``lost_after``, the data-loss question): a snapshot is being taken, so bronze's verdict is
    held. ``events``: bronze's snapshot events when the call has read them."""
    from mssql_cdc.silver.held import abandoned

    ledger = TargetLedger(StreamTables(spark, bronze, facts))
    opened = events.newest_opened() if events is not None else ledger.newest_opened()
    if opened is None or (done is not None and opened.lsn <= done.lsn):
        return False
    if lost_after is None:
        return True
    stream_end = None
    if opened.mode == "chunked":
        batch = ledger.last_batch(opened.app_id)
        stream_end = batch.end_lsn if batch is not None else None
    if abandoned(opened.mode, opened.lsn, stream_end, lost_after):
        log.warning(
            "the %s snapshot of %s at %s (stream %s) can never complete: CDC no longer holds "
            "the changes it needs; it no longer holds silver's verdict",
            opened.mode,
            bronze.text,
            opened.lsn,
            opened.app_id,
        )
        return False
    return True


def _after(lower: str | None) -> Column:
    from pyspark.sql import functions as sf

    change = sf.col("_operation") != 0
    return change if lower is None else change & (sf.col("_start_lsn") > sf.lit(lower))


def scan(bronze: DataFrame, lower: str | None) -> Scan:
    """One aggregate over the change rows after ``lower``: per capture instance, the highest
    LSN and the rows."""
    from pyspark.sql import functions as sf

    rows = (
        bronze.where(_after(lower))
        .groupBy(sf.lower(sf.col("_capture_instance")).alias("ci"))
        .agg(sf.max("_start_lsn").alias("upper"), sf.count(sf.lit(1)).alias("n"))
        .collect()
    )
    uppers = [str(r["upper"]) for r in rows]
    return Scan(
        max(uppers) if uppers else None,
        sum(int(r["n"]) for r in rows),
        frozenset(str(r["ci"]) for r in rows),
    )


def changes(
    bronze: DataFrame,
    lower: str | None,
    upper: str | None,
    snapshot: Snapshot | None,
    also: Column | None = None,
) -> DataFrame:
    """The rows a call applies: change rows in ``(lower, upper]``, on a rebuild the rows of
    ``snapshot`` (``lower`` is then the snapshot's LSN), and the rows ``also`` picks (the
    landed chunks of an open snapshot, ``silver.waves``)."""
    from pyspark.sql import functions as sf

    picked = _after(lower)
    if upper is not None:
        picked = picked & (sf.col("_start_lsn") <= sf.lit(upper))
    else:
        picked = sf.lit(False)
    if snapshot is not None:
        picked = picked | snapshot_rows_condition(bronze.columns, snapshot.lsn)
    if also is not None:
        picked = picked | also
    return bronze.where(picked)


def _with_delete(df: DataFrame) -> DataFrame:
    from pyspark.sql import functions as sf

    return df.withColumn(DELETE_COLUMN, sf.col("_operation").isin(1, 3))


def latest_images(
    rows: DataFrame, keys: list[str], columns: list[str], bronze_columns: list[str]
) -> DataFrame:
    """One row per key (NULL key values grouped as equal): its latest image by the bronze
    order, as ``columns`` (captured), ``_start_lsn``, ``_commit_ts`` and
    ``_mssql_cdc_delete`` (operation 1, or 3: an update that moved the row to another key,
    since the 4 of an update that kept its key outranks its 3)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    order = [sf.col(c).desc() for c in order_columns(bronze_columns)]
    window = Window.partitionBy(*[sf.col(k) for k in keys]).orderBy(*order)
    ranked = rows.withColumn("_mssql_cdc_rank", sf.row_number().over(window))
    picked = ranked.where(sf.col("_mssql_cdc_rank") == 1)
    return _with_delete(picked).select(*columns, "_start_lsn", "_commit_ts", DELETE_COLUMN)


def transaction_images(
    rows: DataFrame, keys: list[str], columns: list[str], bronze_columns: list[str]
) -> DataFrame:
    """One row per key and commit (``_start_lsn``): the key's image when the transaction
    committed, i.e. its last row in the transaction; columns as :func:`latest_images`."""
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    order = [sf.col(c).desc() for c in order_columns(bronze_columns) if c != "_start_lsn"]
    window = Window.partitionBy(*[sf.col(k) for k in keys], sf.col("_start_lsn")).orderBy(*order)
    ranked = rows.withColumn("_mssql_cdc_rank", sf.row_number().over(window))
    picked = ranked.where(sf.col("_mssql_cdc_rank") == 1)
    return _with_delete(picked).select(*columns, "_start_lsn", "_commit_ts", DELETE_COLUMN)
