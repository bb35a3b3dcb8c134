"""Where a downstream table rebuilds from: the newest whole snapshot of a bronze table
(docs/bootstrap.md, docs/silver.md). Runs on the driver; reads bronze and facts, writes nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.sink import StreamTables, TargetLedger
from mssql_cdc.snapshots.full import offset_of
from mssql_cdc.types import Offset

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["newest_snapshot"]


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
    found = TargetLedger(StreamTables.parse(spark, target, facts_table)).newest_complete()
    return None if found is None else offset_of(*found)
