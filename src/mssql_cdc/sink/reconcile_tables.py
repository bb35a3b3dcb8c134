"""The tables ``reconcile()`` reads and writes: silver's current rows at one version, bronze's
change keys after a position, and the report table (``schemas.RECONCILE``; docs/validation.md).

Runs on the driver. The report is appended without a transaction id: every run is new rows
under a new ``run_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from mssql_cdc.sink.schemas import RECONCILE
from mssql_cdc.sink.tables import TableRef, ensure_table, quote

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "SCD2_END_COLUMN",
    "append_report",
    "bronze_change_keys",
    "bronze_position",
    "report_frame",
    "silver_current_rows",
    "silver_version",
]

#: the validity-end column of a type 2 silver table; NULL on a key's current version
SCD2_END_COLUMN = "__END_AT"


def report_frame(spark: SparkSession, rows: Sequence[tuple[object, ...]]) -> DataFrame:
    """A run's report rows as a DataFrame of the report table's columns (``schemas.RECONCILE``)."""
    return spark.createDataFrame(list(rows), RECONCILE.ddl)


def silver_version(spark: SparkSession, ref: TableRef) -> int:
    """The newest Delta version of the table."""
    row = spark.sql(f"DESCRIBE HISTORY {ref.sql} LIMIT 1").first()
    assert row is not None
    return int(row["version"])


def silver_current_rows(spark: SparkSession, ref: TableRef, version: int) -> DataFrame:
    """Silver's rows at ``version``: a type 2 table (it has ``__END_AT``) only its current
    versions (``__END_AT IS NULL``)."""
    from pyspark.sql import functions as sf

    reader = spark.read.format("delta").option("versionAsOf", version)
    df = reader.load(ref.path) if ref.path is not None else reader.table(ref.sql)
    if SCD2_END_COLUMN in df.columns:
        df = df.where(sf.col(quote(SCD2_END_COLUMN)).isNull())
    return df


def _bronze_changes(spark: SparkSession, ref: TableRef) -> DataFrame:
    from pyspark.sql import functions as sf

    df = ref.read(spark).where(sf.col("_operation").isin(1, 2, 3, 4))
    if "_snapshot" in df.columns:
        df = df.where(sf.col("_snapshot").isNull())
    return df


def bronze_position(spark: SparkSession, ref: TableRef) -> str | None:
    """The highest ``_start_lsn`` in bronze (``None``: no table or no rows)."""
    if not ref.exists(spark):
        return None
    from pyspark.sql import functions as sf

    row = ref.read(spark).agg(sf.max("_start_lsn").alias("m")).first()
    return None if row is None else row["m"]


def bronze_change_keys(
    spark: SparkSession, ref: TableRef, keys: Sequence[str], after: str | None
) -> list[tuple[object, ...]]:
    """Distinct keys of bronze's change rows (not snapshot rows) with ``_start_lsn`` above
    ``after`` (``None``: all); empty when bronze does not exist. Collected on the driver."""
    if not ref.exists(spark):
        return []
    from pyspark.sql import functions as sf

    df = _bronze_changes(spark, ref)
    if after is not None:
        df = df.where(sf.col("_start_lsn") > sf.lit(after))
    rows = df.select(*[sf.col(quote(k)) for k in keys]).distinct().collect()
    return [tuple(r) for r in rows]


def append_report(spark: SparkSession, ref: TableRef, report: DataFrame) -> None:
    """Creates the report table unless it exists and appends ``report`` in one commit."""
    ensure_table(spark, ref, RECONCILE)
    ref.append(report.select(*[quote(n) for n in RECONCILE.names]), None)
