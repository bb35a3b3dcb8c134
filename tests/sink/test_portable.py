"""The sink where Databricks and Spark Connect differ from local classic Spark, each condition
made here: Delta's JVM class absent (Delta under other names, or no JVM at all) and
``persist()`` refused (serverless)."""

from __future__ import annotations

import pytest
from _changes import change, changes, lsn, reading, write_metrics

from mssql_cdc._metrics import PartitionMetrics
from mssql_cdc.sink import batch_read, delta_sink, txn_ids

#: where Databricks ships Delta's log class; not on this class path
ELSEWHERE = "com.databricks.sql.transaction.tahoe.DeltaLog"
REFUSED = (
    "[NOT_SUPPORTED_WITH_SERVERLESS] PERSIST TABLE is not supported on serverless compute. "
    "SQLSTATE: 0A000"
)


def _append(spark, path, app_id, version):
    (
        spark.range(1)
        .write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", version)
        .save(path)
    )


@pytest.mark.parametrize("policy", ["classic", "v2"])
def test_txn_versions_read_from_the_log_match_deltas_own(spark, tmp_path, monkeypatch, policy):
    path = str(tmp_path / "t")
    spark.sql(
        f"CREATE TABLE delta.`{path}` (id BIGINT) USING delta "
        f"TBLPROPERTIES ('delta.checkpointPolicy' = '{policy}')"
    )
    _append(spark, path, "only-in-checkpoint", 7)
    for version in range(12):  # Delta checkpoints every 10 commits
        _append(spark, path, "a", version)
    _append(spark, path, "b", 5)
    listing = txn_ids.list_log(spark, path)
    assert listing.checkpoint is not None
    assert listing.checkpoint[0] == 10
    names = [p.rsplit("/", 1)[-1] for p in listing.checkpoint[1]]
    if policy == "v2":  # <version>.checkpoint.<uuid>.<json|parquet>
        assert all(txn_ids._V2.match(n) for n in names), names
    else:
        assert names == ["00000000000000000010.checkpoint.parquet"]

    apps = ["a", "b", "only-in-checkpoint", "never"]
    fast = [txn_ids.recorded_txn_version(spark, path, a) for a in apps]
    assert fast == [11, 5, 7, -1]
    monkeypatch.setattr(txn_ids, "DELTA_LOG_CLASS", ELSEWHERE)
    assert txn_ids._jvm_txn_version(spark, path, "a") is None  # the class is not there
    assert [txn_ids.recorded_txn_version(spark, path, a) for a in apps] == fast
    missing = str(tmp_path / "missing")
    assert txn_ids.recorded_txn_version(spark, missing, "a") == -1
    assert not txn_ids.has_delta_log(spark, missing)
    assert txn_ids.has_delta_log(spark, path)


def test_a_rewound_checkpoint_is_refused_without_deltas_jvm_class(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(txn_ids, "DELTA_LOG_CLASS", ELSEWHERE)
    bronze, facts = str(tmp_path / "bronze"), str(tmp_path / "facts")
    sink = delta_sink(bronze, "orders-v1", facts)
    sink(changes(spark, [change(1, 2, 1, "a")]), 0)
    sink(changes(spark, [change(2, 2, 2, "b")]), 1)
    with pytest.raises(ValueError, match=r"micro-batch 0 is not after batch 1.*deleted or rewound"):
        delta_sink(bronze, "orders-v1", facts)(changes(spark, [change(1, 2, 1, "a")]), 0)
    # the facts table lost (deleted by hand): the target's txn id still refuses the rewind
    import shutil

    shutil.rmtree(facts)
    with pytest.raises(ValueError, match=r"micro-batch 0 is not after batch 1.*the target"):
        delta_sink(bronze, "orders-v1", facts)(changes(spark, [change(1, 2, 1, "a")]), 0)
    assert spark.read.format("delta").load(bronze).count() == 2


def test_the_sink_writes_each_batch_once_when_persist_is_refused(spark, tmp_path, monkeypatch):
    bronze, facts, metrics = str(tmp_path / "bronze"), str(tmp_path / "facts"), str(tmp_path / "m")
    reads = tmp_path / "reads"
    rows = [change(1, 2, 1, "a"), change(2, 4, 1, "b"), change(3, 1, 1, None)]
    part = PartitionMetrics(lsn(0), lsn(3), rows=3, read_mb=0.5, last=True, end_lsn=lsn(3))
    df = reading(spark, rows, metrics, [part], reads_dir=str(reads))

    def refuse(self, *args, **kwargs):
        raise RuntimeError(REFUSED)

    monkeypatch.setattr(type(df), "persist", refuse)
    monkeypatch.setattr(batch_read, "_warned", set())
    write_metrics(metrics, [])
    delta_sink(bronze, "serverless", facts, metrics_path=metrics)(df, 0)

    assert len(list(reads.iterdir())) == 2  # read to count it, read again to write it
    landed = spark.read.format("delta").load(bronze).orderBy("_start_lsn").collect()
    assert [(r["_start_lsn"], r["_operation"], r["_batch_id"]) for r in landed] == [
        (lsn(1), 2, 0),
        (lsn(2), 4, 0),
        (lsn(3), 1, 0),
    ]
    (row,) = spark.read.format("delta").load(facts).collect()
    assert (row["rows"], row["inserts"], row["updates"], row["deletes"]) == (3, 1, 1, 1)
    assert (row["max_lsn"], row["end_lsn"], row["read_mb"]) == (lsn(3), lsn(3), 0.5)

    # any other persist() error is the caller's
    def broken(self, *args, **kwargs):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(type(df), "persist", broken)
    with pytest.raises(RuntimeError, match="out of memory"):
        delta_sink(bronze, "serverless", facts)(changes(spark, [change(9, 2, 9, "z")]), 1)


def test_create_table_sql_quotes_names_comments_and_properties():
    from pyspark.sql.types import DecimalType

    from mssql_cdc.sink.ddl import create_table_sql

    sql = create_table_sql(
        "delta.`/data/o``rders`",
        [("a`b c", "INT", "it's"), ("amount", DecimalType(10, 2), None)],
        "the table's comment",
        {"mssql_cdc.schema_version": "2"},
    )
    assert sql == (
        "CREATE TABLE IF NOT EXISTS delta.`/data/o``rders` (`a``b c` INT COMMENT 'it\\'s', "
        "`amount` decimal(10,2)) USING delta COMMENT 'the table\\'s comment' "
        "TBLPROPERTIES ('mssql_cdc.schema_version' = '2')"
    )
