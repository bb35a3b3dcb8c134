"""``mssql-cdc stream``: the main job against any SQL Server, from the command line.

Builds the data source options from the arguments, takes the password from an environment
variable (or a prompt on a terminal) so it never appears in ``argv``, a log or an error, then
runs ``stream(spark, options).to_delta(...)`` on ``get_spark()``'s session and waits for the
query: an ``availableNow`` or ``once`` run returns when caught up, other triggers run until
interrupted (Ctrl-C stops the query cleanly).
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import re
import sys
from collections.abc import Mapping
from typing import TextIO

__all__ = ["add_arguments", "options_from", "parse_trigger", "run_stream"]

log = logging.getLogger("mssql_cdc.cli")

PASSWORD_ENV = "MSSQL_CDC_PASSWORD"
_SECRET_KEYS = re.compile(r"(^|;)\s*(pwd|password|accesstoken)\s*=", re.IGNORECASE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``stream`` subcommand's arguments."""
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
    parser.add_argument("--encrypt", default="yes", help="Encrypt= of the connection (yes/no)")
    parser.add_argument("--capture-instance", required=True, help="the capture instance")
    parser.add_argument("--target", required=True, help="bronze Delta table (name or path)")
    parser.add_argument("--app-id", required=True, help="the sink's id, stable per checkpoint")
    parser.add_argument("--checkpoint", required=True, help="Spark checkpoint location")
    parser.add_argument("--facts-table", help="facts table (name or path)")
    parser.add_argument(
        "--trigger",
        default="availableNow",
        help="availableNow (default), once, processingTime=INTERVAL or continuous=INTERVAL",
    )
    parser.add_argument("--bootstrap", action="store_true", help="load the table's rows first")
    parser.add_argument("--query-name", help="query name (default: the app id)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another data source option, e.g. maxCommitsPerBatch=1000 (repeatable)",
    )


def parse_trigger(text: str) -> dict[str, object]:
    """``availableNow`` / ``once`` / ``processingTime=1 minute`` / ``continuous=1 second`` as
    ``DataStreamWriter.trigger`` keyword arguments.

    Raises:
        ValueError: another form.
    """
    kind, sep, value = text.partition("=")
    kind = kind.strip()
    if not sep and kind in ("availableNow", "once"):
        return {kind: True}
    if sep and kind in ("processingTime", "continuous") and value.strip():
        return {kind: value.strip()}
    raise ValueError(
        f"--trigger {text!r}: use availableNow, once, processingTime=INTERVAL or "
        "continuous=INTERVAL (e.g. processingTime=1 minute)"
    )


def _password(args: argparse.Namespace, env: Mapping[str, str], stdin: TextIO) -> str | None:
    value = env.get(args.password_env)
    if value:
        return value
    if args.user and stdin.isatty():
        return getpass.getpass(f"password for {args.user}: ")
    return None


def options_from(
    args: argparse.Namespace, env: Mapping[str, str], stdin: TextIO | None = None
) -> dict[str, str]:
    """The data source options of ``args``.

    Raises:
        ValueError: a connection string with a password or token in it (it would be in
            ``argv``), or an ``--option`` without ``=``.
    """
    if args.connection_string:
        if _SECRET_KEYS.search(args.connection_string):
            raise ValueError(
                "--connection-string holds a password or token, which would show in the "
                f"process list: remove it and set the {args.password_env} environment variable"
            )
        connection = args.connection_string
    else:
        connection = f"Server=tcp:{args.server};Encrypt={args.encrypt}"
        if args.database:
            connection += f";Database={args.database}"
    options = {"connectionString": connection, "captureInstance": args.capture_instance}
    if args.user:
        options["user"] = args.user
    password = _password(args, env, stdin or sys.stdin)
    if password is not None:
        options["password"] = password
    for item in args.option:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--option {item!r}: expected NAME=VALUE")
        if name.strip().lower() in ("password", "accesstoken"):
            raise ValueError(
                f"--option {name.strip()}: secrets are not taken from the command line; "
                f"use {args.password_env}"
            )
        options[name.strip()] = value
    return options


def run_stream(args: argparse.Namespace, out: TextIO) -> int:
    """Runs the job; returns the exit code (0 when the query ended without an error)."""
    from mssql_cdc import stream
    from mssql_cdc.spark import get_spark

    options = options_from(args, os.environ)
    trigger = parse_trigger(args.trigger)
    spark = get_spark("mssql-cdc-stream")
    query = stream(spark, options).to_delta(
        args.target,
        app_id=args.app_id,
        checkpoint=args.checkpoint,
        facts_table=args.facts_table,
        trigger=trigger,
        query_name=args.query_name,
        bootstrap=args.bootstrap,
    )
    print(f"{query.name}: streaming {args.capture_instance} into {args.target}", file=out)
    try:
        query.awaitTermination()
    except KeyboardInterrupt:
        print(f"{query.name}: stopping", file=out)
        query.stop()
    except Exception as exc:  # the query's failure, raised again by Spark on this thread
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"{query.name}: the query failed: {first}", file=sys.stderr)
        return 1
    progress = query.recentProgress
    rows = sum(int(p["numInputRows"]) for p in progress)
    batches = len({p["batchId"] for p in progress})
    print(f"{query.name}: {rows:,} change rows in {batches} micro-batches", file=out)
    return 0
