"""Running a ``to_delta`` start plan (``pipeline.start_plan``): the steps between the checked
arguments and the started query (docs/streaming.md).

Runs on the driver, in the calling Python process, in this order; nothing is written before
step 5, and every step before it only reads:

1. the explicit ``metricsPath`` is opened (``pyarrow.fs``; a ``ValueError`` when it cannot be);
2. the live generation is read from the checkpoint (a local one; a URI is generation 0);
3. the query name is checked free in the session;
4. with a facts table: the facts table is not the target, the app_id writes to no other one;
5. with ``on_data_loss="resnapshot"``: the recovery (``snapshots.resnapshot``), which may
   re-snapshot into a new generation (the name is checked again then);
6. the sink (``DeltaSink``, wrapped for ``snapshot_on_switch``) over the generation's metrics
   directory;
7. the start: the generation's snapshot LSN, or the bootstrap (which may read and write the
   whole table; a second one-target check follows one that read);
8. the query: an unfinished first log entry a killed driver left is removed, Delta computes
   the tables' state while Spark starts it (ADR 0179), and it is started and returned.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mssql_cdc._metrics import metrics_dir
from mssql_cdc.pipeline.locations import app_dir_name, is_uri, resolve_metrics_path
from mssql_cdc.sink import (
    DeltaSink,
    Generation,
    Generations,
    Ledger,
    StreamTables,
    compute_state_ahead,
)
from mssql_cdc.snapshots.reader import TableReader

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from mssql_cdc.options import ReaderOptions
    from mssql_cdc.pipeline.start_plan import StartPlan

__all__ = ["StreamStart", "check_name_free", "take_bootstrap"]

log = logging.getLogger("mssql_cdc.pipeline")


def check_name_free(spark: SparkSession, name: str) -> None:
    """Spark refuses a second active query of the same name, but only at ``start()``."""
    try:
        active = [q.name for q in spark.streams.active]
    except Exception as exc:  # a session that cannot list its queries: Spark checks at start
        log.debug("could not list the active queries: %s", exc)
        return
    if name in active:
        raise ValueError(
            f"query_name {name!r}: a streaming query of that name is already active in this "
            "session; stop it first, or give another query_name (default: app_id)"
        )


def take_bootstrap(reader: TableReader, ledger: Ledger, *, chunked: bool) -> str:
    """The LSN a bootstrapping stream of ``ledger``'s sink id starts after: its chunked
    snapshot opened or found (``chunked``, with a facts table), or its full snapshot taken or
    found. Runs on the driver; a full snapshot that read the table checks the one-target rule
    once more (reading it may have taken hours since the stream's own check, and its first
    batch does not check again: ADR 0179).

    Raises:
        ValueError, PermissionError, DataLossError, SqlServerError: from the snapshot (an
            open chunked snapshot refused by a full one, no key to cut by, the source's errors
            after retries) and the one-target rule.
    """
    from mssql_cdc.snapshots.chunked import open_chunked, refuse_open_chunked

    if chunked and ledger.tables.facts is not None:
        return open_chunked(reader, ledger)
    from mssql_cdc.snapshots.bootstrap import bootstrap

    refuse_open_chunked(ledger, "to_delta(bootstrap=True, snapshot='full')")
    done = bootstrap(reader, ledger)
    if done.taken and ledger.tables.facts is not None:
        ledger.check_one_target()
    return done.snapshot_lsn


class StreamStart:
    """One ``to_delta`` start: the plan, run on ``spark`` with the stream's parsed options."""

    def __init__(self, spark: SparkSession, plan: StartPlan, parsed: ReaderOptions) -> None:
        self.spark = spark
        self.plan = plan
        self.parsed = parsed
        self.options = dict(plan.options)
        self.ledger = Ledger(StreamTables(spark, plan.target, plan.facts), plan.app_id)
        self.generations = self.ledger.generations(plan.checkpoint)

    def run(self) -> StreamingQuery:
        """Runs the steps of the module doc; returns the started query.

        Raises:
            ValueError: an explicit ``metricsPath`` ``pyarrow.fs`` cannot open, a generation
                file this package did not write, a ``query_name`` already active, the facts
                table naming the target or recording the app_id writing to another one, and
                what the recovery and the bootstrap raise.
            DataLossError, PermissionError, SqlServerError: from the recovery and the
                bootstrap.
        """
        plan = self.plan
        if plan.metrics_base is not None:  # before anything is read (ADR 0021)
            metrics_dir(plan.metrics_base.rstrip("/") + "/" + app_dir_name(plan.app_id))
        generation = Generation(0, plan.app_id, plan.checkpoint, None)
        if not is_uri(plan.checkpoint):
            generation = self.generations.live()
        checked = plan.query_name or generation.sink_id
        check_name_free(self.spark, checked)
        if plan.facts is not None:  # before the bootstrap writes anything
            self.ledger.check_facts_not_target()
            self.ledger.check_one_target()
        if plan.recovery.resnapshot and plan.facts is not None:
            generation = self._recover()
        name = plan.query_name or generation.sink_id
        if name != checked:  # a re-snapshot opened a new generation
            check_name_free(self.spark, name)
        metrics, batch_function = self._sink(generation)
        if metrics is not None:
            self.options["metricsPath"] = metrics
        if generation.starting_lsn is not None:  # generation n > 0 starts after its snapshot
            self.options["startingLsn"] = generation.starting_lsn
        elif plan.bootstrap:
            self.options["startingLsn"] = self._bootstrap()
        return self._start(generation, name, batch_function, metrics)

    def _recover(self) -> Generation:
        """The generation to start in, after a re-snapshot when changes were purged."""
        from mssql_cdc.snapshots.resnapshot import Recovery, recover

        reader = TableReader(self.spark, self.options, self.parsed)
        chunked = self.plan.recovery.snapshot == "chunked"
        recovery = Recovery(reader, self.ledger, self.generations, chunked)
        return recover(recovery, self.plan.recovery.interval_days)

    def _sink(self, generation: Generation) -> tuple[str | None, Callable[[DataFrame, int], None]]:
        """The generation's metrics directory and the ``foreachBatch`` function: the sink,
        wrapped for ``snapshot_on_switch``."""
        plan = self.plan
        switch = plan.recovery.snapshot_on_switch
        metrics = resolve_metrics_path(
            generation.checkpoint,
            generation.sink_id,
            plan.metrics_base,
            has_facts=plan.facts is not None or switch,
        )
        # the sink's arguments were checked by the plan (sink_arguments): built directly
        folder = None if metrics is None else metrics_dir(metrics)
        sink = DeltaSink(
            plan.target,
            generation.sink_id,
            plan.facts,
            folder,
            generation.checkpoint,
            warm_state=plan.warm_state,
            # to_delta checked the app_id it was given; a generation's sink id is another
            identity_checked=plan.facts is not None and generation.sink_id == plan.app_id,
        )
        if not switch:
            return metrics, sink
        from mssql_cdc.snapshots.switch import SwitchSnapshotSink

        return metrics, SwitchSnapshotSink(sink, self.options, self.parsed)

    def _bootstrap(self) -> str:
        """The LSN a bootstrapping stream starts after (``take_bootstrap``)."""
        reader = TableReader(self.spark, self.options, self.parsed)
        return take_bootstrap(reader, self.ledger, chunked=self.plan.chunked)

    def _start(
        self,
        generation: Generation,
        name: str,
        batch_function: Callable[[DataFrame, int], None],
        metrics: str | None,
    ) -> StreamingQuery:
        plan = self.plan
        writer = (
            self.spark.readStream.format("mssql_cdc")
            .options(**self.options)
            .load()
            .writeStream.foreachBatch(batch_function)
            .option("checkpointLocation", generation.checkpoint)
            .queryName(name)
        )
        if plan.trigger is not None:
            writer = writer.trigger(**plan.trigger)  # type: ignore[call-overload]
        _clear_unfinished_log(self.generations, generation)
        # the query's start takes seconds: Delta computes the tables' state meanwhile (ADR 0179)
        compute_state_ahead(self.spark, plan.target, plan.facts)
        query = writer.start()
        log.info(
            "%s: started query %r: %s -> %s (checkpoint %s, facts %s, metrics %s)",
            generation.sink_id,
            name,
            self.parsed.capture_instance,
            plan.target.text,
            generation.checkpoint,
            None if plan.facts is None else plan.facts.text,
            metrics,
        )
        return query


def _clear_unfinished_log(generations: Generations, generation: Generation) -> None:
    """Removes what a driver killed while writing the generation checkpoint's first log entry
    left (``Generations.clear_unfinished_log``), with a WARNING per file."""
    for path in generations.clear_unfinished_log(generation):
        log.warning(
            "%s: removed %s, the unfinished first entry of the checkpoint's log a stopped "
            "driver left (Spark would refuse to start batch 0 next to it)",
            generation.sink_id,
            path,
        )
