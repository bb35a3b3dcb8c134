"""The Spark Python data sources ``mssql_cdc`` (a stream of change rows, or one range of them as a
batch) and ``mssql_cdc_snapshot`` (batch).

This module imports PySpark; ``import mssql_cdc`` does not import it (ADR 0004). On Spark 4.2
the stream reader implements admission control (``latestOffset(start, limit)``,
``getDefaultReadLimit`` from ``maxCommitsPerBatch``, ``reportLatestOffset``) and
``SupportsTriggerAvailableNow``; on Spark 4.0/4.1 the legacy reader (``latestOffset()``) is
used and ``maxCommitsPerBatch`` has no effect, which it says once per query (ADR 0006, 0055).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from mssql_cdc.options import ReaderOptions, parse_options, warn_unknown
from mssql_cdc.source.catalog import infer_schema
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.compat import arrow_schema
from mssql_cdc.source.entra import ship_token
from mssql_cdc.source.partitions import ChangeRange, SnapshotRange
from mssql_cdc.source.planning import MIN_ROWS_PER_PARTITION
from mssql_cdc.source.reading import ReadSpec, read_changes
from mssql_cdc.source.retry import DELAYS, with_retry
from mssql_cdc.source.run_warnings import RunWarnings
from mssql_cdc.source.schema import Column
from mssql_cdc.source.snapshot import plan_snapshot, read_snapshot
from mssql_cdc.source.stream_driver import StreamPlanner

try:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

    HAS_ADMISSION_CONTROL = True
except ImportError:  # Spark 4.0 / 4.1
    HAS_ADMISSION_CONTROL = False

__all__ = [
    "HAS_ADMISSION_CONTROL",
    "LegacyStreamReader",
    "MssqlCdcDataSource",
    "MssqlCdcSnapshotDataSource",
    "SnapshotReader",
    "to_struct",
]

log = logging.getLogger("mssql_cdc.source")

_SIMPLE_TYPES: dict[str, DataType] = {
    "BOOLEAN": BooleanType(),
    "TINYINT": ByteType(),
    "SMALLINT": ShortType(),
    "INT": IntegerType(),
    "BIGINT": LongType(),
    "FLOAT": FloatType(),
    "DOUBLE": DoubleType(),
    "DATE": DateType(),
    "TIMESTAMP": TimestampType(),
    "TIMESTAMP_NTZ": TimestampNTZType(),
    "STRING": StringType(),
    "BINARY": BinaryType(),
}


def _spark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def _spark_type(text: str) -> DataType:
    if text.startswith("DECIMAL("):
        precision, scale = text[len("DECIMAL(") : -1].split(",")
        return DecimalType(int(precision), int(scale))
    return _SIMPLE_TYPES[text]


def to_struct(columns: Sequence[Column]) -> StructType:
    """The ``StructType`` of the output columns."""
    return StructType([StructField(c.name, _spark_type(c.spark_type), c.nullable) for c in columns])


def _captured(schema: StructType) -> list[Column]:
    return [Column(f.name, f.dataType.simpleString().upper(), f.nullable) for f in schema.fields]


def _infer(options: ReaderOptions) -> StructType:
    client = CdcClient(options)
    try:
        return to_struct(with_retry(client, "schema inference", lambda: infer_schema(client)))
    finally:
        client.close()


class _BaseDataSource(DataSource):
    #: the registering session's cores (set by :func:`mssql_cdc.register`); 0 = unknown
    default_num_partitions: int = 0

    def _options(self) -> ReaderOptions:
        return parse_options(dict(self.options))

    def __repr__(self) -> str:  # never the options: they hold the connection string and secrets
        instance = next(
            (v for k, v in self.options.items() if k.lower() == "captureinstance"), None
        )
        return f"{type(self).__name__}(captureInstance={instance!r})"

    def _partitions(self) -> int:
        return self.default_num_partitions or os.cpu_count() or 1

    def schema(self) -> StructType:
        """Infer the output schema. Runs on the driver, once per ``load()``."""
        return _infer(self._options())


class MssqlCdcDataSource(_BaseDataSource):
    """``format("mssql_cdc")``: SQL Server CDC change rows as a stream, or the rows of one LSN
    range as a batch (``spark.read``: ``startingLsn`` < LSN <= ``endingLsn``)."""

    @classmethod
    def name(cls) -> str:
        return "mssql_cdc"

    def schema(self) -> StructType:
        """Infer the output schema. Runs on the driver, once per ``load()``; its warnings
        reach the first micro-batch's facts row (:class:`RunWarnings`)."""
        options = self._options()
        with RunWarnings(options.metrics_path).collecting():
            return _infer(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802 (Spark API)
        """The stream reader. Runs on the driver, once per query start; unknown options are
        warned about here on every start, and the warning reaches the run's first micro-batch
        facts row (``detail.warnings``)."""
        kind = AdmissionStreamReader if HAS_ADMISSION_CONTROL else LegacyStreamReader
        reader = kind(self._options(), schema, self._partitions())
        with reader.run_warnings.collecting():
            warn_unknown(reader.options)
            if any(k.lower() == "endinglsn" for k in self.options):
                log.warning(
                    "endingLsn has no effect on a stream (it ends a batch read, spark.read); "
                    "an availableNow trigger stops at the newest commit when the query starts"
                )
        return reader

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader of the changes ``startingLsn < LSN <= endingLsn``. Runs on the
        driver, once per read."""
        options = self._options()
        warn_unknown(options)
        return ChangesReader(options, schema, self._partitions())


class MssqlCdcSnapshotDataSource(_BaseDataSource):
    """``format("mssql_cdc_snapshot")``: the tracked table's current rows, as a batch."""

    @classmethod
    def name(cls) -> str:
        return "mssql_cdc_snapshot"

    def schema(self) -> StructType:
        """The stream's schema, plus ``_chunk INT`` with ``snapshotChunks``. Driver, once per
        ``load()``."""
        options = self._options()
        schema = _infer(options)
        if options.snapshot_chunks is not None:
            schema = schema.add(StructField("_chunk", IntegerType(), True))
        return schema

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader. Runs on the driver, once per read."""
        return SnapshotReader(self._options(), schema, self._partitions())


class _StreamReader(DataSourceStreamReader):
    """What both stream readers share. The driver keeps one :class:`StreamPlanner` (and its
    connection); the copy pickled to executors holds no connection."""

    #: change rows a range holds at least before a batch is split (tests lower it)
    min_rows_per_partition = MIN_ROWS_PER_PARTITION
    #: seconds before each driver-side retry (tests shorten them)
    retry_delays: tuple[float, ...] = DELAYS

    def __init__(self, options: ReaderOptions, schema: StructType, partitions: int) -> None:
        self.options = options
        self.schema = schema
        self.default_partitions = partitions
        self.spec = ReadSpec(options, arrow_schema(schema))
        self._planner: StreamPlanner | None = None
        #: this run's planning warnings, carried to the facts (once each)
        self.run_warnings = RunWarnings(options.metrics_path)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_planner"] = None
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}(captureInstance={self.options.capture_instance!r})"

    @property
    def planner(self) -> StreamPlanner:
        if self._planner is None:
            self._planner = StreamPlanner(
                self.options,
                _captured(self.schema),
                self.default_partitions,
                self.min_rows_per_partition,
                self.retry_delays,
            )
        return self._planner

    def initialOffset(self) -> dict[str, str]:  # noqa: N802 (Spark API)
        """The offset before the first batch (``startingLsn``). Driver, once per new
        checkpoint."""
        with self.run_warnings.collecting():
            return self.planner.initial_offset()

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> Sequence[InputPartition]:
        """Commit-aligned LSN ranges of the batch, after the retention check. Driver, once per
        batch."""
        with self.run_warnings.collecting():
            return ship_token(self.options, list(self.planner.plan(start, end)))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The range's change rows as Arrow batches. Executor, once per partition."""
        assert isinstance(partition, ChangeRange)
        return read_changes(self.spec, partition)

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to do: CDC keeps rows until its own cleanup. Driver, once per batch."""

    def stop(self) -> None:
        """Close the driver's connection. Driver, once when the query stops."""
        if self._planner is not None:
            self._planner.close()


class LegacyStreamReader(_StreamReader):
    """Spark 4.0/4.1: every batch reads up to ``sys.fn_cdc_get_max_lsn()``;
    ``maxCommitsPerBatch`` is ignored, with one WARNING per query (ADR 0055)."""

    _warned = False

    def latestOffset(self) -> dict[str, str]:  # type: ignore[override]  # noqa: N802 (Spark API)
        """The newest commit. Driver, once per trigger (one query)."""
        with self.run_warnings.collecting():
            if self.options.max_commits_per_batch and not self._warned:
                self._warned = True
                log.warning(
                    "maxCommitsPerBatch=%d has no effect on Spark %s: its Python stream readers "
                    "have no admission control (Spark 4.2 added it), so each micro-batch reads "
                    "every commit up to the newest; see the compatibility page of the docs",
                    self.options.max_commits_per_batch,
                    _spark_version(),
                )
            return self.planner.latest_offset({"lsn": "0x" + "0" * 20, "commit_ts": ""}, None)


if HAS_ADMISSION_CONTROL:

    class AdmissionStreamReader(_StreamReader, SupportsTriggerAvailableNow):
        """Spark 4.2+: ``maxCommitsPerBatch`` through admission control; availableNow stops at
        the ``max_lsn`` seen when the query started."""

        def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 (Spark API)
            """``ReadMaxRows(maxCommitsPerBatch)`` (rows = commits here), else all available.
            Driver, once per query."""
            n = self.options.max_commits_per_batch
            return ReadMaxRows(n) if n else ReadAllAvailable()

        def latestOffset(  # noqa: N802 (Spark API)
            self, start: dict[str, str], limit: ReadLimit
        ) -> dict[str, str]:
            """The end of the next batch. Driver, once per trigger (one query when idle)."""
            max_commits = limit.max_rows if isinstance(limit, ReadMaxRows) else None
            with self.run_warnings.collecting():
                return self.planner.latest_offset(start, max_commits)

        def reportLatestOffset(self) -> dict[str, str] | None:  # noqa: N802 (Spark API)
            """The newest commit the last ``latestOffset`` saw (no query). Driver, per
            trigger."""
            return self.planner.reported_offset()

        def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802 (Spark API)
            """Record ``max_lsn`` as the run's end. Driver, once per availableNow run."""
            with self.run_warnings.collecting():
                self.planner.prepare_available_now()

else:  # pragma: no cover (Spark 4.0 / 4.1)
    AdmissionStreamReader = LegacyStreamReader  # type: ignore[misc, assignment]


class SnapshotReader(DataSourceReader):
    """Reads the snapshot's key ranges."""

    def __init__(self, options: ReaderOptions, schema: StructType, partitions: int) -> None:
        self.options = options
        self.default_partitions = partitions
        self.arrow_schema = arrow_schema(schema)
        self.columns = _captured(schema)

    def __repr__(self) -> str:
        return f"SnapshotReader(captureInstance={self.options.capture_instance!r})"

    def partitions(self) -> Sequence[InputPartition]:
        """Key ranges, stamped with the snapshot LSN. Driver, once per read."""
        parts = plan_snapshot(self.options, self.columns, self.default_partitions)
        return ship_token(self.options, list(parts))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The range's rows. Executor, once per partition."""
        assert isinstance(partition, SnapshotRange)
        return read_snapshot(self.options, self.arrow_schema, partition)


class ChangesReader(DataSourceReader):
    """The change rows of ``startingLsn < LSN <= endingLsn`` as one batch: the partitions a
    stream's micro-batch over that range gets (the same planner: retention checked first,
    schema changes reviewed, commit-aligned ranges), read by the same task code, so the rows
    are the ones that micro-batch would hold. The driver's connection is closed once planned."""

    #: change rows a range holds at least before the read is split (tests lower it)
    min_rows_per_partition = MIN_ROWS_PER_PARTITION

    def __init__(self, options: ReaderOptions, schema: StructType, partitions: int) -> None:
        if options.metrics_path is not None:
            log.warning(
                "metricsPath has no effect on a batch read of changes: its files are the "
                "stream's, folded into its next micro-batch's facts row"
            )
            options = dataclasses.replace(options, metrics_path=None)
        self.options = options
        self.default_partitions = partitions
        self.spec = ReadSpec(options, arrow_schema(schema))
        self.columns = _captured(schema)

    def __repr__(self) -> str:
        return f"ChangesReader(captureInstance={self.options.capture_instance!r})"

    def partitions(self) -> Sequence[InputPartition]:
        """Commit-aligned LSN ranges of the read. Driver, once per read.

        Raises:
            ValueError: ``endingLsn`` past ``sys.fn_cdc_get_max_lsn()``.
            DataLossError: changes of the range were purged and ``failOnDataLoss`` is true.
        """
        planner = StreamPlanner(
            self.options, self.columns, self.default_partitions, self.min_rows_per_partition
        )
        try:
            start = planner.initial_offset()
            end = planner.ending_offset(start)
            return ship_token(self.options, list(planner.plan(start, end)))
        finally:
            planner.close()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The range's change rows as Arrow batches; none for the one empty partition Spark
        reads when :meth:`partitions` planned none (an empty range). Executor, once per
        partition."""
        if not isinstance(partition, ChangeRange):
            return iter(())
        return read_changes(self.spec, partition)
