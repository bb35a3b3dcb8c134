"""The data-loss rule and the first positions it relies on (docs/data-loss.md): a first LSN
below a capture instance's ``start_lsn`` is a loss, so no position is ever taken below it."""

from __future__ import annotations

import datetime as dt

import pytest
from test_reader_server import latest, reader

from mssql_cdc import Lsn
from mssql_cdc.errors import DataLossError
from mssql_cdc.source.client import CaptureInstance, Commit
from mssql_cdc.source.clock import ServerClock
from mssql_cdc.source.positions import (
    ZERO,
    earliest_position,
    latest_position,
    snapshot_lsn,
)
from mssql_cdc.source.retention import data_loss_error, first_held, is_gone

START = Lsn.parse("0x0000002A000000100001")
NOON = dt.datetime(2026, 12, 1, 12)


def instance(start: Lsn, name: str = "dbo_orders") -> CaptureInstance:
    return CaptureInstance(name, "dbo", "orders", start, ("id",), ("id", "name"))


def test_latest_before_capture_ever_ran_reads_the_first_changes(source):
    # issue 13: capture has never run, so sys.fn_cdc_get_max_lsn() is NULL; an availableNow
    # run with startingLsn=latest ends at once; once capture ran, the next run must read the
    # first changes, not fail with "change data from 0x...0001 is gone"
    assert source.sql("SELECT sys.fn_cdc_get_max_lsn() AS m")[0]["m"] is None
    r = reader(source, startingLsn="latest")
    start = r.initialOffset()
    end = latest(r, start)
    assert end == start
    r.stop()

    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    r = reader(source, startingLsn="latest")
    nxt = latest(r, end)
    parts = r.partitions(end, nxt)
    rows = [row for p in parts for b in r.read(p) for row in b.to_pylist()]
    assert [row["id"] for row in rows] == [1]
    r.stop()


def test_a_position_is_never_below_the_instance_start():
    ci = [instance(START)]
    before = Commit(Lsn.parse("0x0000002A000000080004"), NOON)
    after = Commit(Lsn.parse("0x0000002A000000200002"), NOON)
    for position in (
        earliest_position(ci),
        latest_position(None, ci),
        latest_position(before, ci),
        snapshot_lsn(None, ci),
        snapshot_lsn(before, ci),
    ):
        assert position == START.prev()
        assert not is_gone(position.next(), START)
    assert latest_position(after, ci) == after.lsn
    assert snapshot_lsn(after, ci) == after.lsn


def test_no_position_before_capture_set_the_instance_start():
    # SQL Server leaves cdc.change_tables.start_lsn NULL until capture processed the creation
    ci = [instance(ZERO)]
    for take in (
        lambda: earliest_position(ci),
        lambda: latest_position(None, ci),
        lambda: snapshot_lsn(None, ci),
    ):
        with pytest.raises(ValueError, match="has no start_lsn yet") as info:
            take()
        assert "sys.sp_cdc_scan" in str(info.value)


def test_an_instance_capture_has_not_set_yet_is_left_out():
    # a second instance just created: its start_lsn is NULL (zero) and sorts first
    newer = instance(ZERO, "dbo_orders_v2")
    older = instance(START)
    assert earliest_position([newer, older]) == START.prev()
    assert latest_position(None, [newer, older]) == START.prev()
    assert snapshot_lsn(None, [newer, older]) == START.prev()


def test_changes_below_the_low_endpoint_are_gone():
    assert is_gone(START.prev(), START)
    assert not is_gone(START, START)
    assert not is_gone(START.next(), START)


class NoCommits:
    def first_commit_from(self, lsn):
        return None


def test_planning_checks_against_the_oldest_instance_capture_has_set():
    newer = instance(ZERO, "dbo_orders_v2")
    older = instance(START)

    def check(first):
        return first_held(
            NoCommits(), ServerClock(), [newer, older], first,
            lost_from_ts="", fail=True, metrics_path=None,
        )  # fmt: skip

    assert check(START) == START
    with pytest.raises(DataLossError, match="dbo_orders: change data from"):
        check(START.prev())


def test_the_loss_message_names_the_range_and_the_way_on_for_a_stream_and_a_batch_read():
    lost = data_loss_error("dbo_orders", START.prev(), START, lost_from_ts="2026-12-01T12:00:00")
    text = str(lost)
    assert text.startswith(f"dbo_orders: change data from {START.prev()} is gone (min_lsn is now")
    assert f"lost LSNs {START.prev()} to {START.prev()}, commits after 2026-12-01T12:00:00" in text
    assert 'to_delta(on_data_loss="resnapshot")' in text  # a stream's way on
    assert "a batch read can start at startingLsn=earliest" in text  # a batch read's
    assert text.endswith("Set failOnDataLoss=false to skip ahead (loses changes).")
    assert "the stream read" not in text  # a batch read raises it too
