"""The demo's progress lines without Spark: the workload waits for every stream's first
micro-batch, and the lines count the change rows in each bronze table from its Delta commits
(Spark's ``numInputRows`` counted the sink's extra read of a batch's first row, so the lines
disagreed with the summary that follows them)."""

from __future__ import annotations

import io
import json

import pytest

from mssql_cdc.cli.demo import _printing_progress, _progress, _warm_up
from mssql_cdc.cli.landed import LandedRows


class FakeQuery:
    def __init__(self, progress, active=False):
        self.recentProgress = progress
        self.status = {
            "isTriggerActive": active,
            "isDataAvailable": active,
            "message": "Processing new data",
        }
        self.waited = 0

    def processAllAvailable(self):  # noqa: N802 (Spark's name)
        self.waited += 1


def commit(table, version, *actions):
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(a) for a in actions) + "\n"
    (log / f"{version:020d}.json").write_text(text, encoding="utf-8")


def write(rows, operation="WRITE"):
    info = {"operation": operation, "operationMetrics": {"numOutputRows": str(rows)}}
    return {"commitInfo": info}


def test_warm_up_waits_for_every_stream():
    queries = {"Sales.Customer": FakeQuery([]), "Production.Product": FakeQuery([])}
    out = io.StringIO()
    _warm_up(queries, out, started=0.0)
    assert [q.waited for q in queries.values()] == [1, 1]
    assert out.getvalue().startswith("streams ready after ")


def test_landed_rows_reads_the_appends_of_new_commits_only(tmp_path):
    table = tmp_path / "bronze"
    landed = LandedRows(table)
    assert (landed.refresh().rows, landed.commits) == (0, 0)  # no table yet
    commit(table, 0, {"commitInfo": {"operation": "CREATE TABLE"}}, {"metaData": {}})
    commit(table, 1, {"add": {"path": "p"}}, write(12))
    assert (landed.refresh().rows, landed.commits) == (12, 1)
    commit(table, 2, write(0))  # an append of nothing is not a batch that landed rows
    commit(table, 3, write(30, "STREAMING UPDATE"))
    commit(table, 4, {"commitInfo": {"operation": "OPTIMIZE"}})
    assert (landed.refresh().rows, landed.commits) == (42, 2)
    assert (landed.refresh().rows, landed.commits) == (42, 2)  # each commit read once
    commit(table, 6, write(5))  # after a gap: version 5 is not written yet
    assert landed.refresh().rows == 42
    commit(table, 5, write(1))
    assert (landed.refresh().rows, landed.commits) == (48, 4)


def test_landed_rows_starts_at_the_oldest_commit_the_log_cleanup_left(tmp_path):
    table = tmp_path / "bronze"
    (table / "_delta_log").mkdir(parents=True)
    (table / "_delta_log" / f"{10:020d}.checkpoint.parquet").write_bytes(b"")
    commit(table, 11, write(4))
    commit(table, 12, write(6))
    landed = LandedRows(table).refresh()
    assert (landed.first_version, landed.rows, landed.commits) == (11, 10, 2)


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('{"commitInfo": {"operation": "WR', "line 1: not a Delta commit action"),
        ("[1, 2]", "a list"),
    ],
)
def test_a_commit_file_that_is_not_delta_actions_is_named(tmp_path, line, error):
    table = tmp_path / "bronze"
    commit(table, 0, write(1))
    (table / "_delta_log" / f"{1:020d}.json").write_text(line + "\n", encoding="utf-8")
    landed = LandedRows(table)
    with pytest.raises(ValueError, match=f"{1:020d}.json .*{error}"):
        landed.refresh()
    queries = {"t": FakeQuery([], active=True)}
    assert _progress(queries, {"t": landed}) == "t ? rows (+1 running)"  # the demo goes on


def test_progress_counts_the_rows_in_bronze_and_the_batches_that_appended_them(tmp_path):
    commit(tmp_path / "customer", 0, write(500))
    commit(tmp_path / "customer", 1, write(42))
    landed = {
        "Sales.Customer": LandedRows(tmp_path / "customer"),
        "Production.Product": LandedRows(tmp_path / "product"),
    }
    queries = {"Sales.Customer": FakeQuery([]), "Production.Product": FakeQuery([], active=True)}
    line = _progress(queries, landed)
    assert line == (
        "Sales.Customer 542 rows in 2 bronze commits | "
        "Production.Product 0 rows in 0 bronze commits (+1 running)"
    )


def test_progress_is_printed_while_the_work_runs_and_its_error_comes_back(tmp_path):
    commit(tmp_path / "t", 0, write(3))
    landed = {"t": LandedRows(tmp_path / "t")}
    out = io.StringIO()
    got = _printing_progress(lambda: 7, {"t": FakeQuery([])}, landed, out, "test", started=0.0)
    assert got == 7
    assert out.getvalue().endswith("] t 3 rows in 1 bronze commit\n")

    def fail():
        raise RuntimeError("workload failed")

    with pytest.raises(RuntimeError, match="workload failed"):
        _printing_progress(fail, {"t": FakeQuery([])}, landed, io.StringIO(), "test", started=0.0)


def test_a_trigger_that_only_polls_is_not_shown_as_running(tmp_path):
    polling = FakeQuery([], active=True)
    polling.status["isDataAvailable"] = False  # caught up: the trigger looks for new data
    assert _progress({"t": polling}, {"t": LandedRows(tmp_path / "t")}) == (
        "t 0 rows in 0 bronze commits"
    )
