"""``start_database``: one streaming query for many capture instances of one database
(docs/many-tables.md#the-database-stream, ADR 0210).

The query reads the clock ``format("mssql_cdc_database")`` (an offset per trigger: the
database's newest commit) and writes through ``sink.DatabaseSink``, which reads each changed
table's range (``source.ServerReads``) and writes it to the table's own bronze table under the
table's own sink id, as its single stream (``to_delta``) would. Runs on the driver; the sink
and its reads run where Spark runs the ``foreachBatch`` function (the driver, or Spark
Connect's worker).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.connection_string import move_password
from mssql_cdc.options import SourceOptions, parse_options, warn_unknown
from mssql_cdc.pipeline.arguments import Recovery, check_recovery, check_trigger, copy_options
from mssql_cdc.pipeline.database_generations import (
    leaving_generation,
    place_generations,
    record_left_generation,
    recover_tables,
)
from mssql_cdc.pipeline.fanout import PLACEHOLDER, _instances, expand_template, table_options
from mssql_cdc.pipeline.locations import database_metrics_paths
from mssql_cdc.pipeline.start import check_name_free
from mssql_cdc.pipeline.start_plan import check_resnapshot
from mssql_cdc.sink import (
    DatabaseLedger,
    DatabaseSettings,
    DatabaseSink,
    DatabaseTable,
    ParkedTable,
    TableRef,
    ensure_facts_table,
    park_at_start,
    sink_arguments,
    table_ref,
    warm_state_for,
)
from mssql_cdc.source import ServerReads, register

if TYPE_CHECKING:
    import os

    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = ["leave_database", "parked_tables", "start_database"]

log = logging.getLogger("mssql_cdc.pipeline")


#: the ``metricsPath`` option (lower case): each table's own directory under it
_METRICS = "metricspath"
#: options every table of a database stream shares: one database, one login (lower case)
_ONE_SOURCE = frozenset(
    {"connectionstring", "user", "password", "accesstoken", "accesstokenprovider"}
)
#: options that bound the batch of every table at once (lower case)
_ONE_BATCH = frozenset({"maxcommitsperbatch"})


def start_database(
    spark: SparkSession,
    options: SourceOptions | Mapping[str, object],
    capture_instances: Sequence[str] | Mapping[str, Mapping[str, object] | None],
    *,
    target: str,
    app_id: str,
    checkpoint: str | os.PathLike[str],
    facts_table: str,
    name: str,
    **settings: object,
) -> StreamingQuery:
    """Starts one streaming query that keeps many capture instances of one database in bronze,
    exactly once, each table as its own ``to_delta`` stream would (its bronze rows, its facts
    rows, its ``txnAppId``).

    Args:
        spark: the session.
        options: the data source options every table shares (``captureInstance`` is set per
            table; ``maxCommitsPerBatch`` bounds each database batch, every table's range
            inside it, on Spark 4.2+, and may not be overridden per table).
        capture_instances: a list of names, or a mapping of name to option overrides.
        target, app_id: templates containing ``{ci}`` (``"bronze.{ci}"``, ``"sales-{ci}"``):
            each table's bronze table and sink id, as ``start_many`` gives them.
        checkpoint: the query's one checkpoint (no ``{ci}``).
        facts_table: the facts table (required: each table's position is read from it).
        name: the database stream's own id and query name (its membership and heartbeat
            commits; never a table's ``app_id``).
        **settings: ``trigger`` (as ``to_delta``'s; default Spark's), ``heartbeat_seconds``
            (default 300: how often an idle table gets a 0-row facts row), ``parallel``
            (default 4: how many changed tables are written at once, on driver threads;
            classic Spark only), ``bootstrap`` (default False: each table new to the stream
            first takes the snapshot its ``to_delta(bootstrap=True)`` would, one table after
            the other, before the query starts) and ``snapshot`` (``"full"``, the default, or
            ``"chunked"``: as ``to_delta``'s; a chunked snapshot's chunks are each table's
            ``backfill()``; it is also how a re-snapshot reads a table), ``on_data_loss``
            (``"fail"``, the default, or ``"resnapshot"``: before the query starts, each table
            whose changes were purged since its position is re-snapshotted into a new
            generation, as its ``to_delta(on_data_loss="resnapshot")`` would; needs
            ``failOnDataLoss=true`` and a local or Volume checkpoint) and
            ``resnapshot_interval_days`` (default 7, as ``to_delta``'s).

    Returns:
        The started query.

    Raises:
        TypeError, ValueError: a bad argument, checked before anything is read or written: a
            template without ``{ci}``, a checkpoint with it, an instance named twice, two
            tables with one target or ``app_id``, ``name`` equal to a table's ``app_id``, an
            unknown setting, a bad option; an instance SQL Server does not list, or two
            instances of one table (checked with one catalog query before the start).
    """
    trigger, heartbeat, parallel, boot, recovery = _settings(settings)
    tables = _instances(capture_instances)
    location = checkpoint if isinstance(checkpoint, str) else _path(checkpoint)
    if PLACEHOLDER in location:
        raise ValueError(
            f"checkpoint {location!r}: a database stream has one checkpoint for all its tables; "
            f"remove '{PLACEHOLDER}'"
        )
    if not isinstance(name, str) or not name.strip():
        raise ValueError("name must be a non-empty string: the database stream's id")
    templates = (target, app_id, facts_table)
    members, per_table, facts_ref = _members(
        copy_options(options), tables, templates, name, location, boot=boot, recovery=recovery
    )
    given = {ci: _option(one, _METRICS) for ci, one in per_table.items()}
    place_generations(location, members, per_table)
    clock_options = _place_metrics(location, name, members, per_table, given)
    checked = _Tables(members, per_table, facts_ref, given)

    checks = ServerReads(per_table)
    try:
        checks.check_instances(list(tables))
    finally:
        checks.close()
    register(spark)
    _warn_unbounded(spark, name, clock_options)
    _check_session(spark, name, members, facts_ref)
    ensure_facts_table(spark, facts_ref)
    _before_start(spark, name, location, checked, boot=boot, recovery=recovery)
    sink = DatabaseSink(
        name,
        members,
        facts_ref,
        ServerReads(per_table),
        location,
        settings=DatabaseSettings(heartbeat, warm_state_for(trigger), parallel),
    )
    writer = (
        spark.readStream.format("mssql_cdc_database")
        .options(**clock_options)
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", location)
        .queryName(name)
    )
    if trigger is not None:
        writer = writer.trigger(**trigger)  # type: ignore[call-overload]
    query = writer.start()
    log.info(
        "%s: started the database stream of %d table(s) (checkpoint %s, facts %s)",
        name,
        len(members),
        location,
        facts_ref.text,
    )
    return query


def leave_database(
    spark: SparkSession,
    *,
    name: str,
    target: str,
    app_id: str,
    facts_table: str,
    database_checkpoint: str | os.PathLike[str],
    checkpoint: str | os.PathLike[str],
) -> int:
    """Moves a table out of the database stream ``name``, to go on as a single stream
    (``to_delta``) without reloading: records that it left (a ``database_left`` facts row) and
    writes the single stream's new checkpoint, one committed micro-batch (the table's newest
    one the facts table records) ending where that batch ended. A table the database stream
    re-snapshotted goes on in its generation ``n``: the batch is seeded in
    ``<checkpoint>/_generations/<n>`` and the generation recorded in ``checkpoint``, as its
    ``to_delta`` would have them. Stop the database stream first, and leave the table out of
    its list from then on; then start the table's ``to_delta`` with ``target``, ``app_id``,
    ``facts_table`` and ``checkpoint``.

    Args:
        name: the database stream's name (``start_database``'s), not active in this session.
        target: the table's bronze table; app_id: its app_id (as the database stream's
            template gave it, without a generation's suffix); facts_table: the database
            stream's facts table.
        database_checkpoint: the database stream's checkpoint (local; its SQL settings are
            copied).
        checkpoint: the single stream's new checkpoint (local, absent or empty).

    Returns:
        The committed batch id (the single stream's first batch is the next one).

    Raises:
        ValueError: the database stream is active in this session, a URI or non-empty
            ``checkpoint``, a facts table that records no micro-batch of the table's sink id,
            the facts table naming another target for it, or a re-snapshot of it under way.
    """
    location = checkpoint if isinstance(checkpoint, str) else _path(checkpoint)
    source = database_checkpoint
    source = source if isinstance(source, str) else _path(source)
    target_ref, one_app, facts_ref = sink_arguments(target, app_id, facts_table)
    assert facts_ref is not None
    check_name_free(spark, name)
    from mssql_cdc.sink import Ledger, StreamTables

    Ledger(StreamTables(spark, target_ref, facts_ref), one_app).check_one_target()
    live, state = leaving_generation(source, location, one_app)
    ledger = DatabaseLedger(spark, facts_ref, name, set())
    batch_id = ledger.seed_single(target_ref, live.sink_id, source, live.checkpoint)
    record_left_generation(location, one_app, state)
    ledger.record_left(live.sink_id, target_ref.text, source)
    log.info(
        "%s: left the database stream %s; a single stream's checkpoint %s goes on after "
        "micro-batch %d",
        live.sink_id,
        name,
        location,
        batch_id,
    )
    return batch_id


def parked_tables(spark: SparkSession, *, name: str, facts_table: str) -> dict[str, str]:
    """The tables the database stream ``name`` parked and has not written since (what
    ``await_all`` returns for ``start_many``'s failed queries): each table's error, by capture
    instance. A table is no longer in it once a later run wrote it (a micro-batch or heartbeat
    row) or it left the stream. Reads the facts table (one aggregation), while the stream runs
    or after, on classic Spark and Spark Connect alike.

    Raises:
        ValueError: a bad ``facts_table`` name.
    """
    facts = table_ref(facts_table, "facts_table")
    parked = DatabaseLedger(spark, facts, name, set()).parked().values()
    return {p.capture_instance: p.error for p in sorted(parked, key=lambda p: p.capture_instance)}


def _members(
    options: dict[str, str],
    tables: Mapping[str, dict[str, str]],
    templates: tuple[str, str, str],
    name: str,
    location: str,
    *,
    boot: str | None,
    recovery: Recovery,
) -> tuple[list[DatabaseTable], dict[str, dict[str, str]], TableRef]:
    """Each table of the stream (its capture instance, bronze table and ``app_id`` from the
    ``(target, app_id, facts_table)`` templates) and its options, checked; and the facts
    table.

    Raises:
        ValueError: see ``start_database``.
    """
    target, app_id, facts_table = templates
    shared = move_password(options)
    per_table: dict[str, dict[str, str]] = {}
    members: list[DatabaseTable] = []
    facts_ref = None
    for ci, overrides in tables.items():
        connection = sorted(k for k in overrides if k.lower() in _ONE_SOURCE)
        if connection:
            raise ValueError(
                f"capture_instances[{ci!r}] overrides {connection}: a database stream reads one "
                "database with one login (its LSNs bound every table); give them in the shared "
                "options"
            )
        batch = sorted(k for k in overrides if k.lower() in _ONE_BATCH)
        if batch:
            raise ValueError(
                f"capture_instances[{ci!r}] overrides {batch}: a database stream's micro-batch "
                "is one LSN range for every table; give maxCommitsPerBatch in the shared options"
            )
        one = table_options(shared, move_password(overrides), ci)
        warn_unknown(parse_options(one))
        if boot is not None and any(k.lower() == "startinglsn" for k in one):
            raise ValueError(
                f"capture_instances[{ci!r}]: bootstrap=True sets startingLsn itself (to the "
                "snapshot's LSN): remove the startingLsn option, or pass bootstrap=False"
            )
        if recovery.resnapshot:
            check_resnapshot(location, table_ref(facts_table, "facts_table"), parse_options(one))
        per_table[ci] = one
        one_target = expand_template("target", target, ci)
        one_app = expand_template("app_id", app_id, ci)
        target_ref, one_app, facts_ref = sink_arguments(one_target, one_app, facts_table)
        if one_app == name:
            raise ValueError(f"name {name!r} is also the app_id of {ci!r}: give the stream its own")
        if any(m.app_id == one_app for m in members):
            raise ValueError(f"app_id {app_id!r} gives {one_app!r} for two capture instances")
        if any(m.target == target_ref for m in members):
            raise ValueError(f"target {target!r} gives {target_ref.text!r} for two instances")
        members.append(DatabaseTable(ci, target_ref, one_app))
    assert facts_ref is not None
    return members, per_table, facts_ref


@dataclass
class _Tables:
    """A database stream's tables as ``start_database`` checked them: each table, its options
    (by capture instance), the facts table and each table's ``metricsPath`` as given."""

    members: list[DatabaseTable]
    per_table: dict[str, dict[str, str]]
    facts: TableRef
    given: dict[str, str | None]


def _before_start(
    spark: SparkSession,
    name: str,
    location: str,
    tables: _Tables,
    *,
    boot: str | None,
    recovery: Recovery,
) -> None:
    """What runs on the driver before the query starts: each table's recovery after data loss
    (``on_data_loss="resnapshot"``; a new generation gets its metrics directory, and no query
    of its sink id may be active), then the bootstrap of each table new to the stream, then
    the ``table_parked`` rows of the tables either failed for."""
    members, per_table, facts = tables.members, tables.per_table, tables.facts
    if recovery.resnapshot:
        recover_tables(spark, name, location, members, per_table, facts, recovery)
        _place_metrics(location, name, members, per_table, tables.given)
        _check_queries(spark, members)
    if boot is not None:
        _bootstrap(spark, name, members, per_table, facts, chunked=recovery.snapshot == "chunked")
    _record_parked(spark, name, members, facts)


def _check_queries(spark: SparkSession, members: Sequence[DatabaseTable]) -> None:
    """No query of a table's single stream is active in the session: ``to_delta`` names its
    query after its generation's sink id (the ``app_id`` in generation 0).

    Raises:
        ValueError: naming the table and the query.
    """
    for member in members:
        for query in dict.fromkeys((member.app_id, member.sink_id)):
            try:
                check_name_free(spark, query)
            except ValueError:
                raise ValueError(
                    f"{member.capture_instance}: a query named {query!r} (its single "
                    "stream's) is active in this session; stop it first: one stream at a "
                    "time writes a table"
                ) from None


def _warn_unbounded(spark: SparkSession, name: str, options: Mapping[str, str]) -> None:
    """One WARNING when ``maxCommitsPerBatch`` is given and the session's Spark is before 4.2:
    its Python stream readers have no admission control there, so each batch reads every
    commit up to the newest (the clock's own planning process logs where no handler looks)."""
    bound = parse_options(dict(options)).max_commits_per_batch
    if bound is None:
        return
    major, minor = (int(p) for p in spark.version.split(".")[:2])
    if (major, minor) < (4, 2):
        log.warning(
            "%s: maxCommitsPerBatch=%d has no effect on Spark %s: its Python stream readers "
            "have no admission control (Spark 4.2 added it), so each database batch reads "
            "every commit up to the newest; see the compatibility page of the docs",
            name,
            bound,
            spark.version,
        )


def _check_session(
    spark: SparkSession, name: str, members: Sequence[DatabaseTable], facts: TableRef
) -> None:
    """No query of the stream's name or of a table's single stream (``to_delta`` names its
    query after the sink id) is active in the session, and the facts table records no
    stream whose ``app_id`` is the name.

    Raises:
        ValueError: naming the query or the name.
    """
    check_name_free(spark, name)
    _check_queries(spark, members)
    if DatabaseLedger(spark, facts, name, set()).name_taken():
        raise ValueError(
            f"name {name!r}: {facts.text} records it as a stream's app_id; give the database "
            "stream a name of its own"
        )


def _bootstrap(
    spark: SparkSession,
    name: str,
    members: Sequence[DatabaseTable],
    per_table: dict[str, dict[str, str]],
    facts: TableRef,
    *,
    chunked: bool,
) -> None:
    """The bootstrap of each table new to the stream (neither a member nor with a micro-batch
    row of its own: a table moving in from a single stream keeps its position), one after the
    other on the driver, as its ``to_delta(bootstrap=True)`` would take it (or find it, after
    a crash before the table joined): its ``startingLsn`` becomes the snapshot's LSN, where it
    joins. A table whose bootstrap fails for a reason of its own (``parkable``) is parked for
    the run (``_record_parked`` writes its ``table_parked`` row), the others go on.

    Raises:
        Exception: a failure that is not a table's own (the connection, Spark): nothing has
            started.
    """
    from mssql_cdc.options import parse_options as parse
    from mssql_cdc.pipeline.start import take_bootstrap
    from mssql_cdc.sink import Ledger, StreamTables
    from mssql_cdc.snapshots.reader import TableReader

    ledger = DatabaseLedger(spark, facts, name, set())
    joined = {sid for sid, m in ledger.members().items() if m.joined}
    streamed = ledger.last_batches([m.app_id for m in members])
    todo = [  # a table in a generation n >= 1 starts after the snapshot that opened it
        m
        for m in members
        if m.parked is None
        and m.generation == 0
        and m.app_id not in joined
        and m.app_id not in streamed
    ]
    for i, member in enumerate(todo, 1):
        ci = member.capture_instance
        log.info("%s: bootstrap %d of %d: %s -> %s", name, i, len(todo), ci, member.target.text)
        options = per_table[ci]
        table_ledger = Ledger(StreamTables(spark, member.target, facts), member.app_id)
        try:
            table_ledger.check_facts_not_target()  # before the bootstrap writes anything
            table_ledger.check_one_target()
            reader = TableReader(spark, options, parse(options))
            options["startingLsn"] = take_bootstrap(reader, table_ledger, chunked=chunked)
        except Exception as exc:
            park_at_start(name, member, "its bootstrap", exc)


def _record_parked(
    spark: SparkSession, name: str, members: Sequence[DatabaseTable], facts: TableRef
) -> None:
    """The ``table_parked`` rows of the tables whose recovery or bootstrap failed, written
    before the query starts: a run in which no batch runs shows them too (none: nothing
    read)."""
    failed = {
        m.sink_id: ParkedTable(m.capture_instance, m.target.text, m.parked)
        for m in members
        if m.parked is not None
    }
    DatabaseLedger(spark, facts, name, set()).record_parked(failed)


def _option(options: Mapping[str, str], lower: str) -> str | None:
    """The value of the option whose name is ``lower`` in any case (``None``: not given)."""
    return next((v for k, v in options.items() if k.lower() == lower), None)


def _place_metrics(
    location: str,
    name: str,
    members: Sequence[DatabaseTable],
    per_table: dict[str, dict[str, str]],
    given: Mapping[str, str | None],
) -> dict[str, str]:
    """Gives each table its metrics directory under its sink id
    (``locations.database_metrics_paths``): its reads' ``metricsPath`` option (replacing the
    base, ``given`` by capture instance) and its sink's. Returns the clock's options: the first
    table's without ``metricsPath`` (the clock reads none)."""
    paths = database_metrics_paths(
        location, name, {m.sink_id: given[m.capture_instance] for m in members}
    )
    bare = {
        m.capture_instance: {
            k: v for k, v in per_table[m.capture_instance].items() if k.lower() != _METRICS
        }
        for m in members
    }
    for member in members:
        member.metrics_path = paths[member.sink_id]
        options = dict(bare[member.capture_instance])
        if member.metrics_path is not None:
            options["metricsPath"] = member.metrics_path
        per_table[member.capture_instance] = options
    return bare[members[0].capture_instance]


#: ``start_database``'s keyword settings
_SETTINGS = (
    "trigger",
    "heartbeat_seconds",
    "parallel",
    "bootstrap",
    "snapshot",
    "on_data_loss",
    "resnapshot_interval_days",
)


def _settings(
    settings: Mapping[str, object],
) -> tuple[dict[str, object] | None, float, int, str | None, Recovery]:
    """``start_database``'s keyword settings checked: the trigger, ``heartbeat_seconds``,
    ``parallel``, the bootstrap (``None``: none; else ``snapshot``, ``"full"`` or
    ``"chunked"``) and the data-loss settings (as ``to_delta``'s, without
    ``snapshot_on_switch``).

    Raises:
        TypeError: an unknown keyword, a ``bootstrap`` that is not a bool.
        ValueError: a bad value, naming the setting.
    """
    unknown = set(settings) - set(_SETTINGS)
    if unknown:
        raise TypeError(
            f"start_database got unexpected keyword argument(s) {sorted(unknown)}; it takes "
            f"{', '.join(_SETTINGS[:-1])} and {_SETTINGS[-1]}"
        )
    bootstrap = settings.get("bootstrap", False)
    if not isinstance(bootstrap, bool):
        raise TypeError(f"bootstrap must be True or False, got {type(bootstrap).__name__}")
    snapshot = settings.get("snapshot", "full")
    recovery = check_recovery(
        settings.get("on_data_loss", "fail"),
        settings.get("resnapshot_interval_days", 7.0),
        False,
        snapshot,
    )
    if "snapshot" in settings and not bootstrap and not recovery.resnapshot:
        raise ValueError(
            "snapshot is how the bootstrap and a re-snapshot read the tables: it needs "
            "bootstrap=True or on_data_loss='resnapshot'"
        )
    trigger = check_trigger(settings.get("trigger"))
    heartbeat = settings.get("heartbeat_seconds", 300.0)
    if isinstance(heartbeat, bool) or not isinstance(heartbeat, int | float) or heartbeat < 0:
        raise ValueError(f"heartbeat_seconds must be a number of seconds >= 0, got {heartbeat!r}")
    parallel = settings.get("parallel", 4)
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise ValueError(f"parallel must be a whole number of tables >= 1, got {parallel!r}")
    return trigger, float(heartbeat), parallel, str(snapshot) if bootstrap else None, recovery


def _path(value: object) -> str:
    import os

    if isinstance(value, os.PathLike):
        path = os.fspath(value)
        if isinstance(path, str):
            return path
    raise TypeError(f"checkpoint must be a path (str), got {type(value).__name__}")
