"""Golden facts rows: every kind of typed fact (``sink.facts``) gives the tuple the facts
table has always held for it (the values, their column order, the ``detail`` JSON text; the
golden tuples in ``_facts_golden.py`` were written by the row builders the typed facts
replaced). Pure, no Spark."""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime

import pytest
from _facts_golden import GOLDEN

from mssql_cdc.sink import FACTS
from mssql_cdc.sink import facts as f

AT = datetime(2026, 3, 1, 12, 0, 0, 123000)
TS = datetime(2026, 3, 1, 11, 59, 0)
LOST = (datetime(2026, 2, 1), datetime(2026, 2, 3, 4, 5, 6, 789000))
S = "0x0000002A000000010001"
COUNTS = f.BatchCounts(
    rows=5, min_lsn="0x01", max_lsn="0x09", min_commit_ts=TS, max_commit_ts=AT, deletes=1,
    inserts=3, updates=1,
)  # fmt: skip
METRICS = f.FoldedMetrics(
    source_rtt_ms=1.5, read_seconds=0.25, read_mb=0.75, network_wait_ms=12,
    retention_watermark_ts=TS, retention_headroom_hours=71.5, source_max_commit_ts=AT,
    capture_lag_seconds=2.0, ingestion_lag_seconds=3.5, end_lsn="0x0A", end_commit_ts=TS,
    warnings=["a warning", "another"],
)  # fmt: skip
EVENTS = [
    {"kind": "data_skipped", "key": "k2", "lsn": "0x05", "commit_ts": "2026-03-01T10:00:00Z",
     "lost_from_ts": "2026-02-01T00:00:00Z", "lost_to_ts": "2026-02-02T00:00:00+01:00",
     "from": "0x01", "to": "0x05", "certain": True, "reason": "purged"},
    {"kind": "schema_change", "key": "k1", "lsn": "0x05", "commit_ts": None, "detail": "ADD c"},
    {"kind": "capture_instance_switched", "key": "z", "from": "0x03",
     "detail": {"from": "dbo_a", "to": "dbo_b"}},
    {"kind": "warning", "message": "not a row"},
]  # fmt: skip
PLAN = {"snapshot": S, "kind": "keyset", "keys": ["id"], "chunk_rows": 3, "rows": 7,
        "chunks": [[None, 4], [4, None]]}  # fmt: skip
CLOSED = {"snapshot": S, "chunks": 2, "rows": 7, "last_lsn": "0x0C"}


def _row(row, app_id="orders.g2", target="bronze.orders"):
    return f.facts_row(row, app_id=app_id, target=target, written_at=AT)


def test_a_micro_batch_row_and_its_events():
    assert _row(f.BatchRow(7, COUNTS, METRICS, TS, 250)) == GOLDEN["batch"]
    bare = f.BatchRow(0, f.BatchCounts(rows=0), f.FoldedMetrics(), TS, 3)
    assert _row(bare) == GOLDEN["bare"]
    events = [_row(e) for e in f.EventRow.from_files(7, EVENTS)]
    assert events == GOLDEN["events"]
    assert len(events) == 3  # the planning warning is no row


def test_a_batch_whose_headroom_came_from_the_watermark_says_so_in_detail_only():
    """Issue 40 (merged from main): ``headroom_from`` is no facts column; the batch row is the
    golden one but for ``detail``, which names it after the warnings."""
    measured = dataclasses.replace(METRICS, headroom_from="cleanup_watermark")
    row = _row(f.BatchRow(7, COUNTS, measured, TS, 250))
    at = list(FACTS.names).index("detail")
    assert row[:at] + row[at + 1 :] == GOLDEN["batch"][:at] + GOLDEN["batch"][at + 1 :]
    assert json.loads(row[at]) == {
        "warnings": ["a warning", "another"],
        "headroom_from": "cleanup_watermark",
    }
    bare = f.BatchRow(0, f.BatchCounts(rows=0), f.FoldedMetrics(headroom_from="x"), TS, 3)
    assert json.loads(_row(bare)[at]) == {"headroom_from": "x"}


@pytest.mark.parametrize("generation", [0, 3])
@pytest.mark.parametrize(("name", "lost"), [("none", (None, None)), ("lost", LOST)])
def test_a_full_snapshots_open_row(generation, name, lost):
    opened = f.SnapshotOpened(S, TS, generation, lost_from_ts=lost[0], lost_to_ts=lost[1])
    assert _row(opened, "a", "t") == GOLDEN[f"open_full_{generation}_{name}"]


@pytest.mark.parametrize("generation", [0, 2])
def test_a_chunked_snapshots_open_row(generation):
    lost = LOST if generation else (None, None)
    opened = f.SnapshotOpened(S, None, generation, "chunked", *lost, ("id", "Name"))
    assert _row(opened, "a", "t") == GOLDEN[f"open_chunked_{generation}"]


def test_a_plan_row_and_chunk_rows():
    assert _row(f.SnapshotPlanned(S, TS, PLAN, TS, 40), "a.g1", "t") == GOLDEN["plan"]
    for chunk, last, wave_ms, started in ((0, False, 900, TS), (1, True, None, None)):
        lo, hi = PLAN["chunks"][chunk]
        landed = f.ChunkLanded(
            S, TS, chunk, 1, 4, "0x0B", "0x0C", lo, hi, last, 2, wave_ms, started
        )
        assert _row(landed, "a.g1", "t") == GOLDEN[f"chunk_{chunk}"]


@pytest.mark.parametrize(("name", "detail"), [("plain", None), ("chunked", CLOSED)])
def test_closing_rows(name, detail):
    repaired = f.Bootstrapped(S, TS, 7, None, None, detail)
    assert _row(repaired, "a", "t") == GOLDEN[f"bootstrap_repair_{name}"]
    read = f.Bootstrapped(S, None, 0, TS, 12, detail)
    assert _row(read, "a", "t") == GOLDEN[f"bootstrap_read_{name}"]
    row = f.Resnapshotted(4, S, TS, None, TS, 5, None, LOST[1], detail)
    assert _row(row, "a.g4", "t") == GOLDEN[f"resnapshot_{name}"]


def test_a_row_naming_an_unknown_column_is_refused():
    class Odd:
        event = "odd"

        def values(self):
            return {"no_such_column": 1}

    with pytest.raises(KeyError, match="no_such_column"):
        _row(Odd())
