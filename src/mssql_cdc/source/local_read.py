"""The changes of one LSN range read on the driver, when they are few (a database stream's
table with a few new commits, docs/many-tables.md).

``spark.read.format("mssql_cdc")`` plans a range in Spark's Python planning process and reads it
in a task, each a Python process: seconds of fixed cost for a handful of rows. A range of fewer
than :data:`LOCAL_ROWS` change rows is read here instead, by the same code: the batch read's
planner (retention first, schema changes reviewed, the same range) and the task's reader
(``read_changes``), in this process, into one Arrow table with the batch read's schema (held in
driver memory: hence the bound). A larger range is left to the batch read (``None``), which
Spark reads in tasks, in partitions, with its retries.

This module imports PySpark (for the schema); the driver, or Spark Connect's ``foreachBatch``
worker, calls it.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa
from pyspark.sql.types import StructType

from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.compat import arrow_schema
from mssql_cdc.source.datasource import _captured, _infer
from mssql_cdc.source.entra import ship_token
from mssql_cdc.source.headroom import RetentionReader
from mssql_cdc.source.offsets import make_offset, offset_lsn
from mssql_cdc.source.planning import MIN_ROWS_PER_PARTITION
from mssql_cdc.source.reading import ReadSpec, read_changes
from mssql_cdc.source.stream_driver import StreamPlanner

__all__ = ["LOCAL_ROWS", "read_locally"]

#: change rows from which a range is left to ``spark.read`` (tests lower it)
LOCAL_ROWS = MIN_ROWS_PER_PARTITION
#: partitions the local plan may count (a range of LOCAL_ROWS rows or more plans two or more)
_PLAN_PARTS = 1 << 16


def read_locally(
    options: ReaderOptions,
    schema: StructType | None = None,
    end_commit_ts: str = "",
    retention: RetentionReader | None = None,
) -> tuple[StructType, pa.Table] | None:
    """The changes ``startingLsn < LSN <= endingLsn`` of ``options``' capture instance, read in
    this process when they are fewer than :data:`LOCAL_ROWS`: the schema (``schema``, else
    inferred: one catalog read) and the rows, exactly the batch read's; with ``metricsPath``,
    the read's metrics and event files written there, as a stream's tasks write them. ``None``
    for a larger range (read it with ``spark.read``). ``end_commit_ts``: the commit time of
    ``endingLsn`` as a stream's offset carries it (UTC text), for the metrics' end, lags and
    retention headroom; a batch read's own end knows no time. ``retention``: the cleanup job's
    retention reader the caller keeps for its reads (else one per read: a ``sp_cdc_help_jobs``
    call each).

    Raises:
        DataLossError: changes of the range were purged and ``failOnDataLoss`` is true.
        ValueError: ``endingLsn`` past the newest commit.
        SchemaChangedError, PermissionError, SqlServerError: as the batch read.
    """
    struct = schema if schema is not None else _infer(options)
    # planned by rows alone (numPartitions left out): one partition below LOCAL_ROWS
    counting = dataclasses.replace(options, num_partitions=None)
    planner = StreamPlanner(
        counting, _captured(struct), _PLAN_PARTS, max(LOCAL_ROWS // 2, 1), retention=retention
    )
    try:
        start = planner.initial_offset()
        end = planner.ending_offset(start)
        if end_commit_ts and not end.get("commit_ts") and offset_lsn(end) == options.ending_lsn:
            end = make_offset(offset_lsn(end), end_commit_ts)
        parts = planner.plan(start, end)
        if len(parts) > 1:
            return None
        parts = ship_token(options, list(parts))
    finally:
        planner.close()
    spec = ReadSpec(options, arrow_schema(struct))
    batches = [batch for part in parts for batch in read_changes(spec, part)]
    return struct, pa.Table.from_batches(batches, schema=spec.schema)
