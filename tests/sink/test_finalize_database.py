"""``finalization.finalize_database`` over hand-written facts rows (only the columns its reads
use): each table of the stream moves to the hour of its own newest micro-batch row; a parked
table, a table that left (an older generation), a table with no micro-batch row and another
stream's table are left alone; a row without a commit time declares nothing."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from mssql_cdc.finalization import finalize_database, finalized_until
from mssql_cdc.sink.ledger import landed

T0 = dt.datetime(2026, 12, 1, 8, 0)
SCHEMA = (
    "app_id string, event string, detail string, batch_id long, written_at timestamp_ntz, "
    "target string, end_lsn string, end_commit_ts timestamp_ntz"
)


def _member(sink: str, *, joined: bool = True, stream: str = "db", batch: int = 0):
    detail = {"database_app_id": stream, "database_batch": batch}
    kind = landed.MEMBER_EVENTS[0] if joined else landed.MEMBER_EVENTS[1]
    return (sink, kind, json.dumps(detail), batch, None)


def _batch(sink: str, batch: int, commit_ts: dt.datetime | None):
    return (sink, None, None, batch, commit_ts)


def _parked(sink: str):
    detail = {"error": "failed", "capture_instance": sink, "database_app_id": "db"}
    return (sink, landed.PARKED_EVENT, json.dumps(detail), 0, None)


def _facts(spark, tmp_path, rows) -> str:
    """The rows, written a second apart, each table's target ``/b/<app_id without .g<n>>``."""
    data = [
        (
            sink,
            kind,
            detail,
            batch,
            T0 + dt.timedelta(seconds=i),
            "/b/" + sink.split(".g")[0],
            None if commit_ts is None else f"0x{i:020X}",
            commit_ts,
        )
        for i, (sink, kind, detail, batch, commit_ts) in enumerate(rows)
    ]
    path = str(tmp_path / "facts")
    spark.createDataFrame(data, SCHEMA).write.format("delta").mode("overwrite").save(path)
    return path


def test_each_table_moves_to_the_hour_of_its_own_newest_row(spark, tmp_path):
    at = dt.datetime(2026, 12, 1, 10, 30)
    facts = _facts(
        spark,
        tmp_path,
        [
            _member("a"),
            _batch("a", 0, at),
            _batch("a", 1, at + dt.timedelta(hours=2)),  # its newest: 12:30
            _member("p"),
            _batch("p", 0, at),
            _parked("p"),  # parked since: left alone
            _member("g"),
            _batch("g", 0, at),
            _member("g", joined=False, batch=1),  # re-snapshotted: generation 1 goes on
            _member("g.g1", batch=1),
            _batch("g.g1", 0, at + dt.timedelta(hours=5)),
            _member("n"),  # joined, no micro-batch row yet
            _member("z"),
            _batch("z", 0, None),  # a first batch before any commit: no commit time
            _member("o", stream="other"),  # another database stream's table
            _batch("o", 0, at),
        ],
    )
    control = str(tmp_path / "control")
    verdicts = finalize_database(spark, control, name="db", facts_table=facts)
    # every table of the stream is answered; the parked one and those without a commit time
    # keep what they had (none here); another stream's is not the stream's
    assert verdicts == {
        "/b/a": dt.datetime(2026, 12, 1, 12, 0),
        "/b/g": dt.datetime(2026, 12, 1, 15, 0),
        "/b/n": None,
        "/b/p": None,
        "/b/z": None,
    }
    assert finalized_until(spark, control, "/b/o") is None
    rows = spark.read.format("delta").load(control).orderBy("table_name").collect()
    assert [(r["table_name"], r["end_lsn"]) for r in rows] == [
        ("/b/a", f"0x{2:020X}"),
        ("/b/g", f"0x{10:020X}"),
    ]
    # by the minute: later verdicts, one MERGE for both
    by_minute = finalize_database(
        spark, control, name="db", facts_table=facts, granularity="minute"
    )
    assert by_minute["/b/a"] == dt.datetime(2026, 12, 1, 12, 30)


def test_a_stream_the_facts_do_not_record_is_refused(spark, tmp_path):
    facts = _facts(spark, tmp_path, [_member("a"), _batch("a", 0, T0)])
    for name in ("dbx", "a"):  # a typo; a table's own sink id (a single stream's name)
        with pytest.raises(ValueError, match=f"no table of a database stream named '{name}'"):
            finalize_database(spark, str(tmp_path / "control"), name=name, facts_table=facts)


def test_a_stream_whose_tables_are_all_parked_keeps_their_verdicts(spark, tmp_path):
    at = dt.datetime(2026, 12, 1, 10, 30)
    control = str(tmp_path / "control")
    rows = [_member("a"), _batch("a", 0, at)]
    facts = _facts(spark, tmp_path, rows)
    assert finalize_database(spark, control, name="db", facts_table=facts) == {
        "/b/a": dt.datetime(2026, 12, 1, 10, 0)
    }
    later = [*rows, _batch("a", 1, at + dt.timedelta(hours=3)), _parked("a")]
    facts = _facts(spark, tmp_path, later)  # its newest batch, then parked
    assert finalize_database(spark, control, name="db", facts_table=facts) == {
        "/b/a": dt.datetime(2026, 12, 1, 10, 0)
    }
