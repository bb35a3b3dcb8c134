"""A stream of tiny micro-batches: seconds the exactly-once sink spends per batch against one
bare Delta append of the same rows.

A processingTime query over small Parquet files (one file, ``--rows`` change rows of the
stream's schema, per trigger) calls ``delta_sink`` (bronze and a facts table: one bronze
commit and one facts commit per batch) and, in the same ``foreachBatch``, appends the same rows
to another Delta table with a plain ``df.write.format("delta").mode("append")``; the two run in
alternating order. The reader is not measured (the rows come from Parquet): this is the sink's
fixed cost per batch. The first ``--warmup`` batches (table creation, JIT) are left out.

    .venv/bin/python bench/tiny_batches.py [--batches 12] [--rows 10] [--warmup 2] [--no-warm-state]
        [--sink-only] [--bare-txn] [--trigger "1 second"]

Prints the median seconds per batch of both, their ratio (target: at most 2), the median of
each sink step (the sink's DEBUG line, docs/sink.md) and of the whole trigger. The bare append
is timed after the sink's background Delta state computation (ADR 0177) finished, so the two
never share the cores (the whole trigger then includes that wait); ``--no-warm-state`` runs
the sink without it, for comparison, and ``--sink-only`` leaves the bare append out, so that
the whole trigger is what a stream of the sink alone spends per batch. ``--bare-txn`` gives the
bare append a ``txnAppId`` and ``txnVersion`` (the batch id), as Delta's documentation has a
``foreachBatch`` make its writes idempotent: one transactional append, with the Delta state
built inside its commit as open-source Delta does.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from _sink_steps import collect_sink_steps

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SCHEMA = (
    "_capture_instance STRING, _start_lsn STRING, _seqval STRING, _operation INT, "
    "_command_id INT, _commit_ts TIMESTAMP_NTZ, id INT, name STRING"
)
T0 = datetime(2026, 1, 1)


def rows_of(batch: int, rows: int) -> list[tuple[object, ...]]:
    out = []
    for i in range(rows):
        n = batch * rows + i
        lsn = f"0x{n + 1:020X}"
        op = (2, 3, 4, 1)[i % 4]
        out.append(("dbo_t", lsn, lsn, op, 1, T0 + timedelta(seconds=n), n, f"row {n}"))
    return out


def small_tables_session(name: str) -> SparkSession:
    """A local Spark session (2 cores, no UI, ERROR logs) sized for small Delta tables: 2 shuffle
    partitions, and Delta's state of a table built in 2 tasks."""
    from mssql_cdc.spark import get_spark

    spark = get_spark(
        name,
        "local[2]",
        config={
            "spark.ui.enabled": "false",
            "spark.sql.shuffle.partitions": "2",
            "spark.databricks.delta.snapshotPartitions": "2",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def main() -> None:  # noqa: PLR0915 (one straight script)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--rows", type=int, default=10, help="change rows per batch")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument(
        "--trigger", default="1 second", help="the query's processingTime trigger interval"
    )
    parser.add_argument(
        "--sink-only",
        action="store_true",
        help="no bare append: the whole trigger is the sink's stream alone",
    )
    parser.add_argument(
        "--no-warm-state",
        action="store_true",
        help="the sink without its background Delta state computation (as before ADR 0177)",
    )
    parser.add_argument(
        "--bare-txn",
        action="store_true",
        help="the bare append with txnAppId and txnVersion (an idempotent foreachBatch write)",
    )
    args = parser.parse_args()

    from mssql_cdc.sink import delta_sink
    from mssql_cdc.sink.warmup import WARMER

    steps = collect_sink_steps()

    work = Path(tempfile.mkdtemp(prefix="mssql-cdc-tiny-"))
    spark = small_tables_session("mssql-cdc-tiny")
    source = work / "source"
    for batch in range(args.batches):
        df = spark.createDataFrame(rows_of(batch, args.rows), SCHEMA).coalesce(1)
        df.write.mode("append").parquet(str(source))

    sink = delta_sink(
        str(work / "bronze"), "tiny", str(work / "facts"), warm_state=not args.no_warm_state
    )
    timings: list[tuple[float, float]] = []

    def both(df: object, batch_id: int) -> None:
        def timed_sink() -> float:
            started = time.perf_counter()
            sink(df, batch_id)  # type: ignore[arg-type]
            return time.perf_counter() - started

        def timed_bare() -> float:
            # the sink's background state computation (ADR 0177) done first: not timed here
            if not WARMER.wait_idle(300):
                raise RuntimeError("the sink's Delta state computation did not finish in 300 s")
            started = time.perf_counter()
            write = df.write.format("delta").mode("append")  # type: ignore[attr-defined]
            if args.bare_txn:
                write = write.option("txnAppId", "bare").option("txnVersion", batch_id)
            write.save(str(work / "bare"))
            return time.perf_counter() - started

        if args.sink_only:
            sunk, bare = timed_sink(), float("nan")
        elif batch_id % 2:
            bare = timed_bare()
            sunk = timed_sink()
        else:
            sunk = timed_sink()
            bare = timed_bare()
        timings.append((sunk, bare))
        print(f"# batch {batch_id}: sink {sunk:.2f} s, bare append {bare:.2f} s", flush=True)

    query = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
        .writeStream.foreachBatch(both)
        .option("checkpointLocation", str(work / "cp"))
        .trigger(processingTime=args.trigger)
        .start()
    )
    while len(timings) < args.batches and query.isActive:
        query.awaitTermination(1)
    query.stop()
    if not WARMER.wait_idle(300):
        print("the sink's Delta state computation did not finish in 300 s", file=sys.stderr)
    triggers = [p["durationMs"].get("triggerExecution", 0) for p in query.recentProgress]

    kept = timings[args.warmup :]
    kept_steps = steps[args.warmup :]
    sink_s = statistics.median(t[0] for t in kept)
    bare_s = float("nan") if args.sink_only else statistics.median(t[1] for t in kept)
    print(f"batches measured: {len(kept)} of {len(timings)}, {args.rows} rows each")
    print(f"{'what':<34}{'median s':>10}")
    print(f"{'sink (bronze + facts) per batch':<34}{sink_s:>10.3f}")
    bare_name = "bare Delta append " + ("(txn) per batch" if args.bare_txn else "per batch")
    print(f"{bare_name:<34}{bare_s:>10.3f}")
    print(f"{'ratio sink / bare':<34}{sink_s / bare_s:>10.2f}")
    kept_triggers = triggers[args.warmup : len(timings)]
    if kept_triggers:
        median_trigger = statistics.median(kept_triggers) / 1000
        what = "whole trigger (sink, " + ("read)" if args.sink_only else "bare, read)")
        print(f"{what:<34}{median_trigger:>10.3f}")
    for name in dict.fromkeys(k for s in kept_steps for k in s):
        values = [s[name] for s in kept_steps if name in s]
        print(f"{'  sink step ' + name:<34}{statistics.median(values) / 1000:>10.3f}")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
