"""Seconds ``reconcile()`` takes to compare N rows of silver with the emulator's table.

Loads ``dbo.bench`` (bigint key and three value columns) with ``--rows`` rows, takes a snapshot
into bronze, builds silver from it with a control row at the snapshot's LSN, then times
``reconcile`` three ways: counts only (``sample=0``), the default sample (``0.01``) and every
bucket hashed (``sample=1``), with ``--bucket-rows`` rows per bucket. Prints the seconds, the
buckets and the machine's load average (absolute times on a shared machine are noise).

    .venv/bin/python bench/reconcile.py [--rows 100000] [--bucket-rows 10000]
    .venv/bin/python bench/reconcile.py --rows 1000000 --bucket-rows 100000
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def load_source(conn, rows: int) -> None:
    conn.execute(
        "CREATE TABLE dbo.bench (id bigint PRIMARY KEY, name nvarchar(40), qty int, "
        "price decimal(12,2))"
    )
    conn.execute("EXEC sys.sp_cdc_enable_db")
    conn.execute(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'bench', "
        "@role_name = NULL"
    )
    for start in range(0, rows, 1000):
        values = ", ".join(
            f"({i}, N'name {i}', {i % 1000}, {i % 100000}.25)"
            for i in range(start, min(start + 1000, rows))
        )
        conn.execute(f"INSERT INTO dbo.bench VALUES {values}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--bucket-rows", type=int, default=10_000)
    args = parser.parse_args()

    from mssql_cdc import _native, reconcile, stream
    from mssql_cdc.emulator import Emulator
    from mssql_cdc.sink.control import SilverPosition, ensure_control_table, merge_silver_position
    from mssql_cdc.sink.tables import table_ref
    from mssql_cdc.spark import get_spark

    work = Path(tempfile.mkdtemp(prefix="mssql-cdc-reconcile-"))
    spark = get_spark("mssql-cdc-reconcile", "local[2]", config={"spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    with Emulator() as emu:
        text = f"Server=tcp:{emu.host},{emu.port};Encrypt=no"
        with _native.connect(text, user="sa", password=emu.password) as conn:
            started = time.perf_counter()
            load_source(conn, args.rows)
            emu.scan()
            print(f"# source: {args.rows:,} rows loaded in {time.perf_counter() - started:.1f} s")
        options = {
            "connectionString": text,
            "user": "sa",
            "password": emu.password,
            "captureInstance": "dbo_bench",
            "numPartitions": "2",
        }
        bronze, silver, control = (str(work / t) for t in ("bronze", "silver", "control"))
        started = time.perf_counter()
        offset = stream(spark, options).snapshot(bronze)
        (
            spark.read.format("delta")
            .load(bronze)
            .select("id", "name", "qty", "price", "_start_lsn", "_commit_ts")
            .write.format("delta")
            .save(silver)
        )
        ref = table_ref(control, "control_table")
        ensure_control_table(spark, ref)
        merge_silver_position(
            spark, ref, SilverPosition(silver, offset["lsn"], offset["lsn"], None)
        )
        print(f"# bronze and silver ready in {time.perf_counter() - started:.1f} s")
        print("| sample | buckets | hashed | status | seconds | rows/s | load (1 min) |")
        print("|---|---|---|---|---|---|---|")
        for sample in (0.0, 0.01, 1.0):
            started = time.perf_counter()
            result = reconcile(
                spark,
                options,
                silver,
                bronze=bronze,
                control_table=control,
                bucket_rows=args.bucket_rows,
                sample=sample,
                seed=1,
            )
            seconds = time.perf_counter() - started
            status = "MATCH" if result.match == result.buckets else "NOT MATCH"
            print(
                f"| {sample} | {result.buckets} | {result.hashed} | {status} | {seconds:.1f} | "
                f"{args.rows / seconds:,.0f} | {os.getloadavg()[0]:.1f} |"
            )
    spark.stop()


if __name__ == "__main__":
    main()
