"""The metrics directory contract between the reader's tasks and the sink (mssql_cdc._metrics)."""

from __future__ import annotations

import logging

import pytest

from mssql_cdc._metrics import PartitionMetrics, metrics_dir


def test_partition_files_round_trip_and_the_latest_attempt_wins(tmp_path):
    d = metrics_dir(str(tmp_path / "m"))
    first = PartitionMetrics("0x01", "0x05", rows=10, read_seconds=1.0, written_at=100.0)
    retry = PartitionMetrics("0x01", "0x05", rows=10, read_seconds=2.0, written_at=200.0)
    other = PartitionMetrics("0x06", "0x09", rows=3, last=True, end_lsn="0x09", written_at=150.0)
    for m in (retry, first, other):
        assert d.write_partition(m)
    got = d.partitions()
    assert [(m.from_lsn, m.read_seconds) for m in got] == [("0x01", 2.0), ("0x06", None)]
    assert got[1].last
    assert got[1].end_lsn == "0x09"
    assert not list((tmp_path / "m").glob(".*.tmp"))  # temp files renamed away


def test_events_overwrite_by_key_and_clear_empties(tmp_path):
    d = metrics_dir(f"file://{tmp_path}/m")
    d.write_event("data_skipped", "0x01-0x05", {"certain": True})
    d.write_event("data_skipped", "0x01-0x05", {"certain": False})
    assert d.events() == [{"kind": "data_skipped", "key": "0x01-0x05", "certain": False}]
    d.write_partition(PartitionMetrics("0x01", "0x02", rows=1))
    d.clear()
    assert d.partitions() == []
    assert d.events() == []


def test_dbfs_uris_are_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"use the FUSE path \(/dbfs/...\)"):
        metrics_dir("dbfs:/mnt/metrics")


def test_unwritable_directory_warns_and_does_not_raise(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    d = metrics_dir(str(blocker / "m"))
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.metrics"):
        assert not d.write_partition(PartitionMetrics("0x01", "0x02", rows=1))
    assert "could not write metrics file" in caplog.text
