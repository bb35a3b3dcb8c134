"""``to_delta(..., snapshot_on_switch=True)``: a whole snapshot appended to bronze after the
micro-batch that switched to a newer capture instance, so that the rows no change touched since
also carry the columns the new instance captures (docs/schema-changes.md).

Runs on the driver, inside ``foreachBatch``: :class:`SwitchSnapshotSink` wraps the stream's
:class:`~mssql_cdc.sink.DeltaSink`. Before the sink runs, it looks in the stream's metrics
directory for the ``capture_instance_switched`` event the reader's plan of this batch wrote (the
sink folds the events into the facts and deletes the files). After the sink returns (bronze and
facts committed), it reads the table (``full.take_snapshot``, the LSN recorded before the
read) and appends it once per switching batch (the ledger's ``switch`` commit, keyed by the batch
id).

Exactly once: a crash before the snapshot commit replays the batch (Spark writes its commit log
entry only after ``foreachBatch`` returns); the replay's plan writes the event again, the sink
skips what landed, and the snapshot is taken then. A snapshot whose commit landed is not read
again (the ledger finds its commit recorded). A downstream table rebuilds from it like from any
whole snapshot (``newest_snapshot``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mssql_cdc.options import ReaderOptions
from mssql_cdc.sink import DeltaSink, Ledger, StreamTables
from mssql_cdc.snapshots.full import take_snapshot
from mssql_cdc.snapshots.reader import TableReader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["SWITCH_EVENT", "SwitchSnapshotSink"]

log = logging.getLogger("mssql_cdc.snapshots")

#: the event kind the reader's plan writes when a batch reaches a newer capture instance
SWITCH_EVENT = "capture_instance_switched"


class SwitchSnapshotSink:
    """The ``foreachBatch`` function of a stream with ``snapshot_on_switch=True``.

    Args:
        sink: the stream's sink; it has a metrics directory (``to_delta`` checks).
        raw: the data source options the snapshot reads with.
        options: the same, parsed.
    """

    def __init__(self, sink: DeltaSink, raw: dict[str, str], options: ReaderOptions) -> None:
        if sink.metrics is None:
            raise ValueError("snapshot_on_switch needs the stream's metrics directory")
        self.sink = sink
        self._raw = dict(raw)
        self._options = options

    def __repr__(self) -> str:
        return f"SwitchSnapshotSink({self.sink!r})"

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        batch_id = int(batch_id)
        assert self.sink.metrics is not None
        switched = [e for e in self.sink.metrics.events() if e.get("kind") == SWITCH_EVENT]
        self.sink(df, batch_id)
        if switched:
            self._snapshot(df, batch_id, switched[-1])

    def _snapshot(self, df: DataFrame, batch_id: int, event: dict[str, object]) -> None:
        sink = self.sink
        ledger = Ledger(StreamTables(df.sparkSession, sink.target), sink.app_id)
        if ledger.switch_taken(batch_id):
            log.info(
                "%s: the snapshot after micro-batch %d's capture-instance switch is already in "
                "%s (replay)",
                sink.app_id,
                batch_id,
                sink.target.text,
            )
            return
        detail = event.get("detail")
        log.info(
            "%s: micro-batch %d switched capture instance (%s); snapshot_on_switch: appending a "
            "whole snapshot of the table to %s",
            sink.app_id,
            batch_id,
            detail if isinstance(detail, str) else "a newer instance",
            sink.target.text,
        )
        reader = TableReader(df.sparkSession, self._raw, self._options)
        commit = ledger.snapshot_commit("switch", batch_id)
        take_snapshot(reader, ledger, commit, reader.position())
