"""Type 2 silver: the versions one call writes (docs/silver.md, "Type 2").

A version is a key's image as a transaction committed it (its last row in the transaction),
valid from that commit's time (``__START_AT``) until the commit that replaced or deleted it
(``__END_AT``; NULL while current). The call's input, per key and commit, is turned into the
rows its MERGE writes:

* events older than or as old as what silver already holds for the key are dropped (a replay
  after a crash, a snapshot row older than the key's history): the timeline never breaks;
* the key's open version in silver is the first event, so a change continues it;
* an image opens a version when the key had none open or a tracked column changed (compared
  null-safe); otherwise it rewrites the open version's untracked columns in place;
* a delete (operation 1, or 3 when the update moved the row to another key) closes the open
  version; a later image opens a new one;
* on a rebuild from a snapshot, an open version whose key the snapshot lacks is closed at the
  snapshot (the key was deleted in the gap the snapshot covers).

Everything is DataFrame work on the driver's plan; no row reaches Python.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.silver.rules import DELETE_COLUMN
from mssql_cdc.sink.ddl import quote_identifier
from mssql_cdc.sink.schemas import SILVER_HISTORY

if TYPE_CHECKING:
    from datetime import datetime

    from pyspark.sql import Column, DataFrame

__all__ = ["snapshot_deletes", "versions"]

_PRIOR = "_mssql_cdc_prior"
_START = "_mssql_cdc_start"
_SEG = "_mssql_cdc_segment"


def _keys_match(left: str, right: str, keys: list[str]) -> Column:
    """``left.k <=> right.k AND ...`` between two aliased DataFrames."""
    from pyspark.sql import functions as sf

    cond = None
    for k in keys:
        name = quote_identifier(k)
        part = sf.col(f"{left}.{name}").eqNullSafe(sf.col(f"{right}.{name}"))
        cond = part if cond is None else cond & part
    assert cond is not None
    return cond


def snapshot_deletes(
    silver: DataFrame,
    snapshot_rows: DataFrame,
    keys: list[str],
    *,
    columns: list[str],
    lsn: str,
    commit_ts: datetime | None,
) -> DataFrame:
    """Synthetic deletes at the snapshot ``lsn`` for the open versions older than it whose
    key the snapshot does not hold; columns as :func:`mssql_cdc.silver.plan.transaction_images`."""
    from pyspark.sql import functions as sf

    current = silver.where(sf.col("__IS_CURRENT") & (sf.col("_start_lsn") < sf.lit(lsn)))
    present = snapshot_rows.select(*keys).alias("p")
    gone = current.alias("c").join(present, _keys_match("c", "p", keys), "left_anti")
    return gone.select(
        *[sf.col(c) if c in keys else sf.lit(None).alias(c) for c in columns],
        sf.lit(lsn).alias("_start_lsn"),
        sf.lit(commit_ts).cast("timestamp_ntz").alias("_commit_ts"),
        sf.lit(True).alias(DELETE_COLUMN),
    )


def versions(
    silver: DataFrame,
    events: DataFrame,
    keys: list[str],
    columns: list[str],
    tracked: list[str],
) -> DataFrame:
    """The rows of the call's MERGE: every version the events open or change, with its
    validity; columns = ``columns`` (captured) and the history columns.

    Args:
        silver: the history table as it is.
        events: one row per key and commit (:func:`~mssql_cdc.silver.plan.transaction_images`
            plus any :func:`snapshot_deletes`).
        tracked: the columns whose change opens a version.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    # what silver holds per key: the newest LSN it has applied (a start or an end)
    reached = silver.groupBy(*keys).agg(
        sf.max(
            sf.greatest(sf.col("_start_lsn"), sf.coalesce(sf.col("_end_lsn"), sf.lit("")))
        ).alias("_mssql_cdc_reached")
    )
    fresh = (
        events.alias("e")
        .join(reached.alias("r"), _keys_match("e", "r", keys), "left")
        .where(
            sf.col("r._mssql_cdc_reached").isNull()
            | (sf.col("e._start_lsn") > sf.col("r._mssql_cdc_reached"))
        )
        .select("e.*")
    )
    touched = fresh.select(*keys).distinct()
    open_now = silver.where(sf.col("__IS_CURRENT"))
    prior = (
        open_now.alias("o")
        .join(touched.alias("k"), _keys_match("o", "k", keys), "left_semi")
        .select(
            *columns,
            sf.col("_start_lsn"),
            sf.col("_commit_ts"),
            sf.lit(False).alias(DELETE_COLUMN),
        )
        .withColumn(_PRIOR, sf.lit(True))
    )
    stream = fresh.withColumn(_PRIOR, sf.lit(False)).unionByName(prior)

    by_key = Window.partitionBy(*[sf.col(k) for k in keys]).orderBy("_start_lsn")
    deleted = sf.col(DELETE_COLUMN)
    first = sf.lag("_start_lsn").over(by_key).isNull()
    after_delete = sf.coalesce(sf.lag(DELETE_COLUMN).over(by_key), sf.lit(False))
    changed = sf.lit(False)
    for c in tracked:
        changed = changed | ~sf.col(c).eqNullSafe(sf.lag(c).over(by_key))
    starts = stream.withColumn(_START, ~deleted & (first | after_delete | changed))
    running = by_key.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    segmented = starts.withColumn(_SEG, sf.sum(sf.col(_START).cast("int")).over(running)).where(
        sf.col(_SEG) > 0
    )

    image = sf.struct(*[sf.col(c) for c in columns])
    at = sf.struct(sf.col("_start_lsn").alias("lsn"), sf.col("_commit_ts").alias("ts"))
    grouped = segmented.groupBy(*keys, _SEG).agg(
        sf.min(sf.when(sf.col(_START), at)).alias("start"),
        sf.max_by(image, sf.when(~deleted, sf.col("_start_lsn"))).alias("image"),
        sf.min(sf.when(deleted, at)).alias("closed"),
    )
    by_segment = Window.partitionBy(*[sf.col(k) for k in keys]).orderBy(_SEG)
    following = sf.lead("start").over(by_segment)
    ended = grouped.withColumn(
        "end",
        sf.when(sf.col("closed").isNull(), following)
        .when(following.isNull(), sf.col("closed"))
        .when(sf.col("closed.lsn") < following["lsn"], sf.col("closed"))
        .otherwise(following),
    )
    return ended.select(
        *[sf.col(k) for k in keys],
        *[sf.col("image")[c].alias(c) for c in columns if c not in keys],
        sf.col("start.lsn").alias("_start_lsn"),
        sf.col("start.ts").alias("_commit_ts"),
        sf.col("start.ts").alias("__START_AT"),
        sf.col("end.ts").alias("__END_AT"),
        sf.col("end.lsn").alias("_end_lsn"),
        sf.col("end").isNull().alias("__IS_CURRENT"),
    ).select(*columns, *SILVER_HISTORY.names)
