"""The tracked table as a snapshot reads it: the session, the stream's data source options and
their parsed form, bound once (docs/bootstrap.md).

Runs on the driver, in the calling Python process: :meth:`TableReader.frame` and
:meth:`TableReader.chunks_frame` build DataFrames of ``format("mssql_cdc_snapshot")`` (read
when they are written), the other methods ask SQL Server now (``mssql_cdc.source``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc._native import Lsn
from mssql_cdc.options import ReaderOptions, parse_options, snapshot_read_options
from mssql_cdc.source import (
    ChunkPlan,
    Loss,
    SnapshotPosition,
    chunk_key,
    find_loss,
    plan_chunks,
    seed_position,
    snapshot_position,
)

if TYPE_CHECKING:
    import datetime as dt

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["TableReader"]


@dataclass(frozen=True)
class TableReader:
    """The tracked table, read with ``raw`` (data source options: canonical names, string
    values) parsed as ``options``, on ``spark``."""

    spark: SparkSession
    raw: Mapping[str, str]
    options: ReaderOptions

    @classmethod
    def of(cls, spark: SparkSession, raw: Mapping[str, str]) -> TableReader:
        """A reader of ``raw``, parsed here.

        Raises:
            ValueError: an option that is not allowed.
        """
        return cls(spark, dict(raw), parse_options(dict(raw)))

    def __repr__(self) -> str:  # never the connection string or secrets
        return f"TableReader(captureInstance={self.options.capture_instance!r})"

    @property
    def capture_instance(self) -> str:
        """The capture instance the stream reads."""
        return self.options.capture_instance

    def read_options(self) -> dict[str, str]:
        """The data source options a snapshot read takes (no ``metricsPath``, no
        ``startingLsn``)."""
        return snapshot_read_options(self.raw)

    def with_isolation(self, level: str) -> TableReader:
        """The same reader with the ``isolationLevel`` option ``level``."""
        return TableReader.of(self.spark, {**self.raw, "isolationLevel": level})

    def frame(self, lsn: str) -> DataFrame:
        """The table's current rows in the stream's schema, stamped with ``lsn``."""
        options = self.read_options()
        options["snapshotLsn"] = lsn
        return self.spark.read.format("mssql_cdc_snapshot").options(**options).load()

    def chunks_frame(self, stamp: str, chunks: Sequence[Sequence[Any]]) -> DataFrame:
        """The rows of ``chunks`` (``[number, lo, hi]`` each: one partition per chunk, rows
        carrying ``_chunk``), stamped with ``stamp``."""
        options = self.read_options()
        options["snapshotLsn"] = stamp
        options["snapshotChunks"] = json.dumps([list(c) for c in chunks])
        return self.spark.read.format("mssql_cdc_snapshot").options(**options).load()

    def schema(self) -> StructType:
        """The schema a snapshot of the table has (nothing is read)."""
        options = self.read_options()
        return self.spark.read.format("mssql_cdc_snapshot").options(**options).load().schema

    def position(self) -> SnapshotPosition:
        """``sys.fn_cdc_get_max_lsn()`` now, its commit time and the table's capture
        instances: where a snapshot read now stands."""
        return snapshot_position(self.options)

    def instances(self) -> Sequence[str]:
        """The table's capture instances, oldest first."""
        return self.position().instances

    def seed_position(self, as_of: dt.datetime | Lsn) -> SnapshotPosition:
        """The position of a copy read as of ``as_of`` (``source.seed_position``)."""
        return seed_position(self.options, as_of)

    def loss_after(self, lsn: str | Lsn) -> Loss | None:
        """The changes a stream after ``lsn`` would need that CDC purged (``None``: none)."""
        return find_loss(self.options, lsn if isinstance(lsn, Lsn) else Lsn.parse(lsn))

    def chunk_key(self) -> list[str]:
        """The names of the key a chunked snapshot of the table is cut by."""
        return [name for name, _ in chunk_key(self.options)]

    def plan_chunks(self, chunk_rows: int) -> ChunkPlan:
        """The table cut into chunks of ``chunk_rows`` rows (``source.plan_chunks``)."""
        return plan_chunks(self.options, chunk_rows)
