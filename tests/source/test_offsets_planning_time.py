"""Offsets, batch planning, LSN text and commit-time conversion, without a server."""

from __future__ import annotations

import datetime as dt
import itertools
import json

import pyarrow as pa
import pytest

from mssql_cdc import Lsn
from mssql_cdc.errors import ConnectionLostError, SqlServerError
from mssql_cdc.options import parse_options
from mssql_cdc.source.arrow import constant, lsn_text, pylist, scalar, timestamps
from mssql_cdc.source.client import CdcClient, permission_error
from mssql_cdc.source.clock import ServerClock, resolve_clock
from mssql_cdc.source.offsets import format_utc, make_offset, offset_lsn
from mssql_cdc.source.planning import instance_segments, partition_count, split_commits
from mssql_cdc.source.retry import DELAYS, with_retry
from mssql_cdc.source.snapshot import int_ranges

L = Lsn.from_parts


def test_offset_json_has_a_fixed_key_order_and_canonical_lsn():
    offset = make_offset(Lsn.parse("2a000001f40003"), "2026-11-01T08:30:00.000Z")
    assert json.dumps(offset) == (
        '{"lsn": "0x0000002A000001F40003", "commit_ts": "2026-11-01T08:30:00.000Z"}'
    )
    assert offset_lsn(json.loads(json.dumps(offset))) == Lsn.parse("0x0000002A000001F40003")
    with pytest.raises(ValueError, match="did not write"):
        offset_lsn({"offset": 5})


def test_utc_text_has_milliseconds():
    assert format_utc(dt.datetime(2026, 11, 1, 8, 30, 0, 123456)) == "2026-11-01T08:30:00.123Z"
    assert format_utc(None) == ""


def test_split_commits_cuts_on_commit_boundaries_without_gap_or_overlap():
    counts = [(L(1, i, 1), 10) for i in range(1, 11)]
    ranges = split_commits(counts, L(1, 0, 0), L(1, 20, 0), 3)
    assert len(ranges) == 3
    assert ranges[0][0] == L(1, 0, 0)
    assert ranges[-1][1] == L(1, 20, 0)
    for (_, hi), (lo, _) in itertools.pairwise(ranges):
        assert lo == hi.next()
        assert hi in {c for c, _ in counts}


def test_one_huge_commit_is_never_split():
    assert split_commits([(L(1, 5, 1), 900_000)], L(1, 0, 0), L(1, 9, 0), 8) == [
        (L(1, 0, 0), L(1, 9, 0))
    ]


def test_partition_count_keeps_about_50000_rows_per_range():
    assert partition_count(99_999, 8, 50_000) == 1
    assert partition_count(100_000, 8, 50_000) == 2
    assert partition_count(10_000_000, 8, 50_000) == 8


def test_a_newer_capture_instance_takes_over_at_its_start_lsn():
    segs = instance_segments([("old", L(1, 1, 0)), ("new", L(1, 50, 0))], L(1, 10, 0), L(1, 90, 0))
    assert segs == [("old", L(1, 10, 0), L(1, 50, 0).prev()), ("new", L(1, 50, 0), L(1, 90, 0))]
    assert instance_segments(
        [("old", L(1, 1, 0)), ("new", L(1, 50, 0))], L(1, 60, 0), L(1, 90, 0)
    ) == [("new", L(1, 60, 0), L(1, 90, 0))]


def test_lsn_text_is_vectorized_upper_hex_and_keeps_nulls():
    values = pa.array([bytes.fromhex("0000002A000001F40003"), None, b"\xff" * 10]).slice(0)
    assert lsn_text(values).to_pylist() == ["0x0000002A000001F40003", None, "0x" + "F" * 20]
    assert lsn_text(values.slice(2)).to_pylist() == ["0x" + "F" * 20]


@pytest.mark.parametrize(
    ("value", "type_"),
    [
        ("dbo_orders", pa.string()),
        ("\u00e9t\u00e9 \U0001f600", pa.string()),
        ("", pa.string()),
        (0, pa.int32()),
        (-(2**31), pa.int32()),
        (2**63 - 1, pa.int64()),
        (255, pa.uint8()),
        (-7, pa.int16()),
        (dt.datetime(2026, 11, 1, 8, 50, 0, 123456), pa.timestamp("us")),
        (dt.datetime(1900, 1, 1), pa.timestamp("us")),
        (dt.datetime(2026, 1, 1, 0, 0, 1, 500000), pa.timestamp("ms")),
        (dt.timedelta(minutes=-330), pa.duration("us")),
        (dt.timedelta(seconds=90), pa.duration("s")),
        (None, pa.string()),
        (None, pa.timestamp("us")),
        (True, pa.bool_()),  # not built from bytes: pa.scalar's answer
    ],
)
def test_scalar_from_bytes_equals_pyarrows_own(value, type_, monkeypatch):
    expected = pa.scalar(value, type_)
    if not isinstance(value, bool):  # everything but bool is built from bytes, never converted
        monkeypatch.setattr(pa, "scalar", lambda *a, **k: pytest.fail("pa.scalar was called"))
    built = scalar(value, type_)
    assert built.type == type_
    assert built.equals(expected)
    assert built.as_py() == value
    column = constant(value, type_, 3)
    assert column.to_pylist() == [value] * 3
    assert column.type == type_


def test_scalar_refuses_an_integer_its_type_cannot_hold():
    with pytest.raises(OverflowError):
        scalar(2**31, pa.int32())
    with pytest.raises(OverflowError):
        scalar(-1, pa.uint32())


def test_timestamps_from_bytes_keep_nulls_and_microseconds():
    plus5 = dt.timezone(dt.timedelta(hours=5))
    values = [
        dt.datetime(2026, 11, 1, 1, 50, 0, 7),
        None,
        dt.datetime(1969, 12, 31, 23, 59, 59),
        dt.datetime(2026, 3, 8, 2, 30, tzinfo=plus5),  # converted to UTC, as pa.array does
    ]
    built = timestamps(values)
    assert built.equals(pa.array(values, pa.timestamp("us")))
    assert built.null_count == 1
    assert built[3].as_py() == dt.datetime(2026, 3, 7, 21, 30)


def test_pylist_reads_aware_timestamps_as_utc_like_to_pylist():
    keys = pa.array([dt.datetime(2026, 1, 1, 12, 0, 0, 5), None], pa.timestamp("us", tz="UTC"))
    table = pa.table({"k": keys, "n": pa.array([1, 2], pa.int32())})
    rows = pylist(table)
    assert rows == table.to_pylist()
    assert rows[0]["k"].isoformat() == "2026-01-01T12:00:00.000005+00:00"


PACIFIC = ServerClock(zone="America/Los_Angeles")


def test_each_commit_uses_its_own_dst_offset():
    summer = PACIFIC.to_utc(dt.datetime(2026, 7, 1, 12, 0))
    winter = PACIFIC.to_utc(dt.datetime(2026, 12, 1, 12, 0))
    assert (summer, winter) == (dt.datetime(2026, 7, 1, 19, 0), dt.datetime(2026, 12, 1, 20, 0))


def test_fall_back_hour_commit_times_follow_commit_order():
    # 01:50 PDT, then the clock goes back: 01:10 PST, 01:40 PST
    local = [
        dt.datetime(2026, 11, 1, 1, 50),
        dt.datetime(2026, 11, 1, 1, 10),
        dt.datetime(2026, 11, 1, 1, 40),
    ]
    out, last = PACIFIC.to_utc_array(pa.array(local, pa.timestamp("us")), None)
    assert out.to_pylist() == [
        dt.datetime(2026, 11, 1, 8, 50),
        dt.datetime(2026, 11, 1, 9, 10),
        dt.datetime(2026, 11, 1, 9, 40),
    ]
    assert last == dt.datetime(2026, 11, 1, 9, 40)
    # a batch that starts after the change knows it from the previous commit
    again, _ = PACIFIC.to_utc_array(pa.array(local[2:], pa.timestamp("us")), out[1].as_py())
    assert again.to_pylist() == [dt.datetime(2026, 11, 1, 9, 40)]


def test_fixed_offset_and_utc_clocks():
    fixed = ServerClock(offset_minutes=-180)
    arr = pa.array([dt.datetime(2026, 1, 1, 0, 0)], pa.timestamp("us"))
    assert fixed.to_utc_array(arr, None)[0].to_pylist() == [dt.datetime(2026, 1, 1, 3, 0)]
    assert ServerClock(zone="UTC").to_utc(dt.datetime(2026, 1, 1)) == dt.datetime(2026, 1, 1)


def test_auto_time_zone_falls_back_to_the_current_offset_with_a_warning(caplog):
    def no_zone():
        raise SqlServerError("not a recognized built-in function name", number=195)

    clock = resolve_clock("auto", no_zone, lambda: -300)
    assert clock == ServerClock(offset_minutes=-300)
    assert "exact only for zones without DST" in caplog.text
    assert resolve_clock("auto", lambda: "Pacific Standard Time", lambda: 0).zone == (
        "America/Los_Angeles"
    )
    assert resolve_clock("W. Europe Standard Time", None, None).zone == "Europe/Berlin"


def test_retry_recovers_from_transient_errors_and_warns_each_time(caplog):
    client = CdcClient(parse_options({"connectionString": "Server=h", "captureInstance": "c"}))
    calls = []
    slept = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionLostError("connection reset")
        return "ok"

    assert with_retry(client, "latestOffset", flaky, sleep=slept.append) == "ok"
    assert slept == [DELAYS[0], DELAYS[1]]
    assert sum(DELAYS) <= 14
    assert caplog.text.count("retrying on a new connection") == 2


@pytest.mark.parametrize(
    "error",
    [ValueError("bad"), PermissionError("grant"), SqlServerError("x", number=208)],
)
def test_retry_never_retries_permanent_errors(error):
    client = CdcClient(parse_options({"connectionString": "Server=h", "captureInstance": "c"}))
    calls = []

    def fail():
        calls.append(1)
        raise error

    with pytest.raises(type(error)):
        with_retry(client, "partitions", fail, sleep=lambda s: None)
    assert calls == [1]


def test_deadlock_is_retried_then_given_up_after_three_retries():
    client = CdcClient(parse_options({"connectionString": "Server=h", "captureInstance": "c"}))
    calls = []

    def deadlock():
        calls.append(1)
        raise SqlServerError("deadlock victim", number=1205)

    with pytest.raises(SqlServerError):
        with_retry(client, "latestOffset", deadlock, sleep=lambda s: None)
    assert len(calls) == 4


def test_permission_message_holds_the_exact_grant():
    options = parse_options({"connectionString": "Server=h;UID=reader", "captureInstance": "dbo_o"})
    err = permission_error(options, "dbo_o", "denied")
    assert "GRANT SELECT ON cdc.[dbo_o_CT] TO [reader];" in str(err)


def test_int_ranges_cover_the_keys_with_open_ends():
    assert int_ranges(1, 100, 4) == [(None, 26), (26, 51), (51, 76), (76, None)]
    assert int_ranges(5, 5, 4) == [(None, None)]
