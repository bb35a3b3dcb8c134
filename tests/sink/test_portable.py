"""The sink where Databricks and Spark Connect differ from local classic Spark, each condition
made here: Delta's JVM class absent (Delta under other names, or no JVM at all). The sink never
persists (``persist()`` refused on serverless): tests/sink/test_one_pass.py."""

from __future__ import annotations

import pytest
from _changes import change, changes

from mssql_cdc.sink import delta_sink, txn_ids

#: where Databricks ships Delta's log class; not on this class path
ELSEWHERE = "com.databricks.sql.transaction.tahoe.DeltaLog"


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
