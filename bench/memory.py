"""Peak memory of Spark's Python worker reading one large range of change rows through the
``mssql_cdc`` source: it should be bounded by the Arrow batch size, not by the range.

For each ``--rows`` size, a fresh emulator is filled directly in its engine (as
``emulator_rate.py`` does: the 12-column change row of ``e2e.py``, every row in one commit, so
the batch is one partition reading every row), and an availableNow query reads it with
``numPartitions=1`` into Spark's ``noop`` sink. Python workers are not reused
(``spark.python.worker.reuse=false``), so each query's reading worker is a new process. A
sampler follows this process's descendants and keeps the peak resident set (``VmHWM``) of each
Python process among them (not Spark's JVM, whose command line also names python). The table
shows the largest among the Python processes started for that size's query (its reading
worker, where the rows are decoded into Arrow, and its planning worker) and among the older
ones (Spark's Python daemon, earlier queries' planners). The first figure should be the same
for every size.

    .venv/bin/python bench/memory.py [--rows 1000000 10000000] [--batch-rows 10000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _noop import start_noop
from emulator_rate import fill


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def _descendants(root: int) -> list[int]:
    kids, out, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        for kid in kids.get(pid, []):
            out.append(kid)
            todo.append(kid)
    return out


def _python_peak_kb(pid: int) -> int | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        program = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0", 1)[0]
    except OSError:
        return None
    if not os.path.basename(program).startswith(b"python"):
        return None  # the JVM's command line names python too (its classpath)
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None


class Sampler(threading.Thread):
    """Largest VmHWM (kB) of each Python process under this one, sampled every 0.2 s."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peaks: dict[int, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.2):
            for pid in _descendants(os.getpid()):
                kb = _python_peak_kb(pid)
                if kb is not None and kb > self.peaks.get(pid, 0):
                    self.peaks[pid] = kb

    @property
    def peak_kb(self) -> int:
        return max(self.peaks.values(), default=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--batch-rows", type=int, default=10_000, help="arrowBatchSize")
    args = parser.parse_args()

    from mssql_cdc.emulator import Emulator
    from mssql_cdc.source import register
    from mssql_cdc.spark import get_spark

    # a fresh worker per task, so each size's peak is its own (a reused worker keeps the peak
    # of every earlier read in VmHWM)
    config = {"spark.ui.enabled": "false", "spark.python.worker.reuse": "false"}
    spark = get_spark("mssql-cdc-memory", "local[2]", config=config)
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    results = []
    for rows in args.rows:
        work = Path(tempfile.mkdtemp(prefix="mssql-cdc-memory-"))
        with Emulator() as emu:
            fill(emu, rows)
            options = {
                "connectionString": f"Server=tcp:{emu.host},{emu.port};Encrypt=no",
                "user": "sa",
                "password": emu.password,
                "captureInstance": "dbo_bench",
                "numPartitions": "1",
                "arrowBatchSize": str(args.batch_rows),
            }
            before = set(_descendants(os.getpid()))
            sampler = Sampler()
            sampler.start()
            started = time.perf_counter()
            query = start_noop(spark, options, work / "cp")
            query.awaitTermination()
            seconds = time.perf_counter() - started
            sampler.done.set()
            sampler.join()
            read = sum(p["numInputRows"] for p in query.recentProgress)
            new = [kb for pid, kb in sampler.peaks.items() if pid not in before]
            old = [kb for pid, kb in sampler.peaks.items() if pid in before]
            results.append(
                (rows, read, seconds, max(new, default=0) / 1024, max(old, default=0) / 1024)
            )
            print(f"# {rows:,} rows: read {read:,} in {seconds:.1f} s", flush=True)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{'rows':>12}{'read':>12}{'seconds':>9}{'worker peak MB':>16}{'older Python MB':>17}")
    for rows, read, seconds, peak, others in results:
        print(f"{rows:>12,}{read:>12,}{seconds:>9.1f}{peak:>16.0f}{others:>17.0f}")
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
