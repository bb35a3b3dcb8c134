"""The DBA's playbook for adding a column while a processingTime stream runs (issue 14 proof,
docs/schema-changes.md): add the column, enable a second capture instance, the stream stops at
the switch and its restart reads on with the new column, the old instance is disabled, the
stream goes on; bronze holds every change once and the facts hold the events."""

from __future__ import annotations

import pytest

from _pipeline import DISABLE_ORDERS_V1, ORDERS_V2, bronze_changes
from mssql_cdc import Lsn, is_schema_changed, stream


def test_the_add_column_playbook_while_a_stream_runs(spark, source, tmp_path):
    bronze, facts, cp = (str(tmp_path / n) for n in ("bronze", "facts", "cp"))

    def start():
        return stream(spark, source.options()).to_delta(
            bronze,
            app_id="orders-v1",
            checkpoint=cp,
            facts_table=facts,
            trigger={"processingTime": "1 second"},
        )

    query = start()
    source.workload(1)
    query.processAllAvailable()

    # 1. the DBA adds the column: the stream goes on (it is not captured yet)
    source.sql("ALTER TABLE dbo.orders ADD note nvarchar(20) NULL")
    source.sql("INSERT INTO dbo.orders (id, name, qty, note) VALUES (50, N'n', 5, N'before')")
    source.scan()
    query.processAllAvailable()
    assert query.isActive

    # 2. a second capture instance with the new column list; changes go on
    source.sql(ORDERS_V2)
    start_v2 = source.instance_start("dbo_orders_v2")
    source.sql("INSERT INTO dbo.orders (id, name, qty, note) VALUES (51, N'm', 6, N'after')")
    source.sql("UPDATE dbo.orders SET note = N'changed' WHERE id = 51")
    source.scan()

    # 3. the running query's schema lacks `note`: it stops at the switch, before reading
    with pytest.raises(Exception, match="reaches capture instance 'dbo_orders_v2'") as info:
        query.processAllAvailable()
    assert is_schema_changed(info.value)

    # 4. the restart infers the union schema and reads on
    query = start()
    query.processAllAvailable()

    # 5. once the stream has a switch row and one more batch, the DBA disables the old one
    old_history = [r for r in source.changes("dbo_orders") if Lsn.parse(r[0]) < start_v2]
    source.sql(DISABLE_ORDERS_V1)
    source.sql("INSERT INTO dbo.orders (id, name, qty, note) VALUES (52, N'k', 7, N'last')")
    source.sql("UPDATE dbo.orders SET qty = 8 WHERE id = 50")
    source.sql("DELETE FROM dbo.orders WHERE id = 2")
    source.scan()
    query.processAllAvailable()
    assert query.isActive
    query.stop()

    new_history = source.changes("dbo_orders_v2")
    assert bronze_changes(spark, bronze) == old_history + new_history
    df = spark.read.format("delta").load(bronze)
    assert "note" in df.columns
    rows = df.where("_operation <> 0").orderBy("_start_lsn", "_command_id", "_seqval", "_operation")
    notes = [
        (r["id"], r["_operation"], r["note"], r["_capture_instance"])
        for r in rows.collect()
        if r["id"] >= 50
    ]
    assert notes == [
        (50, 2, None, "dbo_orders"),
        (51, 2, "after", "dbo_orders_v2"),
        (51, 3, "after", "dbo_orders_v2"),
        (51, 4, "changed", "dbo_orders_v2"),
        (52, 2, "last", "dbo_orders_v2"),
        (50, 3, "before", "dbo_orders_v2"),
        (50, 4, "before", "dbo_orders_v2"),
    ]
    events = (
        spark.read.format("delta")
        .load(facts)
        .where("event IS NOT NULL")
        .orderBy("batch_id", "min_lsn")
        .collect()
    )
    assert [e["event"] for e in events] == ["schema_change", "capture_instance_switched"]
    ddl, switched = events
    assert "ADD" in ddl["detail"].upper()
    assert "note" in ddl["detail"]
    assert switched["detail"] == "dbo_orders -> dbo_orders_v2"
    assert switched["min_lsn"] == switched["max_lsn"] == str(start_v2)
    assert switched["rows"] == 0
    batches = spark.read.format("delta").load(facts).where("event IS NULL")
    later = batches.where(f"batch_id > {switched['batch_id']}").count()
    assert later >= 1  # the row that tells the DBA the old instance may go


def test_snapshot_on_switch_gives_unchanged_rows_the_new_column(spark, source, tmp_path):
    """snapshot_on_switch=True: after the micro-batch that switches to the new instance, a whole
    snapshot lands in bronze once (``<app_id>#switch``, the batch id), so row 2, which no change
    touched since, and row 1, whose only change was captured without the column, carry
    ``note``; a replay of that batch does not take it again."""
    from mssql_cdc.snapshots import newest_snapshot
    from mssql_cdc.snapshots.switch import SwitchSnapshotSink

    bronze, facts, cp = (str(tmp_path / n) for n in ("bronze", "facts", "cp"))

    def run():
        query = stream(spark, source.options()).to_delta(
            bronze,
            app_id="orders-sw",
            checkpoint=cp,
            facts_table=facts,
            trigger={"availableNow": True},
            snapshot_on_switch=True,
        )
        query.awaitTermination()
        return query

    # it learns of the switch from the metrics files: a URI checkpoint needs metricsPath
    with pytest.raises(ValueError, match=r"snapshot_on_switch=True learns .* set the metricsPath"):
        stream(spark, source.options()).to_delta(
            bronze, app_id="orders-sw", checkpoint="s3a://bucket/cp", snapshot_on_switch=True
        )

    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1), (2, N'b', 2)")
    source.scan()
    run()
    source.sql("ALTER TABLE dbo.orders ADD note nvarchar(20) NULL")
    source.sql("UPDATE dbo.orders SET note = N'kept' WHERE id = 1")  # before the new instance
    source.sql(ORDERS_V2)
    source.sql("INSERT INTO dbo.orders (id, name, qty, note) VALUES (3, N'c', 3, N'new')")
    source.scan()
    run()  # the restart reads the union schema and switches in place

    df = spark.read.format("delta").load(bronze)
    snapshot = df.where("_operation = 0").collect()
    [lsn] = {r["_snapshot"] for r in snapshot}
    assert sorted((r["id"], r["note"]) for r in snapshot) == [(1, "kept"), (2, None), (3, "new")]
    assert newest_snapshot(spark, bronze, facts)["lsn"] == lsn
    [switched] = (
        spark.read.format("delta")
        .load(facts)
        .where("event = 'capture_instance_switched'")
        .collect()
    )
    history = spark.sql(f"DESCRIBE HISTORY delta.`{bronze}`").collect()
    snapshot_commits = [h for h in history if '"switch_snapshot"' in (h["userMetadata"] or "")]
    assert len(snapshot_commits) == 1
    assert f'"batch_id": {switched["batch_id"]}' in snapshot_commits[0]["userMetadata"]
    start_v2 = Lsn.parse(switched["min_lsn"])
    old = [c for c in source.changes("dbo_orders") if Lsn.parse(c[0]) < start_v2]
    assert bronze_changes(spark, bronze) == old + source.changes("dbo_orders_v2")

    # a replay of the switch batch (a crash after the snapshot commit) reads nothing again
    from mssql_cdc.options import parse_options
    from mssql_cdc.sink import DeltaSink, table_ref

    sink = DeltaSink(table_ref(bronze, "target"), "orders-sw", None, None, cp)
    sink.metrics = object()  # type: ignore[assignment]  (only checked to be set)
    wrapper = SwitchSnapshotSink(sink, source.options(), parse_options(source.options()))
    wrapper._snapshot(df.limit(0), switched["batch_id"], {"kind": "capture_instance_switched"})
    assert spark.read.format("delta").load(bronze).where("_operation = 0").count() == 3
    run()  # and a run with nothing new takes no snapshot
    assert spark.read.format("delta").load(bronze).where("_operation = 0").count() == 3
