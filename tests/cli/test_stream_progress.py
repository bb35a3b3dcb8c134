"""``mssql-cdc stream``'s live progress without Spark: the figures taken from the queries'
progress events, one plain line per micro-batch that read rows when the output is not a
terminal, and a refreshing panel (rich) when it is."""

from __future__ import annotations

import io
import json

from mssql_cdc.cli.progress import ProgressPrinter, StreamProgress, batch_line, follow


def event(batch, rows, *, end="", newest="", speed=None):
    source = {
        "endOffset": json.dumps({"lsn": f"0x{batch:020X}", "commit_ts": end}),
        "latestOffset": json.dumps({"lsn": "0x" + "F" * 20, "commit_ts": newest}),
    }
    return {
        "batchId": batch,
        "numInputRows": rows,
        "processedRowsPerSecond": speed,
        "sources": [source],
    }


class FakeQuery:
    def __init__(self, name, progress):
        self.name = name
        self.recentProgress = progress
        self.isActive = True
        self.status = {"message": "Waiting for data to arrive", "isTriggerActive": False}


def test_each_batch_that_read_rows_counts_once_and_idle_events_do_not():
    p = StreamProgress("orders")
    landed = p.update(
        [
            event(
                0, 5, end="2026-01-01T00:00:00.000Z", newest="2026-01-01T00:00:10.500Z", speed=50.0
            ),
            event(1, 0),  # an idle trigger's event: the next batch's id, no rows
        ]
    )
    assert [(x.last_batch, x.last_rows) for x in landed] == [(0, 5)]
    assert (p.batches, p.rows, p.rows_per_second, p.lag_seconds) == (1, 5, 50.0, 10.5)
    assert p.offset == "0x00000000000000000000"
    # batch 1 then runs with rows; the events already seen are not counted again
    landed = p.update([event(0, 5), event(1, 0), event(1, 7, end="2026-01-01T00:00:11.000Z")])
    assert [(x.last_batch, x.last_rows) for x in landed] == [(1, 7)]
    assert (p.batches, p.rows, p.lag_seconds) == (2, 12, None)  # no newest commit known


def test_the_plain_line_says_what_landed():
    p = StreamProgress("orders")
    p.update(
        [event(3, 1200, end="2026-01-01T00:00:00Z", newest="2026-01-01T00:00:02Z", speed=800.0)]
    )
    assert batch_line(p) == (
        "orders: batch 3 read 1,200 rows (800.0 rows/s), lag 2.0 s, offset "
        "0x00000000000000000003; 1 batch, 1,200 rows so far"
    )


def test_plain_lines_off_a_terminal_include_the_batches_the_last_look_missed():
    query = FakeQuery("app-orders", [])
    out = io.StringIO()
    with ProgressPrinter({"dbo_orders": query}, out, live=False, interval=60):
        query.recentProgress = [event(0, 2), event(1, 3)]  # lands after the last look
    lines = out.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "app-orders: batch 0 read 2 rows (- rows/s)",
        "app-orders: batch 1 read 3 rows (- rows/s)",
    ]


def test_on_a_terminal_a_panel_shows_every_stream():
    orders = FakeQuery("app-orders", [event(4, 9, speed=3.0)])
    other = FakeQuery("app-other", [])
    out = io.StringIO()
    with ProgressPrinter(
        {"dbo_orders": orders, "dbo_other": other}, out, live=True, interval=60, width=120
    ):
        pass
    text = out.getvalue()
    assert "app-orders" in text
    assert "app-other" in text
    assert "waiting" in text
    assert "batch 4" not in text  # no plain lines on a terminal


def test_no_progress_prints_nothing():
    out = io.StringIO()
    with follow({"t": FakeQuery("t", [event(0, 1)])}, out, enabled=False):
        pass
    assert out.getvalue() == ""


def test_the_closing_line_counts_the_micro_batches_that_ran():
    from mssql_cdc.cli.stream_command import _summary

    def ran(batch, rows):
        return {"batchId": batch, "numInputRows": rows, "durationMs": {"addBatch": 5}}

    idle = {"batchId": 3, "numInputRows": 0, "durationMs": {"latestOffset": 2}}
    # an availableNow rerun that found nothing: Spark reports one trigger without a batch
    assert _summary(FakeQuery("q", [idle])) == "nothing new to read: no micro-batch ran"
    assert _summary(FakeQuery("q", [ran(1, 2), ran(2, 1_000), idle])) == (
        "1,002 rows read in 2 micro-batches (Spark's count)"
    )
    assert _summary(FakeQuery("q", [ran(1, 0)])) == "0 rows read in 1 micro-batch (Spark's count)"
    # Ctrl-C during the first batch: not "nothing new"
    assert _summary(FakeQuery("q", [idle]), stopped=True) == "stopped before a micro-batch finished"
    assert _summary(FakeQuery("q", []), stopped=True) == "stopped before a micro-batch finished"
    assert _summary(FakeQuery("q", [])) == "nothing new to read: no micro-batch ran"
    # Spark keeps the last 100 reports: the count says so once it may have dropped some
    kept = [ran(i, 1) for i in range(60)] + [dict(idle, batchId=60)] * 40
    assert _summary(FakeQuery("q", kept)) == (
        "60 rows read in 60 micro-batches (Spark's count, of its last 100 progress reports)"
    )
    # a session that keeps more reports has dropped none of these
    assert _summary(FakeQuery("q", kept), kept=500) == (
        "60 rows read in 60 micro-batches (Spark's count)"
    )
