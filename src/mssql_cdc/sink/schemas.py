"""The declaration of every table kind this project writes: bronze, facts, control, silver,
reconcile.

Pure data, no Spark. Each kind is one :class:`TableKind`: its columns ``(name, sql_type,
comment)`` in table order (bronze: the metadata columns the source and the sink add; its data
columns are the captured table's), its table comment and its ``mssql_cdc.schema_version``
(docs/reference/bronze-schema.md, docs/sink.md). ``docs/sink.md`` describes the same columns;
``tests/sink`` checks the two agree. Tables are created from these declarations only
(``tables.ensure_table``, ADR 0072).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BRONZE",
    "BRONZE_COLUMN_COMMENTS",
    "BRONZE_SCHEMA_VERSION",
    "BRONZE_TABLE_COMMENT",
    "CONTROL",
    "CONTROL_COLUMNS",
    "CONTROL_SCHEMA_VERSION",
    "CONTROL_TABLE_COMMENT",
    "FACTS",
    "FACTS_COLUMNS",
    "FACTS_SCHEMA_VERSION",
    "FACTS_TABLE_COMMENT",
    "RECONCILE",
    "RECONCILE_COLUMNS",
    "RECONCILE_SCHEMA_VERSION",
    "RECONCILE_TABLE_COMMENT",
    "SCHEMA_VERSION_PROPERTY",
    "SILVER",
    "SILVER_COLUMNS",
    "SILVER_HISTORY",
    "SILVER_HISTORY_COLUMNS",
    "SILVER_SCHEMA_VERSION",
    "SINK_COLUMNS",
    "TableKind",
]

#: the table property holding a table's schema version
SCHEMA_VERSION_PROPERTY = "mssql_cdc.schema_version"


#: ``mssql_cdc.schema_version`` of each table kind: the number of migrations the reference
#: release knows, so its readers accept tables this package creates.
BRONZE_SCHEMA_VERSION = 2
FACTS_SCHEMA_VERSION = 12
CONTROL_SCHEMA_VERSION = 4
SILVER_SCHEMA_VERSION = 0
RECONCILE_SCHEMA_VERSION = 0

BRONZE_TABLE_COMMENT = (
    "Change rows read from SQL Server CDC and appended by mssql_cdc's delta_sink; rows are never "
    "updated or deleted here. Each change is one row and an update is two (operation 3 holds "
    "the row before, 4 the row after). Order changes by _start_lsn, then _command_id, _seqval "
    "and _operation. Rows with operation 0 are a snapshot of the table, named by _snapshot: "
    "rebuild from the newest snapshot and apply the changes after it. A chunked snapshot stamps "
    "each chunk with the LSN taken before reading it (see _chunk). A column a newer capture "
    "instance adds is appended at the end (NULL on older rows); a column the source drops stays, "
    "NULL from then on."
)

#: (name, type, comment) of the sink-added columns, appended after the captured columns.
SINK_COLUMNS: list[tuple[str, str, str]] = [
    (
        "_batch_id",
        "INT",
        "Micro-batch that appended the row; together with the sink's app_id it is the key of "
        "the batch's row in the facts table. NULL on snapshot rows.",
    ),
    (
        "_snapshot",
        "STRING",
        "On snapshot rows (operation 0), the LSN of the snapshot the row belongs to, where its "
        "stream generation starts. NULL on change rows.",
    ),
    (
        "_chunk",
        "INT",
        "On rows of a chunked snapshot, the chunk's number; with _snapshot the key of its "
        "snapshot_chunk facts row. NULL otherwise.",
    ),
]

BRONZE_COLUMN_COMMENTS: dict[str, str] = {
    "_capture_instance": (
        "CDC capture instance the change was read from; after a switch, the newer instance. "
        "On snapshot rows, the instance the snapshot was taken for."
    ),
    "_start_lsn": (
        "Commit LSN of the source transaction as 0x plus 20 uppercase hex digits. Every row of a "
        "transaction has the same value and text order is commit order. On snapshot rows, the "
        "LSN recorded before the table (or chunk) was read: the row is at least that recent."
    ),
    "_seqval": (
        "Position of the change in the transaction log, same format as _start_lsn. Use it only "
        "to break ties. NULL on snapshot rows."
    ),
    "_operation": (
        "What the row is: 1 delete, 2 insert, 3 update (row before), 4 update (row after), "
        "0 snapshot row."
    ),
    "_command_id": (
        "Order of the statement inside its transaction, numbered by each capture instance, so "
        "it orders rows only within one _start_lsn; across instances a change is identified by "
        "(_start_lsn, _seqval, _operation). NULL on snapshot rows."
    ),
    "_commit_ts": (
        "Commit time of the transaction in UTC (cdc.lsn_time_mapping). On snapshot rows, the "
        "commit time of their _start_lsn."
    ),
    **{name: comment for name, _, comment in SINK_COLUMNS},
}

FACTS_TABLE_COMMENT = (
    "One row per micro-batch written by mssql_cdc's delta_sink, empty batches included, so a "
    "current stream on a quiet table keeps adding rows: counts, LSN and commit-time ranges, the "
    "batch's end position and timings, and read, retention and lag figures when the reader "
    "writes metrics. The facts commit carries the same counts in its userMetadata until log "
    "cleanup drops it. Also one row per snapshot, source schema change, capture instance "
    "switch, skipped range, snapshot open, plan and chunk (column event)."
)

FACTS_COLUMNS: list[tuple[str, str, str]] = [
    (
        "app_id",
        "STRING",
        "Sink identity: the txnAppId of the bronze write. Stays the same for the life of one "
        "checkpoint.",
    ),
    (
        "batch_id",
        "BIGINT",
        "Micro-batch id; with app_id the idempotency key. Also set on schema_change, "
        "capture_instance_switched and data_skipped rows; NULL on snapshot events.",
    ),
    (
        "rows",
        "BIGINT",
        "Change rows written, every operation; 0 for an empty batch. On bootstrap and "
        "resnapshot rows the snapshot's rows, on snapshot_chunk the chunk's, 0 on other events.",
    ),
    ("min_lsn", "STRING", "Smallest commit LSN in the batch; on events, the event's LSN."),
    ("max_lsn", "STRING", "Largest commit LSN in the batch; the hex text sorts in LSN order."),
    ("min_commit_ts", "TIMESTAMP_NTZ", "Earliest commit time in the batch, UTC."),
    (
        "max_commit_ts",
        "TIMESTAMP_NTZ",
        "Latest commit time in the batch, UTC; written_at minus it is the ingestion latency.",
    ),
    ("deletes", "BIGINT", "Rows with operation 1 (delete)."),
    ("inserts", "BIGINT", "Rows with operation 2 (insert)."),
    (
        "updates",
        "BIGINT",
        "Updates, counted once by their row after (operation 4); operation 3 is not counted.",
    ),
    ("started_at", "TIMESTAMP_NTZ", "When the sink started the batch, UTC."),
    (
        "duration_ms",
        "BIGINT",
        "Milliseconds from started_at to the end of the bronze write (the read, the counts and "
        "the append); offset planning and Spark's checkpoint commit are outside it.",
    ),
    (
        "source_rtt_ms",
        "DOUBLE",
        "Median over the batch's partitions of one round trip to SQL Server each made before "
        "reading.",
    ),
    (
        "read_seconds",
        "DOUBLE",
        "Task-seconds the partitions spent reading, Spark consuming the rows included.",
    ),
    (
        "read_mb",
        "DOUBLE",
        "Megabytes the partitions received from SQL Server while reading (TDS bytes off the "
        "socket, TLS included, before decoding), summed.",
    ),
    (
        "network_wait_ms",
        "BIGINT",
        "Milliseconds the partitions' connections waited for SQL Server's bytes while reading "
        "(the client blocked on its socket), summed; close to read_seconds * 1000 means the "
        "read waited on the server or the network, not on decoding or Spark.",
    ),
    (
        "retention_watermark_ts",
        "TIMESTAMP_NTZ",
        "Commit time of the capture instance's oldest held LSN (sys.fn_cdc_get_min_lsn) after "
        "the read, UTC.",
    ),
    (
        "retention_headroom_hours",
        "DOUBLE",
        "Hours, from the read, before CDC cleanup deletes the first change after end_commit_ts: "
        "the cleanup job's retention when current, 0 when unread changes are being purged. A "
        "login that cannot read the retention (sys.sp_cdc_help_jobs needs db_owner) gets "
        "end_commit_ts - retention_watermark_ts instead, and detail says headroom_from "
        "cleanup_watermark.",
    ),
    (
        "event",
        "STRING",
        "NULL on micro-batch rows; otherwise the event: bootstrap, resnapshot, snapshot_open, "
        "snapshot_plan, snapshot_chunk, schema_change, capture_instance_switched, data_skipped.",
    ),
    (
        "lost_from_ts",
        "TIMESTAMP_NTZ",
        "resnapshot: commit time of the last processed offset; data_skipped: of the batch's "
        "start offset. NULL otherwise.",
    ),
    (
        "lost_to_ts",
        "TIMESTAMP_NTZ",
        "resnapshot and data_skipped: commit time of the retention watermark when the loss was "
        "found. NULL otherwise.",
    ),
    (
        "source_max_commit_ts",
        "TIMESTAMP_NTZ",
        "Commit time of sys.fn_cdc_get_max_lsn after the read, UTC.",
    ),
    (
        "capture_lag_seconds",
        "DOUBLE",
        "SQL Server's clock (SYSUTCDATETIME()) when the batch's last partition finished "
        "reading, minus source_max_commit_ts: both from the server, so no reader's clock skew "
        "shifts it; minutes on a quiet database without a heartbeat.",
    ),
    (
        "ingestion_lag_seconds",
        "DOUBLE",
        "source_max_commit_ts minus end_commit_ts in seconds; about 0 when the stream is current.",
    ),
    (
        "end_lsn",
        "STRING",
        "LSN of the batch's end offset (at or after max_lsn), empty batches included; on events "
        "the event's LSN. NULL when neither the metrics nor Spark's offset log were readable.",
    ),
    (
        "end_commit_ts",
        "TIMESTAMP_NTZ",
        "Commit time of end_lsn, UTC; headroom and ingestion lag are measured from it.",
    ),
    (
        "detail",
        "STRING",
        'Event payload (DDL text, "old -> new", JSON); on micro-batch rows {"warnings": [...]} '
        "when the reader warned since the previous row.",
    ),
    ("target", "STRING", "Table name or path the batch was written to."),
    (
        "written_at",
        "TIMESTAMP_NTZ",
        "When this row was written, after the bronze commit, UTC.",
    ),
]

CONTROL_TABLE_COMMENT = (
    "Completeness verdict of each CDC-fed table, one row per table: every period ending at or "
    "before finalized_until is complete. Gate downstream reads on it "
    "(mssql_cdc.finalization.is_final)."
)

CONTROL_COLUMNS: list[tuple[str, str, str]] = [
    ("table_name", "STRING", "Name or path passed to advance(), usually the bronze target; key."),
    (
        "finalized_until",
        "TIMESTAMP_NTZ",
        "Verdict, UTC: no commit at or before it can still arrive, so every period ending at or "
        "before it is complete (over a recorded loss gap it means only that nothing more will "
        "arrive). Only moves forward.",
    ),
    ("end_lsn", "STRING", "LSN of the batch end that last moved the verdict."),
    (
        "end_commit_ts",
        "TIMESTAMP_NTZ",
        "Commit time of end_lsn, UTC; the verdict is this time truncated to the granularity.",
    ),
    ("updated_at", "TIMESTAMP_NTZ", "When the verdict last moved, UTC."),
    ("applied_lsn", "STRING", "Silver rows only: highest bronze change LSN applied."),
    ("snapshot_lsn", "STRING", "Silver rows only: LSN of the snapshot silver was rebuilt from."),
    (
        "open_snapshot_lsn",
        "STRING",
        "Silver rows only: LSN of an open chunked snapshot whose chunks are being applied.",
    ),
    ("snapshot_wave", "INT", "Silver rows only: last applied wave of open_snapshot_lsn."),
]

SILVER_TABLE_COMMENT = (
    "Current state of a CDC-fed table kept by mssql_cdc.apply_changes from its bronze table: "
    "one row per key, deleted rows removed. Its position in the bronze change log is "
    "applied_lsn and its completeness verdict finalized_until, both in the control table row "
    "named like this table."
)

#: (name, type, comment) of the columns a type 1 silver table has after the captured ones
SILVER_COLUMNS: list[tuple[str, str, str]] = [
    (
        "_start_lsn",
        "STRING",
        "Commit LSN of the change that gave the row its current image; on a row unchanged "
        "since the snapshot silver was rebuilt from, that snapshot's LSN.",
    ),
    ("_commit_ts", "TIMESTAMP_NTZ", "Commit time of _start_lsn, UTC."),
]

SILVER_HISTORY_TABLE_COMMENT = (
    "History of a CDC-fed table kept by mssql_cdc.apply_changes(scd_type=2) from its bronze "
    "table: one row per committed version of each key, valid from __START_AT until __END_AT "
    "(commit times, UTC; NULL while current). A delete closes the open version; a re-insert "
    "opens a new one. Position applied_lsn and verdict finalized_until are in the control "
    "table row named like this table."
)

#: (name, type, comment) of the columns a type 2 silver table has after the captured ones
SILVER_HISTORY_COLUMNS: list[tuple[str, str, str]] = [
    (
        "_start_lsn",
        "STRING",
        "Commit LSN of the transaction that made this version; with the key, the version's "
        "identity. A version from a snapshot carries the snapshot's LSN.",
    ),
    ("_commit_ts", "TIMESTAMP_NTZ", "Commit time of _start_lsn, UTC."),
    (
        "__START_AT",
        "TIMESTAMP_NTZ",
        "When this version became current: the commit time of _start_lsn, UTC.",
    ),
    (
        "__END_AT",
        "TIMESTAMP_NTZ",
        "When this version stopped being current: the commit time of the next version or of "
        "the delete, UTC. NULL while the version is current.",
    ),
    (
        "_end_lsn",
        "STRING",
        "Commit LSN of the change that closed this version (next version or delete); NULL "
        "while current.",
    ),
    ("__IS_CURRENT", "BOOLEAN", "True on the key's open version (__END_AT is NULL)."),
]


@dataclass(frozen=True)
class TableKind:
    """One kind of table this project writes.

    Attributes:
        kind: ``"bronze"``, ``"facts"``, ``"control"``, ``"silver"``, ``"silver_history"`` or
            ``"reconcile"``.
        columns: ``(name, sql_type, comment)`` in table order; for bronze, the columns the sink
            appends after the captured ones (the rest come from the batch's schema); for silver
            kinds, the columns after the captured ones.
        column_comments: comment of each column by name (bronze: the metadata columns too).
        comment: the table comment.
        schema_version: the ``mssql_cdc.schema_version`` table property; a kind whose columns
            change gets a higher version and its migration is declared here.
    """

    kind: str
    columns: tuple[tuple[str, str, str], ...]
    column_comments: dict[str, str]
    comment: str
    schema_version: int

    @property
    def names(self) -> tuple[str, ...]:
        """The declared column names, in order."""
        return tuple(name for name, _, _ in self.columns)

    @property
    def ddl(self) -> str:
        """The declared columns as a Spark DDL string (for ``createDataFrame``)."""
        return ", ".join(f"`{name}` {sql_type}" for name, sql_type, _ in self.columns)

    def properties(self) -> dict[str, str]:
        """The table properties a new table of this kind gets."""
        return {SCHEMA_VERSION_PROPERTY: str(self.schema_version)}


BRONZE = TableKind(
    "bronze",
    tuple(SINK_COLUMNS),
    BRONZE_COLUMN_COMMENTS,
    BRONZE_TABLE_COMMENT,
    BRONZE_SCHEMA_VERSION,
)
FACTS = TableKind(
    "facts",
    tuple(FACTS_COLUMNS),
    {name: comment for name, _, comment in FACTS_COLUMNS},
    FACTS_TABLE_COMMENT,
    FACTS_SCHEMA_VERSION,
)
CONTROL = TableKind(
    "control",
    tuple(CONTROL_COLUMNS),
    {name: comment for name, _, comment in CONTROL_COLUMNS},
    CONTROL_TABLE_COMMENT,
    CONTROL_SCHEMA_VERSION,
)
SILVER = TableKind(
    "silver",
    tuple(SILVER_COLUMNS),
    {name: comment for name, _, comment in SILVER_COLUMNS},
    SILVER_TABLE_COMMENT,
    SILVER_SCHEMA_VERSION,
)
SILVER_HISTORY = TableKind(
    "silver_history",
    tuple(SILVER_HISTORY_COLUMNS),
    {name: comment for name, _, comment in SILVER_HISTORY_COLUMNS},
    SILVER_HISTORY_TABLE_COMMENT,
    SILVER_SCHEMA_VERSION,
)

RECONCILE_TABLE_COMMENT = (
    "Reports of mssql_cdc.reconcile, appended per run: one row per compared bucket of keys "
    "(status MATCH, IN_FLIGHT or MISMATCH, with row counts and key sums of both sides) and one "
    "row per key whose row differs between SQL Server and silver (failure_type, detail)."
)

RECONCILE_COLUMNS: list[tuple[str, str, str]] = [
    ("run_id", "STRING", "UUID of the reconcile run; every row of one run has it."),
    ("run_at", "TIMESTAMP_NTZ", "When the run started, UTC."),
    ("silver", "STRING", "The silver table as passed to reconcile()."),
    ("silver_version", "BIGINT", "Delta version of silver that was compared."),
    (
        "silver_lsn",
        "STRING",
        "Silver's applied_lsn in the control table, read before that version.",
    ),
    (
        "source_lsn",
        "STRING",
        "sys.fn_cdc_get_max_lsn() read just before the source read: before the counts on "
        "bucket rows, before the row read on key rows.",
    ),
    (
        "bucket_lo",
        "STRING",
        "Lowest key of the bucket (JSON, inclusive); NULL: open below. Both bounds NULL on a "
        "whole-table bucket.",
    ),
    ("bucket_hi", "STRING", "Key after the bucket (JSON, exclusive); NULL: open above."),
    ("source_rows", "BIGINT", "Bucket rows: rows of the bucket in SQL Server."),
    (
        "source_key_sum",
        "DECIMAL(38,0)",
        "Bucket rows: sum of the bucket's keys in SQL Server (a date key as its day number "
        "from 1970-01-01); NULL on a whole-table bucket.",
    ),
    ("silver_rows", "BIGINT", "Bucket rows: rows of the bucket in silver (current rows)."),
    ("silver_key_sum", "DECIMAL(38,0)", "Bucket rows: sum of the bucket's keys in silver."),
    (
        "status",
        "STRING",
        "Bucket rows: MATCH, IN_FLIGHT (differences explained by changes not yet applied to "
        "silver) or MISMATCH. NULL on key rows.",
    ),
    ("hashed", "BOOLEAN", "Bucket rows: true when the bucket's rows were compared by hash."),
    (
        "key",
        "STRING",
        'Key rows: the key as a JSON object; a NULL component is named ({"code": null}). '
        "NULL on bucket rows.",
    ),
    (
        "failure_type",
        "STRING",
        "Key rows: MISSING_TARGET (in SQL Server, not in silver), MISSING_SOURCE (in silver, "
        "not in SQL Server), RECORD_DIFF (values differ) or IN_FLIGHT (differs, and the key has "
        "changes not yet applied to silver).",
    ),
    (
        "detail",
        "STRING",
        "Key rows: JSON with silver_start_lsn (the silver row's _start_lsn) and columns (the "
        "columns whose values differ).",
    ),
]

RECONCILE = TableKind(
    "reconcile",
    tuple(RECONCILE_COLUMNS),
    {name: comment for name, _, comment in RECONCILE_COLUMNS},
    RECONCILE_TABLE_COMMENT,
    RECONCILE_SCHEMA_VERSION,
)
