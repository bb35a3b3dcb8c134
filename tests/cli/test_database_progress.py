"""``mssql-cdc stream --database-stream``'s live progress without Spark: the figures taken from
the sink's report of each database batch, one plain line per batch that read or parked a table
off a terminal, a refreshing panel on one, and the query's own progress alone when no report
comes (Spark Connect, where the sink runs in the server)."""

from __future__ import annotations

import io
import json

from mssql_cdc.cli.database_progress import (
    DatabaseProgress,
    DatabaseProgressPrinter,
    database_line,
    follow_database,
    progress_line,
)
from mssql_cdc.sink.database_report import DatabaseBatchReport, observe_batches, publish


def report(batch, tables=(), rows=0, *, parked=(), total=0, stream="sales-db"):
    return DatabaseBatchReport(
        stream,
        batch,
        f"0x{batch:020X}",
        "2026-01-01T00:00:00.000Z",
        tuple(tables),
        rows,
        0,
        tuple(parked),
        total,
        12,
    )


class FakeQuery:
    def __init__(self, name, progress=()):
        self.name = name
        self.recentProgress = list(progress)
        self.isActive = True


def test_the_state_adds_up_the_reports():
    p = DatabaseProgress("sales-db")
    p.take(report(0, ["dbo_orders", "dbo_other"], 12))
    after = p.take(report(1, ["dbo_orders"], 3, parked=["dbo_other"], total=1))
    assert (after.batches, after.rows, after.last_rows, after.parked) == (2, 15, 3, 1)
    assert after.last_tables == ("dbo_orders",)
    assert after.offset == "0x00000000000000000001"
    assert p.batches == 2
    assert after is not p


def test_the_plain_line_names_the_tables_the_rows_and_the_parked():
    p = DatabaseProgress("sales-db")
    one = report(7, [f"dbo_t{i}" for i in range(7)], 1_234, parked=["dbo_x"], total=1)
    assert database_line(p.take(one), one) == (
        "sales-db: batch 7 read 7 tables (dbo_t0, dbo_t1, dbo_t2, dbo_t3, dbo_t4 and 2 more), "
        "1,234 rows, to 0x00000000000000000007 (2026-01-01T00:00:00.000Z); parked dbo_x; "
        "1 batch, 1,234 rows so far"
    )


def ran(batch, lsn="0x" + "A" * 20, commit_ts="t"):
    return {
        "batchId": batch,
        "durationMs": {"addBatch": 3},
        "sources": [{"endOffset": json.dumps({"lsn": lsn, "commit_ts": commit_ts})}],
    }


def test_off_a_terminal_one_line_per_batch_that_read_or_parked_a_table():
    out = io.StringIO()
    with DatabaseProgressPrinter("sales-db", out, live=False, interval=60) as printer:
        publish(report(0, ["dbo_orders"], 5))  # before the query is attached: counted
        printer.attach(FakeQuery("sales-db", [ran(0)]))
        publish(report(1))  # heartbeats only: no line
        publish(report(2, parked=["dbo_other"], total=1))
        publish(report(3, ["dbo_orders"], 1, stream="other-db"))  # another stream's
    publish(report(4, ["dbo_orders"], 1))  # after the printer stopped: not observed
    lines = out.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "sales-db: batch 0 read 1 table (dbo_orders)",
        "sales-db: batch 2 read 0 tables",
    ]
    assert "parked dbo_other; 3 batches, 5 rows so far" in lines[1]


def test_on_a_terminal_a_panel_shows_the_stream():
    out = io.StringIO()
    with DatabaseProgressPrinter("sales-db", out, live=True, interval=60, width=160) as printer:
        printer.attach(FakeQuery("sales-db"))
        publish(report(0, ["dbo_orders", "dbo_other"], 42, parked=["dbo_x"], total=1))
    text = out.getvalue()
    assert "sales-db" in text
    assert "42" in text
    assert "0x00000000000000000000" in text
    assert "running" in text
    assert "batch 0 read" not in text  # no plain lines on a terminal


def test_without_reports_the_batches_and_offset_of_the_query_progress():
    """Spark Connect: the sink runs in the server; each batch id counts once, though Spark
    keeps only its last progress events (dropped ones do not uncount), and an offset may be a
    Python dict literal (PySpark 4.0/4.1's Connect client)."""
    idle = {"batchId": 6, "durationMs": {"latestOffset": 1}, "sources": [{}]}
    p = DatabaseProgress("sales-db")
    seen = p.take_progress([ran(5), idle])
    assert [s.last_batch for s in seen] == [5]
    assert (p.batches, p.offset, p.commit_ts, p.reported) == (1, "0x" + "A" * 20, "t", False)
    literal = dict(ran(6), sources=[{"endOffset": str({"lsn": "0x" + "B" * 20, "commit_ts": "u"})}])
    seen = p.take_progress([literal])  # batch 5's event dropped by Spark since
    assert [s.last_batch for s in seen] == [6]
    assert (p.batches, p.offset, p.commit_ts) == (2, "0x" + "B" * 20, "u")
    assert progress_line(seen[0]) == (
        f"sales-db: batch 6 ran, to 0x{'B' * 20} (u); 2 batches so far (tables and rows: see "
        "the facts table)"
    )
    p.take(report(7, ["dbo_orders"], 1))
    assert p.take_progress([ran(8)]) == []  # reports arrive: they win
    assert (p.batches, p.offset) == (3, "0x00000000000000000007")


def test_off_a_terminal_without_reports_one_line_per_batch_of_the_query():
    out = io.StringIO()
    query = FakeQuery("sales-db")
    with DatabaseProgressPrinter("sales-db", out, live=False, interval=60) as printer:
        printer.attach(query)
        query.recentProgress = [ran(0), ran(1)]  # lands after the last look: printed at stop
    assert [line.split(",")[0] for line in out.getvalue().splitlines()] == [
        "sales-db: batch 0 ran",
        "sales-db: batch 1 ran",
    ]


def test_an_observer_that_fails_never_fails_the_batch():
    seen = []

    def broken(_report):
        raise RuntimeError("boom")

    stop_broken, stop_seen = observe_batches(broken), observe_batches(seen.append)
    try:
        publish(report(0))
    finally:
        stop_broken()
        stop_seen()
        stop_seen()  # idempotent
    assert [r.batch_id for r in seen] == [0]


def test_no_progress_follows_nothing():
    assert follow_database("sales-db", io.StringIO(), enabled=False) is None
