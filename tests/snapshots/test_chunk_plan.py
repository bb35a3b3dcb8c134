"""Chunked snapshots without Spark: the chunks between planned bounds, ``backfill()``'s argument
checks (each error names the argument), its pause states and its ``no_snapshot`` result."""

from __future__ import annotations

import math

import pytest

from mssql_cdc.snapshots.backfill import DEFAULT_WAVE_SECONDS, check_backfill_args
from mssql_cdc.source.chunk_plan import chunk_bounds

ARGS = {
    "chunk_rows": None,
    "max_waves": None,
    "max_seconds": None,
    "target_wave_seconds": None,
    "min_headroom_hours": None,
    "isolation": None,
}


def test_chunks_tile_the_key_space_between_bounds():
    assert chunk_bounds([]) == ((None, None),)
    assert chunk_bounds([[3], [6]]) == ((None, [3]), ([3], [6]), ([6], None))
    composite = chunk_bounds([[0, "k003"], [1, "k001"]])
    assert [c[0] for c in composite[1:]] == [c[1] for c in composite[:-1]]  # contiguous


def test_backfill_arguments_defaults_and_isolation_in_any_case():
    args = check_backfill_args(**ARGS)
    assert (args.chunk_rows, args.target_wave_seconds) == (None, DEFAULT_WAVE_SECONDS)
    chosen = check_backfill_args(**{**ARGS, "isolation": "SNAPSHOT", "target_wave_seconds": 0})
    assert (chosen.isolation, chosen.target_wave_seconds) == ("snapshot", 0.0)
    assert check_backfill_args(**{**ARGS, "isolation": "readcommitted"}).isolation == (
        "readCommitted"
    )


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    [
        ("chunk_rows", 0, ValueError, "chunk_rows must be >= 1"),
        ("chunk_rows", 2.5, TypeError, "chunk_rows must be an int"),
        ("max_waves", True, TypeError, "max_waves must be an int"),
        ("max_seconds", 0, ValueError, "max_seconds must be a finite number > 0"),
        ("target_wave_seconds", -1, ValueError, "target_wave_seconds must be a finite"),
        ("target_wave_seconds", math.nan, ValueError, "target_wave_seconds"),
        ("min_headroom_hours", "24", TypeError, "min_headroom_hours must be a number"),
        ("isolation", "serializable", ValueError, "isolation must be 'snapshot', 'readCommitted'"),
    ],
)
def test_bad_backfill_arguments_are_refused(name, value, error, message):
    with pytest.raises(error, match=message):
        check_backfill_args(**{**ARGS, name: value})


def _ledger(app_id: str = "orders"):
    from mssql_cdc.sink import Ledger, StreamTables, table_ref

    tables = StreamTables(
        None,  # type: ignore[arg-type]  # every read is replaced
        table_ref("bronze.orders", "target"),
        table_ref("ops.facts", "facts_table"),
    )
    return Ledger(tables, app_id)


def _pause_run(wanted: float | None):
    from mssql_cdc.snapshots import backfill as module

    args = check_backfill_args(**{**ARGS, "min_headroom_hours": wanted})
    return module._Run(None, _ledger(), args, "orders.g1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("newest", "wanted", "paused"),
    [
        # a young instance whose stream is caught up: the whole 3-day retention left
        ((72.0, 0.0), 48.0, None),
        # 30 h old: 42 h left
        ((72.0, 30.0), 48.0, ("waiting_headroom", "retention headroom 42.00 h")),
        # the stream has not run a batch yet
        (None, 1.0, ("waiting_metrics", "has written no micro-batch facts row")),
        ((None, 0.0), 1e6, None),  # unknown (NULL): go on, warned once
        ((None, 0.0), None, None),  # not asked
    ],
)
def test_headroom_pause(monkeypatch, caplog, newest, wanted, paused):
    import datetime as dt
    import logging

    from mssql_cdc.sink.ledger import landed
    from mssql_cdc.snapshots import backfill as module

    now = dt.datetime(2026, 12, 1, 12, 0, 0)
    monkeypatch.setattr(module, "utc_now", lambda: now)
    monkeypatch.setattr(module, "_unknown_headroom_warned", set())
    found = None if newest is None else (newest[0], now - dt.timedelta(hours=newest[1]))
    asked: list[str] = []

    def fake(spark, facts, app_id):
        asked.append(app_id)
        return found

    monkeypatch.setattr(landed, "newest_headroom", fake)
    run = _pause_run(wanted)
    with caplog.at_level(logging.WARNING, logger="mssql_cdc"):
        first = module._headroom_pause(run, "orders.g1")
        second = module._headroom_pause(run, "orders.g1")
    if paused is None:
        assert (first, second) == (None, None)
    else:
        assert first is not None
        assert first[0] == paused[0]
        assert paused[1] in first[1]
        assert second == first
    assert asked == ([] if wanted is None else ["orders.g1", "orders.g1"])
    warned = [r for r in caplog.records if "not applied" in r.getMessage()]
    assert len(warned) == (1 if newest is not None and newest[0] is None and wanted else 0)


@pytest.mark.parametrize(
    ("whole", "reason"),
    [
        (None, "has no chunked snapshot of bronze.orders in the facts table ops.facts"),
        ("0x00000010000000200003", "took a full snapshot of bronze.orders at 0x0000001000000"),
    ],
)
def test_backfill_without_a_chunked_snapshot_returns_no_snapshot(
    monkeypatch, caplog, whole, reason
):
    import logging

    from mssql_cdc.sink.ledger import landed
    from mssql_cdc.sink.ledger import ledger as ledger_module
    from mssql_cdc.snapshots import backfill as module
    from mssql_cdc.snapshots.reader import TableReader

    monkeypatch.setattr(
        ledger_module, "chunked_snapshot", lambda spark, facts, app_id, target: None
    )
    monkeypatch.setattr(landed, "bootstrap_lsn", lambda spark, facts, app_id, target: whole)
    monkeypatch.setattr(ledger_module, "newest_snapshot_opened", lambda spark, facts, target: None)
    raw = {"connectionString": "Server=localhost;Database=shop", "captureInstance": "dbo_orders"}
    with caplog.at_level(logging.WARNING, logger="mssql_cdc"):
        status = module.backfill(
            TableReader.of(None, raw),  # type: ignore[arg-type]
            _ledger(),
            check_backfill_args(**{**ARGS, "min_headroom_hours": 1.0}),
        )
    assert (status.state, status.paused, status.done) == ("no_snapshot", True, False)
    assert (status.snapshot, status.chunks_done, status.chunks_total, status.waves) == (
        None,
        0,
        None,
        0,
    )
    assert (status.rows_done, status.rows_estimated, status.eta_seconds) == (0, 0, None)
    assert reason in (status.reason or "")
    assert [r.getMessage() for r in caplog.records if "read nothing" in r.getMessage()] == [
        f"orders: backfill() read nothing: {status.reason}"
    ]


@pytest.mark.parametrize(
    ("opened", "closed", "refused"),
    [
        (("0x0000001000000020000A", "orders", "full"), None, True),  # interrupted bootstrap
        (("0x0000001000000020000A", "orders.g2", "full"), None, True),  # interrupted re-snapshot
        (("0x0000001000000020000A", "orders", "full"), "0x0000001000000020000A", False),  # closed
        (("0x0000001000000020000A", "other", "full"), None, False),  # another stream's
        (("0x0000001000000020000A", "orders", "chunked"), None, False),
    ],
)
def test_backfill_refuses_first_while_the_streams_full_snapshot_is_open(
    monkeypatch, opened, closed, refused
):
    from mssql_cdc.sink import SnapshotOpen
    from mssql_cdc.sink.ledger import landed
    from mssql_cdc.sink.ledger import ledger as ledger_module
    from mssql_cdc.snapshots import backfill as module
    from mssql_cdc.snapshots.reader import TableReader

    monkeypatch.setattr(
        ledger_module, "chunked_snapshot", lambda spark, facts, app_id, target: None
    )
    monkeypatch.setattr(landed, "bootstrap_lsn", lambda spark, facts, app_id, target: None)
    monkeypatch.setattr(
        ledger_module, "newest_snapshot_opened", lambda spark, facts, target: SnapshotOpen(*opened)
    )
    monkeypatch.setattr(
        ledger_module,
        "newest_snapshot_event",
        lambda spark, facts, target: None if closed is None else (closed, None),
    )

    def call():
        return module.backfill(
            TableReader.of(
                None,  # type: ignore[arg-type]
                {
                    "connectionString": "Server=localhost;Database=shop",
                    "captureInstance": "dbo_orders",
                },
            ),
            _ledger(),
            check_backfill_args(**ARGS),
        )

    if refused:
        with pytest.raises(ValueError, match=r"has a full snapshot of bronze\.orders open"):
            call()
    else:
        assert call().state == "no_snapshot"
