"""The sink's pure-Python parts, without Spark: the rewind rule, folding metrics files, event
rows, table references, and docs/sink.md agreeing with the table comments."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from mssql_cdc._metrics import PartitionMetrics
from mssql_cdc.sink.facts import EventRow, FoldedMetrics, facts_row, fold_metrics
from mssql_cdc.sink.ledger.rewind import Recorded, Verdict, check_replay, classify
from mssql_cdc.sink.schemas import FACTS_COLUMNS
from mssql_cdc.sink.tables import table_ref

NAMES = [n for n, _, _ in FACTS_COLUMNS]


def verdict(batch_id, **recorded):
    return classify("a", batch_id, Recorded(**recorded), target="t", facts_table="f")


def test_a_batch_after_the_last_recorded_one_is_new():
    assert verdict(0) is Verdict.NEW
    assert verdict(8, facts_last=7, facts_txn=7, target_txn=7) is Verdict.NEW
    # bronze landed, facts did not: Delta skips the append, the facts row is written
    assert verdict(8, facts_last=7, facts_txn=7, target_txn=8) is Verdict.NEW
    # nothing readable (Spark Connect): the facts rows decide
    assert verdict(8, facts_last=7, facts_txn=None, target_txn=None) is Verdict.NEW


def test_the_last_recorded_batch_again_is_a_replay():
    assert verdict(7, facts_last=7, facts_txn=7, target_txn=7) is Verdict.REPLAY
    # old micro-batch rows deleted: Delta's txn still remembers
    assert verdict(7, facts_last=-1, facts_txn=7, target_txn=7) is Verdict.REPLAY


@pytest.mark.parametrize(
    "recorded",
    [
        {"facts_last": 7, "facts_txn": 7, "target_txn": 7},
        {"facts_last": 2, "facts_txn": 7, "target_txn": -1},  # rows gone, txn remembers
        {"facts_last": -1, "facts_txn": -1, "target_txn": 9},  # facts added later
    ],
)
def test_an_older_batch_id_is_a_rewind(recorded):
    with pytest.raises(ValueError, match=r"micro-batch 0 is not after batch [79].*new app_id"):
        verdict(0, **recorded)


def test_a_replay_must_end_where_the_recorded_batch_ended():
    rec = Recorded(facts_last=3, last_max_lsn="0x05", last_end_lsn="0x06", last_rows=4)
    check_replay("a", 3, rec, max_lsn="0x05", end_lsn="0x06", rows=4, facts_table="f")
    check_replay("a", 3, rec, max_lsn=None, end_lsn=None, rows=2, facts_table="f")  # purged
    with pytest.raises(ValueError, match=r"another end LSN \(0x09, recorded 0x06\)"):
        check_replay("a", 3, rec, max_lsn="0x05", end_lsn="0x09", rows=4, facts_table="f")
    # an empty batch replayed: only its end offset and its row count can tell
    empty = Recorded(facts_last=0, last_end_lsn="0x06", last_rows=0)
    check_replay("a", 0, empty, max_lsn=None, end_lsn="0x06", rows=0, facts_table="f")
    with pytest.raises(ValueError, match=r"but more rows \(1, recorded 0\)"):
        check_replay("a", 0, empty, max_lsn="0x07", end_lsn=None, rows=1, facts_table="f")


def test_no_metrics_files_fold_to_nulls():
    assert fold_metrics([]) == FoldedMetrics()
    assert FoldedMetrics().detail is None


def test_a_partition_without_a_network_wait_makes_the_sum_null():
    parts = [
        PartitionMetrics("0x01", "0x02", rows=1, network_wait_ms=4, warnings=["w1"]),
        PartitionMetrics("0x02", "0x03", rows=1, network_wait_ms=None, warnings=["w1", "w2"]),
    ]
    folded = fold_metrics(parts)
    assert (folded.network_wait_ms, folded.end_lsn) == (None, None)
    assert json.loads(folded.detail) == {"warnings": ["w1", "w2"]}


def test_event_files_become_rows_in_lsn_order():
    at = datetime(2026, 1, 1)
    events = [
        {
            "kind": "data_skipped",
            "key": "k",
            "from": "0x09",
            "to": "0x0A",
            "certain": True,
            "capture_instance": "dbo_orders",
        },
        {
            "kind": "capture_instance_switched",
            "key": "k2",
            "lsn": "0x03",
            "commit_ts": "2026-01-01T01:00:00.000Z",
            "detail": "dbo_a -> dbo_b",
        },
        {"kind": "mystery", "key": "x"},
    ]
    rows = [
        dict(zip(NAMES, r, strict=True))
        for r in [
            facts_row(e, app_id="a", target="t", written_at=at)
            for e in EventRow.from_files(4, events)
        ]
    ]
    assert [(r["event"], r["min_lsn"], r["end_lsn"], r["batch_id"], r["rows"]) for r in rows] == [
        ("capture_instance_switched", "0x03", "0x03", 4, 0),
        ("data_skipped", "0x09", "0x09", 4, 0),
    ]
    assert rows[0]["min_commit_ts"] == datetime(2026, 1, 1, 1)
    assert json.loads(rows[1]["detail"]) == {"from": "0x09", "to": "0x0A", "certain": True}


def test_table_references():
    assert table_ref("bronze.orders", "target").name == "bronze.orders"
    assert table_ref("/data/orders", "target").path == "/data/orders"
    assert table_ref("s3://b/orders", "target").path == "s3://b/orders"
    assert table_ref("C:/data/orders", "target").path == "C:/data/orders"
    with pytest.raises(ValueError, match="target 'out/orders' is a relative path"):
        table_ref("out/orders", "target")
    ref = table_ref("delta.`/data/or``ders`", "target")
    assert (ref.path, ref.sql) == ("/data/or`ders", "delta.`/data/or``ders`")
    with pytest.raises(ValueError, match="target is empty"):
        table_ref(" ", "target")
    with pytest.raises(TypeError, match="facts_table must be a table name or path"):
        table_ref(3, "facts_table")


def test_docs_list_every_facts_column_in_order():
    doc = (Path(__file__).parents[2] / "docs" / "sink.md").read_text()
    listed = re.findall(r"^\| `(\w+)` \| (\w+) \|", doc, flags=re.MULTILINE)
    assert listed[: len(FACTS_COLUMNS)] == [(n, t) for n, t, _ in FACTS_COLUMNS]
