"""Counting a micro-batch: rows per operation and the ``_start_lsn`` / ``_commit_ts`` ranges the
facts row needs, as one set of aggregate expressions used two ways (ADR 0090):

* observed on the write that appends the batch to bronze (:class:`ObservedCounts`, Spark's
  ``DataFrame.observe`` with ``pyspark.sql.Observation``): the counts come out of the pass that
  writes, so the batch is read once and nothing is persisted;
* one aggregation (:func:`count_batch`) where the batch is not written (a replay, a batch
  already in bronze) or where the observation brought nothing.

Before bronze exists the sink first asks whether the batch is empty (``DataFrame.head(1)``, a
limit of one row), since an empty batch must not create the table.

Runs on the driver (or Spark Connect's ``foreachBatch`` worker); the aggregation's tasks on the
executors. Commit times travel as text (``CAST(... AS STRING)``) and are parsed back: Spark 4.0
hands observed TIMESTAMP_NTZ values to Python as Java objects, later minors as ``datetime``.
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from mssql_cdc.sink.facts import BatchCounts, parse_utc

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["OBSERVED_WAIT_SECONDS", "ObservedCounts", "count_batch"]

log = logging.getLogger("mssql_cdc.sink")

#: how long the sink waits, after the write returned, for its observed counts; they are there
#: at once on every Spark tried (4.0-4.2, classic and Connect). Only a write Delta skipped (its
#: transaction id already recorded) brings none, and the batch is then counted instead.
OBSERVED_WAIT_SECONDS = 30.0

_NAMES = (
    "rows",
    "min_lsn",
    "max_lsn",
    "min_commit_ts",
    "max_commit_ts",
    "deletes",
    "inserts",
    "updates",
)


def _metrics() -> list[Column]:
    """The aggregate expressions, named as :data:`_NAMES`."""
    from pyspark.sql import functions as sf

    def ops(code: int) -> Column:
        return sf.coalesce(sf.sum(sf.when(sf.col("_operation") == code, 1).otherwise(0)), sf.lit(0))

    return [
        sf.count(sf.lit(1)).alias("rows"),
        sf.min("_start_lsn").alias("min_lsn"),
        sf.max("_start_lsn").alias("max_lsn"),
        sf.min("_commit_ts").cast("string").alias("min_commit_ts"),
        sf.max("_commit_ts").cast("string").alias("max_commit_ts"),
        ops(1).alias("deletes"),
        ops(2).alias("inserts"),
        ops(4).alias("updates"),
    ]


def _counts(values: Mapping[str, Any]) -> BatchCounts:
    def text(name: str) -> str | None:
        value = values.get(name)
        return None if value is None else str(value)

    return BatchCounts(
        rows=int(values["rows"]),
        min_lsn=text("min_lsn"),
        max_lsn=text("max_lsn"),
        min_commit_ts=parse_utc(text("min_commit_ts")),
        max_commit_ts=parse_utc(text("max_commit_ts")),
        deletes=int(values["deletes"]),
        inserts=int(values["inserts"]),
        updates=int(values["updates"]),
    )


def count_batch(df: DataFrame) -> BatchCounts:
    """Counts ``df``'s rows per operation and its ``_start_lsn`` / ``_commit_ts`` ranges.

    ``df`` has the stream's metadata columns (``_start_lsn`` STRING, ``_operation`` INT,
    ``_commit_ts`` TIMESTAMP_NTZ). Runs one Spark job, which reads ``df``; ranges are ``None``
    when there are no rows.
    """
    row = df.agg(*_metrics()).first()
    assert row is not None  # a global aggregation always returns one row
    return _counts(row.asDict())


def _is_connect(df: DataFrame) -> bool:
    connect = sys.modules.get("pyspark.sql.connect.dataframe")
    return connect is not None and isinstance(df, connect.DataFrame)


class ObservedCounts:
    """``df`` with the counts observed: write :attr:`df`, then read :meth:`result`.

    The observation has a name of its own (``mssql_cdc_counts_<hex>``) so that batches and
    sinks never share one.
    """

    def __init__(self, df: DataFrame) -> None:
        name = f"mssql_cdc_counts_{uuid.uuid4().hex}"
        if _is_connect(df):
            from pyspark.sql.connect.observation import Observation as ConnectObservation

            self._observation: Any = ConnectObservation(name)
        else:
            from pyspark.sql import Observation

            self._observation = Observation(name)
        self._connect = _is_connect(df)
        #: the batch to write, observed
        self.df: DataFrame = df.observe(self._observation, *_metrics())

    def result(self, timeout: float | None = None) -> BatchCounts | None:
        """The counts of the action that wrote :attr:`df`; ``None`` when it brought none (the
        write was skipped) within ``timeout`` seconds (default :data:`OBSERVED_WAIT_SECONDS`)."""
        if self._connect:
            # Connect fills the observation from the write's own response (empty if skipped)
            values = self._observation.get
            return _counts(values) if values else None
        if not self._completed(OBSERVED_WAIT_SECONDS if timeout is None else timeout):
            return None
        return _counts(self._observation.get)

    def _completed(self, timeout: float) -> bool:
        """Waits for the classic observation's JVM future, at most ``timeout`` seconds."""
        jo = getattr(self._observation, "_jo", None)
        jvm = getattr(self._observation, "_jvm", None)
        if jo is None or jvm is None:
            return False
        future = jo.future()
        if future.isCompleted():
            return True
        millis = jvm.java.util.concurrent.TimeUnit.MILLISECONDS
        try:
            jvm.scala.concurrent.Await.ready(
                future, jvm.scala.concurrent.duration.Duration.create(int(timeout * 1000), millis)
            )
        except Exception as exc:  # a TimeoutException: nothing was observed
            log.debug("no observed counts after %.0f s: %s", timeout, str(exc).splitlines()[0])
            return False
        return bool(future.isCompleted())
