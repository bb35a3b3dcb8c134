"""A silver rebuild from a completed chunked snapshot takes its chunk rows: the rows of
snapshot S are the operation-0 rows whose ``coalesce(_snapshot, _start_lsn)`` is S, chunk
rows included (``sink.bronze.snapshot_rows_condition``). It once took only rows with
``_chunk`` NULL, so a chunked snapshot rebuilt silver empty."""

from __future__ import annotations

from mssql_cdc.silver import plan

S, L = "0x00000000000000000010", "0x00000000000000000020"


def test_rebuild_takes_the_chunk_rows_of_the_snapshot(spark):
    bronze = spark.createDataFrame(
        [
            (1, 0, L, S, 0),  # chunk 0 of snapshot S, stamped with its wave's LSN L
            (2, 0, L, S, 1),
            (3, 0, S, "0x00000000000000000001", None),  # a whole snapshot at another LSN
            (4, 2, "0x00000000000000000030", None, None),  # a change after S
            (5, 0, "0x00000000000000000005", None, None),  # operation 0 of no snapshot S
        ],
        "id INT, _operation INT, _start_lsn STRING, _snapshot STRING, _chunk INT",
    )
    picked = plan.changes(bronze, S, "0x00000000000000000030", plan.Snapshot(S, None))
    assert sorted(r["id"] for r in picked.collect()) == [1, 2, 4]
