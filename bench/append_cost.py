"""What one small Delta append costs, option by option: where a tiny micro-batch's fixed cost
beyond a bare append goes.

Appends ``--rows`` rows (the stream's schema, from memory) to one Delta table per variant, the
variants in a rotating order, ``--appends`` times each after ``--warmup`` untimed appends, and
counts the Spark jobs each append ran (a job group per append). Before each timed append the
table's Delta state is computed first (not timed), as the sink's warmer does between batches
(ADR 0177), except for ``txn, cold``, where the append computes it itself as open-source Delta
does inside every commit with a transaction id.

    .venv/bin/python bench/append_cost.py [--rows 10] [--appends 6] [--warmup 2]

Variants (each adds one thing to the one above, unless noted):

* ``bare``: ``df.write.format("delta").mode("append")``;
* ``txn, cold``: with ``txnAppId``/``txnVersion``, the state not computed ahead;
* ``txn``: the same with the state computed ahead;
* ``txn, meta, merge``: with ``userMetadata`` and ``mergeSchema`` (the bronze append's options);
* ``+ sink columns``: with ``_batch_id``, ``_snapshot``, ``_chunk`` added;
* ``+ observed counts``: with the facts row's counts observed on the write (``ObservedCounts``),
  and their result waited for: the sink's whole bronze append;
* ``facts row``: one facts row from Python (``FactsTable.append``, the facts step's commit),
  state computed ahead.

Prints the median seconds and Spark jobs per append and the ratio to ``bare``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from tiny_batches import SCHEMA, rows_of, small_tables_session

VARIANTS = (
    "bare",
    "txn, cold",
    "txn",
    "txn, meta, merge",
    "+ sink columns",
    "+ observed counts",
    "facts row",
)


def main() -> None:  # noqa: PLR0915 (one straight script)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10)
    parser.add_argument("--appends", type=int, default=6, help="timed appends per variant")
    parser.add_argument("--warmup", type=int, default=2, help="untimed appends per variant")
    args = parser.parse_args()

    from mssql_cdc.sink.bronze import with_sink_columns
    from mssql_cdc.sink.counts import ObservedCounts
    from mssql_cdc.sink.facts import BatchCounts, BatchRow, FoldedMetrics, utc_now
    from mssql_cdc.sink.facts_table import FactsTable
    from mssql_cdc.sink.tables import TableRef, Txn, table_ref
    from mssql_cdc.sink.txn_ids import compute_transactions

    work = Path(tempfile.mkdtemp(prefix="mssql-cdc-append-"))
    spark = small_tables_session("mssql-cdc-append-cost")
    tracker = spark.sparkContext.statusTracker()
    tables = {v: table_ref(str(work / f"t{i}"), "target") for i, v in enumerate(VARIANTS)}
    facts = FactsTable(spark, tables["facts row"], seen=set())

    def append(variant: str, n: int) -> None:
        ref: TableRef = tables[variant]
        df = spark.createDataFrame(rows_of(n, args.rows), SCHEMA)
        txn = Txn("bench", n)
        if variant == "bare":
            ref.append(df, None)
        elif variant in ("txn, cold", "txn"):
            (
                df.write.format("delta")
                .mode("append")
                .option("txnAppId", txn.app_id)
                .option("txnVersion", txn.version)
                .save(str(ref.path))
            )
        elif variant == "txn, meta, merge":
            ref.append(df, txn, '{"app_id": "bench"}', merge_schema=True)
        elif variant == "+ sink columns":
            out = with_sink_columns(df, batch_id=n, snapshot=None)
            ref.append(out, txn, '{"app_id": "bench"}', merge_schema=True)
        elif variant == "+ observed counts":
            observed = ObservedCounts(with_sink_columns(df, batch_id=n, snapshot=None))
            ref.append(observed.df, txn, '{"app_id": "bench"}', merge_schema=True)
            if observed.result() is None:
                raise RuntimeError("no observed counts")
        else:
            row = BatchRow(n, BatchCounts(rows=args.rows), FoldedMetrics(), utc_now(), 5)
            facts.append([row], app_id="bench", target="t", txn=txn, metadata="{}")

    def timed(variant: str, n: int) -> tuple[float, int]:
        ref = tables[variant]
        if variant != "txn, cold" and ref.path is not None and Path(ref.path).exists():
            compute_transactions(spark, ref.path)  # ahead, as the sink's warmer: not timed
        group = f"append-{uuid.uuid4().hex}"
        spark.sparkContext.setJobGroup(group, variant)
        started = time.perf_counter()
        append(variant, n)
        seconds = time.perf_counter() - started
        jobs = len(tracker.getJobIdsForGroup(group))
        return seconds, jobs

    results: dict[str, list[tuple[float, int]]] = {v: [] for v in VARIANTS}
    for n in range(args.warmup + args.appends):
        shift = n % len(VARIANTS)
        for variant in VARIANTS[shift:] + VARIANTS[:shift]:  # a rotating order
            measured = timed(variant, n)
            if n >= args.warmup:
                results[variant].append(measured)
        print(f"# round {n} done", flush=True)

    bare = statistics.median(s for s, _ in results["bare"])
    print(f"{args.rows} rows per append, medians of {args.appends}")
    print(f"{'append':<22}{'seconds':>9}{'x bare':>8}{'jobs':>6}")
    for variant in VARIANTS:
        seconds = statistics.median(s for s, _ in results[variant])
        jobs = statistics.median(j for _, j in results[variant])
        print(f"{variant:<22}{seconds:>9.3f}{seconds / bare:>8.2f}{jobs:>6.0f}")
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
