"""The facts table on Delta: its one writer and its one reader (docs/sink.md#the-facts-table).

Runs on the driver. Rows are built by ``facts`` (plain Python); this module creates the table
from its declaration (``schemas.FACTS``), appends rows in one commit, and answers every question
the project asks of it: the sink's last micro-batch row, the targets an app_id wrote to, a
bootstrap's snapshot LSN, and the ``mssql-cdc status`` summaries. ``txnAppId`` values come from
``ledger.ids``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.sink.facts import (
    Bootstrapped,
    FactRow,
    Resnapshotted,
    SnapshotOpened,
    facts_row,
    utc_now,
)
from mssql_cdc.sink.ledger import ids
from mssql_cdc.sink.local_rows import rows_frame
from mssql_cdc.sink.schemas import FACTS
from mssql_cdc.sink.tables import TableRef, Txn, ensure_table, same_table, table_ref

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Row, SparkSession

__all__ = [
    "FactsTable",
    "LastBatch",
    "append_facts",
    "bootstrap_lsn",
    "ensure_facts_table",
    "facts_history",
    "last_batch",
    "recent_events",
    "recorded_targets",
    "stream_summaries",
    "write_bootstrap",
    "write_resnapshot",
    "write_snapshot_open",
]

# -- writing ---------------------------------------------------------------------------------


def ensure_facts_table(
    spark: SparkSession, facts: TableRef, *, seen: set[TableRef] | None = None
) -> None:
    """Creates the facts table, with its comments, unless it exists."""
    ensure_table(spark, facts, FACTS, seen=seen)


def append_facts(
    spark: SparkSession,
    facts: TableRef,
    rows: Sequence[tuple[Any, ...]],
    txn: Txn | None,
    metadata: str | None = None,
    *,
    seen: set[TableRef] | None = None,
) -> None:
    """Appends ``rows`` (tuples in facts column order, ``facts.facts_row``) in one commit,
    creating the table first.

    Args:
        txn: the commit's transaction (``ledger.ids``): Delta skips the commit when its
            version is not above the one recorded for its app id; ``None``: an append without
            one.
        metadata: the commit's ``userMetadata`` (only with ``txn``).
        seen: see ``tables.ensure_table``.
    """
    ensure_facts_table(spark, facts, seen=seen)
    df = rows_frame(spark, FACTS, rows)
    facts.append(df, txn, metadata)


class FactsTable:
    """The facts table bound to a session, as ``DeltaTable`` binds one: the one writer of
    every kind of facts row (``facts.FactRow``). Runs on the driver (or Spark Connect's
    ``foreachBatch`` worker); building one reads nothing.

    Args:
        seen: tables known to exist, shared with the caller (``tables.ensure_table``): a sink
            keeps one set for its whole run, so the table is looked up once.
    """

    def __init__(
        self, spark: SparkSession, ref: TableRef, *, seen: set[TableRef] | None = None
    ) -> None:
        self.spark = spark
        self.ref = ref
        self.seen = seen

    def __repr__(self) -> str:
        return f"FactsTable({self.ref.text!r})"

    def append(
        self,
        rows: Sequence[FactRow],
        *,
        app_id: str,
        target: str,
        txn: Txn | None,
        metadata: str | None = None,
        written_at: datetime | None = None,
    ) -> None:
        """Appends ``rows`` in one commit (the table created first), each with the columns the
        commit shares: ``app_id`` (the writing stream's sink id), ``target`` (its bronze table,
        as the stream names it) and one ``written_at`` (now, unless given).

        Args:
            txn: the commit's transaction, from the ledger; ``None``: none (a full snapshot's
                ``snapshot_open`` row).
            metadata: the commit's ``userMetadata`` (with ``txn``).
        """
        at = utc_now() if written_at is None else written_at
        tuples = [facts_row(r, app_id=app_id, target=target, written_at=at) for r in rows]
        append_facts(self.spark, self.ref, tuples, txn, metadata, seen=self.seen)


def write_snapshot_open(
    spark: SparkSession,
    facts: TableRef,
    *,
    app_id: str,
    snapshot_lsn: str,
    commit_ts: datetime | None,
    target: TableRef,
    kind: str = "bootstrap",
    generation: int = 0,
    lost_from_ts: datetime | None = None,
    lost_to_ts: datetime | None = None,
) -> None:
    """Appends a full snapshot's ``snapshot_open`` row (no idempotency key: each run that
    reads writes one); ``kind`` ``bootstrap`` or ``resnapshot`` (with its generation and lost
    range)."""
    assert kind == ("resnapshot" if generation > 0 else "bootstrap")
    row = SnapshotOpened(snapshot_lsn, commit_ts, generation, "full", lost_from_ts, lost_to_ts)
    FactsTable(spark, facts).append([row], app_id=app_id, target=target.text, txn=None)


def write_bootstrap(
    spark: SparkSession,
    facts: TableRef,
    *,
    app_id: str,
    target: TableRef,
    lsn: str,
    commit_ts: datetime | None,
    rows: int,
    started_at: datetime | None,
    duration_ms: int | None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Appends the ``bootstrap`` row once per app_id (``txnAppId`` ``<app_id>#events``,
    ``txnVersion`` 0); ``detail`` for a chunked snapshot's completion."""
    row = Bootstrapped(lsn, commit_ts, rows, started_at, duration_ms, detail)
    meta = json.dumps({"app_id": app_id, "event": "bootstrap", "snapshot_lsn": lsn})
    FactsTable(spark, facts).append(
        [row], app_id=app_id, target=target.text, txn=ids.bootstrap(app_id), metadata=meta
    )


def write_resnapshot(
    spark: SparkSession,
    facts: TableRef,
    *,
    app_id: str,
    generation: int,
    sink_id: str,
    target: TableRef,
    lsn: str,
    commit_ts: datetime | None,
    rows: int | None,
    started_at: datetime | None,
    duration_ms: int | None,
    lost_from_ts: datetime | None,
    lost_to_ts: datetime | None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Appends the ``resnapshot`` row of ``generation`` once (``txnAppId`` ``<app_id>#events``
    of the user's app_id, ``txnVersion`` the generation); ``sink_id`` is its ``app_id``
    column (``<app_id>.g<n>``); ``detail`` for a chunked re-snapshot's completion."""
    row = Resnapshotted(
        generation, lsn, commit_ts, rows, started_at, duration_ms, lost_from_ts, lost_to_ts, detail
    )
    meta = json.dumps(
        {"app_id": sink_id, "event": "resnapshot", "snapshot_lsn": lsn, "generation": generation}
    )
    txn = ids.resnapshot(app_id, generation)
    FactsTable(spark, facts).append(
        [row], app_id=sink_id, target=target.text, txn=txn, metadata=meta
    )


# -- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class LastBatch:
    """The newest micro-batch row of an app_id: what the sink's rewind check compares."""

    batch_id: int
    max_lsn: str | None
    end_lsn: str | None
    rows: int | None


def last_batch(
    spark: SparkSession, facts: TableRef, app_id: str, *, from_batch: int | None = None
) -> LastBatch | None:
    """The newest micro-batch row (``event`` NULL, ``batch_id`` set) of ``app_id``; ``None``
    when there is none. The table must exist.

    ``from_batch``: a batch id the caller expects the newest row at or after (the facts
    commits' ``txnVersion``). Rows from there on are read first, which Delta's statistics on
    ``batch_id`` narrow to the newest files instead of every file of the table (one per
    batch); when there is none, the whole table is read. The answer is the same either way.
    """
    from pyspark.sql import functions as sf

    def newest(since: int | None) -> Row | None:
        rows = facts.read(spark).where((sf.col("app_id") == app_id) & sf.col("event").isNull())
        rows = rows.where(
            sf.col("batch_id").isNotNull() if since is None else sf.col("batch_id") >= since
        )
        return rows.orderBy(sf.col("batch_id").desc()).select(*_LAST_BATCH).first()

    row = newest(from_batch) if from_batch is not None and from_batch >= 0 else None
    if row is None:
        row = newest(None)
    if row is None:
        return None
    return LastBatch(
        batch_id=int(row["batch_id"]),
        max_lsn=row["max_lsn"],
        end_lsn=row["end_lsn"],
        rows=None if row["rows"] is None else int(row["rows"]),
    )


#: the columns :func:`last_batch` reads
_LAST_BATCH = ("batch_id", "max_lsn", "end_lsn", "rows")


def recorded_targets(spark: SparkSession, facts: TableRef, app_id: str) -> list[str]:
    """The targets the facts table records for ``app_id`` (as they were written), if any."""
    if not facts.exists(spark):
        return []
    from pyspark.sql import functions as sf

    rows = (
        facts.read(spark)
        .where((sf.col("app_id") == app_id) & sf.col("target").isNotNull())
        .select("target")
        .distinct()
        .collect()
    )
    return sorted(str(r["target"]) for r in rows)


def bootstrap_lsn(
    spark: SparkSession, facts: TableRef | None, app_id: str, target: TableRef
) -> str | None:
    """The LSN of this app_id's newest ``bootstrap`` row written for ``target`` (in any
    spelling); ``None`` without one or without a facts table."""
    from pyspark.sql import functions as sf

    if facts is None or not facts.exists(spark):
        return None
    rows = (
        facts.read(spark)
        .where((sf.col("app_id") == app_id) & (sf.col("event") == "bootstrap"))
        .groupBy("target")
        .agg(sf.max("max_lsn").alias("lsn"))
        .collect()
    )
    found = [
        r["lsn"]
        for r in rows
        if r["lsn"] is not None
        and r["target"] is not None
        and same_table(spark, table_ref(r["target"], "target"), target)
    ]
    return max(found) if found else None


def _existing(spark: SparkSession, facts_table: str) -> TableRef:
    ref = table_ref(facts_table, "facts")
    if not ref.exists(spark):
        raise ValueError(f"facts table {facts_table!r} does not exist")
    return ref


#: the columns :func:`facts_history` returns (the report draws them: docs/monitoring.md)
HISTORY_COLUMNS = (
    "app_id",
    "batch_id",
    "event",
    "rows",
    "written_at",
    "duration_ms",
    "ingestion_lag_seconds",
    "capture_lag_seconds",
    "retention_headroom_hours",
    "target",
    "detail",
)


def facts_history(spark: SparkSession, facts_table: str, since: datetime | None = None) -> pa.Table:
    """The facts rows written at or after ``since`` (all without it), micro-batch and event
    rows, :data:`HISTORY_COLUMNS` only, ordered by ``app_id`` and ``written_at``: one Arrow
    table collected on the driver (a row per batch; ``mssql-cdc report`` draws it).

    Raises:
        ValueError: ``facts_table`` does not exist.
    """
    from pyspark.sql import functions as sf

    df = _existing(spark, facts_table).read(spark).select(*HISTORY_COLUMNS)
    if since is not None:
        df = df.where(sf.col("written_at") >= sf.lit(since))
    return df.orderBy("app_id", "written_at", "batch_id").toArrow()


@dataclass(frozen=True)
class SnapshotOpen:
    """The newest ``snapshot_open`` row of a target: its LSN, the stream (``app_id``) that
    wrote it and its mode (``full`` or ``chunked``)."""

    lsn: str
    app_id: str
    mode: str


def stream_summaries(spark: SparkSession, facts_table: str) -> list[Row]:
    """Per ``app_id`` (ordered), over the micro-batch rows (``event IS NULL``): ``n`` rows,
    ``rows`` summed, and ``last``, the newest row's ``batch_id``, ``rows``, ``written_at``,
    ``target``, lag and headroom columns, ``retention_watermark_ts``, ``end_commit_ts`` and
    ``duration_ms``.

    Raises:
        ValueError: ``facts_table`` is empty or not a Delta table.
    """
    from pyspark.sql import functions as sf

    batches = _existing(spark, facts_table).read(spark).where(sf.col("event").isNull())
    newest = sf.max_by(
        sf.struct(
            "batch_id",
            "rows",
            "written_at",
            "target",
            "ingestion_lag_seconds",
            "capture_lag_seconds",
            "retention_headroom_hours",
            "retention_watermark_ts",
            "end_commit_ts",
            "duration_ms",
        ),
        "batch_id",
    )
    return list(
        batches.groupBy("app_id")
        .agg(sf.count(sf.lit(1)).alias("n"), sf.sum("rows").alias("rows"), newest.alias("last"))
        .orderBy("app_id")
        .collect()
    )


def recent_events(spark: SparkSession, facts_table: str, limit: int) -> list[dict[str, Any]]:
    """The newest ``limit`` event rows (``event IS NOT NULL``), newest first: ``written_at``,
    ``app_id``, ``event``, ``rows``, ``max_lsn``, ``detail``."""
    from pyspark.sql import functions as sf

    rows = (
        table_ref(facts_table, "facts")
        .read(spark)
        .where(sf.col("event").isNotNull())
        .orderBy(sf.col("written_at").desc())
        .select("written_at", "app_id", "event", "rows", "max_lsn", "detail")
        .limit(limit)
        .collect()
    )
    return [r.asDict() for r in rows]
