"""``to_delta(bootstrap=True)``: one snapshot commit, the stream started at its LSN, the facts
rows, and a rerun that finds it and reads nothing."""

from __future__ import annotations

import logging

from _pipeline import bronze_changes, latest_images
from mssql_cdc import stream


def test_bootstrap_then_changes_during_and_after_give_the_table(spark, source, tmp_path, caplog):
    bronze, facts, cp = tmp_path / "bronze", tmp_path / "facts", tmp_path / "cp"
    metrics = tmp_path / "metrics"
    source.sql(
        "INSERT INTO dbo.orders VALUES " + ", ".join(f"({i}, N'n{i}', {i})" for i in range(50))
    )
    source.scan()
    # Committed but not captured yet: in the snapshot's rows, and changes after its LSN.
    source.workload(1000, scan=False)
    source.sql("UPDATE dbo.orders SET qty = -1 WHERE id < 5")
    snapshot_lsn = "0x" + source.sql("SELECT sys.fn_cdc_get_max_lsn() AS m")[0]["m"].hex().upper()

    def run():
        options = source.options(metricsPath=str(metrics))
        query = stream(spark, options).to_delta(
            str(bronze),
            app_id="orders-boot",
            checkpoint=str(cp),
            facts_table=str(facts),
            trigger={"availableNow": True},
            bootstrap=True,
        )
        query.awaitTermination()

    with caplog.at_level(logging.INFO, logger="mssql_cdc"):
        run()
    df = spark.read.format("delta").load(str(bronze))
    snap = df.where("_operation = 0").collect()
    assert len(snap) == 51  # 50 rows, plus 1002 of the uncaptured workload; 1000, 1001 deleted
    assert {(r["_start_lsn"], r["_snapshot"], r["_batch_id"], r["_seqval"]) for r in snap} == {
        (snapshot_lsn, snapshot_lsn, None, None)
    }
    assert bronze_changes(spark, bronze) == []  # nothing captured after the snapshot yet
    messages = [r.getMessage() for r in caplog.records if "bootstrap" in r.getMessage()]
    assert any("reading the table" in m for m in messages)
    assert any("51 rows" in m for m in messages)

    source.scan()  # the uncaptured commits now appear after the snapshot's LSN
    source.sql("UPDATE dbo.orders SET name = N'after' WHERE id BETWEEN 10 AND 12")
    source.sql("DELETE FROM dbo.orders WHERE id = 20")
    source.scan()
    run()
    assert bronze_changes(spark, bronze) == [c for c in source.changes() if c[0] > snapshot_lsn]
    assert latest_images(spark, bronze) == source.table()
    assert spark.read.format("delta").load(str(bronze)).where("_operation = 0").count() == 51

    events = (
        spark.read.format("delta")
        .load(str(facts))
        .where("event IS NOT NULL")
        .orderBy("written_at")
        .collect()
    )
    assert [(e["event"], e["rows"], e["max_lsn"], e["batch_id"]) for e in events] == [
        ("snapshot_open", 0, snapshot_lsn, None),
        ("bootstrap", 51, snapshot_lsn, None),
    ]
    assert events[1]["duration_ms"] is not None
    batches = spark.read.format("delta").load(str(facts)).where("event IS NULL").collect()
    assert all(b["end_lsn"] is not None for b in batches if b["rows"])  # metrics folded
    assert [p.name for p in metrics.iterdir()] == ["orders-boot"]  # <metricsPath>/<app_id>
