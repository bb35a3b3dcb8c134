"""Counting a micro-batch: one aggregation over the cached change rows.

Runs on the driver (the aggregation's tasks on the executors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.sink.facts import BatchCounts

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["count_batch"]


def count_batch(df: DataFrame) -> BatchCounts:
    """Counts ``df``'s rows per operation and its ``_start_lsn`` / ``_commit_ts`` ranges.

    ``df`` has the stream's metadata columns (``_start_lsn`` STRING, ``_operation`` INT,
    ``_commit_ts`` TIMESTAMP_NTZ). Runs one Spark job; ranges are ``None`` when there are no
    rows.
    """
    from pyspark.sql import functions as sf

    def ops(code: int) -> Column:
        return sf.coalesce(sf.sum(sf.when(sf.col("_operation") == code, 1).otherwise(0)), sf.lit(0))

    row = df.agg(
        sf.count(sf.lit(1)).alias("rows"),
        sf.min("_start_lsn").alias("min_lsn"),
        sf.max("_start_lsn").alias("max_lsn"),
        sf.min("_commit_ts").alias("min_commit_ts"),
        sf.max("_commit_ts").alias("max_commit_ts"),
        ops(1).alias("deletes"),
        ops(2).alias("inserts"),
        ops(4).alias("updates"),
    ).first()
    assert row is not None  # a global aggregation always returns one row
    return BatchCounts(
        rows=int(row["rows"]),
        min_lsn=row["min_lsn"],
        max_lsn=row["max_lsn"],
        min_commit_ts=row["min_commit_ts"],
        max_commit_ts=row["max_commit_ts"],
        deletes=int(row["deletes"]),
        inserts=int(row["inserts"]),
        updates=int(row["updates"]),
    )
