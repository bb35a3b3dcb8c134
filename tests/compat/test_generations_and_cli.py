"""A stream is all its generations in ``mssql-cdc status``, ``report`` and the monitoring SQL
(issue 40, item 6); the command line's odd input is one line and exit code 2 (item 8).

The facts table is written straight from its declared columns (``mssql_cdc.sink.FACTS``), so
the rows are exactly the ones described here."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mssql_cdc.cli import main
from mssql_cdc.cli.status import StreamStatus, group_generations
from mssql_cdc.cli.streams import stream_of
from mssql_cdc.sink import FACTS

SQL = Path(__file__).resolve().parents[2] / "sql" / "monitoring"


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _row(app_id: str, batch_id: int, written_at: datetime, rows: int = 3) -> dict[str, object]:
    return {
        "app_id": app_id,
        "batch_id": batch_id,
        "rows": rows,
        "inserts": rows,
        "deletes": 0,
        "updates": 0,
        "started_at": written_at - timedelta(seconds=2),
        "duration_ms": 2000,
        "end_commit_ts": written_at - timedelta(seconds=1),
        "source_max_commit_ts": written_at - timedelta(seconds=1),
        "ingestion_lag_seconds": 0.0,
        "capture_lag_seconds": 1.0,
        "retention_headroom_hours": 72.0,
        "target": "bronze.orders",
        "written_at": written_at,
    }


def _write(spark, path: str, rows: list[dict[str, object]]) -> None:
    names = [n for n, _, _ in FACTS.columns]
    ddl = ", ".join(f"`{n}` {t}" for n, t, _ in FACTS.columns)
    data = [tuple(r.get(n) for n in names) for r in rows]
    spark.createDataFrame(data, ddl).write.format("delta").mode("append").save(path)


@pytest.fixture(scope="module")
def generations(spark, tmp_path_factory) -> str:
    """Stream ``orders``: generation 0 stopped two days ago at batch 40, generation 1 is
    current (batches 0-2); stream ``customers`` never re-snapshotted."""
    path = str(tmp_path_factory.mktemp("gen") / "facts")
    now = _now()
    dead = now - timedelta(days=2)
    rows = [_row("orders", b, dead - timedelta(minutes=41 - b)) for b in range(39, 41)]
    rows += [_row("orders.g1", b, now - timedelta(minutes=3 - b), rows=5) for b in range(3)]
    rows += [_row("customers", 0, now - timedelta(minutes=1), rows=1)]
    _write(spark, path, rows)
    return path


def test_stream_of_asks_the_sinks_id_rule():
    assert stream_of("orders") == "orders"
    assert stream_of("orders.g1") == "orders"
    assert stream_of("orders.g12") == "orders"
    assert stream_of("orders.gx") == "orders.gx"
    assert stream_of("a.g1.g2") == "a.g1"


def test_generations_are_one_stream_with_the_live_generations_figures():
    t = datetime(2026, 3, 1, 12)
    base = {
        "target": "b",
        "last_rows": 1,
        "ingestion_lag_seconds": 0.0,
        "capture_lag_seconds": 1.0,
        "retention_headroom_hours": 70.0,
    }
    grouped = group_generations(
        [
            StreamStatus("o", batches=41, rows=100, last_batch=40, last_written_at=t, **base),
            StreamStatus(
                "o.g1", batches=3, rows=9, last_batch=2, last_written_at=t + timedelta(1), **base
            ),
            StreamStatus("p", batches=1, rows=1, last_batch=0, last_written_at=None, **base),
        ]
    )
    assert [(s.app_id, s.sink_id, s.batches, s.rows, s.last_batch) for s in grouped] == [
        ("o", "o.g1", 44, 109, 2),
        ("p", "p", 1, 1, 0),
    ]


def test_status_shows_one_stream_per_app_id_and_the_dead_generation_breaches_nothing(
    generations, capsys
):
    code = main(["status", "--facts", generations, "--json", "--max-batch-age-minutes", "30"])
    report = json.loads(capsys.readouterr().out)
    streams = {s["app_id"]: s for s in report["streams"]}
    assert sorted(streams) == ["customers", "orders"]
    orders = streams["orders"]
    assert (orders["sink_id"], orders["batches"], orders["rows"], orders["last_batch"]) == (
        "orders.g1",
        5,
        2 * 3 + 3 * 5,
        2,
    )
    assert orders["breaches"] == []
    assert code == 0


def _query(spark, name: str, facts: str) -> list:
    """The query with ``:facts`` as Spark outside Databricks SQL takes it (a string literal)."""
    text = (SQL / f"{name}.sql").read_text()
    return spark.sql(text.replace("IDENTIFIER(:facts)", f"IDENTIFIER('delta.`{facts}`')")).collect()


def test_the_monitoring_sql_groups_generations(spark, generations):
    health = _query(spark, "health", generations)
    by_app = {r["app_id"]: r for r in health}
    assert sorted(by_app) == ["customers", "orders"]
    assert (by_app["orders"]["sink_id"], by_app["orders"]["last_batch"]) == ("orders.g1", 2)
    assert by_app["orders"]["unhealthy"] == 0
    timeline = _query(spark, "timeline", generations)
    orders = [r for r in timeline if r["stream"] == "orders"]
    assert [r["app_id"] for r in orders] == ["orders.g1"] * 3  # generation 0 is 2 days old
    # the generation's first batch is measured from its stream's previous row, not from nothing
    assert orders[1]["rows_per_second"] == pytest.approx(5 / 60.0, rel=1e-3)


def test_report_draws_generations_as_one_stream(generations, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "--facts", generations, "--out", str(out)]) == 0
    page = out.read_text()
    assert "orders.g1" not in page
    assert "orders" in page


@pytest.fixture(scope="module")
def not_facts(spark, tmp_path_factory) -> str:
    path = str(tmp_path_factory.mktemp("notfacts") / "t")
    spark.createDataFrame([(1, "a")], "id INT, name STRING").write.format("delta").save(path)
    return path


@pytest.mark.parametrize("command", ["status", "report"])
def test_a_table_that_is_not_a_facts_table_is_one_line_and_exit_2(
    command, not_facts, tmp_path, capsys
):
    argv = [command, "--facts", not_facts]
    if command == "report":
        argv += ["--out", str(tmp_path / "r.png")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"mssql-cdc {command}: --facts {not_facts!r} is not a facts table")
    assert "app_id" in err
    assert "Traceback" not in err


def test_a_negative_events_count_is_one_line_and_exit_2(generations, capsys):
    assert main(["status", "--facts", generations, "--events", "-1"]) == 2
    err = capsys.readouterr().err
    assert err == "mssql-cdc status: --events must be zero or more, got -1\n"
