"""``stream(spark, options)`` and ``CdcStream.to_delta(...)``: the common pipeline, declared
once (docs/streaming.md).

Runs on the driver. ``to_delta`` checks its arguments into a start plan
(``pipeline.start_plan``, pure: every argument error before anything is read or written) and
runs it (``pipeline.start``): it reads the live generation (and with
``on_data_loss="resnapshot"`` re-snapshots after data loss into a new one), builds the sink over
the metrics directory, takes or finds the bootstrap snapshot when asked, then starts
``readStream.format("mssql_cdc")`` written through ``foreachBatch`` into the Delta sink and
returns the ``StreamingQuery`` without waiting. ``snapshot()`` and ``seed()`` write a snapshot
without starting a query, ``backfill()`` reads a chunked one (docs/bootstrap.md,
docs/data-loss.md, docs/generations.md); each binds the stream's ``Ledger`` and a
``TableReader`` of the table and hands them to its feature module.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from mssql_cdc.connection_string import move_password
from mssql_cdc.options import ReaderOptions, SourceOptions, parse_options, warn_unknown
from mssql_cdc.pipeline.arguments import (
    copy_options,
    text_argument,
)
from mssql_cdc.pipeline.platform import detect_platform
from mssql_cdc.sink import (
    Ledger,
    StreamTables,
    sink_arguments,
    table_ref,
)
from mssql_cdc.snapshots.reader import TableReader
from mssql_cdc.source import register
from mssql_cdc.types import BackfillStatus, Offset, OnDataLoss

if TYPE_CHECKING:
    import datetime as dt
    import os

    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from mssql_cdc._native import Lsn

__all__ = ["CdcStream", "stream"]

log = logging.getLogger("mssql_cdc.pipeline")


class CdcStream:
    """A capture instance to stream, with its data source options; made by :func:`stream`.

    Attributes:
        spark: the session the data sources are registered on.
    """

    def __init__(self, spark: SparkSession, options: dict[str, str], parsed: ReaderOptions) -> None:
        self.spark = spark
        self._options = options
        self._parsed = parsed

    @property
    def options(self) -> dict[str, str]:
        """A copy of the data source options (documented spellings, string values)."""
        return dict(self._options)

    def __repr__(self) -> str:  # never the connection string or secrets
        return f"CdcStream(captureInstance={self._parsed.capture_instance!r})"

    def to_delta(
        self,
        target: str,
        app_id: str,
        checkpoint: str | os.PathLike[str],
        facts_table: str | None = None,
        *,
        trigger: Mapping[str, object] | None = None,
        query_name: str | None = None,
        bootstrap: bool = False,
        on_data_loss: OnDataLoss = "fail",
        resnapshot_interval_days: float = 7.0,
        snapshot_on_switch: bool = False,
        snapshot: str = "full",
    ) -> StreamingQuery:
        """Starts the stream into a Delta bronze table and returns without waiting.

        Args:
            target: the bronze table, a catalog name (``bronze.orders``) or a path; created by
                the first batch with rows (or by the bootstrap snapshot).
            app_id: the sink's id (Delta ``txnAppId``, batch id as ``txnVersion``); keep it for
                the life of the checkpoint, and give a new checkpoint a new one.
            checkpoint: Spark's checkpoint location (a local or FUSE path also holds the
                default metrics directory ``_mssql_cdc_metrics``). On Databricks: a Volume
                path ``/Volumes/<catalog>/<schema>/<volume>/...`` or a URI.
            facts_table: the facts table (name or path), one row per batch; ``None``: none.
            trigger: exactly one of ``{"availableNow": True}`` (read what is there, then
                stop), ``{"processingTime": "<interval>"}`` (one batch per interval, an interval
                Spark reads such as ``"10 seconds"`` or ``"1 minute"``) or ``{"once": True}``;
                ``None``: Spark's default (back-to-back batches). ``continuous`` is refused
                (it runs no ``foreachBatch``). On Databricks serverless compute only
                ``{"availableNow": True}`` runs: anything else is a ``ValueError``.
            query_name: the query's name; default the sink id (``app_id``, or
                ``<app_id>.g<n>`` in generation ``n``).
            bootstrap: append the table's current rows once (operation 0) and start the
                checkpoint at the snapshot's LSN; later runs find it and read nothing.
            on_data_loss: ``"fail"`` (the query stops with ``DataLossError``) or
                ``"resnapshot"``: before the query starts, when the changes after where the
                stream stands are purged, re-snapshot the table into ``target``, record the
                lost range in a ``resnapshot`` facts row and run in a new generation
                (``<checkpoint>/_generations/<n>``, sink id ``<app_id>.g<n>``). Needs
                ``facts_table``, ``failOnDataLoss`` true and a local or Volume checkpoint.
                Keep passing the original ``app_id`` and ``checkpoint``.
            resnapshot_interval_days: at most one automatic re-snapshot (or failed attempt)
                per this many days; a second loss inside it is a ``DataLossError`` saying when
                the last one was. ``0`` allows one at every run.
            snapshot_on_switch: after the micro-batch that first reads a newer capture
                instance, append a whole snapshot of the table to ``target`` (``txnAppId``
                ``<app_id>#switch``, the batch id as version), so that rows no change touched
                carry the new instance's columns; it reads the whole table inside that batch.
                It learns of the switch from the reader's metrics files: needs a local or
                Volume checkpoint or the ``metricsPath`` option.
            snapshot: how the bootstrap (with ``bootstrap``) and a re-snapshot after data
                loss (with ``on_data_loss="resnapshot"``) read the table: ``"full"`` (before
                the query starts) or ``"chunked"`` (only open the snapshot: record its LSN S in
                a ``snapshot_open`` facts row and start the stream, or the new generation, at S
                at once; then call :meth:`backfill` with the original ``app_id`` until it
                returns ``done``). ``"chunked"`` needs ``facts_table``; it is refused with
                ``snapshot_on_switch``.

        Returns:
            The started ``StreamingQuery``.

        Raises:
            TypeError: an argument has the wrong type (the message names it).
            ValueError: an empty argument, a bad ``trigger`` (or one serverless compute
                refuses), a checkpoint Spark and Python would find in two places (on
                Databricks), ``bootstrap`` with the ``startingLsn`` option, a bad
                ``on_data_loss``/``resnapshot_interval_days``/``snapshot``, ``"resnapshot"``
                without facts, with ``failOnDataLoss=false`` or a URI checkpoint, a ``dbfs:/`` or
                unopenable ``metricsPath``, ``snapshot_on_switch`` without a metrics
                directory (a URI checkpoint and no ``metricsPath``), ``facts_table`` naming
                ``target`` (in any spelling), an ``app_id`` the facts table records writing to
                another target, a ``query_name`` already active. All are raised before
                anything is read or written.
            DataLossError: with ``on_data_loss="resnapshot"``, a second loss within
                ``resnapshot_interval_days``, or a re-snapshot outlived by the retention.
            ValueError: also, with ``on_data_loss="resnapshot"`` after a loss, a full
                re-snapshot while the stream's chunked snapshot is open, or a chunked one
                while another stream's chunked snapshot of ``target`` is open.
            PermissionError, SqlServerError: from the bootstrap's reads of SQL Server.
        """
        from mssql_cdc.pipeline.start import StreamStart
        from mssql_cdc.pipeline.start_plan import ToDeltaArgs, plan_start

        # Every argument is checked before anything is read or written (the bootstrap reads
        # and writes the whole table before Spark would look at the trigger or the name).
        args = ToDeltaArgs(
            target,
            app_id,
            checkpoint,
            facts_table,
            trigger,
            query_name,
            bootstrap,
            on_data_loss,
            resnapshot_interval_days,
            snapshot_on_switch,
            snapshot,
        )
        plan = plan_start(args, self._options, self._parsed, detect_platform(self.spark))
        return StreamStart(self.spark, plan, self._parsed).run()

    def snapshot(
        self,
        target: str,
        *,
        resnapshot: bool = False,
        app_id: str | None = None,
        facts_table: str | None = None,
    ) -> Offset:
        """Appends the tracked table's current rows to ``target`` as a snapshot (operation 0,
        stamped with the LSN recorded before the read) and returns its offset, for
        ``startingLsn`` of a new checkpoint. Starts no query and writes no ``bootstrap`` row.

        Args:
            target: the bronze table (name or path).
            resnapshot: read a new snapshot, unless ``target`` already holds one at the very
                LSN it would be stamped with (CDC captured nothing since; a second one there
                would hold every row twice): that one is returned, with a WARNING.
                ``False``: when ``target`` already holds a snapshot of the table (any of its
                capture instances) that a stream can still start after (CDC holds every
                change after it), return its offset and read nothing.
            app_id: the stream the snapshot is for: its commit carries ``<app_id>#events``,
                so ``to_delta(app_id=..., bootstrap=True)`` later finds it; needed with
                ``facts_table``.
            facts_table: the stream's facts table: a chunked snapshot of the stream open in
                ``target`` refuses a full one (``ValueError``). No facts row is written (only
                ``to_delta`` and ``seed`` write ``bootstrap`` rows).

        Returns:
            ``{"lsn": ..., "commit_ts": ...}`` of the snapshot.

        Raises:
            TypeError, ValueError: a bad argument (``facts_table`` without ``app_id``).
            PermissionError, SqlServerError: from the reads of SQL Server.
        """
        from mssql_cdc.snapshots.chunked import refuse_open_chunked
        from mssql_cdc.snapshots.manual import take_manual_snapshot

        ledger = self._snapshot_ledger(target, app_id, facts_table)
        if not isinstance(resnapshot, bool):
            raise TypeError(f"resnapshot must be True or False, got {type(resnapshot).__name__}")
        refuse_open_chunked(ledger, "snapshot()")
        reader = TableReader(self.spark, dict(self._options), self._parsed)
        return take_manual_snapshot(reader, ledger, resnapshot=resnapshot)

    def seed(
        self,
        target: str,
        df: DataFrame,
        as_of: dt.datetime | Lsn | str,
        *,
        app_id: str | None = None,
        facts_table: str | None = None,
        allow_missing_columns: bool = False,
        reseed: bool = False,
    ) -> Offset:
        """Appends ``df``, a copy of the tracked table the user already has, to ``target`` as
        its snapshot, for a table too big to read within the CDC retention;
        ``to_delta(bootstrap=True)`` then starts after it and reads nothing.

        Args:
            target: the bronze table (name or path).
            df: the copy; columns matched to the captured columns by name ignoring case and
                cast to their types; other columns dropped.
            as_of: when the copy started being read (``datetime``; naive = UTC), mapped to
                the last commit at or before it on the server's clock, or an LSN recorded
                before the read (``Lsn`` or ``"0x..."`` text), exact. Earlier is always safe.
            app_id: the stream the seed is for (its ``bootstrap`` facts row, and the commit
                ``to_delta(app_id=..., bootstrap=True)`` finds); needed with ``facts_table``.
            facts_table: write the ``bootstrap`` facts row there.
            allow_missing_columns: seed captured columns the copy lacks as NULL.
            reseed: replace the target's snapshot with a newer copy (then start a new
                checkpoint with a new app_id).

        Returns:
            The seed's offset; the same one again when rerun with the same ``as_of``.

        Raises:
            DataLossError: ``as_of`` older than every commit CDC holds, or the changes after
                it purged ("Seed from a newer copy").
            ValueError: an LSN not recorded yet, a missing captured column, a target that
                already holds a snapshot (without ``reseed``, or a copy not newer than it),
                ``facts_table`` without ``app_id``.
            TypeError: a bad argument type.
        """
        from pyspark.sql import DataFrame as SparkFrame

        from mssql_cdc.snapshots.seed import SeedCopy, seed, seed_as_of

        ledger = self._snapshot_ledger(target, app_id, facts_table)
        if not isinstance(df, SparkFrame):
            raise TypeError(f"df must be a Spark DataFrame, got {type(df).__name__}")
        for flag, value in (("allow_missing_columns", allow_missing_columns), ("reseed", reseed)):
            if not isinstance(value, bool):
                raise TypeError(f"{flag} must be True or False, got {type(value).__name__}")
        from mssql_cdc.snapshots.chunked import refuse_open_chunked

        refuse_open_chunked(ledger, "seed()")
        reader = TableReader(self.spark, dict(self._options), self._parsed)
        return seed(reader, ledger, SeedCopy(df, seed_as_of(as_of), allow_missing_columns, reseed))

    def backfill(
        self,
        target: str,
        *,
        app_id: str,
        facts_table: str,
        chunk_rows: int | None = None,
        max_waves: int | None = None,
        max_seconds: float | None = None,
        target_wave_seconds: float | None = None,
        min_headroom_hours: float | None = None,
        isolation: str | None = None,
    ) -> BackfillStatus:
        """Reads the stream's open chunked snapshot (``to_delta(..., bootstrap=True,
        snapshot="chunked")``, or a chunked re-snapshot after data loss opened by
        ``to_delta(..., on_data_loss="resnapshot", snapshot="chunked")`` in generation ``n``) in
        waves, next to the running stream, and returns where it stands. Call it again (a
        scheduled task) until the state is ``"done"``; it resumes exactly where it stopped,
        after any crash, never reading a landed chunk again.

        Args:
            target, app_id, facts_table: as given to ``to_delta`` (the original ``app_id``:
                the newest chunked snapshot of the stream in any generation is read, and a
                re-snapshot's is closed by its ``resnapshot`` facts row).
            chunk_rows: rows per chunk (>= 1; default 1,000,000); only the first call, which
                plans every chunk and records the plan, uses it.
            max_waves: stop after this many waves (``None``: until done).
            max_seconds: start no wave after this many seconds (``None``: until done).
            target_wave_seconds: a wave's wanted length (>= 0; default 300): whole rounds of
                ``numPartitions`` chunks, as many as fit at the last wave's pace; ``0``: one
                round per wave.
            min_headroom_hours: before each wave, pause while the stream's newest micro-batch
                facts row shows less CDC retention headroom (minus that row's age), or the
                stream has written none yet. A row whose headroom is NULL (unknown: no
                ``db_owner`` to read the cleanup job's retention, or no metrics directory)
                does not pause; one WARNING says so.
            isolation: ``"snapshot"`` or ``"readCommitted"`` (any case) for the planning and
                chunk reads; ``None``: the stream's ``isolationLevel`` option.

        Returns:
            The :class:`~mssql_cdc.types.BackfillStatus`: state ``"done"`` (stop calling),
            ``"running"`` (``max_waves``/``max_seconds`` ran out: call again),
            ``"waiting_headroom"`` or ``"waiting_metrics"`` (paused before a wave: too little
            retention headroom, or no micro-batch facts row yet; call again later), or
            ``"no_snapshot"`` (paused at once, nothing read: ``app_id``'s stream has no
            chunked snapshot of ``target`` in ``facts_table``; not opened yet, another
            target/app_id/facts table, or a stream that bootstraps with ``snapshot="full"``).
            ``reason`` says why a call paused.

        Raises:
            TypeError, ValueError: a bad argument; a key that changed since the plan.
            PermissionError, SqlServerError: from the reads of SQL Server.
        """
        from mssql_cdc.snapshots.backfill import backfill, check_backfill_args

        target_ref, app, facts_ref = sink_arguments(target, app_id, facts_table)
        if facts_ref is None:
            raise ValueError("backfill() needs facts_table: the chunked snapshot lives there")
        args = check_backfill_args(
            chunk_rows=chunk_rows,
            max_waves=max_waves,
            max_seconds=max_seconds,
            target_wave_seconds=target_wave_seconds,
            min_headroom_hours=min_headroom_hours,
            isolation=isolation,
        )
        reader = TableReader(self.spark, dict(self._options), self._parsed)
        return backfill(reader, Ledger(StreamTables(self.spark, target_ref, facts_ref), app), args)

    def _snapshot_ledger(self, target: str, app_id: str | None, facts_table: str | None) -> Ledger:
        """The ledger of ``snapshot()`` and ``seed()``'s arguments, checked (``app_id``
        ``None``: no stream)."""
        target_ref = table_ref(target, "target")
        app = text_argument("app_id", app_id, optional=True)
        facts_text = text_argument("facts_table", facts_table, optional=True)
        if facts_text is not None and app is None:
            raise ValueError(
                "facts_table needs app_id: the facts rows are the stream's (pass the app_id "
                "you give to_delta)"
            )
        facts_ref = None if facts_text is None else table_ref(facts_text, "facts_table")
        ledger = Ledger(StreamTables(self.spark, target_ref, facts_ref), app)
        if facts_ref is not None:
            ledger.check_facts_not_target()
        return ledger


def stream(spark: SparkSession, options: SourceOptions | Mapping[str, object]) -> CdcStream:
    """Registers the data sources on ``spark`` and keeps a copy of ``options``.

    Args:
        spark: the session.
        options: the data source options (``SourceOptions`` or any mapping; values are turned
            into strings, names match ignoring case). ``connectionString`` and
            ``captureInstance`` are required. A password in the connection string
            (``PWD=``/``Password=``) is moved to the ``password`` option, which Spark redacts
            in plans, the Spark UI and event logs.

    Returns:
        The :class:`CdcStream`; call :meth:`CdcStream.to_delta` to start it.

    Raises:
        TypeError: ``options`` is not a mapping of names to values.
        ValueError: a required option is missing or a value is not allowed (the message names
            the option; secrets are shown as ``<hidden>``). Unknown options are a WARNING on
            every call (logger ``mssql_cdc.options``), and again in the stream's first
            micro-batch facts row (``detail.warnings``).
    """
    copied = move_password(copy_options(options))
    parsed = parse_options(copied)
    warn_unknown(parsed)  # every call: a typo in a second notebook cell is not silent
    register(spark)
    return CdcStream(spark, copied, parsed)
