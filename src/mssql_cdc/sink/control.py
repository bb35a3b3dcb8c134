"""The finalization control table on Delta: its writers and its readers (docs/sink.md,
"Finalization"; docs/silver.md).

Runs on the driver. One row per table (``schemas.CONTROL``): a bronze table's row holds its
verdict, moved by :func:`merge_verdict`; a silver table's row also holds its position in the
bronze change log (:class:`SilverPosition`), read by :func:`read_silver_position` and written
by :func:`merge_silver_position`. Both writers are a SQL ``MERGE`` over a temporary view, which
needs no Delta Connect plugin (ADR 0061). The rule that decides the verdict lives in
``mssql_cdc.finalization``, the one that moves silver in ``mssql_cdc.silver``.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from mssql_cdc.sink.schemas import CONTROL
from mssql_cdc.sink.tables import TableRef, ensure_table

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "MERGED_COLUMNS",
    "SILVER_POSITION_COLUMNS",
    "SilverPosition",
    "ensure_control_table",
    "merge_silver_position",
    "merge_verdict",
    "merge_verdicts",
    "read_silver_position",
    "read_silver_positions",
    "read_verdict",
    "read_verdicts",
]

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
    return read_verdicts(spark, ref, [table_name]).get(table_name)


def read_verdicts(
    spark: SparkSession, ref: TableRef, table_names: Sequence[str]
) -> dict[str, datetime | None]:
    """``finalized_until`` of each of ``table_names`` that has a row (one read); empty when the
    control table does not exist."""
    if not table_names or not ref.exists(spark):
        return {}
    from pyspark.sql import functions as sf

    rows = (
        ref.read(spark)
        .where(sf.col("table_name").isin(list(table_names)))
        .select("table_name", "finalized_until")
        .collect()
    )
    return {str(r["table_name"]): r["finalized_until"] for r in rows}


def merge_verdict(
    spark: SparkSession,
    ref: TableRef,
    row: tuple[str, datetime, str, datetime | None, datetime],
) -> None:
    """MERGEs ``row`` (:data:`MERGED_COLUMNS`) on ``table_name``: inserted, or updating the row
    only when its ``finalized_until`` is NULL or earlier (:func:`merge_verdicts` of one)."""
    merge_verdicts(spark, ref, [row])


def merge_verdicts(
    spark: SparkSession,
    ref: TableRef,
    rows: Sequence[tuple[str, datetime, str, datetime | None, datetime]],
) -> None:
    """MERGEs ``rows`` (:data:`MERGED_COLUMNS`, one per table) on ``table_name``, in one
    commit: each inserted, or updating its table's row only when its ``finalized_until`` is
    NULL or earlier. In SQL over a temporary view, not ``DeltaTable.merge``: it needs no Delta
    Connect plugin, so it runs on Spark Connect and serverless too (ADR 0061)."""
    source = spark.createDataFrame(list(rows), _MERGED_DDL)
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


@dataclass(frozen=True)
class SilverPosition:
    """A silver table's row in the control table.

    Attributes:
        table_name: the silver table as passed to ``apply_changes`` (the row's key).
        applied_lsn: highest bronze commit LSN applied; the next call reads after it. ``None``
            before the first apply.
        snapshot_lsn: LSN of the snapshot silver was last rebuilt from (``None``: never).
        finalized_until: silver's verdict (naive UTC), ``None`` before the first one.
        end_lsn: LSN of the bronze position that last moved the verdict.
        end_commit_ts: commit time of ``end_lsn`` (naive UTC).
        open_snapshot_lsn: LSN of an open chunked snapshot being applied (chunked snapshots do
            not exist yet: always ``None``).
        snapshot_wave: last applied wave of ``open_snapshot_lsn`` (``None``).
    """

    table_name: str
    applied_lsn: str | None
    snapshot_lsn: str | None
    finalized_until: datetime | None
    end_lsn: str | None = None
    end_commit_ts: datetime | None = None
    open_snapshot_lsn: str | None = None
    snapshot_wave: int | None = None


#: the columns a silver position MERGE writes, in order (the :class:`SilverPosition` fields)
SILVER_POSITION_COLUMNS = (
    "table_name",
    "applied_lsn",
    "snapshot_lsn",
    "finalized_until",
    "end_lsn",
    "end_commit_ts",
    "open_snapshot_lsn",
    "snapshot_wave",
)

_POSITION_DDL = ", ".join(
    f"{name} {sql_type}"
    for name, sql_type, _ in CONTROL.columns
    if name in (*SILVER_POSITION_COLUMNS, "updated_at")
)


def read_silver_position(
    spark: SparkSession, ref: TableRef, table_name: str
) -> SilverPosition | None:
    """The control row of the silver table ``table_name``; ``None`` when the control table or
    the row does not exist."""
    return read_silver_positions(spark, ref, table_name).get(table_name)


def read_silver_positions(
    spark: SparkSession, ref: TableRef, *table_names: str
) -> dict[str, SilverPosition]:
    """The control rows of ``table_names``, read with one query, by table name; a name without
    a row (or every name, when the control table does not exist) is absent."""
    if not ref.exists(spark):
        return {}
    from pyspark.sql import functions as sf

    rows = (
        ref.read(spark)
        .where(sf.col("table_name").isin(*table_names))
        .select(*SILVER_POSITION_COLUMNS)
        .collect()
    )
    return {
        str(row["table_name"]): SilverPosition(
            **{name: row[name] for name in SILVER_POSITION_COLUMNS}
        )
        for row in rows
    }


def merge_silver_position(spark: SparkSession, ref: TableRef, position: SilverPosition) -> None:
    """MERGEs ``position`` on ``table_name``: inserted, or updated. The position columns
    (``applied_lsn``, ``snapshot_lsn``, ``open_snapshot_lsn``, ``snapshot_wave``) take the new
    values; the verdict columns (``finalized_until``, ``end_lsn``, ``end_commit_ts``,
    ``updated_at``) move only when the new verdict is later (or the row has none), so the
    verdict never moves back. One MERGE in SQL over a temporary view (ADR 0061); the caller
    retries a lost concurrent commit."""
    from mssql_cdc.sink.facts import utc_now

    values = tuple(getattr(position, c) for c in SILVER_POSITION_COLUMNS)
    columns = (*SILVER_POSITION_COLUMNS, "updated_at")
    ordered = [c for c in (name for name, _, _ in CONTROL.columns) if c in columns]
    by_name = dict(zip(columns, (*values, utc_now()), strict=True))
    source = spark.createDataFrame([tuple(by_name[c] for c in ordered)], _POSITION_DDL)
    view = f"mssql_cdc_silver_position_{uuid.uuid4().hex}"
    source.createOrReplaceTempView(view)
    later = (
        "(s.finalized_until IS NOT NULL AND "
        "(t.finalized_until IS NULL OR t.finalized_until < s.finalized_until))"
    )
    verdict = ("finalized_until", "end_lsn", "end_commit_ts", "updated_at")
    updates = ", ".join(
        [f"t.{c} = s.{c}" for c in ("applied_lsn", "snapshot_lsn", "open_snapshot_lsn")]
        + ["t.snapshot_wave = s.snapshot_wave"]
        + [f"t.{c} = CASE WHEN {later} THEN s.{c} ELSE t.{c} END" for c in verdict]
    )
    try:
        spark.sql(
            f"MERGE INTO {ref.sql} AS t USING {view} AS s ON t.table_name = s.table_name "
            f"WHEN MATCHED THEN UPDATE SET {updates} "
            f"WHEN NOT MATCHED THEN INSERT ({', '.join(ordered)}) "
            f"VALUES ({', '.join('s.' + c for c in ordered)})"
        )
    finally:
        spark.catalog.dropTempView(view)
