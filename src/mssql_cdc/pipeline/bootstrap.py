"""``to_delta(bootstrap=True)``: the table's current rows appended to bronze once, before the
stream starts at the snapshot's LSN (docs/streaming.md#bootstrap; ADR 0022).

Runs on the driver, in the calling Python process, before the query starts:

1. find an earlier snapshot: this app_id's ``bootstrap`` facts row for this target (the same
   table in any spelling; ``to_delta`` has refused an app_id recorded for another target), else
   this app_id's snapshot
   commit in the target (``txnAppId`` ``<app_id>#events``), else operation-0 rows of any
   capture instance of the table; found, nothing is read (a missing ``bootstrap`` row is
   written from the target's rows);
2. otherwise record the snapshot LSN L (``sys.fn_cdc_get_max_lsn()``), write the
   ``snapshot_open`` facts row, read the table through ``format("mssql_cdc_snapshot")`` stamped
   with L, append it in one commit (``txnAppId`` ``<app_id>#events``, ``txnVersion`` 0, so a
   rerun after a crash cannot append it twice) and write the ``bootstrap`` facts row (same
   idempotency key, on the facts table).

The stream then starts with ``startingLsn`` = L, taken as already processed, so every change
committed during the read arrives as a change after it: the latest image per key is the
table's. Both ends log at INFO under ``mssql_cdc.pipeline``.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.options import ReaderOptions
from mssql_cdc.pipeline.events import bootstrap_row, snapshot_open_row
from mssql_cdc.sink.comments import (
    BRONZE_COLUMN_COMMENTS,
    BRONZE_SCHEMA_VERSION,
    BRONZE_TABLE_COMMENT,
    FACTS_COLUMNS,
    FACTS_SCHEMA_VERSION,
    FACTS_TABLE_COMMENT,
)
from mssql_cdc.sink.facts import FACTS_DDL, utc_now
from mssql_cdc.sink.tables import (
    TableRef,
    columns_of,
    create_table,
    same_table,
    table_ref,
    txn_version,
)
from mssql_cdc.source import snapshot_position

if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any

    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["Bootstrap", "bootstrap", "ensure_facts_table", "events_app_id"]

log = logging.getLogger("mssql_cdc.pipeline")


@dataclass(frozen=True)
class Bootstrap:
    """The outcome: the snapshot LSN the stream starts after, and whether this run read the
    table (``rows`` is what it appended; ``None`` when it found an earlier snapshot)."""

    snapshot_lsn: str
    taken: bool
    rows: int | None = None


def events_app_id(app_id: str) -> str:
    """The ``txnAppId`` of a stream's snapshot commits (target and facts)."""
    return f"{app_id}#events"


def _stamp(df: DataFrame) -> Column:
    from pyspark.sql import functions as sf

    if "_snapshot" in df.columns:
        return sf.coalesce(sf.col("_snapshot"), sf.col("_start_lsn"))
    return sf.col("_start_lsn")


def _max_snapshot(df: DataFrame) -> str | None:
    from pyspark.sql import functions as sf

    row = df.where(sf.col("_operation") == 0).agg(sf.max(_stamp(df))).first()
    return None if row is None else row[0]


def _from_history(spark: SparkSession, target: TableRef, app_id: str) -> str | None:
    """The snapshot LSN from the ``userMetadata`` of this app_id's snapshot commit (the only
    trace in the target of an empty table's snapshot)."""
    from pyspark.sql import functions as sf

    history = target.delta_table(spark).history().where(sf.col("userMetadata").isNotNull())
    for row in history.select("userMetadata").collect():
        try:
            meta = json.loads(row["userMetadata"])
        except ValueError:
            continue
        if (
            isinstance(meta, dict)
            and meta.get("app_id") == app_id
            and meta.get("event") == "bootstrap"
        ):
            lsn = meta.get("snapshot_lsn")
            return lsn if isinstance(lsn, str) else None
    return None


def _facts_snapshot(
    spark: SparkSession, facts: TableRef | None, app_id: str, target: TableRef
) -> str | None:
    """The LSN of this app_id's newest ``bootstrap`` row written for ``target``."""
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


def ensure_facts_table(spark: SparkSession, facts: TableRef) -> None:
    """Creates the facts table, with its comments, unless it exists."""
    if not facts.exists(spark):
        create_table(
            spark,
            facts,
            FACTS_COLUMNS,
            FACTS_TABLE_COMMENT,
            {"mssql_cdc.schema_version": str(FACTS_SCHEMA_VERSION)},
        )


def _append_open(spark: SparkSession, facts: TableRef, row: tuple[Any, ...]) -> None:
    """Appends a ``snapshot_open`` row (no idempotency key: each run that reads writes one)."""
    ensure_facts_table(spark, facts)
    writer = spark.createDataFrame([row], FACTS_DDL).write.format("delta").mode("append")
    if facts.path is not None:
        writer.save(facts.path)
    else:
        writer.saveAsTable(facts.catalog_name)


def _write_bootstrap_row(
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
) -> None:
    row = bootstrap_row(
        app_id=app_id,
        snapshot_lsn=lsn,
        commit_ts=commit_ts,
        rows=rows,
        started_at=started_at,
        duration_ms=duration_ms,
        target=target.text,
        written_at=utc_now(),
    )
    ensure_facts_table(spark, facts)
    meta = json.dumps({"app_id": app_id, "event": "bootstrap", "snapshot_lsn": lsn})
    facts.append(
        spark.createDataFrame([row], FACTS_DDL),
        events_app_id(app_id),
        0,
        meta,
        merge_schema=False,
    )


def _snapshot_rows(spark: SparkSession, target: TableRef, lsn: str) -> tuple[int, Any]:
    """Rows of the snapshot ``lsn`` in the target and their commit time."""
    from pyspark.sql import functions as sf

    df = target.read(spark)
    row = (
        df.where((sf.col("_operation") == 0) & (_stamp(df) == lsn))
        .agg(sf.count(sf.lit(1)), sf.max("_commit_ts"))
        .first()
    )
    assert row is not None  # a global aggregation returns one row
    return int(row[0]), row[1]


def _find(
    spark: SparkSession,
    options: ReaderOptions,
    target: TableRef,
    app_id: str,
    facts: TableRef | None,
) -> tuple[str | None, bool]:
    """The LSN of an earlier snapshot, and whether its ``bootstrap`` facts row is missing."""
    from pyspark.sql import functions as sf

    recorded = _facts_snapshot(spark, facts, app_id, target)
    if recorded is not None:
        return recorded, False
    if not target.exists(spark):
        return None, False
    own = txn_version(spark, target, events_app_id(app_id))
    if own is not None and own >= 0:
        found = _max_snapshot(target.read(spark)) or _from_history(spark, target, app_id)
        if found is not None:
            return found, True
    df = target.read(spark)
    if df.where(sf.col("_operation") == 0).limit(1).count() == 0:
        return None, False
    instances = [name.lower() for name in snapshot_position(options).instances]
    found = _max_snapshot(df.where(sf.lower(sf.col("_capture_instance")).isin(instances)))
    return found, found is not None


def _take(
    spark: SparkSession,
    raw: dict[str, str],
    options: ReaderOptions,
    *,
    target: TableRef,
    app_id: str,
    facts: TableRef | None,
) -> Bootstrap:
    from pyspark.sql import functions as sf

    position = snapshot_position(options)
    lsn = str(position.lsn)
    log.info(
        "%s: bootstrap of %s into %s: snapshot LSN %s, reading the table",
        app_id,
        options.capture_instance,
        target.text,
        lsn,
    )
    if facts is not None:
        opened = snapshot_open_row(
            app_id=app_id,
            snapshot_lsn=lsn,
            commit_ts=position.commit_ts,
            target=target.text,
            written_at=utc_now(),
        )
        _append_open(spark, facts, opened)
    started_at, clock = utc_now(), time.monotonic()
    read_options = {k: v for k, v in raw.items() if k.lower() != "metricspath"}
    read_options["snapshotLsn"] = lsn
    df = spark.read.format("mssql_cdc_snapshot").options(**read_options).load()
    out = (
        df.withColumn("_batch_id", sf.lit(None).cast("int"))
        .withColumn("_snapshot", sf.lit(lsn))
        .withColumn("_chunk", sf.lit(None).cast("int"))
    )
    if not target.exists(spark):
        create_table(
            spark,
            target,
            columns_of(out.schema, BRONZE_COLUMN_COMMENTS),
            BRONZE_TABLE_COMMENT,
            {"mssql_cdc.schema_version": str(BRONZE_SCHEMA_VERSION)},
        )
    meta = {
        "app_id": app_id,
        "event": "bootstrap",
        "snapshot_lsn": lsn,
        "capture_instance": options.capture_instance,
    }
    target.append(out, events_app_id(app_id), 0, json.dumps(meta), merge_schema=True)
    rows, _ = _snapshot_rows(spark, target, lsn)
    duration_ms = round((time.monotonic() - clock) * 1000)
    if facts is not None:
        _write_bootstrap_row(
            spark,
            facts,
            app_id=app_id,
            target=target,
            lsn=lsn,
            commit_ts=position.commit_ts,
            rows=rows,
            started_at=started_at,
            duration_ms=duration_ms,
        )
    log.info(
        "%s: bootstrap of %s done: %d rows at %s appended to %s in %.1f s",
        app_id,
        options.capture_instance,
        rows,
        lsn,
        target.text,
        duration_ms / 1000,
    )
    return Bootstrap(lsn, taken=True, rows=rows)


def bootstrap(
    spark: SparkSession,
    raw: dict[str, str],
    options: ReaderOptions,
    *,
    target: TableRef,
    app_id: str,
    facts: TableRef | None,
) -> Bootstrap:
    """Finds or takes the stream's bootstrap snapshot (see the module doc).

    Args:
        raw: the data source options (canonical names, string values), without
            ``startingLsn``.
        options: the same, parsed.

    Returns:
        The snapshot LSN for ``startingLsn`` and whether the table was read.

    Raises:
        ValueError, PermissionError, SqlServerError: from the source (unknown capture
            instance, missing grant, SQL Server errors after retries).
    """
    found, repair = _find(spark, options, target, app_id, facts)
    if found is None:
        return _take(spark, raw, options, target=target, app_id=app_id, facts=facts)
    log.info(
        "%s: bootstrap of %s: snapshot at %s already in %s; reading nothing",
        app_id,
        options.capture_instance,
        found,
        target.text,
    )
    if repair and facts is not None:
        rows, commit_ts = _snapshot_rows(spark, target, found)
        _write_bootstrap_row(
            spark,
            facts,
            app_id=app_id,
            target=target,
            lsn=found,
            commit_ts=commit_ts,
            rows=rows,
            started_at=None,
            duration_ms=None,
        )
    return Bootstrap(found, taken=False)
