"""Idle cost: what quiet streams cost SQL Server and the driver, for N streams on one database.

For each N, the emulator gets N CDC-enabled tables; ``start_many`` runs one ``to_delta`` stream
per table with a ``processingTime`` trigger. After each stream has read its first change, no
table changes for ``--seconds``, and the benchmark measures over that window:

* SQL requests (batches and RPCs) the server answered, and the ``sys.fn_cdc_get_max_lsn()``
  polls among them, per stream per trigger (triggers counted from each query's progress
  events: an idle trigger reports one, ``noDataProgressEventInterval=0``);
* CPU seconds of the driver (this process, Spark's JVM and its Python workers) per stream per
  minute, and their resident memory per stream (the whole tree's RSS divided by N).

    .venv/bin/python bench/idle.py [--streams 1 10 50] [--seconds 30] [--interval 1] [--no-share]

``--no-share`` sets ``MSSQL_CDC_SHARED_MAX_LSN_POLL=0``: every stream polls on its own (as
before ADR 0170).

Prints a table and exits 0. Needs local Spark with Delta (``make setup``). On a machine with
few cores, N = 50 starts 50 Python planning processes: expect a slow start.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
#: the text of the newest-commit poll (CdcClient.max_commit)
MAX_LSN_QUERY = "FROM cdc.lsn_time_mapping ORDER BY start_lsn DESC"


def _triggers(queries, since_ms: float, until_ms: float) -> int:
    """Triggers the queries ran in the window (one progress event each)."""
    import datetime as dt

    count = 0
    for query in queries.values():
        for progress in query.recentProgress:
            stamp = dt.datetime.fromisoformat(progress.timestamp.replace("Z", "+00:00"))
            if since_ms <= stamp.timestamp() * 1000 < until_ms:
                count += 1
    return count


def _tree(root: int) -> list[int]:
    """``root`` and every process below it (from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, []))
    return out


def _usage(root: int) -> tuple[float, int]:
    """CPU seconds (user + system, ended children included) and resident bytes of ``root``'s
    process tree."""
    cpu, rss = 0.0, 0
    for pid in _tree(root):
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        # utime + stime, and cutime + cstime: the CPU of children that ended and were waited
        # for (a Python worker exiting would otherwise take its CPU out of the sum)
        cpu += sum(int(f) for f in fields[11:15]) / TICKS
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss += int(line.split()[1]) * 1024
    return cpu, rss


def setup_tables(emu, conn, n: int) -> None:
    """CDC on the emulator's database and ``n`` tables ``dbo.t0``... with one change each,
    captured."""
    conn.execute("EXEC sys.sp_cdc_enable_db")
    for i in range(n):
        conn.execute(f"CREATE TABLE dbo.t{i} (id int PRIMARY KEY, v nvarchar(20))")
        conn.execute(
            f"EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N't{i}', "
            "@role_name = NULL"
        )
        conn.execute(f"INSERT INTO dbo.t{i} VALUES (1, N'x')")
    emu.scan()


def measure(spark, n: int, seconds: float, interval: float, workdir: Path) -> dict[str, float]:
    from mssql_cdc import _native, await_all, start_many, stop_all
    from mssql_cdc.emulator import Emulator

    with Emulator() as emu:
        conn = _native.connect(emu.connection_string(), user="sa", password=emu.password)
        setup_tables(emu, conn, n)
        options = {
            "connectionString": emu.connection_string(),
            "user": "sa",
            "password": emu.password,
            "numPartitions": "1",
        }
        began = time.monotonic()
        # one start_many call per table, each after the previous stream's first batch: on a
        # small machine, N Python planning workers launched at once miss Spark's fixed 10-s
        # connect-back timeout ("Python worker failed to connect back")
        queries = {}
        try:
            for i in range(n):
                started_one = start_many(
                    spark,
                    options,
                    [f"dbo_t{i}"],
                    target=str(workdir / f"n{n}" / "bronze" / "{ci}"),
                    app_id=f"idle{n}-{{ci}}",
                    checkpoint=str(workdir / f"n{n}" / "chk" / "{ci}"),
                    trigger={"processingTime": f"{interval:g} seconds"},
                )
                queries.update(started_one)
                for query in started_one.values():
                    query.processAllAvailable()
            started = time.monotonic() - began
            cpu0, _ = _usage(os.getpid())
            requests0 = emu.request_count
            polls0 = emu.statement_count(MAX_LSN_QUERY)
            window0, wall0 = time.monotonic(), time.time() * 1000
            time.sleep(seconds)  # the idle window being measured
            elapsed = time.monotonic() - window0
            requests = emu.request_count - requests0
            polls = emu.statement_count(MAX_LSN_QUERY) - polls0
            cpu1, rss = _usage(os.getpid())
            load = os.getloadavg()[0]
            triggers = _triggers(queries, wall0, time.time() * 1000)
        finally:
            stop_all(queries)
            await_all(queries, timeout=120)
            conn.close()
    triggers = max(triggers, 1)  # stream-triggers, summed over the streams
    return {
        "streams": n,
        "start_s": started,
        "triggers_per_stream": triggers / n,
        "requests_per_stream_per_trigger": requests / triggers,
        "polls_per_stream_per_trigger": polls / triggers,
        "load": load,
        "cpu_s_per_stream_per_min": (cpu1 - cpu0) / n / (elapsed / 60),
        "rss_mb_per_stream": rss / n / 2**20,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--seconds", type=float, default=30.0, help="idle window per N")
    parser.add_argument("--interval", type=float, default=1.0, help="trigger interval, seconds")
    parser.add_argument("--no-share", action="store_true", help="every stream polls alone")
    args = parser.parse_args()
    if args.no_share:
        os.environ["MSSQL_CDC_SHARED_MAX_LSN_POLL"] = "0"

    from mssql_cdc.spark import get_spark

    spark = get_spark(
        "mssql-cdc-idle-bench",
        "local[2]",
        config={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.streaming.noDataProgressEventInterval": "0",
        },
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="mssql-cdc-idle-") as tmp:
        for n in args.streams:
            rows.append(measure(spark, n, args.seconds, args.interval, Path(tmp)))
    print(
        f"idle window {args.seconds:g} s per N, trigger every {args.interval:g} s, "
        f"{os.cpu_count()} CPUs, shared max-LSN poll {'off' if args.no_share else 'on'}"
    )
    print(
        "| streams | start (s) | triggers per stream | SQL requests per stream per trigger | "
        "max-LSN polls per stream per trigger | driver CPU s per stream per minute | "
        "driver RSS per stream (MB) | load average (1 min) |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['streams']:.0f} | {r['start_s']:.1f} | {r['triggers_per_stream']:.1f} | "
            f"{r['requests_per_stream_per_trigger']:.2f} | "
            f"{r['polls_per_stream_per_trigger']:.2f} | {r['cpu_s_per_stream_per_min']:.2f} | "
            f"{r['rss_mb_per_stream']:.0f} | {r['load']:.1f} |"
        )
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
