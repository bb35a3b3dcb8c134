"""``to_delta`` against the emulator: a deleted checkpoint after an empty batch, one target per
app_id, three-part table names and a facts table that names the target in another spelling."""

from __future__ import annotations

import shutil
import uuid

import pytest
from pyspark.errors import StreamingQueryException

from mssql_cdc import finalization, stream


def facts_rows(spark, facts):
    df = spark.read.format("delta").load(str(facts)) if "/" in str(facts) else spark.table(facts)
    return df.orderBy("written_at").collect()


def test_a_deleted_checkpoint_after_an_empty_batch_fails_instead_of_skipping(
    spark, source, tmp_path
):
    bronze, facts, cp = tmp_path / "bronze", tmp_path / "facts", tmp_path / "cp"
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1), (2, N'b', 2)")
    source.scan()

    def run():
        query = stream(spark, source.options()).to_delta(
            str(bronze),
            app_id="orders-quiet",
            checkpoint=str(cp),
            facts_table=str(facts),
            trigger={"availableNow": True},
            bootstrap=True,
        )
        query.awaitTermination()

    run()
    rows = facts_rows(spark, facts)
    snapshot_lsn = next(r["max_lsn"] for r in rows if r["event"] == "bootstrap")
    batches = [(r["batch_id"], r["rows"], r["end_lsn"]) for r in rows if r["event"] is None]
    assert [b[:2] for b in batches] == [(0, 0)]

    source.sql("INSERT INTO dbo.orders VALUES (3, N'c', 3)")
    source.scan()
    shutil.rmtree(cp)
    with pytest.raises(StreamingQueryException, match="micro-batch 0 has the id of the last"):
        run()
    assert spark.read.format("delta").load(str(bronze)).count() == 2  # the snapshot only
    assert [r["batch_id"] for r in facts_rows(spark, facts) if r["event"] is None] == [0]
    assert batches == [(0, 0, snapshot_lsn)]  # the empty batch 0 recorded where it ended


def test_an_app_id_reused_for_another_target_is_refused_before_anything_runs(
    spark, source, tmp_path
):
    facts = tmp_path / "facts"
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()

    def run(target, checkpoint):
        return stream(spark, source.options()).to_delta(
            str(tmp_path / target),
            app_id="orders-one",
            checkpoint=str(tmp_path / checkpoint),
            facts_table=str(facts),
            trigger={"availableNow": True},
            bootstrap=True,
        )

    run("bronze", "cp").awaitTermination()
    old = str(tmp_path / "bronze")
    # a new target and a new checkpoint: the bootstrap must not take the old target's snapshot
    with pytest.raises(ValueError, match=rf"app_id 'orders-one' writes to {old}"):
        run("bronze2", "cp2")
    # a new target on the same checkpoint: not silently continued into the new table
    with pytest.raises(ValueError, match=rf"app_id 'orders-one' writes to {old}"):
        run("bronze2", "cp")
    assert not (tmp_path / "bronze2").exists()
    assert spark.streams.active == []
    assert {r["target"] for r in facts_rows(spark, facts)} == {old}


def test_three_part_names_for_target_facts_and_control_table(spark, source, tmp_path):
    db = f"p3_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE spark_catalog.{db}")
    bronze, facts = f"spark_catalog.{db}.orders", f"spark_catalog.{db}.facts"
    control = f"spark_catalog.{db}.control"
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1), (2, N'b', 2)")
    source.scan()

    def run():
        query = stream(spark, source.options()).to_delta(
            bronze,
            app_id="orders-3",
            checkpoint=str(tmp_path / "cp"),
            facts_table=facts,
            trigger={"availableNow": True},
            bootstrap=True,
        )
        query.awaitTermination()
        return query

    run()
    source.workload(10)
    query = run()
    got = spark.table(bronze)
    assert got.where("_operation = 0").count() == 2
    assert got.where("_operation <> 0").count() == len(source.changes()) - 2
    assert {r["target"] for r in facts_rows(spark, facts)} == {bronze}
    end = finalization.end_offset_from_progress(query.lastProgress)
    assert finalization.advance(spark, control, bronze, end) is not None
    assert finalization.finalized_until(spark, control, bronze) is not None


def test_a_facts_table_spelling_the_target_otherwise_is_refused_before_writing(
    spark, source, tmp_path
):
    db = f"p7_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {db}")
    current = spark.catalog.currentCatalog()
    cdc = stream(spark, source.options())
    with pytest.raises(ValueError, match=r"facts_table .* is the target"):
        cdc.to_delta(
            f"{db}.orders", "o7", str(tmp_path / "cp"), f"{current}.{db}.orders", bootstrap=True
        )
    with pytest.raises(ValueError, match=r"facts_table .* is the target"):
        cdc.to_delta(str(tmp_path / "b"), "o7", str(tmp_path / "cp"), str(tmp_path / "b") + "/")
    assert spark.streams.active == []
    assert not spark.catalog.tableExists(f"{db}.orders")


def test_a_bootstrap_that_read_the_table_checks_the_target_again_before_the_query(
    spark, source, tmp_path, monkeypatch
):
    """ADR 0179: the sink of to_delta skips its first check, so a bootstrap that read the table
    (which may take hours) is followed by a second check; one that found its snapshot is not."""
    from mssql_cdc.sink.ledger import identity

    calls = []
    real = identity.check_one_target

    def counting(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(identity, "check_one_target", counting)
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    source.scan()
    per_run = []
    for _ in range(2):
        before = len(calls)
        stream(spark, source.options()).to_delta(
            str(tmp_path / "bronze"),
            app_id="orders-boot",
            checkpoint=str(tmp_path / "cp"),
            facts_table=str(tmp_path / "facts"),
            trigger={"availableNow": True},
            bootstrap=True,
        ).awaitTermination()
        per_run.append(calls[before:])
    assert per_run == [["orders-boot", "orders-boot"], ["orders-boot"]]
