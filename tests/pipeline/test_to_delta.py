"""``stream(spark, options).to_delta(...)`` end to end in local Spark and Delta against the
emulator: the seed's smallest stream, its facts, resuming, and the argument rules."""

from __future__ import annotations

import json

import pytest

from _pipeline import bronze_changes
from mssql_cdc import stream
from mssql_cdc.cli import main


def facts_rows(spark, path):
    df = spark.read.format("delta").load(str(path))
    return df.where("event IS NULL").orderBy("batch_id").collect()


def warnings_of(row) -> list[str]:
    return json.loads(row["detail"])["warnings"] if row["detail"] else []


def test_smallest_stream_writes_the_history_once_with_a_facts_row_per_batch(
    spark, source, tmp_path, monkeypatch, capsys
):
    from mssql_cdc.source.datasource import HAS_ADMISSION_CONTROL

    bronze, facts, cp = tmp_path / "bronze", tmp_path / "facts", tmp_path / "cp"
    source.workload(1)

    def run():
        query = stream(spark, source.options(maxCommitsPerBatch="3")).to_delta(
            str(bronze),
            app_id="orders-v1",
            checkpoint=str(cp),
            facts_table=str(facts),
            trigger={"availableNow": True},
        )
        assert query.name == "orders-v1"
        query.awaitTermination()
        return query

    query = run()
    history = source.changes()
    assert bronze_changes(spark, bronze) == history
    batches = facts_rows(spark, facts)
    assert [r["batch_id"] for r in batches] == list(range(len(batches)))
    # five commits, at most three per batch; Spark 4.0/4.1 ignore maxCommitsPerBatch: one batch
    n = 2 if HAS_ADMISSION_CONTROL else 1
    assert len(batches) == n
    in_bronze = {
        r["_batch_id"]: r["count"]
        for r in spark.read.format("delta").load(str(bronze)).groupBy("_batch_id").count().collect()
    }
    assert [r["rows"] for r in batches] == [in_bronze[r["batch_id"]] for r in batches]
    # Spark counts the rows of every read: the first batch of a new bronze table reads one row
    # more (a limit of one row first, so an empty batch never creates the table: ADR 0157),
    # every batch is read once, its counts observed on the write
    read = [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]
    assert read == [batches[0]["rows"] + 1, *(r["rows"] for r in batches[1:])]
    assert sum(r["rows"] for r in batches) == len(history)
    last = batches[-1]
    assert last["max_lsn"] == history[-1][0]
    assert last["end_lsn"] == history[-1][0]  # metrics folded from the default directory
    assert last["retention_headroom_hours"] is not None
    assert {r["target"] for r in batches} == {str(bronze)}
    assert list((cp / "_mssql_cdc_metrics").iterdir()) == []  # folded and deleted
    # a planning warning (Spark 4.0/4.1 ignore maxCommitsPerBatch) reaches the first batch's
    # detail, once in the run (mssql_cdc.source.run_warnings)
    ignored = [w for r in batches for w in warnings_of(r) if "maxCommitsPerBatch=3" in w]
    assert ignored == ([] if HAS_ADMISSION_CONTROL else [warnings_of(batches[0])[0]])

    # Only another table changes: the stream's next batch reads nothing and still has a row.
    source.sql("INSERT INTO dbo.other VALUES (1, N'x')")
    source.scan()
    run()
    batches = facts_rows(spark, facts)
    assert len(batches) == n + 1
    empty = batches[-1]
    assert (empty["batch_id"], empty["rows"], empty["min_lsn"], empty["max_lsn"]) == (
        n,
        0,
        None,
        None,
    )
    # the second run warns again, in its own first batch
    assert len(warnings_of(empty)) == (0 if HAS_ADMISSION_CONTROL else 1)
    assert bronze_changes(spark, bronze) == history

    # A rerun, here through the command line, resumes from the checkpoint: the new changes, once.
    source.workload(100)
    monkeypatch.setenv("MSSQL_CDC_PASSWORD", source.server.password)
    argv = ["stream", "--connection-string", source.connection_string, "--user", "sa"]
    argv += ["--capture-instance", "dbo_orders", "--target", str(bronze), "--app-id", "orders-v1"]
    argv += ["--checkpoint", str(cp), "--facts-table", str(facts), "--option", "numPartitions=1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "orders-v1: streaming dbo_orders into" in out
    assert source.server.password not in out
    assert bronze_changes(spark, bronze) == source.changes()
    batches = facts_rows(spark, facts)
    assert [r["batch_id"] for r in batches] == list(range(len(batches)))
    assert sum(r["rows"] for r in batches) == len(source.changes())


def test_delta_state_is_computed_between_batches_of_a_query_that_keeps_running(
    spark, source, tmp_path
):
    from mssql_cdc.sink.txn_ids import compute_transactions
    from mssql_cdc.sink.warmup import WARMER

    source.workload(1)
    history = source.changes()
    computed = {}
    for trigger in ({"availableNow": True}, {"processingTime": "1 second"}):
        kind = next(iter(trigger))
        bronze, facts = tmp_path / f"bronze-{kind}", tmp_path / f"facts-{kind}"
        query = stream(spark, source.options()).to_delta(
            str(bronze),
            app_id=f"warm-{kind}",
            checkpoint=str(tmp_path / f"cp-{kind}"),
            facts_table=str(facts),
            trigger=trigger,
        )
        if kind == "availableNow":
            query.awaitTermination()
        else:
            query.processAllAvailable()
            query.stop()
        assert bronze_changes(spark, bronze) == history
        assert WARMER.wait_idle(120)
        done = {table for table, ok in WARMER.done if ok}
        computed[kind] = (str(bronze) in done, str(facts) in done)
        if kind == "availableNow":
            # nothing after its commits (ADR 0177, 0180): the versions it wrote still need
            # building
            for table in (bronze, facts):
                before = set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
                assert compute_transactions(spark, str(table))
                after = set(spark.sparkContext.statusTracker().getJobIdsForGroup(None))
                assert after - before, table
    # ADR 0177: a query that stops after its batches would leave the last computation unused
    assert computed == {"availableNow": (False, False), "processingTime": (True, True)}


def test_a_run_has_delta_compute_existing_tables_state_while_its_query_starts(
    spark, source, tmp_path, monkeypatch
):
    """ADR 0179: the first batch's checks and commits find the state of bronze and the facts
    table computed while the query started; the facts were checked once, by to_delta."""
    import mssql_cdc.sink.delta as sink_module
    from mssql_cdc.sink.warmup import WARMER

    sink_checks = []

    class CountingLedger(sink_module.Ledger):  # the sink's ledger, not to_delta's
        def check_one_target(self) -> None:
            sink_checks.append(self.app_id)
            super().check_one_target()

    monkeypatch.setattr(sink_module, "Ledger", CountingLedger)
    bronze, facts = tmp_path / "bronze", tmp_path / "facts"
    computed = []
    for run in range(2):
        source.workload(1 + 10 * run)
        assert WARMER.wait_idle(120)
        WARMER.done.clear()
        query = stream(spark, source.options()).to_delta(
            str(bronze),
            app_id="scheduled",
            checkpoint=str(tmp_path / "cp"),
            facts_table=str(facts),
            trigger={"availableNow": True},
        )
        query.awaitTermination()
        assert WARMER.wait_idle(120)
        computed.append(sorted(WARMER.done))
    assert bronze_changes(spark, bronze) == source.changes()
    # both tables asked for before each start, the facts table again during its batch's bronze
    # write (ADR 0180; merged with the first ask when that was still queued); the second run's
    # states were computed, and an availableNow query computes nothing after its batch's
    # commits (ADR 0177)
    for run in computed:
        asked = [table for table, _ in run]
        assert asked[:2] == [str(bronze), str(facts)], run
        assert set(asked[2:]) <= {str(facts)}, run
    assert all(ok for _, ok in computed[1]), computed[1]
    assert sink_checks == []


def test_arguments_are_checked_before_the_query_starts(spark, source, tmp_path):
    cdc = stream(spark, source.options())
    args = {"target": str(tmp_path / "b"), "app_id": "a", "checkpoint": str(tmp_path / "cp")}
    with pytest.raises(ValueError, match="app_id is empty"):
        cdc.to_delta(**{**args, "app_id": " "})
    with pytest.raises(ValueError, match="checkpoint is empty"):
        cdc.to_delta(**{**args, "checkpoint": ""})
    with pytest.raises(TypeError, match="target must be a table name or path"):
        cdc.to_delta(**{**args, "target": 3})
    with pytest.raises(ValueError, match=r"trigger .*is not a trigger to_delta runs"):
        cdc.to_delta(**args, trigger={"every": "1 minute"})
    with pytest.raises(TypeError, match="trigger must be a dict"):
        cdc.to_delta(**args, trigger="availableNow")
    with pytest.raises(ValueError, match=r"facts_table .* is the target"):
        cdc.to_delta(**args, facts_table=args["target"])
    with pytest.raises(ValueError, match="metricsPath 'dbfs:/m': a dbfs:/ URI"):
        stream(spark, source.options(metricsPath="dbfs:/m")).to_delta(**args)
    with pytest.raises(ValueError, match="bootstrap=True sets startingLsn itself"):
        stream(spark, source.options(startingLsn="latest")).to_delta(**args, bootstrap=True)
    with pytest.raises(TypeError):
        cdc.to_delta(args["target"], "a", args["checkpoint"], None, {"once": True})
    assert spark.streams.active == []
    assert not (tmp_path / "b").exists()


def test_stream_copies_options_and_hides_secrets(spark, source, caplog):
    options = source.options(maxCommitsPerBatch=5, includecommandid=True, colour="blue")
    with caplog.at_level("WARNING", logger="mssql_cdc"):
        cdc = stream(spark, options)
        stream(spark, options)
    options["captureInstance"] = "changed"
    assert cdc.options["captureInstance"] == "dbo_orders"
    assert cdc.options["maxCommitsPerBatch"] == "5"
    assert cdc.options["includeCommandId"] == "true"
    assert repr(cdc) == "CdcStream(captureInstance='dbo_orders')"
    warnings = [r.getMessage() for r in caplog.records if "colour" in r.getMessage()]
    assert len(warnings) == 2  # one per stream() call: a second notebook cell is not silent
    assert source.server.password not in caplog.text
    with pytest.raises(ValueError, match="'connectionString' is required"):
        stream(spark, {"captureInstance": "dbo_orders"})


def test_every_argument_is_checked_before_the_bootstrap_reads_or_writes(
    spark, source, tmp_path, monkeypatch
):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    cdc = stream(spark, source.options())
    bronze, facts = tmp_path / "b", tmp_path / "f"
    args = {
        "target": str(bronze),
        "app_id": "a",
        "checkpoint": str(tmp_path / "cp"),
        "facts_table": str(facts),
        "bootstrap": True,
    }
    bad = [
        ({"processingTime": "banana"}, "processingTime must be an interval Spark reads"),
        ({"availableNow": False}, "availableNow must be True"),
        ({"continuous": "1 second"}, "continuous processing runs neither foreachBatch"),
    ]
    for trigger, message in bad:
        with pytest.raises(ValueError, match=message):
            cdc.to_delta(**args, trigger=trigger)
    other = (
        spark.readStream.format("rate").load().writeStream.format("noop").queryName("busy").start()
    )
    try:
        with pytest.raises(ValueError, match="query_name 'busy': a streaming query of that name"):
            cdc.to_delta(**args, query_name="busy")
    finally:
        other.stop()
    # On Databricks (created here by its environment variable) a local checkpoint is two places.
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "15.4")
    with pytest.raises(ValueError, match=r"/Volumes/<catalog>/<schema>/<volume>/<dir>"):
        cdc.to_delta(**args, trigger={"availableNow": True})
    # Serverless compute runs only availableNow.
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "client.3.1")
    with pytest.raises(ValueError, match="serverless compute runs only"):
        cdc.to_delta(**{**args, "checkpoint": "s3://b/cp"}, trigger={"processingTime": "1 minute"})
    assert spark.streams.active == []
    assert not bronze.exists()
    assert not facts.exists()


def test_a_driver_killed_while_writing_the_first_offset_does_not_block_the_restart(
    spark, source, tmp_path, caplog
):
    # Regression (fault harness, seed 2060): a SIGKILL while Spark wrote offsets/0 left only its
    # temporary file; every restart then failed with STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY.
    import logging

    cp, bronze = tmp_path / "cp", tmp_path / "bronze"
    (cp / "offsets").mkdir(parents=True)
    (cp / "commits").mkdir()
    (cp / "metadata").write_text('{"id":"caf8646e-4be3-4dfa-b32b-dc1ff93a4f94"}')
    temp = cp / "offsets" / ".0.fe696882-0b23-4518-9c43-07a30ed71cf0.tmp"
    temp.write_text("v1\n")
    source.workload(1)
    with caplog.at_level(logging.WARNING, logger="mssql_cdc"):
        stream(spark, source.options()).to_delta(
            str(bronze), app_id="killed-early", checkpoint=str(cp), trigger={"availableNow": True}
        ).awaitTermination()
    assert bronze_changes(spark, bronze) == source.changes()
    assert not temp.exists()
    assert any("unfinished first entry" in r.getMessage() for r in caplog.records)
