"""The silver position in the control table (``sink.control``): read back as written, the
position columns replaced, the verdict columns only moving forward."""

from __future__ import annotations

from datetime import datetime

from mssql_cdc.sink import (
    SilverPosition,
    ensure_control_table,
    merge_silver_position,
    read_silver_position,
    table_ref,
)


def test_silver_position_round_trips_and_the_verdict_never_moves_back(spark, tmp_path):
    ref = table_ref(str(tmp_path / "control"), "control_table")
    assert read_silver_position(spark, ref, "silver.orders") is None
    ensure_control_table(spark, ref)
    assert read_silver_position(spark, ref, "silver.orders") is None

    first = SilverPosition(
        "silver.orders",
        applied_lsn="0x00000020000000100004",
        snapshot_lsn="0x00000010000000000001",
        finalized_until=datetime(2026, 3, 8, 11),
        end_lsn="0x00000020000000100004",
        end_commit_ts=datetime(2026, 3, 8, 11, 30),
    )
    merge_silver_position(spark, ref, first)
    assert read_silver_position(spark, ref, "silver.orders") == first

    # a later apply with no verdict yet (a snapshot open): the position moves, the verdict stays
    held = SilverPosition("silver.orders", "0x00000030000000100004", first.snapshot_lsn, None)
    merge_silver_position(spark, ref, held)
    assert read_silver_position(spark, ref, "silver.orders") == SilverPosition(
        "silver.orders",
        applied_lsn="0x00000030000000100004",
        snapshot_lsn=first.snapshot_lsn,
        finalized_until=first.finalized_until,
        end_lsn=first.end_lsn,
        end_commit_ts=first.end_commit_ts,
    )
    # an earlier verdict never moves it back; another table's row is apart
    older = SilverPosition("silver.orders", held.applied_lsn, None, datetime(2026, 3, 8, 9))
    merge_silver_position(spark, ref, older)
    got = read_silver_position(spark, ref, "silver.orders")
    assert got is not None
    assert (got.snapshot_lsn, got.finalized_until) == (None, first.finalized_until)
    assert read_silver_position(spark, ref, "silver.other") is None
