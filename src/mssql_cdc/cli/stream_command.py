"""``mssql-cdc stream``: the main job against any SQL Server, from the command line.

Builds the data source options from the arguments, takes the password from an environment
variable (or a prompt on a terminal) so it never appears in ``argv``, a log or an error, then
runs ``stream(spark, options).to_delta(...)`` on ``get_spark()``'s session and waits for the
query: an ``availableNow`` or ``once`` run returns when caught up, other triggers run until
interrupted (Ctrl-C stops the query cleanly). While the queries run it shows their progress
(:mod:`mssql_cdc.cli.progress`): a refreshing panel on a terminal, one line per micro-batch
otherwise; ``--no-progress`` turns it off.
"""

from __future__ import annotations

import argparse
import contextlib
import getpass
import logging
import os
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from mssql_cdc.cli.database_progress import follow_database
from mssql_cdc.cli.progress import follow
from mssql_cdc.cli.text import count_text
from mssql_cdc.cli.usage import UsageError
from mssql_cdc.connection_string import attributes, has_password
from mssql_cdc.errors import LoginError
from mssql_cdc.pipeline.arguments import trigger_problem

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = [
    "add_arguments",
    "add_connection_arguments",
    "options_from",
    "parse_trigger",
    "run_stream",
]

log = logging.getLogger("mssql_cdc.cli")

PASSWORD_ENV = "MSSQL_CDC_PASSWORD"
#: option names that would put a secret in argv (lower case)
_SECRET_OPTIONS = frozenset({"password", "pwd", "accesstoken"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``stream`` subcommand's arguments."""
    add_connection_arguments(parser)
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--capture-instance",
        action="append",
        metavar="NAME",
        help="a capture instance (repeatable: one stream each; then --target, --app-id and "
        "--checkpoint must contain {ci})",
    )
    which.add_argument(
        "--schema",
        metavar="SCHEMA",
        help="stream every CDC-enabled table of this source schema (the newest capture "
        "instance of each; --target, --app-id and --checkpoint must contain {ci})",
    )
    parser.add_argument(
        "--target", required=True, help="bronze Delta table (name or path; {ci}: the instance)"
    )
    parser.add_argument(
        "--app-id", required=True, help="the sink's id, stable per checkpoint ({ci}: the instance)"
    )
    parser.add_argument(
        "--checkpoint", required=True, help="Spark checkpoint location ({ci}: the instance)"
    )
    parser.add_argument("--facts-table", help="facts table (name or path)")
    parser.add_argument(
        "--trigger",
        default="availableNow",
        help="availableNow (default; the only trigger Databricks serverless compute runs), "
        "once, or processingTime=INTERVAL with an interval Spark reads (processingTime=1 minute)",
    )
    parser.add_argument("--bootstrap", action="store_true", help="load the table's rows first")
    parser.add_argument(
        "--on-data-loss",
        choices=("fail", "resnapshot"),
        default="fail",
        help="what a start does when CDC cleanup purged changes a table still needs: fail "
        "(default) or resnapshot (re-snapshot the table into its next generation first; needs "
        "--facts-table; see docs/data-loss.md)",
    )
    parser.add_argument(
        "--database-stream",
        metavar="NAME",
        help="with several capture instances: run them in one query, a database stream of this "
        "name (its own id; --checkpoint is then its one checkpoint, without {ci}, and "
        "--facts-table is required; see docs/many-tables.md)",
    )
    parser.add_argument("--query-name", help="query name (default: the app id)")
    parser.add_argument(
        "--no-progress",
        dest="progress",
        action="store_false",
        help="do not show the live progress (a refreshing panel on a terminal, with rich; one "
        "line per micro-batch that read changes otherwise)",
    )


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """Where and how to connect, shared by ``stream`` and ``check``: the server or connection
    string, database, user, the password's environment variable, ``--encrypt`` and
    ``--option``."""
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--server", help="HOST or HOST,PORT of SQL Server")
    where.add_argument(
        "--connection-string",
        help="ODBC-style connection string without the password (Server=...;Database=...)",
    )
    parser.add_argument("--database", help="database (with --server)")
    parser.add_argument("--user", help="SQL login")
    parser.add_argument(
        "--password-env",
        default=PASSWORD_ENV,
        metavar="VAR",
        help=f"environment variable holding the password (default {PASSWORD_ENV}); "
        "prompted for on a terminal when unset",
    )
    parser.add_argument(
        "--encrypt",
        default="yes",
        help="with --server, Encrypt= of the connection: yes (default), no or strict",
    )
    parser.add_argument(
        "--trust-server-certificate",
        action="store_true",
        help="with --server, accept the server's certificate without checking it "
        "(TrustServerCertificate=yes): only for a server you trust, e.g. a test server",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another data source option, e.g. maxCommitsPerBatch=1000 (repeatable)",
    )


def parse_trigger(text: str) -> dict[str, object]:
    """``availableNow`` / ``once`` / ``processingTime=1 minute`` as ``DataStreamWriter.trigger``
    keyword arguments, checked by the rules of ``to_delta`` (``continuous`` is refused).

    Raises:
        UsageError: another form, or an interval Spark would not read.
    """
    kind, sep, value = text.partition("=")
    kind = kind.strip()
    if not sep and kind in ("availableNow", "once"):
        return {kind: True}
    if sep and kind in ("processingTime", "continuous"):
        why = trigger_problem(kind, value.strip())
        if why is not None:
            raise UsageError(f"--trigger {text!r}: {why}")
        return {kind: value.strip()}
    raise UsageError(
        f"--trigger {text!r}: use availableNow, once or processingTime=INTERVAL (e.g. "
        "processingTime=1 minute)"
    )


def _password(args: argparse.Namespace, env: Mapping[str, str], stdin: TextIO) -> str | None:
    value = env.get(args.password_env)
    if value:
        return value
    if args.user and stdin.isatty():
        return getpass.getpass(f"password for {args.user}: ")
    return None


def _refuse_secret(what: str, env_var: str) -> UsageError:
    return UsageError(
        f"{what} holds a password or token, which would show in the process list: remove it "
        f"and set the {env_var} environment variable (or leave it unset to be prompted on a "
        "terminal; --password-env names another variable)"
    )


def _connection_string(text: str, what: str, env_var: str) -> str:
    try:
        secret = has_password(text)
    except ValueError as exc:
        raise UsageError(f"{what}: {exc}") from None
    if secret:
        raise _refuse_secret(what, env_var)
    return text


def _connection(args: argparse.Namespace) -> str:
    """The connection string of ``args``: ``--connection-string`` checked for secrets, or one
    built from ``--server``, ``--encrypt``, ``--database`` and ``--trust-server-certificate``."""
    trust = getattr(args, "trust_server_certificate", False)
    if args.connection_string:
        if trust:
            raise UsageError(
                "--trust-server-certificate goes with --server; with --connection-string put "
                "TrustServerCertificate=yes in the string"
            )
        return _connection_string(args.connection_string, "--connection-string", args.password_env)
    if trust and args.encrypt.strip().lower() == "strict":
        raise UsageError(
            "--trust-server-certificate does not go with --encrypt strict, which always checks "
            "the server's certificate (install its CA, or use --encrypt yes for a test server)"
        )
    connection = f"Server=tcp:{args.server};Encrypt={args.encrypt}"
    if args.database:
        connection += f";Database={args.database}"
    if trust:
        connection += ";TrustServerCertificate=yes"
    return connection


def options_from(
    args: argparse.Namespace, env: Mapping[str, str], stdin: TextIO | None = None
) -> dict[str, str]:
    """The data source options of ``args``.

    Raises:
        UsageError: a secret in ``argv``: a connection string (``--connection-string`` or
            ``--option connectionString=``) holding a password or token, or ``--option
            password=`` / ``accessToken=`` / ``PWD=``; or an ``--option`` without ``=``.
    """
    connection = _connection(args)
    options = {"connectionString": connection}
    instances = args.capture_instance or []
    if isinstance(instances, str):
        instances = [instances]
    if len(instances) == 1:
        options["captureInstance"] = instances[0]
    if args.user:
        options["user"] = args.user
    extra: dict[str, str] = {}
    for item in args.option:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise UsageError(f"--option {item!r}: expected NAME=VALUE")
        if not name:
            raise UsageError("--option '=...': expected NAME=VALUE, the NAME is missing")
        if name.lower() in _SECRET_OPTIONS:
            raise _refuse_secret(f"--option {name}", args.password_env)
        if name.lower() == "connectionstring":
            value = _connection_string(value, f"--option {name}", args.password_env)
        extra[name] = value
    password = _password(args, env, stdin or sys.stdin)
    if password is not None:
        options["password"] = password
    options.update(extra)
    return options


def run_stream(args: argparse.Namespace, out: TextIO) -> int:
    """Runs the job; returns the exit code (0 when every query ended without an error)."""
    from mssql_cdc.spark import get_spark, stream_run_config

    # the arguments first, then the password (which may be prompted for), then Spark
    trigger = parse_trigger(args.trigger)
    several = args.schema is not None or len(args.capture_instance) > 1
    database = getattr(args, "database_stream", None)
    if database is not None:
        _check_database(args)
    elif several:
        _check_many(args)
    options = options_from(args, os.environ)
    # SQL Server before Spark: a wrong server, login or TLS setting fails before Spark starts,
    # in one line (with --schema, the question for its tables is that first connection). Not under
    # Spark Connect: the data source connects from the server, which may reach SQL Server
    # where this machine cannot.
    with _login_hint(_no_password_reason(args, options, os.environ)):
        if args.schema is not None:
            instances = _schema_instances(options, args.schema)
        else:
            if not os.environ.get("SPARK_REMOTE"):
                from mssql_cdc.source import check_reachable

                check_reachable(options)
            instances = list(args.capture_instance)
    spark = get_spark("mssql-cdc-stream", config=stream_run_config())
    if database is not None:
        return _run_database(spark, args, options, trigger, out, instances=instances)
    if not several:
        return _run_one(spark, args, options, trigger, out)
    return _run_many(spark, args, options, trigger, out, instances=instances)


def _no_password_reason(
    args: argparse.Namespace, options: Mapping[str, str], env: Mapping[str, str]
) -> str | None:
    """Why ``options`` log in with a SQL login but no password, ``None`` when they carry one or
    log in another way (an ``accessTokenProvider`` option, ``Authentication=`` in the
    connection string). Without ``--user`` no password is asked for at all."""
    if "password" in options or any(k.lower() == "accesstokenprovider" for k in options):
        return None
    keys = {a.key.lower() for a in attributes(options.get("connectionString", ""))}
    if "authentication" in keys:
        return None
    if not args.user:
        return "no --user was given"
    state = "is unset" if env.get(args.password_env) is None else "is empty"
    return (
        f"no password was given: {args.password_env} {state} and there is no terminal to ask "
        "on; set it, or name another variable with --password-env"
    )


@contextlib.contextmanager
def _login_hint(reason: str | None) -> Iterator[None]:
    """A refused login says ``reason`` (a missing user or password) after SQL Server's own
    message, which does not."""
    try:
        yield
    except LoginError as exc:
        if reason is None:
            raise
        raise LoginError(
            f"{exc.message} ({reason})",
            number=exc.number,
            state=exc.state,
            severity=exc.severity,
            server=exc.server,
            procedure=exc.procedure,
            line=exc.line,
        ) from None


def _check_many(args: argparse.Namespace) -> None:
    """The arguments of several streams that ``start_many`` would refuse, refused before
    anything starts: ``--query-name``, a template without ``{ci}``, a repeated
    ``--capture-instance``.

    Raises:
        UsageError: naming the argument.
    """
    from mssql_cdc.pipeline.fanout import expand_template

    if args.query_name:
        raise UsageError(
            "--query-name names one query: with several capture instances each query is named "
            "after its app id (give --app-id a {ci})"
        )
    for name in ("target", "app_id", "checkpoint"):
        try:
            expand_template(name, getattr(args, name), "x")
        except ValueError as exc:
            raise UsageError(f"--{name.replace('_', '-')}: {exc}") from None
    seen: set[str] = set()
    for ci in args.capture_instance or ():  # none with --schema
        if ci in seen:
            raise UsageError(f"--capture-instance {ci!r} is given twice")
        seen.add(ci)


def _check_database(args: argparse.Namespace) -> None:
    """The arguments of a database stream that ``start_database`` would refuse, refused
    before anything starts: ``--query-name``, a missing ``--facts-table``,
    ``--target`` or ``--app-id`` without ``{ci}``, ``--checkpoint`` with it, a repeated
    ``--capture-instance``.

    Raises:
        UsageError: naming the argument.
    """
    from mssql_cdc.pipeline.fanout import PLACEHOLDER, expand_template

    if args.query_name:
        raise UsageError("--query-name: a database stream's query is named --database-stream")
    if not args.facts_table:
        raise UsageError("--database-stream needs --facts-table: its tables' positions are there")
    for name in ("target", "app_id"):
        try:
            expand_template(name, getattr(args, name), "x")
        except ValueError as exc:
            raise UsageError(f"--{name.replace('_', '-')}: {exc}") from None
    if PLACEHOLDER in args.checkpoint:
        raise UsageError(
            f"--checkpoint {args.checkpoint!r}: a database stream has one checkpoint; remove "
            f"'{PLACEHOLDER}'"
        )
    seen: set[str] = set()
    for ci in args.capture_instance or ():
        if ci in seen:
            raise UsageError(f"--capture-instance {ci!r} is given twice")
        seen.add(ci)


def _run_database(
    spark: SparkSession,
    args: argparse.Namespace,
    options: dict[str, str],
    trigger: dict[str, object],
    out: TextIO,
    *,
    instances: list[str],
) -> int:
    from mssql_cdc import parked_tables, start_database

    shared = {k: v for k, v in options.items() if k.lower() != "captureinstance"}
    # the progress follows the sink's reports from before the query starts (its first batch's
    # too); stopped, it prints what is left
    with contextlib.ExitStack() as stack:
        progress = follow_database(args.database_stream, out, enabled=_progress(args))
        if progress is not None:
            stack.enter_context(progress)
        query = start_database(
            spark,
            shared,
            instances,
            name=args.database_stream,
            **_many_settings(args, trigger),
        )
        if progress is not None:
            progress.attach(query)
        print(f"{query.name}: streaming {len(instances)} capture instances", file=out)
        try:
            query.awaitTermination()
        except KeyboardInterrupt:
            print(f"{query.name}: stopping", file=out)
            query.stop()
        except Exception as exc:  # the query's failure, raised again by Spark on this thread
            print(f"{query.name}: the query failed: {_first_line(exc)}", file=sys.stderr)
            return 1
    ran = {p["batchId"] for p in query.recentProgress if "addBatch" in p.get("durationMs", {})}
    print(
        f"{query.name}: {count_text(len(ran), 'database batch', 'database batches')} ran; each "
        f"table's rows are in {args.facts_table} (mssql-cdc status)",
        file=out,
    )
    found = parked_tables(spark, name=args.database_stream, facts_table=args.facts_table)
    parked = {ci: error for ci, error in found.items() if ci in instances}  # listed ones
    for ci, error in parked.items():
        line = error.strip().splitlines()[0] if error.strip() else "?"
        print(f"{query.name}: {ci} is parked: {line}", file=sys.stderr)
    if parked:
        print(
            f"{query.name}: {count_text(len(parked), 'table', 'tables')} parked (the others "
            "landed); the next run tries them again",
            file=sys.stderr,
        )
    return 1 if parked else 0


def _many_settings(args: argparse.Namespace, trigger: dict[str, object]) -> dict[str, Any]:
    """The keyword arguments ``start_many`` and ``start_database`` take alike from the command
    line: the templates, the facts table, the trigger, the bootstrap and ``on_data_loss``."""
    return {
        "target": args.target,
        "app_id": args.app_id,
        "checkpoint": args.checkpoint,
        "facts_table": args.facts_table,
        "trigger": trigger,
        "bootstrap": args.bootstrap,
        "on_data_loss": args.on_data_loss,
    }


def _schema_instances(options: Mapping[str, str], schema: str) -> list[str]:
    from mssql_cdc.source import schema_capture_instances

    found = schema_capture_instances(options, schema)
    if not found:
        raise ValueError(
            f"--schema {schema!r}: no table of that schema has a capture instance this login "
            "can read (is CDC enabled on its tables? run sys.sp_cdc_help_change_data_capture)"
        )
    return found


def _run_one(
    spark: SparkSession,
    args: argparse.Namespace,
    options: dict[str, str],
    trigger: dict[str, object],
    out: TextIO,
) -> int:
    from mssql_cdc import stream

    ci = args.capture_instance[0]
    with _snapshot_watch(spark, args, f"bootstrap of {ci}", out):
        query = stream(spark, options).to_delta(
            args.target,
            app_id=args.app_id,
            checkpoint=args.checkpoint,
            facts_table=args.facts_table,
            trigger=trigger,
            query_name=args.query_name,
            bootstrap=args.bootstrap,
            on_data_loss=args.on_data_loss,
        )
    print(f"{query.name}: streaming {ci} into {args.target}", file=out)
    stopped = False
    try:
        with follow({ci: query}, out, enabled=_progress(args)):
            query.awaitTermination()
    except KeyboardInterrupt:
        print(f"{query.name}: stopping", file=out)
        query.stop()
        stopped = True
    except Exception as exc:  # the query's failure, raised again by Spark on this thread
        print(f"{query.name}: the query failed: {_first_line(exc)}", file=sys.stderr)
        return 1
    print(f"{query.name}: {_summary(query, stopped=stopped, kept=_kept_reports(spark))}", file=out)
    return 0


def _run_many(
    spark: SparkSession,
    args: argparse.Namespace,
    options: dict[str, str],
    trigger: dict[str, object],
    out: TextIO,
    *,
    instances: list[str],
) -> int:
    from mssql_cdc import await_all, start_many, stop_all

    with _snapshot_watch(spark, args, f"bootstrap of {len(instances)} tables", out):
        queries = start_many(
            spark,
            options,
            instances,
            **_many_settings(args, trigger),
        )
    for ci, query in queries.items():
        print(f"{query.name}: streaming {ci}", file=out)
    stopped: set[str] = set()  # the queries Ctrl-C stopped (others had ended on their own)
    try:
        with follow(queries, out, enabled=_progress(args)):
            failures = await_all(queries)
    except KeyboardInterrupt:
        print(f"stopping {len(queries)} queries", file=out)
        stopped = {ci for ci, query in queries.items() if query.isActive}
        stop_all(queries)
        failures = await_all(queries, timeout=0)
    kept = _kept_reports(spark)
    for ci, query in queries.items():
        if ci in failures:
            print(f"{query.name}: the query failed: {_first_line(failures[ci])}", file=sys.stderr)
        else:
            summary = _summary(query, stopped=ci in stopped, kept=kept)
            print(f"{query.name}: {summary}", file=out)
    return 1 if failures else 0


def _progress(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "progress", True))


def _snapshot_watch(
    spark: SparkSession, args: argparse.Namespace, label: str, out: TextIO
) -> contextlib.AbstractContextManager[object]:
    """The snapshot's progress while ``--bootstrap`` reads it (cli/snapshot_watch.py)."""
    if not (args.bootstrap and _progress(args)):
        return contextlib.nullcontext()
    from mssql_cdc.cli.snapshot_watch import SnapshotWatch

    return SnapshotWatch(spark, label, out)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _kept_reports(spark: SparkSession) -> int:
    """How many progress reports a query of ``spark`` keeps in ``recentProgress``
    (``spark.sql.streaming.numRecentProgressUpdates``, 100 by default)."""
    try:
        return int(spark.conf.get("spark.sql.streaming.numRecentProgressUpdates", "100") or 100)
    except ValueError:
        return 100


def _summary(query: StreamingQuery, *, stopped: bool = False, kept: int = 100) -> str:
    """The closing line: rows and micro-batches by the progress reports Spark kept (``kept``
    at most). A trigger that found nothing new reports no ``addBatch`` duration: it ran no
    micro-batch. ``stopped``: the query was stopped (Ctrl-C) rather than ending on its own."""
    progress = list(query.recentProgress)
    ran = [p for p in progress if "addBatch" in p.get("durationMs", {})]
    if not ran:
        if stopped:
            return "stopped before a micro-batch finished"
        return "nothing new to read: no micro-batch ran"
    rows = sum(int(p["numInputRows"]) for p in ran)
    batches = len({p["batchId"] for p in ran})
    # Spark's count of rows read: a new target's first batch has its first row read once more
    # by the sink (ADR 0157), so bronze and the facts table can hold one row fewer
    whose = "Spark's count"
    if len(progress) >= kept:
        whose += f", of its last {len(progress)} progress reports"
    return (
        f"{count_text(rows, 'row')} read in {count_text(batches, 'micro-batch', 'micro-batches')} "
        f"({whose})"
    )
