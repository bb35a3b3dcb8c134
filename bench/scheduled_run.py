"""A scheduled job: seconds one ``availableNow`` run of ``to_delta`` takes for a few new changes.

A job that runs every few minutes (a Databricks job, a cron entry) starts a new query each
time: Spark starts the source's Python planning process, plans the batch, starts a Python
worker for the read (or reuses an idle one), and the sink commits bronze and the facts row.
With few rows, those start-up costs are the run. The benchmark makes ``--rows`` changes in the
emulator (one commit), then runs ``to_delta`` with ``trigger={"availableNow": True}`` on the
same bronze, facts table and checkpoint, ``--runs`` times; the first ``--warmup`` runs (table
creation, the JVM's compilation) are left out.

    .venv/bin/python bench/scheduled_run.py [--runs 8] [--rows 10] [--warmup 2]

Prints, per run and as medians: the whole run (``to_delta`` called to the query's end), the
part before the first trigger (the query's start and the planning process's start), the
trigger itself (``triggerExecution``: planning, the read, the sink) and the sink's own time.
Needs local Spark with Delta (``make setup``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from _sink_steps import collect_sink_steps, median_steps


def enable_jobs(conn: Any, text: str, password: str) -> dict[str, str]:
    """Creates ``dbo.jobs`` in the emulator with CDC on (``conn``: its ``sa`` connection,
    ``text``: its connection string) and returns the options of a stream of it."""
    conn.execute("CREATE TABLE dbo.jobs (id int PRIMARY KEY, name nvarchar(40), n int)")
    conn.execute("EXEC sys.sp_cdc_enable_db")
    conn.execute(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'jobs', "
        "@role_name = NULL"
    )
    return {
        "connectionString": text,
        "user": "sa",
        "password": password,
        "captureInstance": "dbo_jobs",
    }


def insert_jobs(conn: Any, emu: Any, run: int, rows: int) -> None:
    """``rows`` new jobs in one commit (ids from ``run * rows``), captured by the emulator."""
    values = ", ".join(f"({run * rows + i}, N'job {run}', {i})" for i in range(rows))
    conn.execute(f"INSERT INTO dbo.jobs VALUES {values}")
    emu.scan()


def start_run(spark: Any, options: dict[str, str], work: Path, app_id: str) -> Any:
    """Starts one scheduled run: ``to_delta`` (availableNow) into ``work``'s bronze, facts
    table and checkpoint; returns the started query."""
    from mssql_cdc import stream

    return stream(spark, options).to_delta(
        str(work / "bronze"),
        app_id=app_id,
        checkpoint=str(work / "checkpoint"),
        facts_table=str(work / "facts"),
        trigger={"availableNow": True},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--rows", type=int, default=10, help="changes per run (one commit)")
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()

    from mssql_cdc import _native
    from mssql_cdc.emulator import Emulator
    from mssql_cdc.spark import get_spark

    steps = collect_sink_steps()

    work = Path(tempfile.mkdtemp(prefix="mssql-cdc-scheduled-"))
    spark = get_spark()
    spark.sparkContext.setLogLevel("ERROR")
    rows: list[tuple[float, float, float, float]] = []
    with Emulator() as emu:
        text = f"Server=tcp:{emu.host},{emu.port};Encrypt=no"
        with _native.connect(text, user="sa", password=emu.password) as conn:
            options = enable_jobs(conn, text, emu.password)
            print(f"{'run':>4}{'whole s':>9}{'to trigger s':>14}{'trigger s':>11}{'sink s':>8}")
            for run in range(args.warmup + args.runs):
                insert_jobs(conn, emu, run, args.rows)
                before = len(steps)
                started, wall = time.perf_counter(), time.time()
                query = start_run(spark, options, work, "scheduled")
                query.awaitTermination()
                whole = time.perf_counter() - started
                progress = [p for p in query.recentProgress if p["numInputRows"]]
                if len(progress) != 1 or len(steps) != before + 1:
                    raise SystemExit(f"run {run}: expected one batch with rows, got {progress}")
                trigger = progress[0]["durationMs"]["triggerExecution"] / 1000
                sink = steps[-1]["total"] / 1000
                # the trigger's start as Spark reports it (UTC, ms), against the call's start
                stamp = progress[0]["timestamp"].replace("Z", "+00:00")
                to_trigger = datetime.fromisoformat(stamp).timestamp() - wall
                label = f"{run}" + (" (warm-up)" if run < args.warmup else "")
                print(f"{label:>4}{whole:>9.2f}{to_trigger:>14.2f}{trigger:>11.2f}{sink:>8.2f}")
                if run >= args.warmup:
                    rows.append((whole, to_trigger, trigger, sink))
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    medians = [statistics.median(column) for column in zip(*rows, strict=True)]
    print(
        f"median of {len(rows)} runs ({args.rows} rows each): whole {medians[0]:.2f} s, "
        f"to the first trigger {medians[1]:.2f} s, trigger {medians[2]:.2f} s, "
        f"sink {medians[3]:.2f} s"
    )
    print(f"the sink's steps, median ms: {median_steps(steps[args.warmup :])}")


if __name__ == "__main__":
    main()
