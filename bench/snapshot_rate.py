"""Snapshot read rate: ``mssql_cdc_snapshot`` versus Spark's JDBC source on the same table.

Fills ``dbo.bench`` (``bench/_fill.py``: the 12-column row of the other benchmarks, ``--rows``
rows) directly in the emulator's engine, then, for each ``--partitions`` count, reads the whole
table into Spark twice, in alternating order per count:

* ``mssql_cdc_snapshot``: this project's batch source (the native client, ``numPartitions``
  ranges of the key);
* ``jdbc``: Spark's JDBC source with Microsoft's mssql-jdbc (``partitionColumn`` ``id``, the
  same number of partitions).

A first untimed read of ten rows through each path warms up the JVM and the Python workers.
Each read ends in Spark's ``noop`` sink (every row is produced, nothing is written), so the
figure is the read alone. Prints rows per second and MB per second of Arrow data per path and
per partition count, and the ratio of the two paths, measured in one run.

    .venv/bin/python bench/snapshot_rate.py [--rows 1000000] [--partitions 1 2 4]
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from e2e import bench_spark


def _read(reader: Any) -> float:
    started = time.perf_counter()
    reader.load().write.format("noop").mode("overwrite").save()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args()

    from _fill import fill
    from mssql_cdc import _native, register
    from mssql_cdc.emulator import Emulator

    spark, jar = bench_spark("mssql-cdc-snapshot-rate")
    register(spark)
    with Emulator() as emu:
        fill(emu, args.rows)
        text = f"Server=tcp:{emu.host},{emu.port};Encrypt=no"
        with _native.connect(text, user="sa", password=emu.password) as conn:
            result = conn.execute("SELECT * FROM dbo.bench")
            import pyarrow as pa

            table = pa.table(result)
        megabytes = table.nbytes / 1e6
        print(f"# source: {table.num_rows:,} rows, {megabytes:.1f} MB as Arrow", flush=True)
        url = (
            f"jdbc:sqlserver://{emu.host}:{emu.port};databaseName=master;encrypt=false;"
            "trustServerCertificate=true"
        )
        rows: list[tuple[int, str, float]] = []
        for parts in args.partitions:
            ours = (
                spark.read.format("mssql_cdc_snapshot")
                .option("connectionString", text)
                .option("user", "sa")
                .option("password", emu.password)
                .option("captureInstance", "dbo_bench")
                .option("numPartitions", str(parts))
            )
            theirs = (
                spark.read.format("jdbc")
                .option("url", url)
                .option("driver", "com.microsoft.sqlserver.jdbc.SQLServerDriver")
                .option("user", "sa")
                .option("password", emu.password)
                .option("dbtable", "dbo.bench")
                .option("partitionColumn", "id")
                .option("lowerBound", "0")
                .option("upperBound", str(args.rows))
                .option("numPartitions", str(parts))
            )
            order = [("mssql_cdc_snapshot", ours), ("jdbc", theirs)]
            if parts % 2 == 0:
                order.reverse()
            if parts == args.partitions[0]:  # warm up: JVM classes, Python workers, the driver
                for name, reader in order:
                    if name != "jdbc" or jar is not None:
                        reader.load().limit(10).collect()
            for name, reader in order:
                if name == "jdbc" and jar is None:
                    print(f"# {name} p={parts}: n/a (could not fetch mssql-jdbc)", flush=True)
                    continue
                seconds = _read(reader)
                rows.append((parts, name, seconds))
                print(f"# {name} p={parts}: {seconds:.2f} s", flush=True)
    spark.stop()

    print(f"{'partitions':>10}  {'path':<20}{'seconds':>9}{'rows/s':>12}{'MB/s':>8}{'x jdbc':>8}")
    for parts, name, seconds in rows:
        jdbc_s = next((s for p, n, s in rows if p == parts and n == "jdbc"), None)
        ratio = f"{jdbc_s / seconds:.2f}" if jdbc_s else "-"
        print(
            f"{parts:>10}  {name:<20}{seconds:>9.2f}{args.rows / seconds:>12,.0f}"
            f"{megabytes / seconds:>8.1f}{ratio:>8}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
