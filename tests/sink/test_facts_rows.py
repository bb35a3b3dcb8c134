"""Golden facts rows: every kind of typed fact (``sink.facts``) gives the tuple the facts
table has always held for it (the values, their column order, the ``detail`` JSON text). Pure,
no Spark."""

from __future__ import annotations

from datetime import datetime

import pytest

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


def _new(row, app_id="orders.g2", target="bronze.orders"):
    return f.facts_row(row, app_id=app_id, target=target, written_at=AT)


def test_a_micro_batch_row_and_its_events():
    old = f.batch_row(
        app_id="orders.g2", batch_id=7, counts=COUNTS, metrics=METRICS, started_at=TS,
        duration_ms=250, target="bronze.orders", written_at=AT,
    )  # fmt: skip
    assert _new(f.BatchRow(7, COUNTS, METRICS, TS, 250)) == old
    bare = f.BatchRow(0, f.BatchCounts(rows=0), f.FoldedMetrics(), TS, 3)
    assert _new(bare) == f.batch_row(
        app_id="orders.g2", batch_id=0, counts=f.BatchCounts(rows=0), metrics=f.FoldedMetrics(),
        started_at=TS, duration_ms=3, target="bronze.orders", written_at=AT,
    )  # fmt: skip
    old_events = f.event_rows(
        app_id="orders.g2", batch_id=7, events=EVENTS, target="bronze.orders", written_at=AT
    )
    assert [_new(e) for e in f.EventRow.from_files(7, EVENTS)] == old_events
    assert len(old_events) == 3


@pytest.mark.parametrize("generation", [0, 3])
@pytest.mark.parametrize("lost", [(None, None), LOST])
def test_a_full_snapshots_open_row(generation, lost):
    old = f.snapshot_open_row(
        app_id="a", snapshot_lsn=S, commit_ts=TS, target="t", written_at=AT,
        kind="resnapshot" if generation else "bootstrap", generation=generation,
        lost_from_ts=lost[0], lost_to_ts=lost[1],
    )  # fmt: skip
    opened = f.SnapshotOpened(S, TS, generation, lost_from_ts=lost[0], lost_to_ts=lost[1])
    assert _new(opened, "a", "t") == old


@pytest.mark.parametrize("generation", [0, 2])
def test_a_chunked_snapshots_open_row(generation):
    old = f.snapshot_open_row(
        app_id="a", snapshot_lsn=S, commit_ts=None, target="t", written_at=AT,
        kind="resnapshot" if generation > 0 else "bootstrap", generation=generation,
        lost_from_ts=LOST[0] if generation else None, lost_to_ts=LOST[1] if generation else None,
        mode="chunked", extra={"keys": ["id", "Name"]},
    )  # fmt: skip
    opened = f.SnapshotOpened(
        S, None, generation, "chunked",
        LOST[0] if generation else None, LOST[1] if generation else None, ("id", "Name"),
    )  # fmt: skip
    assert _new(opened, "a", "t") == old


def test_a_plan_row_and_chunk_rows():
    plan = {"snapshot": S, "kind": "keyset", "keys": ["id"], "chunk_rows": 3, "rows": 7,
            "chunks": [[None, 4], [4, None]]}  # fmt: skip
    old = f.snapshot_event_row(
        "snapshot_plan", app_id="a.g1", snapshot_lsn=S, commit_ts=TS, target="t",
        written_at=AT, detail=plan, started_at=TS, duration_ms=40,
    )  # fmt: skip
    assert _new(f.SnapshotPlanned(S, TS, plan, TS, 40), "a.g1", "t") == old
    for chunk, last, wave_ms, started in ((0, False, 900, TS), (1, True, None, None)):
        old = f.snapshot_event_row(
            "snapshot_chunk", app_id="a.g1", snapshot_lsn=S, commit_ts=TS, target="t",
            written_at=AT,
            detail={"snapshot": S, "chunk": chunk, "wave": 1, "lo": plan["chunks"][chunk][0],
                    "hi": plan["chunks"][chunk][1], "last": last, "wave_chunks": 2},
            rows=4, min_lsn="0x0B", max_lsn="0x0C", started_at=started, duration_ms=wave_ms,
        )  # fmt: skip
        landed = f.ChunkLanded(
            S, TS, chunk, 1, 4, "0x0B", "0x0C", plan["chunks"][chunk][0],
            plan["chunks"][chunk][1], last, 2, wave_ms, started,
        )  # fmt: skip
        assert _new(landed, "a.g1", "t") == old


@pytest.mark.parametrize(
    "detail", [None, {"snapshot": S, "chunks": 2, "rows": 7, "last_lsn": "0x0C"}]
)
def test_closing_rows(detail):
    old = f.bootstrap_row(
        app_id="a", snapshot_lsn=S, commit_ts=TS, rows=7, started_at=None, duration_ms=None,
        target="t", written_at=AT, detail=detail,
    )  # fmt: skip
    assert _new(f.Bootstrapped(S, TS, 7, None, None, detail), "a", "t") == old
    old = f.bootstrap_row(
        app_id="a", snapshot_lsn=S, commit_ts=None, rows=0, started_at=TS, duration_ms=12,
        target="t", written_at=AT, detail=detail,
    )  # fmt: skip
    assert _new(f.Bootstrapped(S, None, 0, TS, 12, detail), "a", "t") == old
    old = f.resnapshot_row(
        app_id="a.g4", snapshot_lsn=S, commit_ts=TS, rows=None, started_at=TS, duration_ms=5,
        lost_from_ts=None, lost_to_ts=LOST[1], generation=4, target="t", written_at=AT,
        detail=detail,
    )  # fmt: skip
    row = f.Resnapshotted(4, S, TS, None, TS, 5, None, LOST[1], detail)
    assert _new(row, "a.g4", "t") == old


def test_a_row_naming_an_unknown_column_is_refused():
    class Odd:
        event = "odd"

        def values(self):
            return {"no_such_column": 1}

    with pytest.raises(KeyError, match="no_such_column"):
        _new(Odd())
