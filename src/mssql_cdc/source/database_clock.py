"""``format("mssql_cdc_database")``: the clock of a database stream (docs/many-tables.md).

A stream of no rows whose offset is the database's newest commit
(``sys.fn_cdc_get_max_lsn()`` and its commit time, as ``mssql_cdc``'s offsets): each
micro-batch of a query on it stands for the LSN range ``(previous offset, offset]``, which the
query's ``foreachBatch`` function (``mssql_cdc.sink.DatabaseSink``) reads table by table. CDC
LSNs are database-wide, so one offset bounds every table's batch, and one poll per trigger
serves every table (shared with the database's other streams, ADR 0170).

The first offset of a new checkpoint is LSN zero, so that the first trigger always runs a batch
(a table's own position, not the clock's, says where its reads begin). The options are a
stream's (``captureInstance`` names any of the stream's instances: the clock reads none). On
Spark 4.2+, ``maxCommitsPerBatch`` bounds each batch's range as it bounds a single stream's
(the same planner: the ``n``-th commit of ``cdc.lsn_time_mapping`` after the start, so that many
database commits of captured tables), except the first batch of a new checkpoint, which ends
at the newest commit (the tables' starts are their own); Spark 4.0/4.1 call the legacy
``latestOffset()`` and every batch ends at the newest commit (``start_database`` says so once,
on the driver).

This module imports PySpark; ``import mssql_cdc`` does not import it (ADR 0004). Runs in
Spark's Python planning process of the driver.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StringType, StructField, StructType

from mssql_cdc._native import Lsn
from mssql_cdc.options import ReaderOptions, parse_options
from mssql_cdc.source.offsets import make_offset
from mssql_cdc.source.stream_driver import StreamPlanner

try:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    _AVAILABLE_NOW: tuple[type, ...] = (SupportsTriggerAvailableNow,)
except ImportError:  # Spark 4.0 / 4.1: availableNow runs one batch to the newest commit
    _AVAILABLE_NOW = ()

__all__ = [
    "CLOCK_SCHEMA",
    "ZERO_OFFSET",
    "AvailableNowClockReader",
    "DatabaseClockDataSource",
    "DatabaseClockReader",
]

log = logging.getLogger("mssql_cdc.source")

#: the clock's one column (it yields no rows)
CLOCK_SCHEMA = StructType([StructField("lsn", StringType(), True)])
#: the offset before a new checkpoint's first batch
ZERO_OFFSET = make_offset(Lsn(bytes(10)), "")


class DatabaseClockDataSource(DataSource):
    """``format("mssql_cdc_database")``: a stream of no rows whose offsets are the database's
    newest commits."""

    @classmethod
    def name(cls) -> str:
        return "mssql_cdc_database"

    def __repr__(self) -> str:  # never the options: they hold the connection string
        return f"{type(self).__name__}()"

    def schema(self) -> StructType:
        """The fixed one-column schema; no query. Driver, once per ``load()``."""
        return CLOCK_SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark API)
        """The clock's reader. Driver, once per query start."""
        kind = AvailableNowClockReader if _AVAILABLE_NOW else DatabaseClockReader
        return kind(parse_options(dict(self.options)))


class DatabaseClockReader(DataSourceStreamReader):
    """Offsets only: the newest commit, polled once per trigger; no partitions, no rows."""

    def __init__(self, options: ReaderOptions) -> None:
        self.options = options
        self._planner: StreamPlanner | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_planner"] = None
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    @property
    def planner(self) -> StreamPlanner:
        if self._planner is None:
            self._planner = StreamPlanner(self.options, [], 1)
        return self._planner

    def initialOffset(self) -> dict[str, str]:  # noqa: N802 (Spark API)
        """LSN zero: a new checkpoint's first trigger runs a batch. Driver, no query."""
        return dict(ZERO_OFFSET)

    def latestOffset(  # noqa: N802 (Spark API)
        self, start: dict[str, str] | None = None, limit: object = None
    ) -> dict[str, str]:
        """The end of the next batch: the newest commit (never older than one this reader
        returned), or with ``maxCommitsPerBatch`` (Spark 4.2+) the ``n``-th commit after
        ``start`` when that is older: one ``sys.fn_cdc_get_max_lsn()`` poll per trigger, or
        none when another stream of the same source polled since the call began, and one
        ``cdc.lsn_time_mapping`` query when bounded. Driver, once per trigger. Takes both
        signatures Spark calls (``latestOffset()``, and ``(start, limit)`` with admission
        control)."""
        begin = start if start is not None else ZERO_OFFSET
        max_commits = limit.max_rows if _AVAILABLE_NOW and isinstance(limit, ReadMaxRows) else None
        if begin.get("lsn") == ZERO_OFFSET["lsn"]:
            # a new checkpoint's first batch: each table starts where its own start says (its
            # position, startingLsn, bootstrap), none at LSN zero; bounded from zero, the
            # batches would walk the database's retained history in empty steps
            max_commits = None
        return self.planner.latest_offset(begin, max_commits)

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> Sequence[InputPartition]:
        """One partition that reads nothing (Spark plans the batch's job over it). Driver."""
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        """No rows. Executor (never run: the ``foreachBatch`` function does not read the
        clock's batch)."""
        return iter(())

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to do. Driver, once per batch."""

    def stop(self) -> None:
        """Closes the driver's connection. Driver, once when the query stops."""
        if self._planner is not None:
            self._planner.close()


class AvailableNowClockReader(DatabaseClockReader, *_AVAILABLE_NOW):  # type: ignore[misc]
    """Spark 4.2+: an availableNow run stops at the newest commit seen when it started (a
    replayed batch first, then batches of at most ``maxCommitsPerBatch`` commits, or one, to
    that commit)."""

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 (Spark API)
        """``ReadMaxRows(maxCommitsPerBatch)`` (rows = commits here), else all available.
        Driver, once per query."""
        n = self.options.max_commits_per_batch
        return ReadMaxRows(n) if n else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark API)
        """Records the newest commit now as the run's end. Driver, once per availableNow run."""
        self.planner.prepare_available_now()
