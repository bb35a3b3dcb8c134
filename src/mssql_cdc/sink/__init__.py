"""Every Delta table this project writes, and the exactly-once sink that writes them (ADR 0072).

This package is the sole owner of the tables: bronze (``bronze``), facts (``facts``,
``facts_table``), the finalization control table (``control``, silver positions too), silver
(declared here, written by ``mssql_cdc.silver``), each declared once in
``schemas`` (columns, types, comments, schema version) and created by ``tables.ensure_table``.
Every commit decision (which ``txnAppId`` and ``txnVersion`` a commit carries, what already
landed) is the ledger's (``sink.ledger``). Features (``mssql_cdc.pipeline``,
``mssql_cdc.snapshots``, ``mssql_cdc.finalization``, ``mssql_cdc.silver``, the command line)
import the names below and never touch a table or name a transaction themselves.

Importing this package does not import PySpark (ADR 0004); Spark is imported when a batch is
written. See docs/sink.md.
"""

from __future__ import annotations

from mssql_cdc.sink.bronze import change_history, snapshot_rows_condition
from mssql_cdc.sink.conflicts import is_conflict
from mssql_cdc.sink.control import (
    SilverPosition,
    ensure_control_table,
    merge_silver_position,
    merge_verdict,
    merge_verdicts,
    read_silver_position,
    read_silver_positions,
    read_verdict,
    read_verdicts,
)
from mssql_cdc.sink.database_report import DatabaseBatchReport, observe_batches
from mssql_cdc.sink.database_sink import (
    DatabaseSettings,
    DatabaseSink,
    DatabaseSource,
    DatabaseTable,
    failure_text,
    park_at_start,
    parkable,
)
from mssql_cdc.sink.delta import DeltaSink, WarmState, delta_sink, warm_state_for
from mssql_cdc.sink.facts import (
    Bootstrapped,
    ChunkLanded,
    Resnapshotted,
    SnapshotOpened,
    SnapshotPlanned,
    parse_utc,
    utc_now,
)
from mssql_cdc.sink.facts_table import (
    ensure_facts_table,
    facts_history,
    missing_facts_columns,
    recent_events,
    stream_summaries,
)
from mssql_cdc.sink.ledger import (
    ChunkedSnapshot,
    ChunkFact,
    DatabaseLedger,
    Generation,
    Generations,
    GenerationState,
    LastBatch,
    Ledger,
    ParkedTable,
    Recovering,
    SnapshotCommit,
    SnapshotEvents,
    SnapshotOpen,
    TargetLedger,
    WaveCommit,
    WaveOvertakenError,
    WaveRows,
    sink_arguments,
    stream_of_sink,
)
from mssql_cdc.sink.reconcile_tables import (
    append_report,
    bronze_change_keys,
    bronze_position,
    report_frame,
    silver_current_rows,
    silver_version,
)
from mssql_cdc.sink.schemas import BRONZE, CONTROL, FACTS, SILVER, SILVER_HISTORY, TableKind
from mssql_cdc.sink.stream_tables import StreamTables
from mssql_cdc.sink.tables import TableRef, quote, same_table, table_ref
from mssql_cdc.sink.warmup import compute_state_ahead

__all__ = [
    "BRONZE",
    "CONTROL",
    "FACTS",
    "SILVER",
    "SILVER_HISTORY",
    "Bootstrapped",
    "ChunkFact",
    "ChunkLanded",
    "ChunkedSnapshot",
    "DatabaseBatchReport",
    "DatabaseLedger",
    "DatabaseSettings",
    "DatabaseSink",
    "DatabaseSource",
    "DatabaseTable",
    "DeltaSink",
    "Generation",
    "GenerationState",
    "Generations",
    "LastBatch",
    "Ledger",
    "ParkedTable",
    "Recovering",
    "Resnapshotted",
    "SilverPosition",
    "SnapshotCommit",
    "SnapshotEvents",
    "SnapshotOpen",
    "SnapshotOpened",
    "SnapshotPlanned",
    "StreamTables",
    "TableKind",
    "TableRef",
    "TargetLedger",
    "WarmState",
    "WaveCommit",
    "WaveOvertakenError",
    "WaveRows",
    "append_report",
    "bronze_change_keys",
    "bronze_position",
    "change_history",
    "compute_state_ahead",
    "delta_sink",
    "ensure_control_table",
    "ensure_facts_table",
    "facts_history",
    "failure_text",
    "is_conflict",
    "merge_silver_position",
    "merge_verdict",
    "merge_verdicts",
    "missing_facts_columns",
    "observe_batches",
    "park_at_start",
    "parkable",
    "parse_utc",
    "quote",
    "read_silver_position",
    "read_silver_positions",
    "read_verdict",
    "read_verdicts",
    "recent_events",
    "report_frame",
    "same_table",
    "silver_current_rows",
    "silver_version",
    "sink_arguments",
    "snapshot_rows_condition",
    "stream_of_sink",
    "stream_summaries",
    "table_ref",
    "utc_now",
    "warm_state_for",
]
