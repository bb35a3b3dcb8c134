"""The shared ``sys.fn_cdc_get_max_lsn()`` poll (mssql_cdc.source.max_lsn): the sharing rule
(fresh enough, never older than what a stream saw), the source key, and streams of one
database planning the same trigger with one query."""

from __future__ import annotations

import datetime as dt
import threading
import time

from mssql_cdc._native import Lsn
from mssql_cdc.options import parse_options
from mssql_cdc.source.client import Commit
from mssql_cdc.source.max_lsn import _BOOT as BOOT
from mssql_cdc.source.max_lsn import PollRecord, SharedPoll, reusable, source_key

T0 = dt.datetime(2026, 1, 1, 12, 0, 0)
OPTIONS = {
    "connectionString": "Server=tcp:db,1433;Database=sales;PWD=secret",
    "captureInstance": "dbo_orders",
    "user": "reader",
}


def commit(n: int) -> Commit:
    return Commit(Lsn.from_parts(n, 0, 1), T0 + dt.timedelta(seconds=n))


class FakeServer:
    """``max_commit`` that counts its calls; the newest commit is set by the test."""

    def __init__(self) -> None:
        self.newest: Commit | None = commit(5)
        self.calls = 0

    def max_commit(self) -> Commit | None:
        self.calls += 1
        return self.newest


# -- the rule -----------------------------------------------------------------------------------


def test_a_poll_is_reused_only_when_it_started_after_the_trigger_began_planning():
    record = PollRecord(1_000, BOOT, commit(5))
    assert reusable(record, since_ns=1_000, floor=None)
    assert reusable(record, since_ns=999, floor=None)
    assert not reusable(record, since_ns=1_001, floor=None)  # older than this trigger
    assert not reusable(None, since_ns=0, floor=None)
    assert not reusable(PollRecord(1_000, "another boot", commit(5)), 0, None)


def test_a_poll_older_than_what_the_stream_saw_is_never_reused():
    record = PollRecord(1_000, BOOT, commit(5))
    assert reusable(record, 0, floor=commit(5).lsn)
    assert reusable(record, 0, floor=commit(4).lsn)
    assert not reusable(record, 0, floor=commit(6).lsn)
    # a server that never captured a commit is fine until the stream saw one
    empty = PollRecord(1_000, BOOT, None)
    assert reusable(empty, 0, floor=None)
    assert not reusable(empty, 0, floor=commit(1).lsn)


def test_the_record_round_trips_and_a_broken_file_means_poll(tmp_path):
    record = PollRecord(42, BOOT, commit(7))
    assert PollRecord.from_json(record.to_json()) == record
    assert PollRecord.from_json(PollRecord(1, BOOT, None).to_json()).newest is None
    poll = SharedPoll(parse_options(OPTIONS), tmp_path)
    server = FakeServer()
    since = time.monotonic_ns()
    assert poll.newest(server.max_commit, since, None) == commit(5)
    record_file = next(tmp_path.glob("*.json"))
    record_file.write_text("{not json")
    other = SharedPoll(parse_options(OPTIONS), tmp_path)
    assert other.newest(server.max_commit, since, None) == commit(5)
    assert server.calls == 2  # the broken record was not trusted


# -- sharing between streams --------------------------------------------------------------------


def test_streams_planning_one_trigger_share_one_poll(tmp_path):
    server = FakeServer()
    streams = [SharedPoll(parse_options(OPTIONS), tmp_path) for _ in range(5)]
    since = time.monotonic_ns()  # every stream began planning before the first poll
    assert [s.newest(server.max_commit, since, None) for s in streams] == [commit(5)] * 5
    assert server.calls == 1
    assert [s.shared for s in streams] == [0, 1, 1, 1, 1]
    # the next trigger: the old poll is too old, one stream polls again and the rest share
    server.newest = commit(9)
    since = time.monotonic_ns()
    assert {s.newest(server.max_commit, since, commit(5).lsn) for s in streams} == {commit(9)}
    assert server.calls == 2


def test_a_stream_that_saw_more_polls_itself(tmp_path):
    server = FakeServer()
    a, b = (SharedPoll(parse_options(OPTIONS), tmp_path) for _ in range(2))
    since = time.monotonic_ns()
    assert a.newest(server.max_commit, since, None) == commit(5)
    server.newest = commit(8)
    assert b.newest(server.max_commit, since, commit(6).lsn) == commit(8)
    assert (server.calls, b.shared) == (2, 0)


def test_streams_waiting_on_the_lock_take_the_poll_in_flight(tmp_path):
    release = threading.Event()
    calls = []

    def slow_poll() -> Commit | None:
        calls.append(1)
        release.wait(5)
        return commit(3)

    streams = [SharedPoll(parse_options(OPTIONS), tmp_path) for _ in range(4)]
    since = time.monotonic_ns()
    results: list[Commit | None] = []
    threads = [
        threading.Thread(target=lambda s=s: results.append(s.newest(slow_poll, since, None)))
        for s in streams
    ]
    for thread in threads:
        thread.start()
    while not calls:  # the first stream is polling (holding the lock)
        time.sleep(0.001)
    release.set()
    for thread in threads:
        thread.join(10)
    assert results == [commit(3)] * 4
    assert len(calls) == 1


def test_other_sources_do_not_share(tmp_path):
    server = FakeServer()
    since = time.monotonic_ns()
    SharedPoll(parse_options(OPTIONS), tmp_path).newest(server.max_commit, since, None)
    for change in (
        {"connectionString": "Server=tcp:db,1433;Database=hr;PWD=secret"},
        {"user": "other"},
        {"connectionString": "Server=tcp:db2,1433;Database=sales"},
    ):
        SharedPoll(parse_options({**OPTIONS, **change}), tmp_path).newest(
            server.max_commit, since, None
        )
    assert server.calls == 4
    # the password and the capture instance are not part of the source
    same = {"connectionString": "Server=tcp:db,1433;Database=sales", "password": "other"}
    key = source_key(parse_options({**OPTIONS, **same, "captureInstance": "dbo_lines"}))
    assert key == source_key(parse_options(OPTIONS))
    assert "secret" not in str(key)
    # a fixed access token: the login is unknown, no sharing
    assert source_key(parse_options({**OPTIONS, "accessToken": "eyJ0"})) is None


def test_when_other_streams_run_the_poller_waits_for_the_calls_of_the_same_trigger(
    tmp_path, monkeypatch
):
    gathering, proceed = threading.Event(), threading.Event()

    def gather(self: SharedPoll) -> None:  # the 50-ms wait, driven by the test
        gathering.set()
        assert proceed.wait(10)

    monkeypatch.setattr(SharedPoll, "_gather", gather)
    server = FakeServer()
    a, b = (SharedPoll(parse_options(OPTIONS), tmp_path) for _ in range(2))
    since = time.monotonic_ns()
    a.newest(server.max_commit, since, None)
    b.newest(server.max_commit, since, None)  # b took a's poll: other streams run
    assert (server.calls, gathering.is_set()) == (1, False)
    # the next trigger: a polls, but first waits; b's call arrives meanwhile and takes a's poll
    server.newest = commit(6)
    results: list[Commit | None] = []
    first = threading.Thread(
        target=lambda: results.append(a.newest(server.max_commit, time.monotonic_ns(), None))
    )
    first.start()
    assert gathering.wait(10)
    second = threading.Thread(
        target=lambda: results.append(b.newest(server.max_commit, time.monotonic_ns(), None))
    )
    second.start()
    proceed.set()
    first.join(10)
    second.join(10)
    assert results == [commit(6)] * 2
    assert server.calls == 2
    assert b.shared == 2


def test_a_lone_stream_never_waits(tmp_path, monkeypatch):
    def gather(self: SharedPoll) -> None:
        raise AssertionError("a lone stream waited")

    monkeypatch.setattr(SharedPoll, "_gather", gather)
    server = FakeServer()
    alone = SharedPoll(parse_options(OPTIONS), tmp_path)
    for _ in range(3):
        assert alone.newest(server.max_commit, time.monotonic_ns(), None) == commit(5)
    assert server.calls == 3


# -- two readers of one database, against the server --------------------------------------------


def test_two_readers_of_one_database_send_one_max_lsn_query(source, emulator):
    from test_reader_server import reader

    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    a, b = reader(source, startingLsn="latest"), reader(source, startingLsn="latest")
    start = a.initialOffset()
    assert b.initialOffset() == start
    since = time.monotonic_ns()  # both began planning this trigger before either polled
    before = emulator.statement_count("FROM cdc.lsn_time_mapping ORDER BY start_lsn DESC")
    newest_a = a.planner._newest(since)
    newest_b = b.planner._newest(since)
    after = emulator.statement_count("FROM cdc.lsn_time_mapping ORDER BY start_lsn DESC")
    assert newest_a == newest_b
    assert newest_a is not None
    assert str(newest_a.lsn) == start["lsn"]
    assert after - before == 1
    a.stop()
    b.stop()
