"""``SnapshotEvents``: the snapshot rows of one target read once, and the three questions
``apply_changes`` asks of them (no JVM: the rows are built here)."""

from __future__ import annotations

import json
from datetime import datetime

from pyspark.sql import Row

from mssql_cdc.sink import SnapshotEvents, SnapshotOpen

TS = datetime(2026, 1, 1)


def _row(app_id: str, event: str, lsn: str, **detail: object) -> Row:
    return Row(
        app_id=app_id,
        event=event,
        rows=3,
        min_lsn=lsn,
        max_lsn=lsn,
        max_commit_ts=TS,
        duration_ms=10,
        detail=json.dumps(detail),
        target="/t/bronze",
        end_lsn=None,
        lost_from_ts=None,
        lost_to_ts=None,
    )


def test_no_rows_answers_none():
    events = SnapshotEvents(())
    assert events.newest_done() is None
    assert events.newest_opened() is None
    assert events.open_chunked() == []


def test_newest_done_and_opened_take_the_highest_lsn_of_any_stream():
    events = SnapshotEvents(
        (
            _row("a", "snapshot_open", "0x02", mode="full"),
            _row("a", "bootstrap", "0x02"),
            _row("b", "snapshot_open", "0x05", mode="chunked"),
            _row("b.g1", "resnapshot", "0x04"),
        )
    )
    assert events.newest_done() == ("0x04", TS)
    assert events.newest_opened() == SnapshotOpen("0x05", "b", "chunked")


def test_open_chunked_lists_each_stream_once_with_its_landed_chunks_and_drops_closed_ones():
    events = SnapshotEvents(
        (
            # stream a: opened in generation 0 and closed
            _row("a", "snapshot_open", "0x02", mode="chunked"),
            _row("a", "bootstrap", "0x02"),
            # stream b: generation 0 open superseded by generation 1's chunked re-snapshot
            _row("b", "snapshot_open", "0x03", mode="chunked"),
            _row("b.g1", "snapshot_open", "0x07", mode="chunked", generation=1, kind="resnapshot"),
            _row("b.g1", "snapshot_plan", "0x07", chunks=[[None, [5]], [[5], None]], keys=["id"]),
            _row("b.g1", "snapshot_chunk", "0x08", snapshot="0x07", chunk=0, wave=0),
            # a full snapshot of stream c: not chunked
            _row("c", "snapshot_open", "0x09", mode="full"),
        )
    )
    found = events.open_chunked()
    assert [(s.app_id, s.snapshot_lsn, s.generation, s.kind) for s in found] == [
        ("b.g1", "0x07", 1, "resnapshot")
    ]
    assert sorted(found[0].chunks) == [0]
    assert found[0].chunks[0].stamp == "0x08"
    assert found[0].plan is not None
    assert found[0].plan["keys"] == ["id"]


def test_open_chunked_drops_an_older_generations_snapshot_a_newer_one_superseded():
    # regression: generation 1's half-read chunked re-snapshot stayed listed as open (holding
    # silver's verdict for ever) after a second loss opened generation 2's, which completed
    events = SnapshotEvents(
        (
            _row("b", "snapshot_open", "0x03", mode="chunked"),
            _row("b", "bootstrap", "0x03"),
            _row("b.g1", "snapshot_open", "0x07", mode="chunked", generation=1, kind="resnapshot"),
            _row("b.g1", "snapshot_chunk", "0x08", snapshot="0x07", chunk=0, wave=0),
            _row("b.g2", "snapshot_open", "0x0A", mode="chunked", generation=2, kind="resnapshot"),
            _row("b.g2", "resnapshot", "0x0A", generation=2),
        )
    )
    assert events.open_chunked() == []
    # while generation 2's is open, it is the one listed, not generation 1's
    opened = SnapshotEvents(events.rows[:-1]).open_chunked()
    assert [(s.app_id, s.snapshot_lsn) for s in opened] == [("b.g2", "0x0A")]


def test_a_stream_whose_app_id_ends_like_a_generation_is_its_own_stream():
    events = SnapshotEvents((_row("x.g1", "snapshot_open", "0x04", mode="chunked"),))
    assert [(s.app_id, s.generation) for s in events.open_chunked()] == [("x.g1", 0)]
