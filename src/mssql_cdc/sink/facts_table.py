"""The facts table on Delta: its one writer and its display reads
(docs/sink.md#the-facts-table).

Runs on the driver (or Spark Connect's ``foreachBatch`` worker). :class:`FactsTable` creates
the table from its declaration (``schemas.FACTS``) and appends any typed facts rows
(``facts.FactRow``) in one commit, with the transaction and ``userMetadata`` the ledger
(``sink.ledger``) picked. The reads here are ``mssql-cdc status`` and ``report``'s; what the
facts record about commits is read back by the ledger (``ledger.landed``,
``ledger.snapshot_events``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from mssql_cdc.sink.facts import FactRow, facts_row, utc_now
from mssql_cdc.sink.local_rows import rows_frame
from mssql_cdc.sink.schemas import FACTS
from mssql_cdc.sink.tables import TableRef, Txn, ensure_table, table_ref

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Row, SparkSession

__all__ = [
    "HISTORY_COLUMNS",
    "FactsTable",
    "append_facts",
    "ensure_facts_table",
    "facts_history",
    "missing_facts_columns",
    "recent_events",
    "stream_summaries",
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


# -- reading ---------------------------------------------------------------------------------


def _existing(spark: SparkSession, facts_table: str) -> TableRef:
    ref = table_ref(facts_table, "facts")
    if not ref.exists(spark):
        raise ValueError(f"facts table {facts_table!r} does not exist")
    return ref


def missing_facts_columns(
    spark: SparkSession, facts_table: str, what: str, needed: Sequence[str]
) -> list[str]:
    """The columns of ``needed`` that the table ``facts_table`` (the argument ``what``) lacks,
    matched ignoring case: none when the table does not exist (the caller's command says so).
    Reads the table's schema only.

    Raises:
        ValueError: ``facts_table`` is not a table reference (:func:`~.tables.table_ref`).
    """
    ref = table_ref(facts_table, what)
    if not ref.exists(spark):
        return []
    columns = {c.lower() for c in ref.read(spark).columns}
    return [c for c in needed if c.lower() not in columns]


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
