"""mssql_cdc.finalization: candidates, progress parsing, the monotonic MERGE into the control
table, its retry on commit conflicts, and the tracker."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from mssql_cdc import finalization
from mssql_cdc.sink.schemas import CONTROL_COLUMNS


@pytest.fixture(scope="module")
def control(tmp_path_factory) -> str:
    """One control table for the module (rows keyed by table name): MERGEs are slow locally."""
    return str(tmp_path_factory.mktemp("finalization") / "control")


def offset(commit_ts: str, lsn: str = "0x0000002A000001F40003") -> dict[str, str]:
    return {"lsn": lsn, "commit_ts": commit_ts}


def progress(run_id: str, end: dict[str, str] | None) -> dict:
    return {
        "runId": run_id,
        "batchId": 3,
        "sources": [{"description": "mssql_cdc", "endOffset": json.dumps(end) if end else None}],
    }


@pytest.mark.parametrize(
    ("granularity", "expected"),
    [
        ("minute", datetime(2026, 3, 8, 9, 59)),
        ("HOUR", datetime(2026, 3, 8, 9)),
        ("day", datetime(2026, 3, 8)),
    ],
)
def test_candidate_truncates_the_end_commit_to_the_granularity(granularity, expected):
    end = offset("2026-03-08T09:59:59.999Z")
    assert finalization.candidate(end, granularity=granularity) == expected


def test_candidate_of_nothing_is_none_and_bad_granularities_name_the_choices():
    assert finalization.candidate(None) is None
    with pytest.raises(ValueError, match="'week' is not one of 'minute', 'hour', 'day'"):
        finalization.candidate(offset("2026-03-08T09:00:00Z"), granularity="week")


def test_end_offset_is_read_from_a_progress_in_any_form():
    end = offset("2026-03-08T09:59:59.999Z")
    p = progress("r1", end)
    assert finalization.end_offset_from_progress(p) == end
    assert finalization.end_offset_from_progress(json.dumps(p)) == end

    class WithJson:
        json = json.dumps(p)

    assert finalization.end_offset_from_progress(WithJson()) == end
    nested = {"sources": [{"endOffset": end}, {"endOffset": "None"}]}
    assert finalization.end_offset_from_progress(nested) == end
    assert finalization.end_offset_from_progress(nested, source_index=1) is None
    assert finalization.end_offset_from_progress(nested, source_index=2) is None
    assert finalization.end_offset_from_progress(None) is None


def test_end_offset_is_read_from_a_pyspark_40_41_progress():
    # PySpark 4.0/4.1's StreamingQueryProgress.fromJson (query.lastProgress) applies str() to the
    # parsed offset: the end offset is a Python dict literal, not JSON
    end = offset("2026-03-08T09:59:59.999Z")
    p = {"sources": [{"endOffset": str(end)}, {"endOffset": "{'lsn': "}]}
    assert finalization.end_offset_from_progress(p) == end
    assert finalization.end_offset_from_progress(p, source_index=1) is None


def test_advance_only_moves_forward_retrying_commit_conflicts(spark, control, monkeypatch):
    assert finalization.finalized_until(spark, control, "bronze.orders") is None
    # the first MERGE loses two commit conflicts (Delta's exceptions, recognised by name)
    conflict = type("ConcurrentAppendException", (Exception,), {})
    calls, sleeps = [], []
    real_merge = finalization._merge

    def flaky(*args):
        calls.append(1)
        if len(calls) < 3:
            raise conflict("Files were added by a concurrent update")
        real_merge(*args)

    monkeypatch.setattr(finalization, "_merge", flaky)
    monkeypatch.setattr(finalization, "_sleep", sleeps.append)
    first = finalization.advance(spark, control, "bronze.orders", offset("2026-03-08T09:59:59Z"))
    assert first == datetime(2026, 3, 8, 9)
    assert (len(calls), sleeps) == (3, [0.25, 0.5])
    monkeypatch.undo()

    later = offset("2026-03-08T11:30:00Z", "0x0000002B000000100001")
    assert finalization.advance(spark, control, "bronze.orders", later) == datetime(2026, 3, 8, 11)
    # an older end (another writer, a replay) never moves the verdict back
    earlier = offset("2026-03-08T10:15:00Z")
    assert finalization.advance(spark, control, "bronze.orders", earlier) == datetime(
        2026, 3, 8, 11
    )
    assert finalization.advance(spark, control, "bronze.orders", None) == datetime(2026, 3, 8, 11)

    rows = spark.read.format("delta").load(control).where("table_name = 'bronze.orders'").collect()
    assert [(r.end_lsn, r.end_commit_ts) for r in rows] == [
        ("0x0000002B000000100001", datetime(2026, 3, 8, 11, 30))
    ]
    assert finalization.is_final(spark, control, "bronze.orders", datetime(2026, 3, 8, 11))
    assert not finalization.is_final(spark, control, "bronze.orders", datetime(2026, 3, 8, 12))
    cet = timezone(timedelta(hours=1))
    aware = datetime(2026, 3, 8, 12, tzinfo=cet)
    assert finalization.is_final(spark, control, "bronze.orders", aware)
    assert not finalization.is_final(spark, control, "other", datetime(2000, 1, 1))

    # a failure that is not a conflict is raised at once
    monkeypatch.setattr(finalization, "_merge", lambda *a: (_ for _ in ()).throw(OSError("disk")))
    with pytest.raises(OSError, match="disk"):
        finalization.advance(spark, control, "bronze.orders", offset("2026-03-08T13:10:00Z"))

    described = spark.sql(f"DESCRIBE TABLE delta.`{control}`").collect()
    assert [(r.col_name, r.comment) for r in described if r.col_name][: len(CONTROL_COLUMNS)] == [
        (n, c) for n, _, c in CONTROL_COLUMNS
    ]


class FakeQuery:
    def __init__(self, run_id: str, last: dict | None, active: bool) -> None:
        self.runId, self.lastProgress, self.isActive = run_id, last, active


class Event:
    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)


def test_track_advances_after_every_progress_of_its_run(spark, control):
    query = FakeQuery("run-1", None, active=True)
    listener = finalization.track(spark, query, control, "tracked")
    bus = listener.spark_listener
    bus.onQueryProgress(Event(progress=progress("run-2", offset("2026-03-09T00:00:00Z"))))
    bus.onQueryProgress(Event(progress=progress("run-1", offset("2026-03-08T11:05:00Z"))))
    bus.onQueryTerminated(Event(runId="run-2"))
    assert not listener.join(timeout=0)  # another run's end does not stop it
    bus.onQueryTerminated(Event(runId="run-1"))
    assert listener.join(timeout=60)
    assert (listener.last_error, listener.failures) == (None, 0)
    assert finalization.finalized_until(spark, control, "tracked") == datetime(2026, 3, 8, 11)


def test_track_on_a_finished_query_applies_its_last_progress_and_stops(spark, control):
    done = FakeQuery("run-9", progress("run-9", offset("2026-03-08T13:45:00Z")), active=False)
    listener = finalization.track(spark, done, control, "finished", granularity="minute")
    assert listener.join(timeout=60)
    assert finalization.finalized_until(spark, control, "finished") == datetime(2026, 3, 8, 13, 45)


def test_track_records_failures_without_raising(spark, control, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("control table unreachable")

    done = FakeQuery("run-5", progress("run-5", offset("2026-03-08T13:45:00Z")), active=False)
    monkeypatch.setattr(finalization, "advance", broken)
    listener = finalization.track(spark, done, control, "failing")
    assert listener.join(timeout=60)
    assert (str(listener.last_error), listener.failures) == ("control table unreachable", 1)


def test_track_by_name_needs_an_active_query(spark, control):
    with pytest.raises(ValueError, match="no active streaming query is named 'nope'"):
        finalization.track(spark, "nope", control, "t")


def test_empty_progress_and_offsets_without_a_commit_time_give_nothing():
    for empty in (None, "", "  ", {}, {"sources": []}, {"sources": [{}]}, {"sources": None}):
        assert finalization.end_offset_from_progress(empty) is None
    assert finalization.end_offset_from_progress({"sources": [{"endOffset": ""}]}) is None
    no_commit = offset("")
    assert finalization.candidate(no_commit) is None
    assert finalization.candidate({"lsn": "0x0000002A000001F40003"}) is None
    with pytest.raises(ValueError, match="commit_ts 'yesterday' is not an ISO-8601 time"):
        finalization.candidate(offset("yesterday"))
