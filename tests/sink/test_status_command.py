"""``mssql-cdc status --json`` and its thresholds on a facts table the sink wrote (one Spark
file): the figures are the facts row's, and a breach sets the exit code."""

from __future__ import annotations

import datetime as dt
import json
from datetime import timedelta

from _changes import T0, PartitionMetrics, change, lsn, reading

from mssql_cdc.cli import main
from mssql_cdc.cli.status import BREACH_EXIT
from mssql_cdc.sink import delta_sink


def _metrics() -> list[PartitionMetrics]:
    end = T0 + timedelta(seconds=3)
    return [
        PartitionMetrics(
            lsn(0),
            lsn(3),
            rows=2,
            read_seconds=0.5,
            read_mb=1.0,
            network_wait_ms=3,
            last=True,
            end_lsn=lsn(3),
            end_commit_ts=end.isoformat() + "Z",
            retention_watermark_ts=(end - timedelta(hours=72)).isoformat() + "Z",
            retention_headroom_hours=72.0,  # the reader's figure (ADR 0171)
            source_max_commit_ts=(end + timedelta(seconds=10)).isoformat() + "Z",
            capture_lag_seconds=4.0,
        )
    ]


def test_status_json_and_thresholds_on_a_sink_written_facts_table(spark, tmp_path, capsys):
    bronze, facts, metrics = str(tmp_path / "bronze"), str(tmp_path / "facts"), str(tmp_path / "m")
    sink = delta_sink(bronze, "orders-v1", facts, metrics_path=metrics)
    sink(reading(spark, [change(1, 2, 1, "a"), change(2, 2, 2, "b")], metrics, _metrics()), 0)

    assert main(["status", "--facts", facts, "--json", "--max-batch-age-minutes", "60"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    (s,) = report["streams"]
    assert (s["app_id"], s["batches"], s["rows"], s["last_batch"]) == ("orders-v1", 1, 2, 0)
    assert s["ingestion_lag_seconds"] == 10.0
    assert s["capture_lag_seconds"] == 4.0
    assert s["retention_headroom_hours"] == 72.0
    assert s["end_commit_ts"] == (T0 + timedelta(seconds=3)).isoformat(timespec="milliseconds")
    assert s["breaches"] == []

    # 10 s of ingestion lag over a 6 s threshold; the newest change read is older than T0, so
    # with a 72 h retention fewer than 72 h minus the time since T0 are left
    hours_since = (dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - T0).total_seconds()
    left = 72.0 - hours_since / 3600.0
    argv = ["status", "--facts", facts, "--json", "--retention-hours", "72"]
    assert main([*argv, "--max-lag-minutes", "0.1", "--min-headroom-hours", "1000"]) == (
        BREACH_EXIT
    )
    (s,) = json.loads(capsys.readouterr().out)["streams"]
    assert s["breaches"][0] == "ingestion lag 0.2 min > 0.1 min"
    assert s["breaches"][1].startswith("retention headroom ")
    assert abs(s["headroom_hours"] - left) < 0.1

    assert main(["status", "--facts", facts, "--max-lag-minutes", "0.1"]) == BREACH_EXIT
    text = capsys.readouterr().out
    assert "ingestion lag 0.2 min > 0.1 min" in text
