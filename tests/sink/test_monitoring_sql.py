"""The monitoring queries shipped in sql/monitoring/ run on Spark against a facts table written
by the sink's own row builders and writer, and return the figures the rows hold; the Databricks
dashboard's widgets ask only for columns those queries return (one Spark file)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mssql_cdc.sink.facts import (
    BatchCounts,
    BatchRow,
    Bootstrapped,
    EventRow,
    FoldedMetrics,
    Resnapshotted,
    facts_row,
)
from mssql_cdc.sink.facts_table import append_facts
from mssql_cdc.sink.tables import table_ref

SQL = Path(__file__).resolve().parents[2] / "sql" / "monitoring"
QUERIES = sorted(p.stem for p in SQL.glob("*.sql"))


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _batch(
    app_id, batch_id, written_at, *, rows=3, headroom=72.0, lag=1.0, behind=None, warnings=()
):
    """A micro-batch row whose newest change read was committed ``behind`` before the row
    (``lag`` seconds by default)."""
    metrics = FoldedMetrics(
        end_commit_ts=written_at - (behind or timedelta(seconds=lag)),
        read_seconds=2.0,
        read_mb=1.5,
        network_wait_ms=500,
        retention_headroom_hours=headroom,
        capture_lag_seconds=4.0,
        ingestion_lag_seconds=lag,
        warnings=list(warnings),
    )
    return facts_row(
        BatchRow(
            batch_id=batch_id,
            counts=BatchCounts(rows=rows, inserts=rows),
            metrics=metrics,
            started_at=written_at - timedelta(seconds=2),
            duration_ms=2000,
        ),
        app_id=app_id,
        target=f"bronze.{app_id}",
        written_at=written_at,
    )


@pytest.fixture(scope="module")
def facts(spark, tmp_path_factory) -> str:
    """Three streams: ``healthy`` (current), ``stale`` (its newest row 30 min old, little
    headroom, a large lag, a warning twice) and ``bare`` (no metrics); plus events."""
    now = _now()
    path = str(tmp_path_factory.mktemp("monitoring") / "facts")
    ref = table_ref(path, "facts")
    rows = [
        _batch("healthy", 0, now - timedelta(minutes=2), rows=10),
        _batch("healthy", 1, now - timedelta(minutes=1), rows=30),
        _batch("stale", 0, now - timedelta(minutes=40), warnings=["w: option x ignored"]),
        _batch(
            "stale",
            1,
            now - timedelta(minutes=30),
            headroom=20.0,
            lag=7200.0,
            behind=timedelta(hours=50),
            warnings=["w: option x ignored"],
        ),
        facts_row(
            BatchRow(
                batch_id=0,
                counts=BatchCounts(rows=0),
                metrics=FoldedMetrics(),
                started_at=now,
                duration_ms=5,
            ),
            app_id="bare",
            target="bronze.bare",
            written_at=now,
        ),
        facts_row(
            Bootstrapped(
                lsn="0x00000000000000000010",
                commit_ts=now - timedelta(minutes=3),
                rows=100,
                started_at=now - timedelta(minutes=3),
                duration_ms=900,
            ),
            app_id="healthy",
            target="bronze.healthy",
            written_at=now - timedelta(minutes=3),
        ),
        facts_row(
            Resnapshotted(
                generation=1,
                lsn="0x00000000000000000020",
                commit_ts=now - timedelta(minutes=35),
                rows=5,
                started_at=now - timedelta(minutes=36),
                duration_ms=900,
                lost_from_ts=now - timedelta(days=4),
                lost_to_ts=now - timedelta(days=3),
            ),
            app_id="stale.g1",
            target="bronze.stale",
            written_at=now - timedelta(minutes=35),
        ),
        *[
            facts_row(
                e, app_id="stale", target="bronze.stale", written_at=now - timedelta(minutes=30)
            )
            for e in EventRow.from_files(
                1, [{"kind": "schema_change", "key": "k", "lsn": "0x0A", "detail": "ADD c"}]
            )
        ],
    ]
    append_facts(spark, ref, rows, None)
    return path


def query(name: str, facts: str) -> str:
    """The query with its ``:facts`` parameter given as Spark outside Databricks SQL takes it
    (docs/monitoring.md): the table name as a string literal."""
    text = (SQL / f"{name}.sql").read_text()
    assert "IDENTIFIER(:facts)" in text
    return text.replace("IDENTIFIER(:facts)", f"IDENTIFIER('delta.`{facts}`')")


def run(spark, name: str, facts: str) -> list[dict]:
    return [r.asDict(recursive=True) for r in spark.sql(query(name, facts)).collect()]


def test_health_query_flags_what_the_newest_rows_say(spark, facts):
    before = _now()
    rows = {r["app_id"]: r for r in run(spark, "health", facts)}
    after = _now()
    assert sorted(rows) == ["bare", "healthy", "stale"]
    healthy, stale, bare = rows["healthy"], rows["stale"], rows["bare"]
    assert (healthy["last_batch"], healthy["last_rows"], healthy["target"]) == (
        1,
        30,
        "bronze.healthy",
    )
    assert healthy["problems"] == []
    assert healthy["unhealthy"] == 0
    # hours since the row was written, by the query's clock (between before and after)
    written = healthy["last_written_at"]
    since = healthy["hours_since_last"]
    slack = 1e-6
    assert (before - written).total_seconds() / 3600 - slack <= since
    assert since <= (after - written).total_seconds() / 3600 + slack
    # 72 h of retention less the hours since the newest change read (1 s before the row)
    assert healthy["headroom_left_hours"] == pytest.approx(72 - since - 1 / 3600)
    assert (healthy["ingestion_lag_seconds"], healthy["capture_lag_seconds"]) == (1.0, 4.0)
    assert stale["problems"] == [
        "no facts row for 15 min",
        "retention headroom under 24 h",
        "ingestion lag over 1 h",
    ]
    assert stale["unhealthy"] == 1
    assert stale["headroom_left_hours"] == pytest.approx(72 - 50 - stale["hours_since_last"])
    assert bare["problems"] == ["metrics missing"]


def test_events_query_lists_events_and_flags_data_loss(spark, facts):
    rows = run(spark, "events", facts)
    assert [(r["app_id"], r["event"], r["alert"]) for r in rows] == [
        ("healthy", "bootstrap", 0),
        ("stale", "schema_change", 0),
        ("stale.g1", "resnapshot", 1),
    ]
    assert rows[1]["detail"] == "ADD c"
    assert rows[2]["lost_to_ts"] is not None


def test_warnings_query_counts_each_warning_per_stream(spark, facts):
    rows = run(spark, "warnings", facts)
    assert [(r["app_id"], r["warning"], r["recorded"]) for r in rows] == [
        ("stale", "w: option x ignored", 2)
    ]


def test_timeline_query_computes_rates_and_network_share(spark, facts):
    rows = [r for r in run(spark, "timeline", facts) if r["app_id"] == "healthy"]
    assert [(r["batch_id"], r["rows"]) for r in rows] == [(0, 10), (1, 30)]
    assert rows[0]["rows_per_second"] == pytest.approx(10 / 2.0)  # first: over its duration
    assert rows[1]["rows_per_second"] == pytest.approx(30 / 60.0, rel=1e-3)  # a minute later
    assert rows[1]["network_share"] == pytest.approx(0.25)
    assert rows[1]["duration_seconds"] == 2.0


def test_dashboard_widgets_ask_for_columns_the_queries_return(spark, facts):
    dashboard = json.loads((SQL / "mssql-cdc.lvdash.json").read_text())
    datasets = {d["name"]: d for d in dashboard["datasets"]}
    assert sorted(datasets) == QUERIES
    columns = {}
    for name in QUERIES:
        text = (SQL / f"{name}.sql").read_text()
        assert "".join(datasets[name]["queryLines"]) == text
        columns[name] = set(spark.sql(query(name, facts)).columns)
    for item in dashboard["pages"][0]["layout"]:
        for q in item["widget"]["queries"]:
            asked = q["query"]
            for f in asked.get("fields", []):
                used = f["expression"].split("`")[1]
                assert used in columns[asked["datasetName"]], (item["widget"]["name"], used)
