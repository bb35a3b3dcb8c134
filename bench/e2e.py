"""End to end: change rows per second from the emulator through Spark into Delta bronze.

Three ways to land the same change rows of ``dbo.bench`` (12 columns; the source and change
tables filled directly in the emulator's engine by ``bench/_fill.py``, one insert change row per
source row, ``--rows-per-commit`` to a commit) in Delta, in one run on this machine (compare
ratios, not absolute numbers):

* ``to_delta``: this project — ``stream(spark, options).to_delta(...)`` with an availableNow
  trigger (the native client, the Spark data source, the exactly-once sink, no facts table);
* ``jdbc``: Spark's JDBC source with Microsoft's mssql-jdbc reading the change table
  ``cdc.dbo_bench_CT`` (every change row), appended to Delta;
* ``floor``: the same rows already in memory (an Arrow table) appended to Delta.

With ``--noop`` both sources are also read into Spark's ``noop`` sink (every row read into the
JVM, nothing written): ``mssql_cdc`` (the change source, a streaming query with availableNow,
shown with and without its start and stop) and the JDBC source (a batch read), so the two read
paths are compared without Delta's write.

    .venv/bin/python bench/e2e.py [--rows 100000] [--partitions 1 2 4] [--facts]
        [--rows-per-commit 1000] [--rounds 2] [--whole-replies] [--max-commits-per-batch N]
        [--noop] [--existing]

``--partitions`` takes several counts: the source is loaded once, then ``to_delta`` and the
JDBC path run once per count (``numPartitions``; the JDBC source splits on ``id``), the floor
once. ``--rounds`` (default 2) repeats all of that in the same session and reports the last
round: a fresh JVM spends most of its first million-row batch compiling (its C2 and C1 compiler
threads used 13 of its 24 CPU seconds in a profile), and whichever path ran first paid for it.
``--facts`` gives ``to_delta`` a facts table (the exactly-once sink's full work per batch).
``--whole-replies`` adds a ``to_delta`` run per count with the emulator encoding each reply
whole before its first packet (as before it streamed results, ADR 0175), to measure what the
streaming changes in the same run. ``--max-commits-per-batch`` (Spark 4.2+) makes ``to_delta``'s
run a catch-up of several micro-batches (``maxCommitsPerBatch``), each committed as in
production: the per-batch steps then show what a batch after the first costs.
``--existing`` lands every path into tables that already exist (a running stream's case rather
than a first run's): ``to_delta``'s bronze and facts tables are created first, untimed, by another
stream of the same tables reading only the source's last commit, and the JDBC path and the floor
append to a table created first, untimed, with their rows' schema.
The sink's per-step timings (its DEBUG line, docs/sink.md) are printed per batch. The
mssql-jdbc jar is fetched with Maven (the version the driver tests pin). Prints a table and
exits 0; a path that cannot run here is reported as n/a with the reason.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

JDBC = "com.microsoft.sqlserver:mssql-jdbc:12.10.1.jre11"
ROOT = Path(__file__).resolve().parent.parent


def jdbc_jar() -> Path | None:
    jar = Path.home() / ".m2/repository/com/microsoft/sqlserver/mssql-jdbc/12.10.1.jre11"
    jar = jar / "mssql-jdbc-12.10.1.jre11.jar"
    if not jar.exists():
        subprocess.run(
            ["mvn", "-q", "-B", "dependency:get", f"-Dartifact={JDBC}", "-Dtransitive=false"],
            check=False,
        )
    return jar if jar.exists() else None


def bench_spark(name: str) -> tuple[Any, Path | None]:
    """A local Spark session (2 cores, Delta, mssql-jdbc on the classpath when Maven fetched
    it) and the mssql-jdbc jar or ``None``."""
    from mssql_cdc.spark import delta_jars, get_spark

    jar = jdbc_jar()
    jars = [str(j) for j in delta_jars()] + ([str(jar)] if jar else [])
    spark = get_spark(
        name, "local[2]", config={"spark.jars": ",".join(jars), "spark.ui.enabled": "false"}
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark, jar


def _cause(exc: BaseException) -> str:
    """The line of a (Java) exception's text that says what failed."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    for line in lines:
        if "SQLServerException" in line or "SQLException" in line:
            return line[:160]
    return f"{type(exc).__name__}: {lines[0][:120] if lines else ''}"


def jdbc(
    spark: Any,
    emu: Any,
    jar: Path | None,
    out: Path | None,
    *,
    parts: int,
    keys: int,
    existing: bool = False,
) -> Any:
    """Spark's JDBC source with mssql-jdbc over the change table, appended to Delta (``out``;
    ``existing``: to a table created first, untimed, with the rows' schema) or read into the
    ``noop`` sink (``out`` None): ``(seconds, rows)`` or the reason it cannot run."""
    if jar is None:
        return "n/a: could not fetch mssql-jdbc with Maven"
    url = (
        f"jdbc:sqlserver://{emu.host}:{emu.port};databaseName=master;encrypt=false;"
        "trustServerCertificate=true"
    )
    # The change table itself: the same rows fn_cdc_get_all_changes(..., N'all update old')
    # returns over the whole range (the emulator cannot describe SELECT * over a table
    # function, which Spark's JDBC source wraps its query in).
    reader = (
        spark.read.format("jdbc")
        .option("url", url)
        .option("driver", "com.microsoft.sqlserver.jdbc.SQLServerDriver")
        .option("user", "sa")
        .option("password", emu.password)
        .option("dbtable", "cdc.dbo_bench_CT")
    )
    if parts > 1:  # split on the captured key, as a JDBC user would
        reader = (
            reader.option("partitionColumn", "id")
            .option("lowerBound", "0")
            .option("upperBound", str(keys))
            .option("numPartitions", str(parts))
        )
    try:
        started = time.perf_counter()
        if out is None:
            reader.load().write.format("noop").mode("overwrite").save()
            seconds = time.perf_counter() - started
            return (seconds, reader.load().count())  # counted by another read, not timed
        if existing:
            reader.load().limit(0).write.format("delta").save(str(out))
            started = time.perf_counter()
        reader.load().write.format("delta").mode("append").save(str(out))
        seconds = time.perf_counter() - started
        return (seconds, spark.read.format("delta").load(str(out)).count())
    except Exception as exc:  # a path that cannot run here is reported, not fatal
        return f"n/a: {_cause(exc)}"


def noop(spark: Any, options: dict[str, str], checkpoint: Path) -> Any:
    """The ``mssql_cdc`` change source read into the ``noop`` sink (availableNow):
    ``((seconds, rows read), (seconds of its triggers, rows read))`` (the first with the
    streaming query's start and stop, the second without them), or the reason it cannot run.
    Rows and trigger times come from the query's progress, which keeps its last 100 batches:
    one here (no ``maxCommitsPerBatch``)."""
    from _noop import start_noop
    from mssql_cdc.source.registration import register

    register(spark)
    try:
        started = time.perf_counter()
        query = start_noop(spark, options, checkpoint)
        query.awaitTermination()
        seconds = time.perf_counter() - started
    except Exception as exc:  # reported, not fatal, as the JDBC path's failures
        return f"n/a: {_cause(exc)}"
    batches = query.recentProgress
    for progress in batches:
        print(f"#   noop batch {progress['batchId']}: durations ms {dict(progress['durationMs'])}")
    rows = sum(int(p["numInputRows"]) for p in batches)
    triggers = sum(int(p["durationMs"].get("triggerExecution", 0)) for p in batches) / 1000
    return ((seconds, rows), (triggers, rows))


def main() -> None:  # noqa: PLR0915 (one straight script)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="change rows to land")
    parser.add_argument("--partitions", type=int, nargs="+", default=[2])
    parser.add_argument("--facts", action="store_true", help="to_delta with a facts table")
    parser.add_argument(
        "--rows-per-commit", type=int, default=1000, help="change rows per source commit"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        help="run every path this many times in turn; the table shows the last round (the "
        "first warms the JVM: its JIT compiles Spark's, Delta's and Parquet's code then)",
    )
    parser.add_argument(
        "--max-commits-per-batch",
        type=int,
        default=None,
        help="to_delta's maxCommitsPerBatch (Spark 4.2+): a catch-up run of several micro-batches "
        "instead of one",
    )
    parser.add_argument(
        "--whole-replies",
        action="store_true",
        help="also run to_delta with the emulator encoding each reply whole before sending it "
        "(as before ADR 0175: no overlap of its encoding with the read), for comparison",
    )
    parser.add_argument(
        "--existing",
        action="store_true",
        help="land into tables that exist: to_delta's bronze and facts tables are created first "
        "(untimed) by another stream reading only the last source commit, and the JDBC path and "
        "the floor append to a table created (untimed) with their schema",
    )
    parser.add_argument(
        "--noop",
        action="store_true",
        help="also read each source into Spark's noop sink (the read paths without Delta)",
    )
    args = parser.parse_args()

    class Steps(logging.Handler):  # the sink's per-batch DEBUG line, printed as it comes
        def emit(self, record: logging.LogRecord) -> None:
            if "micro-batch" in record.getMessage() and " ms (" in record.getMessage():
                print(f"#   sink {record.getMessage()}", flush=True)

    sink_log = logging.getLogger("mssql_cdc.sink")
    sink_log.setLevel(logging.DEBUG)
    sink_log.addHandler(Steps())

    from _fill import fill
    from mssql_cdc import _native, stream
    from mssql_cdc.emulator import Emulator
    from mssql_cdc.emulator.server import render

    streamed = render.FIRST_ROWS
    work = Path(tempfile.mkdtemp(prefix="mssql-cdc-e2e-"))
    spark, jar = bench_spark("mssql-cdc-e2e")
    results: dict[str, tuple[float, int] | str] = {}
    with Emulator() as emu:
        text = f"Server=tcp:{emu.host},{emu.port};Encrypt=no"
        started = time.perf_counter()
        commits = fill(emu, args.rows, rows_per_commit=args.rows_per_commit)
        with _native.connect(text, user="sa", password=emu.password) as conn:
            count = conn.scalar("SELECT COUNT(*) FROM cdc.dbo_bench_CT")
            # the commit before the last: --existing's first stream reads only the last one
            before_last = (
                "0x"
                + bytes(
                    conn.scalar(
                        "SELECT MAX(__$start_lsn) FROM cdc.dbo_bench_CT WHERE __$start_lsn < "
                        "(SELECT MAX(__$start_lsn) FROM cdc.dbo_bench_CT)"
                    )
                    or bytes(10)
                )
                .hex()
                .upper()
            )
        print(
            f"# source: {count:,} change rows in {commits:,} commits ready in "
            f"{time.perf_counter() - started:.1f} s"
        )

        for round_ in range(1, args.rounds + 1):
            tag = f"r{round_}"
            for parts in args.partitions:
                options = {
                    "connectionString": text,
                    "user": "sa",
                    "password": emu.password,
                    "captureInstance": "dbo_bench",
                    "numPartitions": str(parts),
                }
                if args.max_commits_per_batch:
                    options["maxCommitsPerBatch"] = str(args.max_commits_per_batch)
                variants = [("to_delta", False)]
                if args.whole_replies:
                    variants.append(("to_delta whole", True))
                for label, whole in variants:
                    name = f"{tag}p{parts}{'w' if whole else ''}"
                    if args.existing:  # untimed: bronze and facts created by another stream
                        pre = stream(spark, {**options, "startingLsn": before_last}).to_delta(
                            str(work / f"bronze{name}"),
                            app_id=f"pre{name}",
                            checkpoint=str(work / f"precp{name}"),
                            facts_table=str(work / f"facts{name}") if args.facts else None,
                            trigger={"availableNow": True},
                        )
                        pre.awaitTermination()
                    held = (
                        spark.read.format("delta").load(str(work / f"bronze{name}")).count()
                        if args.existing
                        else 0
                    )
                    # whole replies: every row in a result's first piece
                    render.FIRST_ROWS = sys.maxsize if whole else streamed
                    started = time.perf_counter()
                    query = stream(spark, options).to_delta(
                        str(work / f"bronze{name}"),
                        app_id=f"e2e{name}",
                        checkpoint=str(work / f"cp{name}"),
                        facts_table=str(work / f"facts{name}") if args.facts else None,
                        trigger={"availableNow": True},
                    )
                    query.awaitTermination()
                    seconds = time.perf_counter() - started
                    render.FIRST_ROWS = streamed
                    for progress in query.recentProgress:
                        durations = dict(progress["durationMs"])
                        print(
                            f"# round {round_} {label} p={parts} batch {progress['batchId']}: "
                            f"{progress['numInputRows']:,} rows, durations ms {durations}"
                        )
                    landed = (
                        spark.read.format("delta").load(str(work / f"bronze{name}")).count() - held
                    )
                    results[f"{label} p={parts}"] = (seconds, landed)
                    print(f"# round {round_} {label} p={parts}: {landed:,} rows in {seconds:.2f} s")
                results[f"jdbc p={parts}"] = jdbc(
                    spark,
                    emu,
                    jar,
                    work / f"jdbc{name}",
                    parts=parts,
                    keys=args.rows,
                    existing=args.existing,
                )
                print(f"# round {round_} jdbc p={parts}: {results[f'jdbc p={parts}']}", flush=True)
                if args.noop:
                    read = noop(spark, options, work / f"np{name}")
                    whole, batches = read if isinstance(read, tuple) else (read, read)
                    results[f"mssql_cdc noop p={parts}"] = whole
                    results[f"  its triggers p={parts}"] = batches
                    results[f"jdbc noop p={parts}"] = jdbc(
                        spark, emu, jar, None, parts=parts, keys=args.rows
                    )
                    print(
                        f"# round {round_} noop p={parts}: mssql_cdc "
                        f"{results[f'mssql_cdc noop p={parts}']}, jdbc "
                        f"{results[f'jdbc noop p={parts}']}",
                        flush=True,
                    )

            # the floor: the landed rows cached in executor memory, then appended (collecting a
            # million rows to the driver as Arrow first fails on a small driver: TaskResultLost)
            first = f"{tag}p{args.partitions[0]}"
            df = spark.read.format("delta").load(str(work / f"bronze{first}")).cache()
            cached = df.count()
            if args.existing:  # untimed: the table with the rows' schema
                df.limit(0).write.format("delta").save(str(work / f"floor{tag}"))
            started = time.perf_counter()
            df.write.format("delta").mode("append").save(str(work / f"floor{tag}"))
            results["floor"] = (time.perf_counter() - started, cached)
            df.unpersist()
            print(f"# round {round_} floor: {cached:,} rows in {results['floor'][0]:.2f} s")

    print(f"# the table: round {args.rounds} of {args.rounds}")
    floor_seconds = results["floor"][0] if isinstance(results["floor"], tuple) else None
    print(f"{'path':<22}{'seconds':>9}{'rows':>10}{'rows/s':>12}{'x floor':>9}")
    for name, value in results.items():
        if isinstance(value, str):
            print(f"{name:<22}  {value}")
            continue
        seconds, rows = value
        ratio = f"{seconds / floor_seconds:.1f}" if floor_seconds else "-"
        print(f"{name:<22}{seconds:>9.2f}{rows:>10,}{rows / seconds:>12,.0f}{ratio:>9}")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
