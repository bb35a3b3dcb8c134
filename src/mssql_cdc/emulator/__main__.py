"""Command line: ``python -m mssql_cdc.emulator --port PORT ...``.

Prints exactly one line, ``ready HOST:PORT``, on stdout once listening; logs go to stderr.
SIGTERM and SIGINT stop it cleanly. ``--adventureworks DIR`` loads the AdventureWorks tables
(:mod:`mssql_cdc.emulator.adventureworks`) before it listens; a live workload against them runs
with ``python -m mssql_cdc.emulator.workload`` (:mod:`mssql_cdc.emulator.workload`).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from mssql_cdc.emulator.adventureworks import default_directory
from mssql_cdc.emulator.adventureworks import load as load_adventureworks
from mssql_cdc.emulator.core.clock import Clock, windows_to_iana
from mssql_cdc.emulator.engine.database import DEFAULT_POLLING_INTERVAL, Database
from mssql_cdc.emulator.protocol.tls import Certificate
from mssql_cdc.emulator.server.server import DEFAULT_PASSWORD, EmulatorServer
from mssql_cdc.emulator.workload import WorkloadError, enable_cdc

__all__ = ["main"]

log = logging.getLogger("mssql_cdc.emulator")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mssql_cdc.emulator",
        description="SQL Server CDC emulator (TDS server). Log in as 'sa'.",
        epilog=(
            "Once listening it prints one line 'ready HOST:PORT' on stdout; SIGTERM or SIGINT "
            "stops it. With --adventureworks (the packaged data, or DIR holding tables.json) "
            "the six AdventureWorks tables (Sales.Customer, "
            "Sales.CurrencyRate, Person.EmailAddress, Production.Product, "
            "Purchasing.PurchaseOrderHeader, Purchasing.PurchaseOrderDetail) are created and "
            "loaded before 'ready'. Drive them with a live workload: python -m "
            "mssql_cdc.emulator.workload --server HOST,PORT --tables Sales.Customer --rate 20 "
            "--seconds 60 (see its --help). Docs: docs/emulator.md."
        ),
    )
    parser.add_argument("--port", type=int, required=True, help="TCP port; 0 picks a free one")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--password",
        default=DEFAULT_PASSWORD,
        help=f"password of the 'sa' login (default: {DEFAULT_PASSWORD})",
    )
    parser.add_argument(
        "--time-zone",
        default="UTC",
        help="server time zone as a Windows name, e.g. 'Pacific Standard Time' (default: UTC)",
    )
    parser.add_argument(
        "--adventureworks",
        metavar="DIR",
        nargs="?",
        const="",
        help=(
            "create and load the AdventureWorks tables before listening: the copy packaged with "
            "mssql_cdc, or that of DIR/tables.json"
        ),
    )
    parser.add_argument(
        "--adventureworks-tables",
        metavar="LIST",
        help="with --adventureworks: only these tables, comma-separated (e.g. Sales.Customer)",
    )
    parser.add_argument(
        "--cdc",
        action="store_true",
        help="with --adventureworks: enable CDC on the database and on each table loaded "
        "(capture instances schema_table, e.g. Sales_Customer; no gating role)",
    )
    parser.add_argument("--tls-cert", metavar="FILE", help="PEM certificate (default: generated)")
    parser.add_argument("--tls-key", metavar="FILE", help="PEM private key for --tls-cert")
    parser.add_argument("--write-ca", metavar="FILE", help="write the server certificate here")
    parser.add_argument(
        "--polling-interval",
        type=float,
        default=DEFAULT_POLLING_INTERVAL,
        help="capture job polling interval in seconds (default: 5)",
    )
    parser.add_argument("--log-level", default="INFO", help="log level (default: INFO)")
    return parser


async def _run(args: argparse.Namespace) -> int:
    certificate = None
    if args.tls_cert:
        certificate = Certificate(Path(args.tls_cert).read_bytes(), Path(args.tls_key).read_bytes())
    db = Database(clock=Clock(args.time_zone))
    if args.adventureworks:
        tables = None
        if args.adventureworks_tables:
            tables = [t for t in args.adventureworks_tables.split(",") if t.strip()]
        report = load_adventureworks(db, args.adventureworks, tables)
        if args.cdc:
            try:
                instances = enable_cdc(db, list(report.rows))
            except WorkloadError as exc:
                log.error("--cdc: %s", exc)
                db.close()
                return 1
            log.info("CDC enabled: capture instances %s", ", ".join(instances))
    server = EmulatorServer(db, password=args.password, certificate=certificate)
    if args.write_ca:
        Path(args.write_ca).write_bytes(server.certificate.cert_pem)
    host, port = await server.start(args.host, args.port)
    db.capture_job.configure(args.polling_interval)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    sys.stdout.write(f"ready {host}:{port}\n")
    sys.stdout.flush()
    await stop.wait()
    log.info("stopping")
    await server.close()
    db.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.adventureworks == "":
        try:
            args.adventureworks = str(default_directory())
        except FileNotFoundError as exc:
            build_parser().error(f"--adventureworks: {exc}")
    if bool(args.tls_cert) != bool(args.tls_key):
        build_parser().error("--tls-cert and --tls-key go together")
    if args.adventureworks_tables and not args.adventureworks:
        build_parser().error("--adventureworks-tables needs --adventureworks")
    if args.cdc and not args.adventureworks:
        build_parser().error("--cdc needs --adventureworks")
    if args.adventureworks and not (Path(args.adventureworks) / "tables.json").is_file():
        build_parser().error(f"--adventureworks: no tables.json in {args.adventureworks}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    log.addHandler(handler)
    log.setLevel(args.log_level.upper())
    try:
        windows_to_iana(args.time_zone)
    except ValueError as exc:
        build_parser().error(str(exc))
    return asyncio.run(_run(args))


if __name__ == "__main__":
    sys.exit(main())
