"""Many tables in one driver: the database stream (``start_database``, one query) against one
stream per table (``start_many``), for N capture instances of one database.

The emulator gets N CDC-enabled tables ``dbo.t0`` ... with one change each. Measured, in one
Spark session (``processingTime`` trigger of ``--interval`` s):

* ``first start``: from the ``start_database`` call until its first batch (every table's first
  change) landed; and the same for a restart on the same checkpoint with nothing new, until its
  first trigger ran;
* ``driver RSS``: the driver's process tree (this process, Spark's JVM, its Python workers)
  with the N-table stream idle, against the same with a 1-table database stream, per table
  beyond the first;
* ``max-LSN polls per trigger``: over an idle window of ``--seconds``;
* ``5 changed``: the trigger (Spark's ``triggerExecution``) that lands one change in each of
  ``--changed`` tables, median of ``--rounds``, against a single stream's (``to_delta``)
  trigger landing one change of its only table;
* ``busy table``: ``--busy-batches`` batches of ``--busy-rows`` changes of one table, among the
  idle others, in rows per second, against its single stream on the same rows.

``--many M`` also starts ``start_many`` for M of the tables (one query each, as ``idle.py``
measures at length) for its start time and memory beside.

    .venv/bin/python bench/many_tables.py [--tables 100] [--changed 5] [--rounds 3] [--many 0]

Prints a table and exits 0. Needs local Spark with Delta (``make setup``).
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import signal
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from idle import MAX_LSN_QUERY, _usage, setup_tables


def _trigger_ms(query: Any, since: float) -> list[float]:
    """``triggerExecution`` (ms) of every trigger of the query that started at or after
    ``since`` (epoch s) and ran a batch."""
    import datetime as dt

    out = []
    for p in query.recentProgress:
        stamp = dt.datetime.fromisoformat(p.timestamp.replace("Z", "+00:00")).timestamp()
        if stamp >= since and p.batchId is not None and p.durationMs.get("addBatch"):
            out.append(float(p.durationMs["triggerExecution"]))
    return out


def _wait_batch(query: Any, since: float, timeout: float = 600.0) -> None:
    """Waits until the query ran a batch (not an idle trigger) that started at or after
    ``since`` (epoch s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _trigger_ms(query, since):
            return
        time.sleep(0.05)  # polling Spark's progress: it has no event to await here
    raise TimeoutError("no batch")


def _rounds(query: Any, conn: Any, emu: Any, args: Any) -> list[float]:
    """Rounds of ``args.changed`` changed tables (other tables each round), each landed by one
    trigger (ms); the first is the restarted run's first batch, which also reads every table's
    position and checks each changed table's history once."""
    n, changed = args.tables, []
    for r in range(args.rounds + 1):
        since = time.time()
        for i in range(args.changed):
            table = (i * (n // args.changed) + r) % n
            conn.execute(f"INSERT INTO dbo.t{table} VALUES ({r + 2}, N'y')")
        emu.scan()
        _wait_batch(query, since)
        changed += _trigger_ms(query, since)
    return changed


def _busy(query: Any, conn: Any, emu: Any, args: Any, first_id: int) -> float:
    """Rows per second a query lands ``--busy-rows`` new changes of ``dbo.t0`` at, in each of
    ``--busy-batches`` batches one after the other (inserted in commits of 1,000 rows): the rows
    over the triggers' time (``triggerExecution``) of the batches that landed them. Ten
    batches or more take in Delta's log checkpoint of the facts table (every tenth commit,
    ``delta.checkpointInterval``) as often as a steady stream does."""
    rows, spent = 0, 0.0
    for b in range(args.busy_batches):
        since = time.time()
        base = first_id + b * args.busy_rows
        for low in range(base, base + args.busy_rows, 1000):
            top = min(low + 1000, base + args.busy_rows)
            values = ", ".join(f"({i}, N'b')" for i in range(low, top))
            conn.execute(f"INSERT INTO dbo.t0 VALUES {values}")
        emu.scan()
        _wait_batch(query, since)
        query.processAllAvailable()
        rows += args.busy_rows
        spent += sum(_trigger_ms(query, since)) / 1000
    return rows / spent


def _single(
    spark: Any, options: dict[str, str], server: tuple[Any, Any], args: Any, workdir: Path
) -> tuple[list[float], float]:
    """The single stream of ``dbo.t0``: its triggers landing one change each (ms), and its rows
    per second on ``--busy-rows`` new rows."""
    from mssql_cdc import stream

    conn, emu = server
    single: list[float] = []
    query = stream(spark, {**options, "captureInstance": "dbo_t0"}).to_delta(
        str(workdir / "single"),
        "single-t0",
        str(workdir / "chk" / "single"),
        str(workdir / "facts-single"),
        trigger={"processingTime": f"{args.interval:g} seconds"},
    )
    query.processAllAvailable()
    for r in range(args.rounds):
        since = time.time()
        conn.execute(f"INSERT INTO dbo.t0 VALUES ({r + 100}, N'z')")
        emu.scan()
        _wait_batch(query, since)
        single += _trigger_ms(query, since)
    busy = _busy(query, conn, emu, args, 2_000_000) if args.busy_rows else 0.0
    query.stop()
    return single, busy


def _many(
    spark: Any, options: dict[str, str], names: list[str], args: Any, workdir: Path
) -> tuple[float, float]:
    """``start_many`` over ``names``: seconds until every query landed its first change, and
    the driver's RSS after (``nan`` without names)."""
    from mssql_cdc import await_all, start_many, stop_all

    if not names:
        return float("nan"), float("nan")
    began = time.monotonic()
    queries = start_many(
        spark,
        options,
        names,
        target=str(workdir / "many" / "{ci}"),
        app_id="many-{ci}",
        checkpoint=str(workdir / "chk-many" / "{ci}"),
        trigger={"processingTime": f"{args.interval:g} seconds"},
    )
    for q in queries.values():
        q.processAllAvailable()
    many_start = time.monotonic() - began
    time.sleep(args.seconds / 2)  # the idle streams settle before their memory is read
    _, rss = _usage(os.getpid())
    stop_all(queries)
    await_all(queries, timeout=120)
    return many_start, float(rss)


def measure(spark: Any, args: argparse.Namespace, workdir: Path) -> dict[str, float]:
    from mssql_cdc import _native, start_database
    from mssql_cdc.emulator import Emulator

    n = args.tables
    with Emulator() as emu:
        conn = _native.connect(emu.connection_string(), user="sa", password=emu.password)
        began = time.monotonic()
        setup_tables(emu, conn, n)
        setup_s = time.monotonic() - began
        options = {
            "connectionString": emu.connection_string(),
            "user": "sa",
            "password": emu.password,
            "numPartitions": "1",
        }
        trigger = {"processingTime": f"{args.interval:g} seconds"}
        facts = str(workdir / "facts")
        names = [f"dbo_t{i}" for i in range(n)]

        def start(tables: list[str], name: str) -> Any:
            return start_database(
                spark,
                options,
                tables,
                target=str(workdir / "bronze" / "{ci}"),
                app_id="bench-{ci}",
                checkpoint=str(workdir / "chk" / name),
                facts_table=facts,
                name=name,
                trigger=trigger,
                heartbeat_seconds=300,
            )

        # a 1-table database stream: the driver's memory with one table
        one = start(names[:1], "db1")
        one.processAllAvailable()
        time.sleep(args.seconds / 2)  # the idle stream settles before its memory is read
        _, rss_one = _usage(os.getpid())
        one.stop()

        began = time.monotonic()
        query = start(names, "dbN")
        query.processAllAvailable()
        first_start = time.monotonic() - began
        polls0, wall0 = emu.statement_count(MAX_LSN_QUERY), time.time()
        time.sleep(args.seconds)  # the idle window
        polls = emu.statement_count(MAX_LSN_QUERY) - polls0
        triggers = sum(1 for p in query.recentProgress if p.timestamp >= _iso(wall0))
        _, rss_n = _usage(os.getpid())

        query.stop()

        # a restart on the same checkpoint: nothing new, so its first trigger runs no batch
        began = time.monotonic()
        query = start(names, "dbN")
        while not query.recentProgress:  # polling Spark's progress: no event to await
            time.sleep(0.05)
        restart = time.monotonic() - began
        changed = _rounds(query, conn, emu, args)
        busy = _busy(query, conn, emu, args, 1_000_000) if args.busy_rows else 0.0
        query.stop()

        single, single_busy = _single(spark, options, (conn, emu), args, workdir)
        many_start, many_rss = _many(spark, options, names[: args.many], args, workdir)
        conn.close()
    return {
        "tables": n,
        "setup_s": setup_s,
        "first_start_s": first_start,
        "restart_s": restart,
        "rss_one_mb": rss_one / 2**20,
        "rss_n_mb": rss_n / 2**20,
        "mb_per_table": (rss_n - rss_one) / max(n - 1, 1) / 2**20,
        "polls_per_trigger": polls / max(triggers, 1),
        "triggers": triggers,
        "changed_first_ms": changed[0] if changed else float("nan"),
        "changed_ms": statistics.median(changed[1:]) if len(changed) > 1 else float("nan"),
        "single_ms": statistics.median(single) if single else float("nan"),
        "busy_rows_s": busy,
        "single_busy_rows_s": single_busy,
        "many_start_s": many_start,
        "many_rss_mb": many_rss / 2**20,
        "load": os.getloadavg()[0],
    }


def _iso(epoch: float) -> str:
    import datetime as dt

    when = dt.datetime.fromtimestamp(epoch, dt.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--changed", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0, help="idle window")
    parser.add_argument("--interval", type=float, default=1.0, help="trigger interval, seconds")
    parser.add_argument("--many", type=int, default=0, help="start_many for this many tables")
    parser.add_argument(
        "--busy-rows", type=int, default=20000, help="new rows of one busy table (0: skip)"
    )
    parser.add_argument(
        "--busy-batches", type=int, default=10, help="batches of --busy-rows each, one by one"
    )
    parser.add_argument("--log", action="store_true", help="mssql_cdc's DEBUG lines to stderr")
    args = parser.parse_args()
    if args.log:
        import logging

        logging.basicConfig(format="%(asctime)s %(name)s %(message)s")
        logging.getLogger("mssql_cdc").setLevel(logging.DEBUG)
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 <pid>: where a stuck run waits

    from mssql_cdc.spark import get_spark

    spark = get_spark(
        "mssql-cdc-many-tables-bench",
        "local[2]",
        config={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.streaming.noDataProgressEventInterval": "0",
        },
    )
    with tempfile.TemporaryDirectory(prefix="mssql-cdc-many-") as tmp:
        r = measure(spark, args, Path(tmp))
    print(f"{r['tables']} tables, {os.cpu_count()} CPUs, load average {r['load']:.1f}")
    print("| measure | database stream | beside |")
    print("| :--- | ---: | ---: |")
    print(f"| emulator setup (s) | {r['setup_s']:.1f} | |")
    print(
        f"| first start, every table's first change landed (s) | {r['first_start_s']:.1f} | "
        f"start_many of {args.many}: {r['many_start_s']:.1f} |"
    )
    print(f"| restart, first trigger (s) | {r['restart_s']:.1f} | |")
    print(
        f"| driver RSS, 1 table / N tables (MB) | {r['rss_one_mb']:,.0f} / {r['rss_n_mb']:,.0f} | "
        f"start_many of {args.many}: {r['many_rss_mb']:,.0f} |"
    )
    print(f"| driver RSS per table beyond the first (MB) | {r['mb_per_table']:.1f} | |")
    print(
        f"| max-LSN polls per trigger (idle, {r['triggers']} triggers) | "
        f"{r['polls_per_trigger']:.2f} | |"
    )
    print(
        f"| the restarted run's first batch, {args.changed} changed tables (ms) | "
        f"{r['changed_first_ms']:.0f} | |"
    )
    print(
        f"| trigger landing {args.changed} changed tables (ms, median) | {r['changed_ms']:.0f} | "
        f"single stream, its one table: {r['single_ms']:.0f} "
        f"({r['changed_ms'] / r['single_ms']:.2f}x) |"
    )
    if args.busy_rows:
        print(
            f"| one busy table among {r['tables']:.0f}, {args.busy_batches} batches of "
            f"{args.busy_rows:,} rows (rows/s) | "
            f"{r['busy_rows_s']:,.0f} | single stream: {r['single_busy_rows_s']:,.0f} "
            f"({r['busy_rows_s'] / r['single_busy_rows_s']:.2f}x) |"
        )
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
