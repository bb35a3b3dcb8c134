"""The main job through a local plain Spark Connect server: ``to_delta`` with a facts table, a
rerun, the rewind check, the bootstrap, ``finalization.track`` (``connect_spark``), and the
pipeline put together by hand (``register(spark)`` + ``delta_sink``) on classic Spark and on
Connect (``any_spark``).

The first three run on Connect only: their classic twins are the classic tests of the same
behaviour (tests/pipeline/test_to_delta.py and test_one_target.py, tests/sink/test_delta_sink.py
for the rewind and the new app_id, tests/snapshots/test_bootstrap.py,
test_finalization_stream.py), which assert everything these do and more; running them twice on
classic Spark cost minutes of CI and proved nothing new."""

from __future__ import annotations

import shutil

import pytest

from _pipeline import bronze_changes, latest_images
from mssql_cdc import finalization, stream
from mssql_cdc.sink import delta_sink
from mssql_cdc.source import register


@pytest.fixture
def connect(connect_spark, monkeypatch):
    """The Connect session, with ``SPARK_CONNECT_MODE_ENABLED`` set as ``any_spark`` sets it."""
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    return connect_spark


def _facts(spark, path):
    rows = spark.read.format("delta").load(str(path)).where("event IS NULL").orderBy("batch_id")
    return rows.collect()


def test_to_delta_reruns_and_refuses_a_deleted_checkpoint(connect, source, tmp_path):
    spark = connect
    bronze, facts, cp = tmp_path / "bronze", tmp_path / "facts", tmp_path / "cp"
    source.workload(1)

    def run(app_id="orders-v1", per_batch="3"):
        query = stream(spark, source.options(maxCommitsPerBatch=per_batch)).to_delta(
            str(bronze),
            app_id=app_id,
            checkpoint=str(cp),
            facts_table=str(facts),
            trigger={"availableNow": True},
        )
        query.awaitTermination()
        return query

    run()
    history = source.changes()
    assert bronze_changes(spark, bronze) == history
    batches = _facts(spark, facts)
    assert [r["batch_id"] for r in batches] == [0, 1]  # five commits, at most three a batch
    assert sum(r["rows"] for r in batches) == len(history)
    assert batches[-1]["max_lsn"] == batches[-1]["end_lsn"] == history[-1][0]

    source.workload(100)  # the rerun resumes from the checkpoint: the new changes, once
    run()
    assert bronze_changes(spark, bronze) == source.changes()
    batches = _facts(spark, facts)
    assert [r["batch_id"] for r in batches] == list(range(len(batches)))
    assert sum(r["rows"] for r in batches) == len(source.changes())

    # The checkpoint deleted, the same app_id: its first batch (0) is refused, nothing written.
    shutil.rmtree(cp)
    source.workload(200)
    with pytest.raises(Exception, match="the checkpoint was deleted or rewound"):
        run()
    assert len(_facts(spark, facts)) == len(batches)
    # A new app_id for the new checkpoint is the way out (in one batch: a batch over Spark
    # Connect costs seconds, and the batching was shown above).
    shutil.rmtree(cp)
    run("orders-v2", per_batch="1000")
    assert {r["app_id"] for r in _facts(spark, facts)} == {"orders-v1", "orders-v2"}


def test_bootstrap_then_changes(connect, source, tmp_path):
    spark = connect
    bronze, facts, cp = tmp_path / "bronze", tmp_path / "facts", tmp_path / "cp"
    source.sql(
        "INSERT INTO dbo.orders VALUES " + ", ".join(f"({i}, N'n{i}', {i})" for i in range(5))
    )
    source.scan()

    def run():
        stream(spark, source.options()).to_delta(
            str(bronze),
            app_id="orders-boot",
            checkpoint=str(cp),
            facts_table=str(facts),
            trigger={"availableNow": True},
            bootstrap=True,
        ).awaitTermination()

    run()
    assert spark.read.format("delta").load(str(bronze)).where("_operation = 0").count() == 5
    source.workload(100)
    run()  # the rerun finds the snapshot and reads only the changes
    assert spark.read.format("delta").load(str(bronze)).where("_operation = 0").count() == 5
    assert latest_images(spark, bronze) == source.table()
    events = spark.read.format("delta").load(str(facts)).where("event IS NOT NULL").collect()
    assert sorted(e["event"] for e in events) == ["bootstrap", "snapshot_open"]


def test_track_advances_the_verdict_of_a_running_query(connect, source, tmp_path):
    spark = connect
    bronze, control = str(tmp_path / "bronze"), str(tmp_path / "control")
    source.workload(1)
    query = stream(spark, source.options()).to_delta(
        bronze,
        app_id="fin-v1",
        checkpoint=str(tmp_path / "cp"),
        facts_table=str(tmp_path / "facts"),
        trigger={"processingTime": "1 second"},
    )
    try:
        listener = finalization.track(spark, query, control, bronze, granularity="minute")
        query.processAllAvailable()
    finally:
        query.stop()
    listener.finish()
    assert listener.join(timeout=120)
    assert listener.last_error is None
    last = finalization.track(spark, query, control, bronze, granularity="minute")
    assert last.join(timeout=120)
    assert last.last_error is None
    ends = [finalization.end_offset_from_progress(p) for p in query.recentProgress]
    newest = max((e for e in ends if e), key=lambda e: e["lsn"])
    expected = finalization.candidate(newest, granularity="minute")
    assert finalization.finalized_until(spark, control, bronze) == expected


def test_pipeline_by_hand_with_register_and_delta_sink(any_spark, source, tmp_path):
    spark = any_spark
    bronze, facts = str(tmp_path / "bronze"), str(tmp_path / "facts")
    source.workload(1)
    register(spark)
    query = (
        spark.readStream.format("mssql_cdc")
        .options(**source.options())
        .load()
        .writeStream.foreachBatch(delta_sink(bronze, "by-hand", facts))
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    assert bronze_changes(spark, bronze) == source.changes()
    assert sum(r["rows"] for r in _facts(spark, facts)) == len(source.changes())


def test_a_database_stream_lands_each_table_once(connect, source, tmp_path):
    """``start_database`` on Connect: its ``foreachBatch`` function runs in the server's worker,
    reads each changed table there, and a rerun reads only what is new."""
    from mssql_cdc import start_database

    spark = connect
    source.workload(1, scan=False)
    source.sql("INSERT INTO dbo.other VALUES (1, N'x')")
    source.scan()
    options = source.options()
    del options["captureInstance"]

    def run():
        query = start_database(
            spark,
            options,
            ["dbo_orders", "dbo_other"],
            target=str(tmp_path / "bronze" / "{ci}"),
            app_id="c-{ci}",
            checkpoint=str(tmp_path / "chk"),
            facts_table=str(tmp_path / "facts"),
            name="connect-db",
            trigger={"availableNow": True},
        )
        query.awaitTermination()
        assert query.exception() is None

    run()
    assert bronze_changes(spark, tmp_path / "bronze" / "dbo_orders") == source.changes()
    source.workload(100)
    run()
    assert bronze_changes(spark, tmp_path / "bronze" / "dbo_orders") == source.changes()
    other = spark.read.format("delta").load(str(tmp_path / "bronze" / "dbo_other"))
    assert other.count() == 1
    rows = _facts(spark, tmp_path / "facts")
    assert [(r["app_id"], r["rows"]) for r in rows if r["app_id"] == "c-dbo_orders"] == [
        ("c-dbo_orders", 11),
        ("c-dbo_orders", 11),
    ]
