"""``register(spark)``: add ``format("mssql_cdc")``, ``format("mssql_cdc_snapshot")`` and the
database stream's clock ``format("mssql_cdc_database")``, and
have the session redact ``connectionString`` in plan strings (ADR 0035)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["REDACTION_CONF", "redact_connection_strings", "register"]

log = logging.getLogger("mssql_cdc.source")

#: Spark's pattern of option keys whose values plan strings hide (default ``(?i)url``);
#: ``spark.redaction.regex`` (``password``, ``token``, ``secret``, ...) applies as well
REDACTION_CONF = "spark.sql.redaction.options.regex"
_KEY = "connectionstring"


def _cores(spark: SparkSession) -> int:
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext: unknown
        return 0


def redact_connection_strings(spark: SparkSession) -> bool:
    """Adds ``connectionString`` to the session's :data:`REDACTION_CONF`, so that a password
    in it never shows in ``explain()``, the Spark UI or event logs, even when the options are
    given by hand. Returns whether the session redacts it now (a session that refuses the
    change is left as it is, with a DEBUG line: ``stream()`` moves the password out anyway).
    """
    try:
        current = spark.conf.get(REDACTION_CONF, None) or ""
        if _KEY in current.lower():
            return True
        spark.conf.set(REDACTION_CONF, f"{current}|(?i){_KEY}" if current else f"(?i){_KEY}")
    except Exception as exc:  # a managed session may refuse to set a conf
        log.debug("could not add connectionString to %s: %s", REDACTION_CONF, exc)
        return False
    return True


def register(spark: SparkSession) -> None:
    """Register the data sources on ``spark``.

    Captures the session's core count for ``numPartitions=auto`` into registered subclasses,
    because planning runs in a Python worker that has no session, and has the session redact
    ``connectionString`` in plan strings (:func:`redact_connection_strings`). Runs on the
    driver; calling it again replaces the earlier registration.
    """
    redact_connection_strings(spark)
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
    from mssql_cdc.source.database_clock import DatabaseClockDataSource

    spark.dataSource.register(DatabaseClockDataSource)
    log.debug(
        "registered mssql_cdc, mssql_cdc_snapshot and mssql_cdc_database (auto partitions: %d)",
        cores,
    )
