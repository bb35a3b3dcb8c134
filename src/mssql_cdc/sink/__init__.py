"""Every Delta table this project writes, and the exactly-once sink that writes them (ADR 0072).

This package is the sole owner of the tables: bronze (``bronze``), facts (``facts``,
``facts_table``), the finalization control table (``control``, silver positions too), silver
(declared here, written by ``mssql_cdc.silver``), each declared once in
``schemas`` (columns, types, comments, schema version) and created by ``tables.ensure_table``;
every ``txnAppId`` is named in ``ledger.ids``. Orchestration (``mssql_cdc.pipeline``,
``mssql_cdc.finalization``, the command line) imports the names below and never touches a table
itself.

Importing this package does not import PySpark (ADR 0004); Spark is imported when a batch is
written. See docs/sink.md.
"""

from __future__ import annotations

from mssql_cdc.sink.bronze import (
    change_history,
    chunk_rows,
    find_snapshot,
    newest_whole_snapshot,
    snapshot_rows,
    snapshot_txn_version,
    with_sink_columns,
    write_chunks,
    write_snapshot,
)
from mssql_cdc.sink.chunk_facts import (
    ChunkedSnapshot,
    ChunkFact,
    SnapshotEvents,
    chunked_snapshot,
    newest_headroom,
    newest_snapshot_event,
    newest_snapshot_opened,
    open_chunked_snapshots,
    write_chunked_open,
    write_snapshot_chunks,
    write_snapshot_plan,
)
from mssql_cdc.sink.control import (
    SilverPosition,
    ensure_control_table,
    merge_silver_position,
    merge_verdict,
    read_silver_position,
    read_silver_positions,
    read_verdict,
)
from mssql_cdc.sink.delta import DeltaSink, WarmState, delta_sink, warm_state_for
from mssql_cdc.sink.facts import parse_utc, utc_now
from mssql_cdc.sink.facts_table import (
    bootstrap_lsn,
    ensure_facts_table,
    facts_history,
    last_batch,
    recent_events,
    stream_summaries,
    write_bootstrap,
    write_resnapshot,
    write_snapshot_open,
)
from mssql_cdc.sink.identity import check_facts_not_target, check_one_target, sink_arguments
from mssql_cdc.sink.ledger import ids
from mssql_cdc.sink.reconcile_tables import (
    append_report,
    bronze_change_keys,
    bronze_position,
    report_frame,
    silver_current_rows,
    silver_version,
)
from mssql_cdc.sink.schemas import BRONZE, CONTROL, FACTS, SILVER, SILVER_HISTORY, TableKind
from mssql_cdc.sink.tables import TableRef, Txn, quote, same_table, table_ref
from mssql_cdc.sink.warmup import compute_state_ahead

__all__ = [
    "BRONZE",
    "CONTROL",
    "FACTS",
    "SILVER",
    "SILVER_HISTORY",
    "ChunkFact",
    "ChunkedSnapshot",
    "DeltaSink",
    "SilverPosition",
    "SnapshotEvents",
    "TableKind",
    "TableRef",
    "Txn",
    "WarmState",
    "append_report",
    "bootstrap_lsn",
    "bronze_change_keys",
    "bronze_position",
    "change_history",
    "check_facts_not_target",
    "check_one_target",
    "chunk_rows",
    "chunked_snapshot",
    "compute_state_ahead",
    "delta_sink",
    "ensure_control_table",
    "ensure_facts_table",
    "facts_history",
    "find_snapshot",
    "ids",
    "last_batch",
    "merge_silver_position",
    "merge_verdict",
    "newest_headroom",
    "newest_snapshot_event",
    "newest_snapshot_opened",
    "newest_whole_snapshot",
    "open_chunked_snapshots",
    "parse_utc",
    "quote",
    "read_silver_position",
    "read_silver_positions",
    "read_verdict",
    "recent_events",
    "report_frame",
    "same_table",
    "silver_current_rows",
    "silver_version",
    "sink_arguments",
    "snapshot_rows",
    "snapshot_txn_version",
    "stream_summaries",
    "table_ref",
    "utc_now",
    "warm_state_for",
    "with_sink_columns",
    "write_bootstrap",
    "write_chunked_open",
    "write_chunks",
    "write_resnapshot",
    "write_snapshot",
    "write_snapshot_chunks",
    "write_snapshot_open",
    "write_snapshot_plan",
]
