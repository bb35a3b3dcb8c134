"""``mssql-cdc demo``: the whole product on one machine, in about a minute.

Starts the emulator with AdventureWorks, enables CDC on a few tables, runs the workload
generator on them (inserts, updates, deletes, multi-statement and large transactions) while
``to_delta`` streams each capture instance into a local Delta bronze table with local Spark.
The workload starts once every stream has run its first micro-batch (local Spark's first
batches take tens of seconds), so the progress lines show changes landing while they happen;
then a summary from the facts table, and checks that every bronze table holds
exactly the change history CDC holds (and that CDC holds what the workload committed). Exits
1 when a check fails. Runs in this process: the emulator in a thread, Spark's driver here.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from mssql_cdc.cli.invocation import command
from mssql_cdc.cli.landed import LandedRows
from mssql_cdc.cli.status import read_status, recent_events, status_text
from mssql_cdc.cli.verify import bronze_history, compare, source_history

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

    from mssql_cdc.emulator import Emulator
    from mssql_cdc.emulator.workload import WorkloadRecord

__all__ = ["DEFAULT_TABLES", "DemoConfig", "run_demo"]

log = logging.getLogger("mssql_cdc.cli")

#: AdventureWorks tables the workload changes and the demo streams
DEFAULT_TABLES = ("Sales.Customer", "Person.EmailAddress", "Production.Product")


@dataclass(frozen=True)
class DemoConfig:
    """What the demo runs: ``seconds`` of workload at ``rate`` transactions per second on
    ``tables``, written under ``workdir`` (``bronze/<ci>``, ``checkpoints/<ci>``, ``facts``),
    micro-batches every ``trigger_seconds``."""

    workdir: Path
    seconds: float = 30.0
    rate: float = 10.0
    tables: Sequence[str] = DEFAULT_TABLES
    trigger_seconds: float = 2.0
    seed: int = 7


def _session_config(workdir: Path) -> dict[str, str]:
    """The settings of a local session the demo starts: a short run's, and Spark's warehouse
    under the demo's directory (else it would be ``./spark-warehouse``, in whatever directory
    the demo was started from)."""
    from mssql_cdc.spark import short_run_config

    return {**short_run_config(), "spark.sql.warehouse.dir": str(workdir / "spark-warehouse")}


def _instance(table: str) -> str:
    return table.replace(".", "_")


def _start_streams(
    spark: SparkSession, emu: Emulator, config: DemoConfig, queries: dict[str, StreamingQuery]
) -> None:
    """Starts one stream per table into ``queries``, each after the one before ran its first
    micro-batch: starting them all at once makes each start its Python workers at the same
    time, which on a small, busy machine can pass Spark's wait for a worker to connect back."""
    from mssql_cdc import stream
    from mssql_cdc.sink import ensure_facts_table, table_ref

    facts = str(config.workdir / "facts")
    ensure_facts_table(spark, table_ref(facts, "facts_table"))  # one creator, not three
    for table in config.tables:
        ci = _instance(table)
        options = {
            "connectionString": f"Server=tcp:{emu.host},{emu.port};Encrypt=no",
            "user": "sa",
            "password": emu.password,
            "captureInstance": ci,
            "numPartitions": "1",
        }
        queries[table] = stream(spark, options).to_delta(
            str(config.workdir / "bronze" / ci),
            app_id=f"demo-{ci}",
            checkpoint=str(config.workdir / "checkpoints" / ci),
            facts_table=facts,
            trigger={"processingTime": f"{config.trigger_seconds} seconds"},
        )
        queries[table].processAllAvailable()


def _progress(queries: dict[str, StreamingQuery], landed: dict[str, LandedRows]) -> str:
    """Per table: the change rows in its bronze table and the bronze commits that appended them
    (one per micro-batch that read changes; the summary at the end also counts the batches that
    read none), read from bronze's log (``mssql_cdc.cli.landed``), and ``(+1 running)`` while a
    micro-batch with new data runs. A bronze log that cannot be read shows ``?`` (logged), and
    the demo goes on."""
    parts = []
    for table, query in queries.items():
        status = query.status
        running = (
            " (+1 running)"
            if status.get("isTriggerActive") and status.get("isDataAvailable")
            else ""
        )
        try:
            bronze = landed[table].refresh()
        except (OSError, ValueError) as exc:
            log.warning("demo: cannot count the rows in %s's bronze table: %s", table, exc)
            parts.append(f"{table} ? rows{running}")
            continue
        commits = "commit" if bronze.commits == 1 else "commits"
        parts.append(f"{table} {bronze.rows:,} rows in {bronze.commits} bronze {commits}{running}")
    return " | ".join(parts)


def _printing_progress(
    work: Callable[[], object],
    queries: dict[str, StreamingQuery],
    landed: dict[str, LandedRows],
    out: TextIO,
    name: str,
    *,
    started: float,
) -> object:
    """Runs ``work`` in a thread and prints the progress every 2 seconds until it ends, each
    line stamped with the seconds since ``started`` (``time.monotonic()``); returns the work's
    result or raises its error."""
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = work()
        except BaseException as exc:  # reported below, in the caller's thread
            result["error"] = exc

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    while True:  # a line every 2 s, and one when the work ended
        thread.join(timeout=2.0)
        print(
            f"[{time.monotonic() - started:5.1f}s] {_progress(queries, landed)}",
            file=out,
            flush=True,
        )
        if not thread.is_alive():
            break
    if "error" in result:
        raise result["error"]
    return result.get("value")


def _warm_up(queries: dict[str, StreamingQuery], out: TextIO, started: float) -> None:
    """Waits until every stream has caught up once (its first micro-batches ran)."""
    for query in queries.values():
        query.processAllAvailable()
    print(f"streams ready after {time.monotonic() - started:.0f} s", file=out, flush=True)


def _run_workload(
    emu: Emulator,
    config: DemoConfig,
    queries: dict[str, StreamingQuery],
    landed: dict[str, LandedRows],
    out: TextIO,
    *,
    started: float,
) -> WorkloadRecord:
    from mssql_cdc.emulator.workload import LocalSession, Workload, WorkloadConfig

    workload = Workload(
        WorkloadConfig(
            tables=list(config.tables),
            seed=config.seed,
            rate=config.rate,
            seconds=config.seconds,
            large_every=40,
            large_rows=(100, 600),
        )
    )

    def run() -> WorkloadRecord:
        with LocalSession(emu) as session:
            return workload.run(session)

    record = _printing_progress(
        run, queries, landed, out, "mssql-cdc-demo-workload", started=started
    )
    return cast("WorkloadRecord", record)


def _checks(
    spark: SparkSession, emu: Emulator, config: DemoConfig, record: WorkloadRecord
) -> list[str]:
    from mssql_cdc.emulator.workload import LocalSession, verify_capture

    problems: list[str] = []
    with LocalSession(emu) as session:
        for table in config.tables:
            ci = _instance(table)
            problems += verify_capture(session, record, table, ci)
            source = source_history(session, ci)
            bronze = bronze_history(spark, str(config.workdir / "bronze" / ci))
            problems += compare(table, source, bronze)
    return problems


def run_demo(config: DemoConfig, out: TextIO) -> int:
    """Runs the demo (see the module doc) and prints to ``out``.

    Returns:
        0 when every bronze table holds exactly its capture instance's change history, else 1.

    Raises:
        FileNotFoundError: ``MSSQL_CDC_JARS`` without the Delta jars, or no AdventureWorks data.
    """
    from pyspark.sql import SparkSession

    from mssql_cdc.emulator import Emulator
    from mssql_cdc.emulator.workload import enable_cdc
    from mssql_cdc.spark import get_spark

    owns_spark = SparkSession.getActiveSession() is None
    config.workdir.mkdir(parents=True, exist_ok=True)
    print(f"mssql-cdc demo: writing under {config.workdir}", file=out, flush=True)
    emu = Emulator(adventureworks=True).start()
    try:
        enable_cdc(emu, config.tables)
        emu.set_polling_interval(1.0)  # the capture job, as on SQL Server
        print(
            f"emulator on {emu.host}:{emu.port}: AdventureWorks loaded, CDC on "
            f"{', '.join(config.tables)}; starting local Spark",
            file=out,
            flush=True,
        )
        spark = get_spark("mssql-cdc-demo", config=_session_config(config.workdir))
        if owns_spark:
            spark.sparkContext.setLogLevel("ERROR")
        print(
            "starting the streams and waiting for each one's first micro-batch (local Spark "
            "starts its Python workers: tens of seconds on a small machine)",
            file=out,
            flush=True,
        )
        started = time.monotonic()
        queries: dict[str, StreamingQuery] = {}
        try:
            _start_streams(spark, emu, config, queries)
            _warm_up(queries, out, started)
            landed = {
                table: LandedRows(config.workdir / "bronze" / _instance(table)) for table in queries
            }
            print(
                f"streaming {len(queries)} tables; workload for {config.seconds:g} s at "
                f"{config.rate:g} transactions/s (per table: the change rows in bronze so far "
                "and the commits, one per micro-batch that read changes, that appended them)",
                file=out,
                flush=True,
            )
            workload_started = time.monotonic()
            record = _run_workload(emu, config, queries, landed, out, started=workload_started)
            emu.set_polling_interval(None)
            emu.scan()  # capture the last commits, then let every stream catch up
            print(
                "workload done; waiting for every stream to catch up (the first batches of a "
                "local Spark take tens of seconds)",
                file=out,
                flush=True,
            )

            def catch_up() -> None:
                for query in queries.values():
                    query.processAllAvailable()

            _printing_progress(
                catch_up, queries, landed, out, "mssql-cdc-demo-catch-up", started=workload_started
            )
        finally:
            for query in queries.values():
                query.stop()
        print(
            f"workload: {len(record.committed):,} transactions committed, "
            f"{record.rolled_back} rolled back; streams caught up\n",
            file=out,
            flush=True,
        )
        facts = str(config.workdir / "facts")
        retention_hours = emu.db.cdc.retention_minutes / 60.0
        print(
            status_text(
                read_status(spark, facts),
                recent_events(spark, facts, 5),
                retention_hours=retention_hours,
            ),
            file=out,
            flush=True,
        )
        problems = _checks(spark, emu, config, record)
        if owns_spark:
            spark.stop()
    finally:
        emu.stop()
    print("", file=out)
    if problems:
        for problem in problems:
            print(f"CHECK FAILED: {problem}", file=out)
        return 1
    print(
        "check: every bronze table holds exactly its change history, each change once",
        file=out,
    )
    print(
        "batches: every micro-batch, each with its facts row, also those that read no rows "
        "(last batch is the newest one's id, from 0); the progress lines above count the bronze "
        "commits, which only batches with rows make\n"
        "headroom (h): hours before CDC cleanup would delete changes not streamed yet (the "
        f"emulator keeps changes {retention_hours:g} h)\n"
        f"the Delta tables are under {config.workdir}; look again with:\n"
        f"  {command()} status --facts {config.workdir / 'facts'} "
        f"--retention-hours {retention_hours:g}",
        file=out,
    )
    return 0
