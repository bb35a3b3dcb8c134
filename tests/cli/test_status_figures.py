"""``mssql-cdc status`` figures without Spark: the headroom that means "hours before unread
changes are deleted", threshold breaches, the JSON, the text table and the live view."""

from __future__ import annotations

import datetime as dt
import io
import json

import pytest

from mssql_cdc.cli.status import (
    BREACH_EXIT,
    HEADROOM_NOTE,
    LAG_NOTE,
    StreamStatus,
    Thresholds,
    breaches,
    headroom_hours,
    status_json,
    status_text,
)

NOW = dt.datetime(2026, 12, 1, 12, 0, 0)


def stream(**changes) -> StreamStatus:
    base = {
        "app_id": "orders",
        "target": "bronze.orders",
        "batches": 3,
        "rows": 120,
        "last_batch": 2,
        "last_rows": 20,
        "last_written_at": NOW - dt.timedelta(minutes=2),
        "ingestion_lag_seconds": 0.0,
        "capture_lag_seconds": 4.0,
        # a capture instance created 10 minutes ago: its age, not a shortage
        "retention_headroom_hours": 10 / 60,
        "retention_watermark_ts": NOW - dt.timedelta(minutes=10),
        "end_commit_ts": NOW - dt.timedelta(minutes=3),
        "last_duration_ms": 900,
    }
    base.update(changes)
    return StreamStatus(**base)


def test_a_fresh_instance_has_the_whole_retention_ahead_when_the_retention_is_known():
    s = stream()
    # caught up (lag 0) two minutes ago: nothing unread is older than the row
    assert headroom_hours(s, NOW, 72.0) == pytest.approx(72.0 - 2 / 60)
    # without the retention: the facts figure less the hours since, a lower bound
    assert headroom_hours(s, NOW) == pytest.approx(10 / 60 - 2 / 60)


def test_a_stream_behind_counts_from_the_newest_change_it_read():
    s = stream(ingestion_lag_seconds=3600.0, end_commit_ts=NOW - dt.timedelta(hours=50))
    assert headroom_hours(s, NOW, 72.0) == pytest.approx(22.0)
    assert headroom_hours(stream(retention_headroom_hours=None, end_commit_ts=None), NOW) is None


def test_breaches_name_each_threshold_and_unknown_figures_breach():
    t = Thresholds(max_lag_minutes=5, min_headroom_hours=24, max_batch_age_minutes=1)
    behind = stream(ingestion_lag_seconds=600.0, end_commit_ts=NOW - dt.timedelta(hours=60))
    assert breaches(behind, t, NOW, 72.0) == [
        "ingestion lag 10.0 min > 5 min",
        "retention headroom 12.0 h < 24 h",
        "newest batch 2.0 min old > 1 min",
    ]
    assert breaches(stream(), Thresholds(max_lag_minutes=5), NOW) == []
    unknown = stream(ingestion_lag_seconds=None, retention_headroom_hours=None, end_commit_ts=None)
    assert breaches(unknown, Thresholds(max_lag_minutes=5, min_headroom_hours=1), NOW) == [
        "ingestion lag unknown (no metrics on the newest row)",
        "retention headroom unknown (no metrics on the newest row)",
    ]


def test_json_holds_every_figure_and_the_verdict():
    report = status_json(
        [stream(), stream(app_id="late", ingestion_lag_seconds=900.0)],
        [],
        thresholds=Thresholds(max_lag_minutes=5),
        now=NOW,
        retention_hours=72.0,
    )
    text = json.dumps(report)  # serializable as it is
    assert json.loads(text)["ok"] is False
    first, late = report["streams"]
    assert first["breaches"] == []
    assert late["breaches"] == ["ingestion lag 15.0 min > 5 min"]
    assert first["seconds_since_last"] == 120.0
    assert first["headroom_hours"] == pytest.approx(72.0 - 2 / 60)
    assert first["last_written_at"] == "2026-12-01T11:58:00.000"
    assert report["thresholds"]["max_lag_minutes"] == 5


def test_text_explains_the_headroom_when_the_retention_is_not_given():
    text = status_text([stream()], [], now=lambda: NOW)
    assert HEADROOM_NOTE in text
    assert LAG_NOTE in text  # a growing capture lag on a quiet database is not an outage
    assert LAG_NOTE not in status_text([], [], now=lambda: NOW)  # no table, no footnote
    assert "0.1" in text.splitlines()[2]  # 10 min age less 2 min since
    known = status_text([stream()], [], now=lambda: NOW, retention_hours=72.0)
    assert HEADROOM_NOTE not in known
    assert "72.0" in known.splitlines()[2]
    assert known.splitlines()[2].rstrip().endswith("ok")


def test_watch_redraws_and_returns_the_breach_exit_code():
    pytest.importorskip("rich")
    from rich.console import Console

    from mssql_cdc.cli.watch import Screen, watch

    reads = []

    def read():
        reads.append(1)
        lag = 0.0 if len(reads) == 1 else 900.0
        return [stream(ingestion_lag_seconds=lag)], [
            {"written_at": NOW, "app_id": "orders", "event": "bootstrap", "rows": 5, "detail": None}
        ]

    out = io.StringIO()
    code = watch(
        read,
        interval=0.0,
        thresholds=Thresholds(max_lag_minutes=5),
        retention_hours=72.0,
        title="status",
        screen=Screen(
            console=Console(file=out, width=200, force_terminal=False),
            refreshes=2,
            now=lambda: NOW,
        ),
    )
    assert len(reads) == 2
    assert code == BREACH_EXIT
    drawn = out.getvalue()
    assert "ingestion lag 15.0 min > 5 min" in drawn
    assert "bootstrap" in drawn


def test_status_shows_open_chunked_snapshots_with_the_backfill_names():
    from mssql_cdc.cli.snapshot_progress import progress_json, progress_text
    from mssql_cdc.types import BackfillStatus

    planned = BackfillStatus("running", "0x00000010000000200003", 2, 4, 6, 11, 90.0)
    unplanned = BackfillStatus(
        "running", "0x00000010000000200004", 0, None, 0, 0, None, reason="not planned yet"
    )
    progress = [("orders", "bronze.orders", planned), ("items", "bronze.items", unplanned)]
    text = progress_text(progress)
    assert "2 of 4" in text
    assert "0 of ?" in text
    assert "1m30s" in text
    got = progress_json(progress)
    assert got[0] == {
        "app_id": "orders",
        "target": "bronze.orders",
        "state": "running",
        "snapshot": "0x00000010000000200003",
        "chunks_done": 2,
        "chunks_total": 4,
        "rows_done": 6,
        "rows_estimated": 11,
        "eta_seconds": 90.0,
        "waves": 0,
        "reason": None,
        "done": False,
        "paused": False,
    }
    assert (got[1]["chunks_total"], got[1]["reason"]) == (None, "not planned yet")
