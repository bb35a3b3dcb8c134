"""Which tables a database stream reports parked (``landed.database_parked``), over a table's
generations: a re-snapshot into a later generation clears a parked row, a generation parked
after it opened stays parked when its chunked re-snapshot finishes, a micro-batch row clears
it, and another stream's rows count for nothing. Facts rows written directly (only the columns
the read uses)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from mssql_cdc.sink.ledger import landed
from mssql_cdc.sink.tables import table_ref

T0 = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


def _parked(sink: str) -> tuple[str, str | None, str]:
    detail = {"error": f"{sink} failed", "capture_instance": "dbo_t", "database_app_id": "db"}
    return (sink, landed.PARKED_EVENT, json.dumps(detail))


def _joined(sink: str, stream: str = "db") -> tuple[str, str | None, str]:
    return (sink, "database_joined", json.dumps({"database_app_id": stream, "database_batch": 0}))


def _event(sink: str, kind: str) -> tuple[str, str | None, str]:
    return (sink, kind, "{}")


def _batch(sink: str) -> tuple[str, str | None, str]:
    return (sink, None, "")


def _found(spark, tmp_path, rows) -> dict[str, str]:
    """``database_parked`` of the stream ``db`` over ``rows`` (written one second apart)."""
    data = [
        (sink, kind, detail or None, None if kind else 0, T0 + dt.timedelta(seconds=i), "/b/t")
        for i, (sink, kind, detail) in enumerate(rows)
    ]
    schema = (
        "app_id string, event string, detail string, batch_id long, written_at timestamp, "
        "target string"
    )
    path = str(tmp_path / "facts")
    spark.createDataFrame(data, schema).write.format("delta").save(path)
    found = landed.database_parked(spark, table_ref(path, "facts_table"), "db")
    return {sink: table.error for sink, table in found.items()}


@pytest.mark.parametrize(
    ("rows", "parked"),
    [
        # parked with data loss, then re-snapshotted into generation 1: no longer parked
        (
            [
                _batch("t"),
                _parked("t"),
                _event("t.g1", "snapshot_open"),
                _event("t.g1", "resnapshot"),
            ],
            [],
        ),
        # generation 1 opened a chunked re-snapshot, joined, was parked; its backfill() then
        # finished the re-snapshot: still parked, under its own sink id
        (
            [
                _parked("t"),
                _event("t.g1", "snapshot_open"),
                _joined("t.g1"),
                _parked("t.g1"),
                _event("t.g1", "resnapshot"),
            ],
            ["t.g1"],
        ),
        # a micro-batch row after the parked row: written since
        ([_parked("t"), _batch("t")], []),
        # another stream's rows (a longer app_id, another database stream) count for nothing
        (
            [
                _parked("t"),
                _batch("t2"),
                _joined("t", stream="other"),
                _event("t2.g1", "resnapshot"),
            ],
            ["t"],
        ),
    ],
    ids=["re-snapshotted", "parked-in-its-generation", "written-since", "others-rows"],
)
def test_a_table_is_parked_until_a_row_of_it_or_of_a_later_generation_is_newer(
    spark, tmp_path, rows, parked
):
    found = _found(spark, tmp_path, rows)
    assert sorted(found) == parked
    for sink in parked:
        assert found[sink] == f"{sink} failed"
