"""The bronze table on Delta: its one writer and its display read
(docs/reference/bronze-schema.md).

Runs on the driver (or Spark Connect's ``foreachBatch`` worker). Bronze holds the captured
columns, the source's metadata columns and the three columns the sink adds
(``schemas.BRONZE``: ``_batch_id``, ``_snapshot``, ``_chunk``). Every commit to it goes
through :meth:`BronzeTable.append` with the transaction and ``userMetadata`` the ledger
(``sink.ledger``) picked: a micro-batch, a whole snapshot, a chunk wave. What bronze records is
read back by the ledger (``ledger.landed``); :func:`change_history` serves the demo's end check
(``cli/verify.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.sink.schemas import BRONZE
from mssql_cdc.sink.tables import (
    COLUMN_MAPPING_PROPERTIES,
    TableRef,
    Txn,
    create_by_append,
    ensure_table,
    metadata_changed,
    needs_column_mapping,
    table_ref,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "BronzeTable",
    "change_history",
    "clashing_columns",
    "column_mapping_error",
    "snapshot_rows_condition",
    "type_clash_error",
    "with_sink_columns",
]

log = logging.getLogger("mssql_cdc.sink")

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


class BronzeTable:
    """The bronze table bound to a session, as ``DeltaTable`` binds one: the one writer of
    bronze. Building one reads nothing.

    Args:
        seen: tables known to exist, shared with the caller (``tables.ensure_table``).
    """

    def __init__(
        self, spark: SparkSession, ref: TableRef, *, seen: set[TableRef] | None = None
    ) -> None:
        self.spark = spark
        self.ref = ref
        self.seen = seen

    def __repr__(self) -> str:
        return f"BronzeTable({self.ref.text!r})"

    def append(self, rows: DataFrame, txn: Txn, metadata: str) -> None:
        """Appends ``rows`` (sink columns included) in one commit, new columns merged into the
        schema; a new path table is created by that commit, its columns with their comments
        (``tables.create_by_append``), else first (``CREATE TABLE``).

        Args:
            txn: the commit's transaction, from the ledger: Delta skips the commit when its
                version is not above the one recorded for its app id.
            metadata: the commit's ``userMetadata``.

        Raises:
            SchemaChangedError: a column's type changed incompatibly, or a new column's name
                needs Delta column mapping, which the table lacks.
        """
        try:
            unseen = self.seen is None or self.ref not in self.seen
            if unseen and create_by_append(
                self.spark, self.ref, BRONZE, rows, txn=txn, metadata=metadata
            ):
                if self.seen is not None:
                    self.seen.add(self.ref)
                return
            ensure_table(self.spark, self.ref, BRONZE, rows.schema, seen=self.seen)
            try:
                self.ref.append(rows, txn, metadata, merge_schema=True)
            except Exception as exc:
                if not metadata_changed(exc):
                    raise
                # another writer changed bronze's metadata under this commit (the creator of
                # a new table setting its comment, ADR 0213; a column merged): it did not land,
                # so once more, under the same transaction
                log.info("%s: its metadata changed under an append; appending again", self.ref.text)
                self.ref.append(rows, txn, metadata, merge_schema=True)
        except Exception as exc:
            text = str(exc)
            if any(mark in text for mark in _TYPE_CLASH):
                raise type_clash_error(self.ref.text, text) from exc
            if any(mark in text for mark in _NAME_REFUSED):
                raise column_mapping_error(self.ref, rows.columns) from exc
            raise


def snapshot_rows_condition(columns: Sequence[str], lsn: str) -> Column:
    """Which bronze rows are the snapshot ``lsn`` (one the ledger returned as complete): the
    operation-0 rows whose ``coalesce(_snapshot, _start_lsn)`` is ``lsn``, a chunked
    snapshot's chunk rows included (its ``_snapshot`` is ``lsn``; it is complete once that LSN
    is returned, never before). ``columns``: bronze's columns."""
    from pyspark.sql import functions as sf

    stamp = (
        sf.coalesce(sf.col("_snapshot"), sf.col("_start_lsn"))
        if "_snapshot" in columns
        else sf.col("_start_lsn")
    )
    return (sf.col("_operation") == 0) & (stamp == sf.lit(lsn))


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
