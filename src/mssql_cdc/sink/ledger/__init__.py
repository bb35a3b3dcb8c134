"""The ledger: every commit decision of the exactly-once pipeline (``README.md`` here).

The only code that spells a ``txnAppId``, picks a ``txnVersion`` or asks what already landed:
feature code binds a :class:`Ledger` to a stream's tables (``StreamTables``) and hands it rows
and typed facts rows; ``apply_changes``, ``reconcile`` and ``newest_snapshot`` ask a
:class:`TargetLedger` what a bronze table and its facts record. Importing it does not import
PySpark.
"""

from __future__ import annotations

from mssql_cdc.sink.ledger.database import DatabaseLedger, TableRow, member_row, parked_row
from mssql_cdc.sink.ledger.generations import (
    Generation,
    Generations,
    GenerationState,
    Recovering,
)
from mssql_cdc.sink.ledger.identity import sink_arguments
from mssql_cdc.sink.ledger.ids import stream_of_sink
from mssql_cdc.sink.ledger.landed import LastBatch, Member, ParkedTable, TableBatch, WaveCommit
from mssql_cdc.sink.ledger.ledger import (
    BatchDecision,
    CommitKind,
    Ledger,
    SnapshotCommit,
    SnapshotKind,
    TargetLedger,
    WaveOvertakenError,
    WaveRows,
)
from mssql_cdc.sink.ledger.rewind import Recorded, Verdict
from mssql_cdc.sink.ledger.snapshot_events import (
    SNAPSHOT_EVENTS,
    ChunkedSnapshot,
    ChunkFact,
    SnapshotEvents,
    SnapshotOpen,
)

__all__ = [
    "SNAPSHOT_EVENTS",
    "BatchDecision",
    "ChunkFact",
    "ChunkedSnapshot",
    "CommitKind",
    "DatabaseLedger",
    "Generation",
    "GenerationState",
    "Generations",
    "LastBatch",
    "Ledger",
    "Member",
    "ParkedTable",
    "Recorded",
    "Recovering",
    "SnapshotCommit",
    "SnapshotEvents",
    "SnapshotKind",
    "SnapshotOpen",
    "TableBatch",
    "TableRow",
    "TargetLedger",
    "Verdict",
    "WaveCommit",
    "WaveOvertakenError",
    "WaveRows",
    "member_row",
    "parked_row",
    "sink_arguments",
    "stream_of_sink",
]
