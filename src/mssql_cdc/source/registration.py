"""``register(spark)``: add ``format("mssql_cdc")`` and ``format("mssql_cdc_snapshot")``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["register"]

log = logging.getLogger("mssql_cdc.source")


def _cores(spark: SparkSession) -> int:
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext: unknown
        return 0


def register(spark: SparkSession) -> None:
    """Register both data sources on ``spark``.

    Captures the session's core count for ``numPartitions=auto`` into registered subclasses,
    because planning runs in a Python worker that has no session. Runs on the driver; calling
    it again replaces the earlier registration.
    """
    from mssql_cdc.source.datasource import MssqlCdcDataSource, MssqlCdcSnapshotDataSource

    cores = _cores(spark)
    for base in (MssqlCdcDataSource, MssqlCdcSnapshotDataSource):
        registered = type(
            base.__name__,
            (base,),
            {
                "default_num_partitions": cores,
                "__module__": base.__module__,
                "__qualname__": f"registered_{base.__name__}",
            },
        )
        spark.dataSource.register(registered)
    log.debug("registered mssql_cdc and mssql_cdc_snapshot (auto partitions: %d)", cores)
