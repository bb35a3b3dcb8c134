"""``stream(spark, options)`` and ``CdcStream.to_delta(...)``: the common pipeline, declared
once (docs/streaming.md).

Runs on the driver. ``to_delta`` checks its arguments, resolves the metrics directory, takes or
finds the bootstrap snapshot when asked, then starts ``readStream.format("mssql_cdc")`` written
through ``foreachBatch`` into the Delta sink and returns the ``StreamingQuery`` without waiting.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from mssql_cdc._metrics import metrics_dir
from mssql_cdc.connection_string import move_password
from mssql_cdc.options import ReaderOptions, SourceOptions, parse_options
from mssql_cdc.pipeline.arguments import check_trigger, copy_options, path_argument, text_argument
from mssql_cdc.pipeline.locations import check_checkpoint, resolve_metrics_path
from mssql_cdc.pipeline.platform import detect_platform
from mssql_cdc.sink import (
    DeltaSink,
    check_facts_not_target,
    check_one_target,
    sink_arguments,
)
from mssql_cdc.source import register

if TYPE_CHECKING:
    import os

    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["CdcStream", "stream"]

log = logging.getLogger("mssql_cdc.pipeline")


def _check_name_free(spark: SparkSession, name: str) -> None:
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
            query_name: the query's name; default ``app_id``.
            bootstrap: append the table's current rows once (operation 0) and start the
                checkpoint at the snapshot's LSN; later runs find it and read nothing.

        Returns:
            The started ``StreamingQuery``.

        Raises:
            TypeError: an argument has the wrong type (the message names it).
            ValueError: an empty argument, a bad ``trigger`` (or one serverless compute
                refuses), a checkpoint Spark and Python would find in two places (on
                Databricks), ``bootstrap`` with the ``startingLsn`` option, a ``dbfs:/`` or
                unopenable ``metricsPath``, ``facts_table`` naming ``target`` (in any
                spelling), an ``app_id`` the facts table records writing to another target,
                a ``query_name`` already active. All are raised before anything is
                read or written.
            PermissionError, SqlServerError: from the bootstrap's reads of SQL Server.
        """
        # Every argument is checked before anything is read or written (the bootstrap reads
        # and writes the whole table before Spark would look at the trigger or the name).
        target_ref, app, facts_ref = sink_arguments(target, app_id, facts_table)
        location = path_argument("checkpoint", checkpoint)
        name = text_argument("query_name", query_name, optional=True) or app
        if not isinstance(bootstrap, bool):
            raise TypeError(f"bootstrap must be True or False, got {type(bootstrap).__name__}")
        where = detect_platform(self.spark)
        triggers = check_trigger(trigger, serverless=where.serverless)
        check_checkpoint(location, databricks=where.databricks)
        options = dict(self._options)
        if bootstrap and "startingLsn" in options:
            raise ValueError(
                "bootstrap=True sets startingLsn itself (to the snapshot's LSN): remove the "
                "startingLsn option, or pass bootstrap=False"
            )
        _check_name_free(self.spark, name)
        metrics = resolve_metrics_path(
            location, app, options.pop("metricsPath", None), has_facts=facts_ref is not None
        )
        # the sink's arguments were checked above, once (sink_arguments): built directly
        sink = DeltaSink(
            target_ref, app, facts_ref, None if metrics is None else metrics_dir(metrics), location
        )
        if facts_ref is not None:  # before the bootstrap writes anything
            check_facts_not_target(self.spark, target_ref, facts_ref)
            check_one_target(self.spark, app, target_ref, facts_ref)
        if metrics is not None:
            options["metricsPath"] = metrics
        if bootstrap:
            from mssql_cdc.pipeline.bootstrap import bootstrap as run_bootstrap

            done = run_bootstrap(
                self.spark, options, self._parsed, target=target_ref, app_id=app, facts=facts_ref
            )
            options["startingLsn"] = done.snapshot_lsn
        writer = (
            self.spark.readStream.format("mssql_cdc")
            .options(**options)
            .load()
            .writeStream.foreachBatch(sink)
            .option("checkpointLocation", location)
            .queryName(name)
        )
        if triggers is not None:
            writer = writer.trigger(**triggers)  # type: ignore[call-overload]
        query = writer.start()
        log.info(
            "%s: started query %r: %s -> %s (checkpoint %s, facts %s, metrics %s)",
            app,
            name,
            self._parsed.capture_instance,
            target_ref.text,
            location,
            facts_table,
            metrics,
        )
        return query


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
            the option; secrets are shown as ``<hidden>``). Unknown options are a WARNING,
            once per process (logger ``mssql_cdc.options``).
    """
    copied = move_password(copy_options(options))
    parsed = parse_options(copied)
    register(spark)
    return CdcStream(spark, copied, parsed)
