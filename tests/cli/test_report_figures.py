"""``mssql-cdc report`` without Spark: the series drawn from facts rows (an Arrow table with
``facts_history``'s columns), the files it writes, and the dashboard file's generator."""

from __future__ import annotations

import json
import runpy
from datetime import datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest

from mssql_cdc.cli import main
from mssql_cdc.cli.report import render_report, stream_series
from mssql_cdc.sink.facts_table import HISTORY_COLUMNS

pytest.importorskip("matplotlib")

T0 = datetime(2026, 12, 1, 10, 0, 0)
ROOT = Path(__file__).resolve().parents[2]


def facts(rows: list[dict]) -> pa.Table:
    full = [{c: r.get(c) for c in HISTORY_COLUMNS} for r in rows]
    return pa.Table.from_pylist(
        full,
        schema=pa.schema(
            [
                ("app_id", pa.string()),
                ("batch_id", pa.int64()),
                ("event", pa.string()),
                ("rows", pa.int64()),
                ("written_at", pa.timestamp("us")),
                ("duration_ms", pa.int64()),
                ("ingestion_lag_seconds", pa.float64()),
                ("capture_lag_seconds", pa.float64()),
                ("retention_headroom_hours", pa.float64()),
                ("target", pa.string()),
                ("detail", pa.string()),
            ]
        ),
    )


def batch(app_id: str, batch_id: int, seconds: float, rows: int, **more) -> dict:
    return {
        "app_id": app_id,
        "batch_id": batch_id,
        "rows": rows,
        "written_at": T0 + timedelta(seconds=seconds),
        "duration_ms": 500,
        "target": f"bronze.{app_id}",
        **more,
    }


SAMPLE = [
    batch("orders", 1, 10, 40, ingestion_lag_seconds=2.0, retention_headroom_hours=71.9),
    batch("orders", 0, 0, 5, ingestion_lag_seconds=0.5, retention_headroom_hours=72.0),
    batch("orders", 2, 30, 0),
    {"app_id": "orders", "event": "bootstrap", "rows": 100, "written_at": T0},
    {"app_id": "orders.g1", "event": "resnapshot", "written_at": T0 + timedelta(seconds=20)},
    {"app_id": "orders", "event": "snapshot_chunk", "rows": 9, "written_at": T0},
    {"app_id": "orders", "event": "schema_change", "detail": "ADD c",
     "written_at": T0 + timedelta(seconds=30)},
    batch("people", 0, 5, 7, capture_lag_seconds=3.0),
]  # fmt: skip


def test_series_per_stream_in_time_order_with_rates_and_events():
    orders, people = stream_series(facts(SAMPLE))
    assert (orders.app_id, orders.target, people.app_id) == ("orders", "bronze.orders", "people")
    assert orders.rows == [5, 40, 0]
    # the first row over its own duration, the others over the time since the previous row
    assert orders.rows_per_second == [10.0, 4.0, 0.0]
    assert orders.ingestion_lag_seconds == [0.5, 2.0, None]
    assert orders.retention_headroom_hours == [72.0, 71.9, None]
    assert orders.duration_seconds == [0.5, 0.5, 0.5]
    # a re-snapshot's generation id is drawn with its stream; chunks are not drawn
    assert [(e[1], e[2]) for e in orders.events] == [
        ("bootstrap", ""),
        ("resnapshot", ""),
        ("schema_change", "ADD c"),
    ]
    assert (people.total_rows, people.capture_lag_seconds) == (7, [3.0])


@pytest.mark.parametrize("suffix", [".png", ".svg", ".html"])
def test_report_files(tmp_path, suffix):
    out = render_report(facts(SAMPLE), tmp_path / f"r{suffix}", title="t <1>")
    data = out.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG")
    elif suffix == ".svg":
        assert b"<svg" in data
    else:
        page = data.decode()
        assert page.startswith("<!DOCTYPE html>")
        assert "<title>t &lt;1&gt;</title>" in page
        assert page.count("<svg") == 1
        assert "<script" not in page
        assert "http://" not in page.split("<svg")[0]  # nothing fetched
        assert "<td>orders</td><td>bronze.orders</td><td>3</td><td>45</td>" in page
        assert "<td>re-snapshot landed</td><td>resnapshot</td>" in page


def test_one_batch_is_drawn_in_a_window_around_it_and_named_in_the_singular():
    import matplotlib.dates as mdates

    from mssql_cdc.cli.report import report_figure

    fig = report_figure(stream_series(facts([batch("orders", 0, 0, 1)])), "t")
    low, high = (mdates.num2date(v).replace(tzinfo=None) for v in fig.axes[-1].get_xlim())
    # matplotlib alone would draw one point on an axis of several years
    assert (low, high) == (T0 - timedelta(minutes=10), T0 + timedelta(minutes=10))
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert labels == ["orders: 1 batch, 1 row"]


def test_an_empty_facts_table_still_draws(tmp_path):
    out = render_report(facts([]), tmp_path / "r.png")
    assert out.read_bytes().startswith(b"\x89PNG")


def test_unknown_extension_is_a_one_line_error_before_spark(tmp_path, capsys):
    out = str(tmp_path / "r.pdf")
    assert main(["report", "--facts", str(tmp_path / "f"), "--out", out]) == 2  # as argparse
    err = capsys.readouterr().err
    assert "--out" in err
    assert ".html, .png, .svg" in err


def test_dashboard_file_is_what_its_generator_writes():
    gen = runpy.run_path(str(ROOT / "tools" / "monitoring_dashboard.py"))
    text = (ROOT / "sql" / "monitoring" / "mssql-cdc.lvdash.json").read_text()
    assert text == gen["dashboard_text"]()
    dashboard = json.loads(text)
    names = {d["name"] for d in dashboard["datasets"]}
    for item in dashboard["pages"][0]["layout"]:
        for q in item["widget"]["queries"]:
            assert q["query"]["datasetName"] in names
