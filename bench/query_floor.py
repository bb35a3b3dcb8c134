"""What any streaming query of a Python data source pays around its rows, against a batch read.

``to_delta`` is a streaming query (availableNow) of a Python data source whose ``foreachBatch``
appends to Delta; Spark's JDBC path is a batch read and an append. Beside the rows, a streaming
query pays its lifecycle: Spark starts the query's thread, starts the source's Python planning
process and asks it for offsets, writes the offset and commit logs, calls ``foreachBatch`` in the
driver's Python process, and stops. This benchmark measures that lifecycle with no server and no
sink of ours, so it bounds what ``to_delta`` can reach against the JDBC path:

* ``floor batch``: a minimal Python data source (``--rows`` rows made in its reader from
  memory, two columns) read as a batch and appended to an existing Delta table;
* ``stream noop``: the same data source as a stream with ``trigger(availableNow=True)`` into
  Spark's ``noop`` sink, one new batch per run on the same checkpoint: the query's lifecycle
  alone;
* ``stream append``: the same stream whose ``foreachBatch`` appends the batch to an existing
  Delta table (a plain append, as the JDBC path's);
* ``stream txn``: the same with ``txnAppId`` / ``txnVersion`` on the append (Delta's documented
  idempotent ``foreachBatch``, the least an exactly-once stream into Delta does);
* ``to_delta``: this project's stream of the emulator's ``dbo.jobs`` (``--changes`` rows, one
  commit per run) into existing bronze and facts tables (a scheduled run), for the same split.

Each run is timed from the call: when the query object is returned (``returned``), when the
trigger started as Spark reports it (``trigger at``), the trigger (``triggerExecution``), and
from its end to ``awaitTermination`` returning (``end``). The paths alternate run by run in one
Spark session (warm JVM); medians over ``--runs`` after ``--warmup``.

    .venv/bin/python bench/query_floor.py [--runs 6] [--warmup 2] [--rows 1] [--changes 10]

Needs local Spark with Delta (``make setup``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)


class _Rows(InputPartition):
    def __init__(self, rows: int) -> None:
        self.rows = rows


def _batch(rows: int) -> pa.RecordBatch:
    ids = pa.array(range(rows), pa.int64()) if rows < 1000 else _arange(rows)
    return pa.RecordBatch.from_arrays([ids, ids.cast(pa.string())], names=["id", "name"])


def _arange(rows: int) -> pa.Array:
    import numpy as np

    return pa.array(np.arange(rows, dtype=np.int64))


class FloorReader(DataSourceReader):
    def __init__(self, rows: int) -> None:
        self.rows = rows

    def partitions(self) -> list[InputPartition]:
        return [_Rows(self.rows)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Rows)
        yield _batch(partition.rows)


class FloorStreamReader(DataSourceStreamReader):
    """Offsets are a run counter kept in a file the benchmark bumps before each run."""

    def __init__(self, rows: int, clock: str) -> None:
        self.rows = rows
        self.clock = clock

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 (Spark API)
        return {"run": 0}

    def latestOffset(self) -> dict[str, int]:  # noqa: N802 (Spark API)
        return {"run": int(Path(self.clock).read_text())}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [_Rows(self.rows)] if end["run"] > start["run"] else []

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, _Rows)
        yield _batch(partition.rows)


class FloorSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "bench_floor"

    def schema(self) -> str:
        return "id bigint, name string"

    def reader(self, schema: Any) -> DataSourceReader:
        return FloorReader(int(self.options["rows"]))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802 (Spark API)
        return FloorStreamReader(int(self.options["rows"]), self.options["clock"])


Split = tuple[float, float, float, float, float]  # whole, returned, trigger at, trigger, end


def _split(query: Any, called: float, wall: float, returned: float, done: float) -> Split:
    """The run's times from the call (seconds), from the query's one progress entry with
    rows."""
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    if len(progress) != 1:
        raise SystemExit(f"expected one batch with rows, got {query.recentProgress}")
    stamp = datetime.fromisoformat(progress[0]["timestamp"].replace("Z", "+00:00")).timestamp()
    trigger = progress[0]["durationMs"]["triggerExecution"] / 1000
    trigger_at = stamp - wall
    whole = done - called
    return (whole, returned - called, trigger_at, trigger, whole - trigger_at - trigger)


def main() -> None:  # noqa: PLR0915 (one straight script)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rows", type=int, default=1, help="rows of the floor paths")
    parser.add_argument("--changes", type=int, default=10, help="change rows of to_delta's run")
    args = parser.parse_args()

    from _sink_steps import collect_sink_steps, median_steps
    from mssql_cdc import _native
    from mssql_cdc.emulator import Emulator
    from mssql_cdc.spark import get_spark
    from scheduled_run import enable_jobs, insert_jobs, start_run

    steps = collect_sink_steps()
    work = Path(tempfile.mkdtemp(prefix="mssql-cdc-floor-"))
    spark = get_spark()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(FloorSource)
    clock = work / "clock"
    clock.write_text("0")
    floor = str(work / "floor")
    spark.read.format("bench_floor").option("rows", "1").load().limit(0).write.format("delta").save(
        floor
    )

    def append(df: Any, batch_id: int) -> None:
        df.write.format("delta").mode("append").save(floor)

    def append_txn(df: Any, batch_id: int) -> None:  # Delta's documented idempotent foreachBatch
        df.write.format("delta").mode("append").option("txnAppId", "floor").option(
            "txnVersion", batch_id
        ).save(floor)

    def floor_stream(kind: str) -> Any:
        writer = (
            spark.readStream.format("bench_floor")
            .option("rows", str(args.rows))
            .option("clock", str(clock))
            .load()
            .writeStream.option("checkpointLocation", str(work / f"checkpoint-{kind}"))
            .trigger(availableNow=True)
        )
        if kind == "noop":
            return writer.format("noop").start()
        return writer.foreachBatch(append if kind == "append" else append_txn).start()

    paths = ["floor batch", "stream noop", "stream append", "stream txn", "to_delta"]
    results: dict[str, list[Split]] = {path: [] for path in paths}
    with Emulator() as emu:
        text = f"Server=tcp:{emu.host},{emu.port};Encrypt=no"
        with _native.connect(text, user="sa", password=emu.password) as conn:
            options = enable_jobs(conn, text, emu.password)
            header = f"{'run':>14}{'path':>15}{'whole':>8}{'returned':>10}{'trigger at':>12}"
            print(f"{header}{'trigger':>9}{'end':>7}  (seconds)")
            for run in range(args.warmup + args.runs):
                label = f"{run}" + (" (warm-up)" if run < args.warmup else "")
                # floor batch
                called = time.perf_counter()
                spark.read.format("bench_floor").option("rows", str(args.rows)).load().write.format(
                    "delta"
                ).mode("append").save(floor)
                whole = time.perf_counter() - called
                row: dict[str, Split] = {"floor batch": (whole, whole, 0.0, whole, 0.0)}
                clock.write_text(str(run + 1))  # one new batch for each floor stream
                for kind in ("noop", "append", "txn"):
                    called, wall = time.perf_counter(), time.time()
                    query = floor_stream(kind)
                    returned = time.perf_counter()
                    query.awaitTermination()
                    done = time.perf_counter()
                    row[f"stream {kind}"] = _split(query, called, wall, returned, done)
                # to_delta: one commit of new changes
                insert_jobs(conn, emu, run, args.changes)
                before = len(steps)
                called, wall = time.perf_counter(), time.time()
                query = start_run(spark, options, work, "floor")
                returned = time.perf_counter()
                query.awaitTermination()
                row["to_delta"] = _split(query, called, wall, returned, time.perf_counter())
                if len(steps) != before + 1:
                    raise SystemExit(f"run {run}: expected one sink batch")
                widths = (8, 10, 12, 9, 7)
                for path, split in row.items():
                    cells = "".join(f"{v:>{w}.2f}" for v, w in zip(split, widths, strict=True))
                    print(f"{label:>14}{path:>15}{cells}")
                    if run >= args.warmup:
                        results[path].append(split)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    print(f"medians of {args.runs} runs (seconds): whole, returned, trigger at, trigger, end")
    for path, splits in results.items():
        medians = [statistics.median(column) for column in zip(*splits, strict=True)]
        print(f"{path:>15}" + "".join(f"{v:>9.2f}" for v in medians))
    print(f"to_delta's sink steps, median ms: {median_steps(steps[args.warmup :])}")


if __name__ == "__main__":
    main()
