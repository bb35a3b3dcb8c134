"""The demo's progress lines without Spark: the workload waits for every stream's first
micro-batch, and the lines count only the rows and batches since (the demo used to print
"0 rows/0 batches" through its whole workload while local Spark was still starting)."""

from __future__ import annotations

import io

import pytest

from mssql_cdc.cli.demo import _printing_progress, _progress, _warm_up


class FakeQuery:
    def __init__(self, progress, active=False):
        self.recentProgress = progress
        self.status = {"isTriggerActive": active, "message": "Processing new data"}
        self.waited = 0

    def processAllAvailable(self):  # noqa: N802 (Spark's name)
        self.waited += 1


def test_warm_up_waits_for_every_stream_and_returns_the_next_batch_ids():
    queries = {
        "Sales.Customer": FakeQuery([{"batchId": 0, "numInputRows": 0}]),
        "Production.Product": FakeQuery([]),
    }
    out = io.StringIO()
    assert _warm_up(queries, out, started=0.0) == {"Sales.Customer": 1, "Production.Product": 0}
    assert [q.waited for q in queries.values()] == [1, 1]
    assert out.getvalue().startswith("streams ready after ")


def test_progress_counts_rows_and_batches_landed_since_the_workload_started():
    customer = FakeQuery(
        [
            {"batchId": 0, "numInputRows": 500},  # before the workload: left out
            {"batchId": 1, "numInputRows": 12},
            {"batchId": 2, "numInputRows": 30},
        ]
    )
    product = FakeQuery([{"batchId": 0, "numInputRows": 0}], active=True)
    line = _progress(
        {"Sales.Customer": customer, "Production.Product": product},
        {"Sales.Customer": 1, "Production.Product": 1},
    )
    assert line == (
        "Sales.Customer 42 rows in 2 batches | Production.Product 0 rows in 0 batches (+1 running)"
    )


def test_progress_is_printed_while_the_work_runs_and_its_error_comes_back():
    query = FakeQuery([{"batchId": 0, "numInputRows": 3}])
    out = io.StringIO()
    got = _printing_progress(lambda: 7, {"t": query}, {"t": 0}, out, "test")
    assert got == 7
    assert out.getvalue().endswith("] t 3 rows in 1 batches\n")

    def fail():
        raise RuntimeError("workload failed")

    with pytest.raises(RuntimeError, match="workload failed"):
        _printing_progress(fail, {"t": query}, {"t": 0}, io.StringIO(), "test")
