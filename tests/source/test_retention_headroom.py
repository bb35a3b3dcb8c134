"""The facts' retention headroom, measured by the reader from the cleanup job's retention
(mssql_cdc.source.headroom): the hours before cleanup deletes the first unread change, the whole
retention for a current stream, NULL when the login cannot read the retention, never the
capture instance's age."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from mssql_cdc._metrics import PartitionMetrics
from mssql_cdc.errors import SqlServerError
from mssql_cdc.sink.facts import FoldedMetrics, fold_metrics
from mssql_cdc.source.headroom import (
    WATERMARK,
    RetentionReader,
    headroom_hours,
    watermark_headroom_hours,
)

NOW = dt.datetime(2026, 3, 1, 12, 0, 0)


def test_headroom_is_the_retention_less_the_age_of_the_batch_end():
    end = NOW - dt.timedelta(hours=10)
    newest = NOW - dt.timedelta(minutes=1)
    assert headroom_hours(4320, NOW, end, newest) == pytest.approx(62.0)
    # current: the first unread change is not committed yet
    assert headroom_hours(4320, NOW, end, end) == 72.0
    assert headroom_hours(60, NOW, NOW - dt.timedelta(hours=3), NOW) == pytest.approx(-2.0)
    # unknown retention or batch end: no figure
    assert headroom_hours(None, NOW, end, newest) is None
    assert headroom_hours(4320, NOW, None, newest) is None


def test_the_facts_take_the_readers_figure_not_the_watermark():
    """A capture instance created an hour ago: the watermark is an hour old. The facts used to
    say 1 h (the instance's age); the headroom is the retention."""
    part = PartitionMetrics(
        from_lsn="0x" + "0" * 20,
        to_lsn="0x" + "0" * 19 + "1",
        rows=3,
        last=True,
        end_commit_ts="2026-03-01T12:00:00.000Z",
        retention_watermark_ts="2026-03-01T11:00:00.000Z",
        source_max_commit_ts="2026-03-01T12:00:00.000Z",
        retention_headroom_hours=72.0,
    )
    assert fold_metrics([part]).retention_headroom_hours == 72.0
    part.retention_headroom_hours = None  # the login could not read the retention
    assert fold_metrics([part]).retention_headroom_hours is None


class FakeClient:
    def __init__(self, answer=None, error=None):
        self.answer, self.error, self.calls = answer, error, 0

    def rows(self, sql, params=None, *, needs):
        self.calls += 1
        assert sql == "EXEC sys.sp_cdc_help_jobs"
        assert "retention" in needs
        if self.error:
            raise self.error
        return self.answer


def test_the_retention_is_read_once_an_hour_and_a_refusal_means_unknown(caplog):
    client = FakeClient(
        [{"job_type": "capture", "retention": None}, {"job_type": "cleanup", "retention": 4320}]
    )
    reader = RetentionReader(client)  # type: ignore[arg-type]
    assert reader.minutes() == 4320
    assert reader.minutes() == 4320
    assert client.calls == 1
    refused = FakeClient(error=SqlServerError("The EXECUTE permission was denied"))
    reader = RetentionReader(refused, refresh_s=0)  # type: ignore[arg-type]
    with caplog.at_level("INFO", logger="mssql_cdc.source"):
        assert reader.minutes() is None
        assert reader.minutes() is None
    assert refused.calls == 2
    said = [r for r in caplog.records if "measured from the cleanup watermark" in r.getMessage()]
    assert len(said) == 1


def test_a_stream_reading_as_db_owner_records_the_retention_headroom(source, tmp_path):
    """End to end without Spark: plan and read one batch with a metrics directory; the metrics
    file holds the headroom measured from the emulator's cleanup job (72 h by default)."""
    from test_reader_server import latest, reader

    from mssql_cdc._metrics import metrics_dir
    from mssql_cdc.source.reading import read_changes

    r = reader(source, startingLsn="latest", metricsPath=str(tmp_path / "m"))
    start = r.initialOffset()
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    end = latest(r, start)
    parts = r.partitions(start, end)
    assert parts[-1].retention_minutes == 4320
    for part in parts:
        list(read_changes(r.spec, part))
    found = metrics_dir(str(tmp_path / "m")).partitions()
    r.stop()
    assert [m.retention_headroom_hours for m in found if m.last] == [72.0]


def test_the_watermark_headroom_is_the_distance_from_the_watermark_to_the_batch_end():
    end = NOW - dt.timedelta(hours=2)
    assert watermark_headroom_hours(end, end - dt.timedelta(hours=70)) == 70.0
    assert watermark_headroom_hours(None, end) is None
    assert watermark_headroom_hours(end, None) is None


def test_the_facts_say_when_the_headroom_came_from_the_watermark():
    part = PartitionMetrics(
        from_lsn="0x" + "0" * 20,
        to_lsn="0x" + "0" * 19 + "1",
        rows=3,
        last=True,
        end_commit_ts="2026-03-01T12:00:00.000Z",
        retention_watermark_ts="2026-02-27T12:00:00.000Z",
        retention_headroom_hours=48.0,
        headroom_from=WATERMARK,
        warnings=["computed column(s) total left out"],
    )
    folded = fold_metrics([part])
    assert folded.retention_headroom_hours == 48.0
    assert json.loads(folded.detail or "") == {
        "warnings": ["computed column(s) total left out"],
        "headroom_from": "cleanup_watermark",
    }
    part.warnings = []
    assert json.loads(fold_metrics([part]).detail or "") == {"headroom_from": "cleanup_watermark"}
    part.headroom_from = None  # measured from the retention: detail as before
    assert fold_metrics([part]).detail is None
    assert FoldedMetrics(warnings=["w"]).detail == '{"warnings": ["w"]}'


def _least_privileged(source) -> dict[str, str]:
    source.sql("CREATE LOGIN reader WITH PASSWORD = 'Reader-Passw0rd!'")
    source.sql("CREATE USER reader FOR LOGIN reader")
    source.sql("GRANT SELECT ON dbo.orders TO reader")
    source.sql("GRANT SELECT ON cdc.[dbo_orders_CT] TO reader")
    source.sql("GRANT SELECT ON cdc.lsn_time_mapping TO reader")
    return {"user": "reader", "password": "Reader-Passw0rd!"}


def test_a_least_privileged_stream_measures_headroom_and_lag_on_the_servers_clock(source, tmp_path):
    """Issue 40: the login the docs recommend cannot read the retention; its facts get the
    watermark's headroom (so backfill(min_headroom_hours=...) can pause) and say so. The server's
    clock runs ten days behind this machine's: the capture lag is measured on the server's."""
    from test_reader_server import latest, reader

    from mssql_cdc._metrics import metrics_dir
    from mssql_cdc.source.reading import read_changes

    server_now = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=10)
    source.emulator.set_clock(server_now, freeze=True)
    login = _least_privileged(source)
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    source.emulator.advance_clock(dt.timedelta(hours=5))
    r = reader(source, startingLsn="earliest", metricsPath=str(tmp_path / "m"), **login)
    start = r.initialOffset()
    end = latest(r, start)
    parts = r.partitions(start, end)
    assert parts[-1].retention_minutes is None  # sp_cdc_help_jobs needs db_owner
    source.emulator.advance_clock(dt.timedelta(seconds=90))
    for part in parts:
        list(read_changes(r.spec, part))
    r.stop()
    (last,) = [m for m in metrics_dir(str(tmp_path / "m")).partitions() if m.last]
    assert last.headroom_from == WATERMARK
    watermark = dt.datetime.fromisoformat(last.retention_watermark_ts.replace("Z", "+00:00"))
    end_commit = dt.datetime.fromisoformat(last.end_commit_ts.replace("Z", "+00:00"))
    assert last.retention_headroom_hours == pytest.approx(
        (end_commit - watermark).total_seconds() / 3600.0
    )
    assert last.retention_headroom_hours is not None
    assert last.retention_headroom_hours >= 0.0
    # the newest commit (an idle entry or the insert) is 90 s to 5 h old on the server's clock;
    # on this machine's clock it would be about ten days old
    assert last.capture_lag_seconds is not None
    assert 90.0 <= last.capture_lag_seconds <= 5 * 3600 + 91
