"""The bronze table on Delta: its one writer and its one reader (docs/reference/bronze-schema.md).

Runs on the driver. Bronze holds the captured columns, the source's metadata columns and the
three columns the sink adds (``schemas.BRONZE``: ``_batch_id``, ``_snapshot``, ``_chunk``).
Two kinds of commit append to it, both through :func:`append_bronze`: a micro-batch
(``txnAppId`` ``<app_id>``, ``txnVersion`` the batch id, ``userMetadata``
:func:`batch_metadata`; tables written before ADR 0090 also hold the batch's counts there) and a
snapshot (``<app_id>#events``; version 0 and ``{"event": "bootstrap", ...}`` for the bootstrap
snapshot or a seed, the generation and ``{"event": "resnapshot", ...}`` for a re-snapshot), the
ids named in ``ledger.ids``. The readers answer what the bootstrap and ``mssql-cdc verify`` ask.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.sink.ledger import ids
from mssql_cdc.sink.schemas import BRONZE
from mssql_cdc.sink.tables import (
    COLUMN_MAPPING_PROPERTIES,
    TableRef,
    Txn,
    ensure_table,
    needs_column_mapping,
    table_ref,
    txn_version,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "append_bronze",
    "batch_metadata",
    "change_history",
    "chunk_rows",
    "clashing_columns",
    "column_mapping_error",
    "find_snapshot",
    "newest_whole_snapshot",
    "snapshot_rows",
    "snapshot_txn_version",
    "type_clash_error",
    "with_sink_columns",
    "write_chunks",
    "write_snapshot",
]

#: the sink-added columns, declared in ``schemas``
_SINK_NAMES = {name for name, _, _ in BRONZE.columns}


def clashing_columns(columns: Sequence[str]) -> list[str]:
    """Columns of a batch that the sink adds itself (compared ignoring case)."""
    return [c for c in columns if c.lower() in _SINK_NAMES]


def with_sink_columns(
    df: DataFrame, *, batch_id: int | None, snapshot: str | None, chunk: int | None = None
) -> DataFrame:
    """``df`` with the sink-added columns (``_batch_id``, ``_snapshot``, ``_chunk``) set."""
    from pyspark.sql import functions as sf

    return (
        df.withColumn("_batch_id", sf.lit(batch_id).cast("int"))
        .withColumn("_snapshot", sf.lit(snapshot).cast("string"))
        .withColumn("_chunk", sf.lit(chunk).cast("int"))
    )


def batch_metadata(app_id: str, batch_id: int) -> str:
    """A micro-batch commit's ``userMetadata``: ``{"app_id": ..., "batch_id": ...}``. The counts
    are in the batch's facts row (and its facts commit's ``userMetadata``): they come out of the
    pass that writes this commit, so they are not known before it (ADR 0090)."""
    meta = {"app_id": app_id, "batch_id": batch_id}
    return json.dumps(meta, sort_keys=True, separators=(",", ":"))


def append_bronze(
    spark: SparkSession,
    target: TableRef,
    out: DataFrame,
    *,
    txn: Txn,
    metadata: str,
    seen: set[TableRef] | None = None,
) -> None:
    """Appends ``out`` (sink columns included) in one commit, creating the table first with the
    batch's columns and their comments; new columns are merged into the schema.

    Args:
        txn: the commit's transaction (``ledger.ids``): Delta skips the commit when its
            version is not above the one recorded for its app id.
        metadata: the commit's ``userMetadata``.
        seen: see ``tables.ensure_table``.
    """
    ensure_table(spark, target, BRONZE, out.schema, seen=seen)
    try:
        target.append(out, txn, metadata, merge_schema=True)
    except Exception as exc:
        text = str(exc)
        if any(mark in text for mark in _TYPE_CLASH):
            raise type_clash_error(target.text, text) from exc
        if any(mark in text for mark in _NAME_REFUSED):
            raise column_mapping_error(target, out.columns) from exc
        raise


#: what Delta's schema merge says when a column's type changed (error classes and text)
_TYPE_CLASH = ("DELTA_FAILED_TO_MERGE_FIELDS", "Failed to merge incompatible data types")
#: what Delta says when a new column's name needs column mapping, which the table lacks
_NAME_REFUSED = ("DELTA_INVALID_CHARACTERS_IN_COLUMN_NAME", "invalid character(s) among")


def column_mapping_error(target: TableRef, columns: Sequence[str]) -> SchemaChangedError:
    """The error of an append that adds a column whose name Delta refuses without column mapping
    (a space or one of ``,;{}()=``, e.g. ``[Unit Price]`` from a newer capture instance) to a
    bronze table created without it. The sink never enables column mapping on an existing table
    (readers of the table must support it): the message gives the statement that does
    (https://docs.delta.io/latest/delta-column-mapping.html)."""
    named = [c for c in columns if needs_column_mapping(c)]
    properties = ", ".join(f"'{k}' = '{v}'" for k, v in COLUMN_MAPPING_PROPERTIES.items())
    statement = f"ALTER TABLE {target.sql} SET TBLPROPERTIES ({properties})"
    return SchemaChangedError(
        f"bronze {target.text}: new column(s) {', '.join(repr(c) for c in named)} need Delta "
        f"column mapping, which the table does not have; nothing of the batch was written. Run "
        f"{statement} and restart the query (every reader of the table must support column "
        "mapping)"
    )


def type_clash_error(target: str, cause: str) -> SchemaChangedError:
    """The error of an append whose column types bronze cannot take (docs/schema-changes.md)."""
    first = next((line.strip() for line in cause.splitlines() if line.strip()), "")
    return SchemaChangedError(
        f"bronze {target}: a captured column's type changed and the table cannot take the new "
        f"one ({first[:300]}). For a widening (e.g. INT to BIGINT) run ALTER TABLE <bronze> SET "
        "TBLPROPERTIES ('delta.enableTypeWidening' = 'true') and restart the query; for "
        "another change write the stream to a new bronze table (or rewrite the column) and "
        "restart"
    )


def write_snapshot(
    spark: SparkSession,
    target: TableRef,
    df: DataFrame,
    *,
    app_id: str,
    snapshot_lsn: str,
    capture_instance: str,
    event: str = "bootstrap",
    txn: Txn | None = None,
    extra: dict[str, object] | None = None,
) -> None:
    """Appends a snapshot's rows (operation 0, ``_snapshot`` = its LSN) in one commit, once
    per ``txn``: by default the bootstrap snapshot's (``ledger.ids.bootstrap``); a
    re-snapshot passes ``event="resnapshot"`` and its own; ``extra`` adds keys to the commit's
    ``userMetadata``."""
    out = with_sink_columns(df, batch_id=None, snapshot=snapshot_lsn)
    meta: dict[str, object] = {
        "app_id": app_id,
        "event": event,
        "snapshot_lsn": snapshot_lsn,
        "capture_instance": capture_instance,
        **(extra or {}),
    }
    append_bronze(
        spark,
        target,
        out,
        txn=txn or ids.bootstrap(app_id),
        metadata=json.dumps(meta),
    )


def write_chunks(
    spark: SparkSession,
    target: TableRef,
    df: DataFrame,
    *,
    app_id: str,
    snapshot_lsn: str,
    capture_instance: str,
    txn: Txn,
    chunks: Sequence[int],
) -> None:
    """Appends a wave of a chunked snapshot (rows carrying their ``_chunk``) in one commit,
    ``_snapshot`` = the snapshot's LSN, once per ``txn`` (``ledger.ids.chunk_wave``: the
    wave's last chunk number)."""
    from pyspark.sql import functions as sf

    out = df.withColumn("_batch_id", sf.lit(None).cast("int")).withColumn(
        "_snapshot", sf.lit(snapshot_lsn).cast("string")
    )
    meta = {
        "app_id": app_id,
        "event": "snapshot_chunk",
        "snapshot_lsn": snapshot_lsn,
        "capture_instance": capture_instance,
        "chunks": list(chunks),
    }
    append_bronze(spark, target, out, txn=txn, metadata=json.dumps(meta))


def chunk_rows(
    spark: SparkSession, target: TableRef, snapshot_lsn: str, chunks: Sequence[int] | None
) -> dict[int, int]:
    """Rows per chunk of the chunked snapshot ``snapshot_lsn`` in the target, for ``chunks``
    (0 for a chunk without rows), or for every chunk the target holds rows of (``None``). One
    Spark job."""
    from pyspark.sql import functions as sf

    counts = dict.fromkeys(chunks or (), 0)
    if (chunks is not None and not chunks) or not target.exists(spark):
        return counts
    df = target.read(spark)
    if "_chunk" not in df.columns or "_snapshot" not in df.columns:
        return counts
    which = sf.lit(True) if chunks is None else sf.col("_chunk").isin(*chunks)
    found = (
        df.where(
            (sf.col("_operation") == 0)
            & (sf.col("_snapshot") == snapshot_lsn)
            & sf.col("_chunk").isNotNull()
            & which
        )
        .groupBy("_chunk")
        .count()
        .collect()
    )
    counts.update({int(r["_chunk"]): int(r["count"]) for r in found})
    return counts


def snapshot_txn_version(spark: SparkSession, target: TableRef, txn_app_id: str) -> int:
    """The last ``txnVersion`` of snapshot commits under ``txn_app_id`` in the target (``-1``
    for none, or no target)."""
    if not target.exists(spark):
        return -1
    found = txn_version(spark, target, txn_app_id)
    return -1 if found is None else found


# -- reading ---------------------------------------------------------------------------------


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


def find_snapshot(
    spark: SparkSession,
    target: TableRef,
    app_id: str,
    instances: Callable[[], Sequence[str]],
    usable: Callable[[str], bool] | None = None,
) -> tuple[str | None, bool]:
    """The LSN of a snapshot already in bronze, and whether it was found there (``True``) or
    not at all (``None, False``).

    In order: this app_id's snapshot commit (``<app_id>#events``; its LSN from the rows, else
    from the commit's ``userMetadata``), else the newest operation-0 rows of any of
    ``instances()`` (called only when bronze holds operation-0 rows), when ``usable`` (if
    given) accepts its LSN: a snapshot another stream took is no start for this one once the
    changes after it are purged.
    """
    from pyspark.sql import functions as sf

    if not target.exists(spark):
        return None, False
    own = txn_version(spark, target, ids.events_id(app_id))
    if own is not None and own >= 0:
        found = _max_snapshot(target.read(spark)) or _from_history(spark, target, app_id)
        if found is not None:
            return found, True
    df = target.read(spark)
    if "_chunk" in df.columns:  # a chunked snapshot's rows are whole only once closed
        df = df.where(sf.col("_chunk").isNull())
    if df.where(sf.col("_operation") == 0).limit(1).count() == 0:
        return None, False
    names = [name.lower() for name in instances()]
    found = _max_snapshot(df.where(sf.lower(sf.col("_capture_instance")).isin(names)))
    if found is not None and usable is not None and not usable(found):
        return None, False
    return found, found is not None


def newest_whole_snapshot(
    spark: SparkSession, target: TableRef, after: str | None = None
) -> tuple[str, Any] | None:
    """The newest whole snapshot in the target (operation-0 rows not read as a chunk): its
    LSN (``coalesce(_snapshot, _start_lsn)``) and commit time; ``None`` without one, or without
    one newer than ``after`` when given. ``after`` is spelled on the two columns rather than on
    the stamp, so that Delta skips the files whose statistics rule them out (an incremental
    ``apply_changes`` call then reads no file of the snapshot it rebuilt from)."""
    from pyspark.sql import functions as sf

    if not target.exists(spark):
        return None
    df = target.read(spark).where(sf.col("_operation") == 0)
    if "_chunk" in df.columns:
        df = df.where(sf.col("_chunk").isNull())
    if after is not None:
        newer = sf.col("_start_lsn") > sf.lit(after)
        if "_snapshot" in df.columns:
            newer = (sf.col("_snapshot").isNotNull() & (sf.col("_snapshot") > sf.lit(after))) | (
                sf.col("_snapshot").isNull() & newer
            )
        df = df.where(newer)
    row = (
        df.select(_stamp(df).alias("s"), "_commit_ts").orderBy(sf.col("s").desc()).limit(1).first()
    )
    return None if row is None else (str(row["s"]), row["_commit_ts"])


def snapshot_rows(spark: SparkSession, target: TableRef, lsn: str) -> tuple[int, Any]:
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


def change_history(spark: SparkSession, bronze: str) -> list[tuple[str, str, int]]:
    """Bronze's change rows (operation 1-4) as ``(start_lsn, seqval, operation)``, in order;
    empty when the table does not exist yet (no batch with rows)."""
    ref = table_ref(bronze, "bronze")
    if not ref.exists(spark):
        return []
    df = ref.read(spark).where("_operation <> 0")
    ordered = df.select("_start_lsn", "_seqval", "_operation").orderBy(
        "_start_lsn", "_seqval", "_operation"
    )
    return [(r[0], r[1], int(r[2])) for r in ordered.collect()]
