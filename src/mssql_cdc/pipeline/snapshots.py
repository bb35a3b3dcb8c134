"""Reading the tracked table into bronze as one snapshot: the step the bootstrap, ``snapshot()``
and a re-snapshot share (docs/bootstrap.md).

Runs on the driver, in the calling Python process: the snapshot LSN is recorded before the
read, a ``snapshot_open`` facts row is written first (with a facts table), the table is read
through ``format("mssql_cdc_snapshot")`` stamped with that LSN and appended in one commit whose
transaction the caller names (``mssql_cdc.sink.ledger.ids``), so a rerun after a
crash cannot append it twice. Start and end are logged at INFO under ``mssql_cdc.pipeline``
(rows, seconds). The caller writes the closing facts row (``bootstrap`` or ``resnapshot``).
:func:`newest_snapshot` answers where a downstream table rebuilds from.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from mssql_cdc.options import ReaderOptions
from mssql_cdc.sink import (
    TableRef,
    Txn,
    newest_snapshot_event,
    newest_whole_snapshot,
    snapshot_rows,
    table_ref,
    utc_now,
    write_snapshot,
    write_snapshot_open,
)
from mssql_cdc.source import SnapshotPosition, format_utc
from mssql_cdc.types import Offset

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from mssql_cdc.sink import SnapshotEvents

__all__ = [
    "SnapshotKind",
    "Taken",
    "newest_complete_snapshot",
    "newest_snapshot",
    "offset_of",
    "read_options",
    "snapshot_frame",
    "snapshot_rows_condition",
    "take_snapshot",
]

log = logging.getLogger("mssql_cdc.pipeline")


@dataclass(frozen=True)
class Taken:
    """A snapshot this run read: its LSN, commit time, rows and when and how long."""

    lsn: str
    commit_ts: datetime | None
    rows: int
    started_at: datetime
    duration_ms: int


@dataclass(frozen=True)
class SnapshotKind:
    """What a snapshot is for: ``event`` (``bootstrap``, ``resnapshot`` or ``snapshot``), the
    generation it opens, and the lost range a re-snapshot recovers."""

    event: str = "bootstrap"
    generation: int = 0
    lost_from_ts: datetime | None = None
    lost_to_ts: datetime | None = None
    extra: dict[str, object] = field(default_factory=dict)
    #: the name in the log lines (default ``event``)
    label: str = ""


def read_options(raw: dict[str, str]) -> dict[str, str]:
    """The data source options a snapshot read takes (no ``metricsPath``, no ``startingLsn``)."""
    dropped = {"metricspath", "startinglsn"}
    return {k: v for k, v in raw.items() if k.lower() not in dropped}


def snapshot_frame(spark: SparkSession, raw: dict[str, str], lsn: str) -> DataFrame:
    """The table's current rows in the stream's schema, stamped with ``lsn``."""
    options = read_options(raw)
    options["snapshotLsn"] = lsn
    return spark.read.format("mssql_cdc_snapshot").options(**options).load()


def take_snapshot(
    spark: SparkSession,
    raw: dict[str, str],
    options: ReaderOptions,
    position: SnapshotPosition,
    *,
    target: TableRef,
    app_id: str,
    facts: TableRef | None,
    txn: Txn,
    kind: SnapshotKind,
) -> Taken:
    """Reads the table at ``position`` and appends it to ``target`` once per ``txn``.

    Args:
        app_id: the stream's sink id written in the facts rows and the commit's metadata.
        facts: the facts table for the ``snapshot_open`` row, or ``None``.
        txn: the append's transaction (``sink.ledger.ids``).
    """
    lsn = str(position.lsn)
    label = kind.label or kind.event
    log.info(
        "%s: %s of %s into %s started: snapshot LSN %s, reading the table",
        app_id,
        label,
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
            kind="resnapshot" if kind.event == "resnapshot" else "bootstrap",
            generation=kind.generation,
            lost_from_ts=kind.lost_from_ts,
            lost_to_ts=kind.lost_to_ts,
        )
    started_at, clock = utc_now(), time.monotonic()
    write_snapshot(
        spark,
        target,
        snapshot_frame(spark, raw, lsn),
        app_id=app_id,
        snapshot_lsn=lsn,
        capture_instance=options.capture_instance,
        event=kind.event,
        txn=txn,
        extra={"generation": kind.generation, **kind.extra},
    )
    rows, _ = snapshot_rows(spark, target, lsn)
    duration_ms = round((time.monotonic() - clock) * 1000)
    log.info(
        "%s: %s of %s done: %d rows at %s appended to %s in %.1f s",
        app_id,
        label,
        options.capture_instance,
        rows,
        lsn,
        target.text,
        duration_ms / 1000,
    )
    return Taken(lsn, position.commit_ts, rows, started_at, duration_ms)


def offset_of(lsn: str, commit_ts: datetime | None) -> Offset:
    """The public :class:`~mssql_cdc.types.Offset` of a snapshot."""
    return {"lsn": lsn, "commit_ts": format_utc(commit_ts)}


def newest_snapshot(
    spark: SparkSession, target: str, facts_table: str | None = None
) -> Offset | None:
    """The newest whole snapshot of a bronze table: the point a downstream table rebuilds
    from (its rows are the operation-0 rows whose ``coalesce(_snapshot, _start_lsn)`` is the
    returned ``lsn``; then every change after it).

    The newest of the target's whole operation-0 snapshots and, with ``facts_table``, of the
    ``bootstrap``/``resnapshot`` facts rows written for it (the only trace of an empty table's
    snapshot).

    Args:
        spark: the session.
        target: the bronze table (name or path), as given to ``to_delta``.
        facts_table: the facts table, or ``None``.

    Returns:
        The snapshot's offset, or ``None`` when there is none.
    """
    facts_ref = None if facts_table is None else table_ref(facts_table, "facts_table")
    found = newest_complete_snapshot(spark, table_ref(target, "target"), facts_ref)
    return None if found is None else offset_of(*found)


def snapshot_rows_condition(columns: Sequence[str], lsn: str) -> Column:
    """Which bronze rows are the snapshot ``lsn`` (one :func:`newest_complete_snapshot`
    returned): the operation-0 rows whose ``coalesce(_snapshot, _start_lsn)`` is ``lsn``, a
    chunked snapshot's chunk rows included (its ``_snapshot`` is ``lsn``; it is complete once
    that LSN is returned, never before). ``columns``: bronze's columns."""
    from pyspark.sql import functions as sf

    stamp = (
        sf.coalesce(sf.col("_snapshot"), sf.col("_start_lsn"))
        if "_snapshot" in columns
        else sf.col("_start_lsn")
    )
    return (sf.col("_operation") == 0) & (stamp == sf.lit(lsn))


def newest_complete_snapshot(
    spark: SparkSession,
    target: TableRef,
    facts: TableRef | None,
    events: SnapshotEvents | None = None,
    after: str | None = None,
) -> tuple[str, datetime | None] | None:
    """The rule behind :func:`newest_snapshot` (``apply_changes`` rebuilds from it too): the
    newest of the target's whole operation-0 snapshots and, with ``facts``, of the
    ``bootstrap``/``resnapshot`` facts rows written for it; its LSN and commit time.
    ``events``: the target's snapshot events already read from ``facts`` (not read again);
    ``after``: only a snapshot newer than this LSN counts (``None`` when there is none)."""
    found: list[tuple[str, datetime | None]] = []
    whole = newest_whole_snapshot(spark, target, after)
    if whole is not None:
        found.append(whole)
    if facts is not None:
        event = (
            events.newest_done()
            if events is not None
            else newest_snapshot_event(spark, facts, target)
        )
        if event is not None and (after is None or event[0] > after):
            found.append(event)
    return max(found, key=lambda f: f[0]) if found else None
