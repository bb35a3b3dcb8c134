"""The finalization control table on Delta: its one writer and its one reader (docs/sink.md,
"Finalization").

Runs on the driver. One row per table (``schemas.CONTROL``); the verdict is moved by a SQL
``MERGE`` over a temporary view, which needs no Delta Connect plugin (ADR 0061). The rule that
decides the verdict lives in ``mssql_cdc.finalization``.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING

from mssql_cdc.sink.schemas import CONTROL
from mssql_cdc.sink.tables import TableRef, ensure_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["MERGED_COLUMNS", "ensure_control_table", "merge_verdict", "read_verdict"]

#: the columns a verdict MERGE writes, in order
MERGED_COLUMNS = ("table_name", "finalized_until", "end_lsn", "end_commit_ts", "updated_at")

_MERGED_DDL = ", ".join(
    f"{name} {sql_type}" for name, sql_type, _ in CONTROL.columns if name in MERGED_COLUMNS
)


def ensure_control_table(spark: SparkSession, ref: TableRef) -> None:
    """Creates the control table, with its comments, unless it exists."""
    ensure_table(spark, ref, CONTROL)


def read_verdict(spark: SparkSession, ref: TableRef, table_name: str) -> datetime | None:
    """``finalized_until`` of ``table_name``; ``None`` before the first verdict or when the
    control table does not exist."""
    if not ref.exists(spark):
        return None
    from pyspark.sql import functions as sf

    row = (
        ref.read(spark).where(sf.col("table_name") == table_name).select("finalized_until").first()
    )
    return None if row is None else row["finalized_until"]


def merge_verdict(
    spark: SparkSession,
    ref: TableRef,
    row: tuple[str, datetime, str, datetime | None, datetime],
) -> None:
    """MERGEs ``row`` (:data:`MERGED_COLUMNS`) on ``table_name``: inserted, or updating the row
    only when its ``finalized_until`` is NULL or earlier. In SQL over a temporary view, not
    ``DeltaTable.merge``: it needs no Delta Connect plugin, so it runs on Spark Connect and
    serverless too (ADR 0061)."""
    source = spark.createDataFrame([row], _MERGED_DDL)
    columns = MERGED_COLUMNS
    view = f"mssql_cdc_finalization_{uuid.uuid4().hex}"
    source.createOrReplaceTempView(view)
    updates = ", ".join(f"t.{c} = s.{c}" for c in columns if c != "table_name")
    try:
        spark.sql(
            f"MERGE INTO {ref.sql} AS t USING {view} AS s ON t.table_name = s.table_name "
            "WHEN MATCHED AND (t.finalized_until IS NULL OR t.finalized_until < s.finalized_until) "
            f"THEN UPDATE SET {updates} "
            f"WHEN NOT MATCHED THEN INSERT ({', '.join(columns)}) "
            f"VALUES ({', '.join('s.' + c for c in columns)})"
        )
    finally:
        spark.catalog.dropTempView(view)
