"""The ``mssql-cdc`` command: ``demo``, ``stream``, ``check``, ``status`` and ``report``
(docs/streaming.md, docs/permissions.md, docs/monitoring.md).

``main(argv)`` parses the arguments and runs one subcommand; errors a user can fix (bad
arguments, missing tables, SQL Server refusing the login) are one line on stderr and exit
code 2 (usage) or 1 (failure), without a password or a traceback.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from mssql_cdc.cli import check as check_command
from mssql_cdc.cli import stream_command
from mssql_cdc.cli.facts_input import require_facts_table
from mssql_cdc.cli.status import BREACH_EXIT
from mssql_cdc.cli.usage import USAGE_EXIT, UsageError, check_non_negative, check_positive
from mssql_cdc.errors import MssqlCdcError, find_error, find_error_in_text

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["build_parser", "main"]

log = logging.getLogger("mssql_cdc.cli")


def _add_top_level_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments given before the subcommand."""
    parser.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="level of the mssql_cdc loggers (WARNING)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``mssql-cdc``."""
    parser = argparse.ArgumentParser(
        prog="mssql-cdc", description="Stream SQL Server CDC into Delta Lake, exactly once."
    )
    _add_top_level_arguments(parser)
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser(
        "demo", help="the emulator with AdventureWorks and a live workload, into local Delta"
    )
    demo.add_argument("--seconds", type=float, default=30.0, help="workload seconds (30)")
    demo.add_argument("--rate", type=float, default=10.0, help="transactions per second (10)")
    demo.add_argument("--dir", type=Path, help="where to write (default: a new temp directory)")

    stream = commands.add_parser("stream", help="stream one capture instance into Delta")
    stream_command.add_arguments(stream)

    check = commands.add_parser(
        "check", help="pre-flight: can these options stream these capture instances?"
    )
    check_command.add_arguments(check)

    status = commands.add_parser("status", help="what a facts table says about each stream")
    status.add_argument("--facts", required=True, help="facts table (name or path)")
    status.add_argument("--events", type=int, default=10, help="recent events to show (10)")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    status.add_argument(
        "--watch", action="store_true", help="a live view that refreshes (needs rich)"
    )
    status.add_argument(
        "--interval", type=float, default=10.0, help="seconds between refreshes of --watch (10)"
    )
    status.add_argument(
        "--retention-hours",
        type=float,
        help="the cleanup job's retention period, hours (mssql-cdc check prints it): the "
        "headroom becomes the hours left before unread changes are deleted",
    )
    alerts = status.add_argument_group(
        "thresholds", f"a breach sets the exit code to {BREACH_EXIT} (docs/monitoring.md)"
    )
    alerts.add_argument(
        "--max-lag-minutes", type=float, help="newest row's ingestion lag above this"
    )
    alerts.add_argument("--min-headroom-hours", type=float, help="retention headroom below this")
    alerts.add_argument(
        "--max-batch-age-minutes",
        type=float,
        help="newest micro-batch row older than this (a stream that stopped)",
    )

    report = commands.add_parser(
        "report", help="draw a facts table over time, per stream (HTML, PNG or SVG)"
    )
    report.add_argument("--facts", required=True, help="facts table (name or path)")
    report.add_argument(
        "--out",
        required=True,
        type=Path,
        help="the file to write; its extension picks the format: .html, .png or .svg",
    )
    report.add_argument("--hours", type=float, help="only the last H hours (default: all)")
    report.add_argument("--title", help="the report's title (default: the facts table)")
    for sub in commands.choices.values():
        # an argument the subcommand does not take is reported with its usage, not the top's
        sub.set_defaults(command_parser=sub)
    return parser


def _reading_spark(app_name: str, *, short: bool = True) -> SparkSession:
    """``get_spark(app_name)`` for a command that only reads tables (``status``, ``report``).

    A local session it builds logs errors only once it has started, so Spark's warnings about
    the command's own reads (for example ``All paths were ignored`` when a Delta log directory
    is listed) do not read as problems between the command's lines; with ``short`` (a command
    that runs a few jobs and ends, not ``status --watch``) it also takes
    :func:`~mssql_cdc.spark.short_run_config`. An active or Spark Connect session is used as it
    is.
    """
    import os

    from pyspark.sql import SparkSession

    from mssql_cdc.spark import get_spark, short_run_config

    builds = SparkSession.getActiveSession() is None and not os.environ.get("SPARK_REMOTE")
    spark = get_spark(app_name, config=short_run_config() if short else None)
    if builds:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


def _report(args: argparse.Namespace) -> int:
    from mssql_cdc.cli.report import FORMATS, read_facts, render_report, require_matplotlib

    if args.out.suffix.lower() not in FORMATS:
        raise UsageError(
            f"--out {str(args.out)!r}: the extension picks the format, one of {', '.join(FORMATS)}"
        )
    check_positive("--hours", args.hours)
    require_matplotlib()
    spark = _reading_spark("mssql-cdc-report")
    require_facts_table(spark, args.facts)
    facts = read_facts(spark, args.facts, args.hours)
    out = render_report(facts, args.out, title=args.title or f"mssql-cdc report: {args.facts}")
    print(f"wrote {out} ({facts.num_rows:,} facts rows)")
    return 0


def _status(args: argparse.Namespace) -> int:
    import json

    from mssql_cdc.cli.status import (
        Thresholds,
        read_status,
        recent_events,
        status_json,
        status_text,
    )

    for flag in ("interval", "retention_hours", "max_lag_minutes", "max_batch_age_minutes"):
        check_positive(f"--{flag.replace('_', '-')}", getattr(args, flag))
    # 0 alerts once the headroom is gone (unread changes may already be deleted)
    check_non_negative("--min-headroom-hours", args.min_headroom_hours)
    check_non_negative("--events", args.events)  # 0 shows none; Spark refuses a negative limit
    if args.watch and args.json:
        raise UsageError("--watch and --json: choose one")
    thresholds = Thresholds(
        max_lag_minutes=args.max_lag_minutes,
        min_headroom_hours=args.min_headroom_hours,
        max_batch_age_minutes=args.max_batch_age_minutes,
    )
    spark = _reading_spark("mssql-cdc-status", short=not args.watch)
    require_facts_table(spark, args.facts)

    def read() -> tuple[list[Any], list[dict[str, Any]]]:
        return read_status(spark, args.facts), recent_events(spark, args.facts, args.events)

    if args.watch:
        from mssql_cdc.cli.watch import watch

        return watch(
            read,
            interval=args.interval,
            thresholds=thresholds,
            retention_hours=args.retention_hours,
            title=f"mssql-cdc status {args.facts}",
        )
    from mssql_cdc.cli.snapshot_progress import progress_json, progress_text, read_progress

    streams, events = read()
    report = status_json(
        streams, events, thresholds=thresholds, retention_hours=args.retention_hours
    )
    progress = read_progress(spark, args.facts)
    if args.json:
        report["snapshots"] = progress_json(progress)
        print(json.dumps(report, indent=2))
    else:
        print(
            status_text(
                streams, events, thresholds=thresholds, retention_hours=args.retention_hours
            )
        )
        if progress:
            print("\n" + progress_text(progress))
    return 0 if report["ok"] else BREACH_EXIT


def _demo(args: argparse.Namespace) -> int:
    from mssql_cdc.cli.demo import DemoConfig, run_demo

    check_positive("--seconds", args.seconds)
    check_positive("--rate", args.rate)
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="mssql-cdc-demo-"))
    return run_demo(
        DemoConfig(workdir=workdir.resolve(), seconds=args.seconds, rate=args.rate), sys.stdout
    )


def _unrecognized(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    words: Sequence[str],
    extra: Sequence[str],
) -> NoReturn:
    """Reports arguments nobody took with the usage of the parser they were given to: the top
    level's for those before the subcommand, else the subcommand's (argparse's own error, exit
    code 2)."""
    top = argparse.ArgumentParser(add_help=False)
    _add_top_level_arguments(top)
    # the subcommand's word is the first that names one (no top-level value can)
    _, before = top.parse_known_args(words[: words.index(args.command)])
    if before:
        parser.error(f"unrecognized arguments: {' '.join(before)}")
    text = f"unrecognized arguments: {' '.join(extra)}"
    if any(len(w) > 2 and "--log-level".startswith(w.split("=")[0]) for w in extra):
        text += (
            " (--log-level goes before the subcommand: "
            f"mssql-cdc --log-level DEBUG {args.command} ...)"
        )
    chosen: argparse.ArgumentParser = args.command_parser
    chosen.error(text)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``mssql-cdc`` with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(words)
    if extra:
        _unrecognized(parser, args, words, extra)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("mssql_cdc").setLevel(args.log_level)
    commands = {
        "demo": _demo,
        "stream": lambda a: stream_command.run_stream(a, sys.stdout),
        "check": lambda a: check_command.run_check(a, sys.stdout),
        "report": _report,
        "status": _status,
    }
    try:
        return commands[args.command](args)
    except UsageError as exc:
        print(f"mssql-cdc {args.command}: {exc}", file=sys.stderr)
        return USAGE_EXIT
    except (ValueError, TypeError, PermissionError, FileNotFoundError, MssqlCdcError) as exc:
        # our own errors by name, as when Spark wraps them (below): "LoginError: [18456] ..."
        text = f"{type(exc).__name__}: {exc}" if isinstance(exc, MssqlCdcError) else str(exc)
        print(f"mssql-cdc {args.command}: {text}", file=sys.stderr)
        return 1
    except Exception as exc:
        # Spark wraps a failure of the source or the sink in its own exceptions, with a long
        # JVM trace; the error of ours inside is what a user needs (mssql_cdc.errors finds it).
        cause = find_error(exc)
        if cause is None:
            raise
        print(f"mssql-cdc {args.command}: {cause}", file=sys.stderr)
        return 1


def _our_error_line(text: str) -> str | None:
    """``"LoginError: [18456] Login failed ..."`` from a Spark exception's text, if it holds
    one of mssql_cdc's errors (or a ValueError / PermissionError raised by our code)."""
    found = find_error_in_text(text)
    return None if found is None else str(found)
