"""apply_changes throughput: bronze change rows applied per second per call, type 1 and type 2.

A synthetic bronze table (no server): a snapshot of N keys, then per call 1% of the keys
updated (an operation 3 and 4 row each) in one commit; each call applies that commit to a
type 1 and to a type 2 silver table. The first call (the rebuild from the snapshot) is
reported apart. Prints one line per call and the medians.

    python bench/silver.py                  # N = 20,000, 3 calls: a couple of minutes
    python bench/silver.py --keys 1000000   # the 1M-key figure
    python bench/silver.py --no-facts       # without facts_table (no snapshot lookups there)

Absolute times on a shared machine are noise; state the load with the figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

BRONZE_DDL = (
    "_capture_instance STRING, _start_lsn STRING, _seqval STRING, _operation INT, "
    "_command_id INT, _commit_ts TIMESTAMP_NTZ, id BIGINT, name STRING, qty INT, "
    "_batch_id INT, _snapshot STRING, _chunk INT"
)


def lsn(n: int) -> str:
    return f"0x{n:020X}"


def snapshot(spark, keys: int):
    from pyspark.sql import functions as sf

    return spark.range(keys).select(
        sf.lit("dbo_items").alias("_capture_instance"),
        sf.lit(lsn(1)).alias("_start_lsn"),
        sf.lit(None).cast("string").alias("_seqval"),
        sf.lit(0).alias("_operation"),
        sf.lit(None).cast("int").alias("_command_id"),
        sf.lit("2026-01-01 00:00:00").cast("timestamp_ntz").alias("_commit_ts"),
        sf.col("id"),
        sf.concat(sf.lit("name-"), sf.col("id").cast("string")).alias("name"),
        sf.lit(0).alias("qty"),
        sf.lit(None).cast("int").alias("_batch_id"),
        sf.lit(lsn(1)).alias("_snapshot"),
        sf.lit(None).cast("int").alias("_chunk"),
    )


def changes(spark, keys: int, call: int):
    """1% of the keys (a different stride each call) updated in one commit: rows 3 and 4."""
    from pyspark.sql import functions as sf

    n = max(1, keys // 100)
    commit = lsn(100 + call)
    base = spark.range(n).select(((sf.col("id") * 100 + call) % keys).alias("id"))
    rows = base.crossJoin(spark.range(3, 5).select(sf.col("id").cast("int").alias("_operation")))
    return rows.select(
        sf.lit("dbo_items").alias("_capture_instance"),
        sf.lit(commit).alias("_start_lsn"),
        sf.format_string("0x%020X", sf.col("id")).alias("_seqval"),
        sf.col("_operation"),
        sf.lit(1).alias("_command_id"),
        (sf.lit("2026-01-01 00:00:00").cast("timestamp_ntz") + sf.expr(f"INTERVAL {call} MINUTES"))
        .cast("timestamp_ntz")
        .alias("_commit_ts"),
        sf.col("id"),
        sf.concat(sf.lit("name-"), sf.col("id").cast("string")).alias("name"),
        sf.when(sf.col("_operation") == 4, sf.lit(call)).otherwise(sf.lit(call - 1)).alias("qty"),
        sf.lit(call).alias("_batch_id"),
        sf.lit(None).cast("string").alias("_snapshot"),
        sf.lit(None).cast("int").alias("_chunk"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=20_000, help="keys in the table (N)")
    parser.add_argument("--calls", type=int, default=3, help="incremental calls after the first")
    parser.add_argument(
        "--no-facts",
        action="store_true",
        help="call without facts_table (default: with an empty facts table, as a stream has)",
    )
    args = parser.parse_args()

    from mssql_cdc import apply_changes
    from mssql_cdc.sink import ensure_facts_table, table_ref
    from mssql_cdc.spark import get_spark

    spark = get_spark(
        "bench-silver",
        "local[2]",
        config={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"},
    )
    spark.sparkContext.setLogLevel("ERROR")
    root = tempfile.mkdtemp(prefix="bench-silver-")
    bronze, control = os.path.join(root, "bronze"), os.path.join(root, "control")
    facts = None if args.no_facts else os.path.join(root, "facts")
    try:
        snapshot(spark, args.keys).write.format("delta").save(bronze)
        if facts is not None:
            ensure_facts_table(spark, table_ref(facts, "facts_table"))
        print(
            f"keys {args.keys:,}, {max(1, args.keys // 100):,} keys changed per call "
            f"({2 * max(1, args.keys // 100):,} bronze rows), load {os.getloadavg()[0]:.1f}"
        )
        rates: dict[int, list[float]] = {1: [], 2: []}
        for call in range(args.calls + 1):
            if call:
                changes(spark, args.keys, call).write.format("delta").mode("append").save(bronze)
            for scd in (1, 2):
                started = time.perf_counter()
                result = apply_changes(
                    spark,
                    bronze,
                    os.path.join(root, f"silver{scd}"),
                    capture_instance="dbo_items",
                    keys=["id"],
                    control_table=control,
                    facts_table=facts,
                    scd_type=scd,
                )
                seconds = time.perf_counter() - started
                rows = result.bronze_rows if call else args.keys
                label = "rebuild" if result.rebuilt else "apply"
                print(
                    f"call {call} type {scd} {label}: {rows:,} rows in {seconds:.1f} s = "
                    f"{rows / seconds:,.0f} rows/s ({result.inserted} ins, {result.updated} upd)"
                )
                if call:
                    rates[scd].append(rows / seconds)
        for scd, values in rates.items():
            if values:
                print(f"type {scd}: median {statistics.median(values):,.0f} rows/s per call")
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
