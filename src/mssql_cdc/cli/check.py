"""``mssql-cdc check``: the pre-flight check from the command line (docs/permissions.md).

Takes the same connection arguments and password handling as ``mssql-cdc stream``
(:func:`~mssql_cdc.cli.stream_command.add_connection_arguments`), one or more
``--capture-instance``, and prints one line per question: ``PASS``, ``FAIL`` with the exact
fix on the next line, or ``SKIP`` with the reason; ``--json`` prints the report as JSON.
The exit code is 1 when any question failed, 2 when an argument is refused before any question
is asked (``mssql_cdc.cli.usage``). No Spark.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING, TextIO

from mssql_cdc.cli.stream_command import add_connection_arguments, options_from
from mssql_cdc.cli.usage import check_positive

if TYPE_CHECKING:
    from mssql_cdc.source.preflight import CheckReport

__all__ = ["add_arguments", "report_text", "run_check"]

_MARK = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``check`` subcommand's arguments."""
    add_connection_arguments(parser)
    parser.add_argument(
        "--capture-instance",
        action="append",
        required=True,
        help="a capture instance the stream reads (repeatable)",
    )
    parser.add_argument(
        "--schedule-hours",
        type=float,
        default=24.0,
        help="how often the stream runs, hours (24); the retention must be at least twice that",
    )
    parser.add_argument(
        "--snapshot-isolation",
        action="store_true",
        help="check that the database allows snapshot isolation (also when --option "
        "isolationLevel=snapshot)",
    )
    parser.add_argument(
        "--max-capture-latency",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="the capture job's latency above which the check fails (300)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def report_text(report: CheckReport) -> str:
    """The report as lines: ``PASS  name  detail``, a failure's fix indented below it."""
    database = f" / {report.database}" if report.database else ""
    lines = [f"mssql-cdc check: {report.server}{database}"]
    width = max((len(i.name) for i in report.items), default=0)
    for item in report.items:
        where = f"[{item.capture_instance}] " if item.capture_instance else ""
        lines.append(f"{_MARK[item.status]}  {item.name.ljust(width)}  {where}{item.detail}")
        if item.status == "fail" and item.fix:
            lines.append(f"      fix: {item.fix}")
    failed = len(report.failures)
    lines.append(
        "all checks passed" if not failed else f"{failed} check{'s' * (failed != 1)} failed"
    )
    return "\n".join(lines)


def run_check(args: argparse.Namespace, out: TextIO) -> int:
    """Runs the check; returns 0 when nothing failed, else 1."""
    from mssql_cdc.source.preflight import check

    names = list(args.capture_instance)
    check_positive("--schedule-hours", args.schedule_hours)
    check_positive("--max-capture-latency", args.max_capture_latency)
    first = argparse.Namespace(**{**vars(args), "capture_instance": names[0]})
    options = options_from(first, os.environ)
    report = check(
        options,
        names,
        schedule_hours=args.schedule_hours,
        snapshot_isolation=True if args.snapshot_isolation else None,
        max_capture_latency_seconds=args.max_capture_latency,
    )
    if args.json:
        print(json.dumps(report.to_dict(), indent=2), file=out)
    else:
        print(report_text(report), file=out)
    return 0 if report.ok else 1
