"""Local Spark from mssql_cdc.spark.get_spark: Delta configured from the Maven-fetched jars,
UTC session time zone, and Delta's idempotent writes (txnAppId / txnVersion), which the sink's
exactly-once protocol rests on (Delta Lake docs, "Idempotent table writes in foreachBatch")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from local_spark import master
from mssql_cdc.spark import delta_jars, get_spark


def test_session_is_utc_with_delta(spark):
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    assert "DeltaSparkSessionExtension" in spark.conf.get("spark.sql.extensions")
    assert spark.version.startswith("4.2.")


def test_get_spark_returns_the_active_session(spark):
    got = get_spark("another-name", "local[1]")
    # the running session, not a new one: same SparkContext, its name and master unchanged.
    # (Not always the same Python object: PySpark's active session is a process-wide slot that
    # any createDataFrame moves, e.g. a foreachBatch sink's on the query's cloned session, so
    # `is spark` held only when no stream ran earlier in this process.)
    assert got.sparkContext is spark.sparkContext
    assert (got.sparkContext.appName, got.sparkContext.master) == ("mssql-cdc-tests", master())


def _append(spark, path: Path, rows: list[tuple[int, str]], app_id: str, version: int) -> None:
    df = spark.createDataFrame(rows, "id INT, v STRING")
    (
        df.write.format("delta")
        .mode("append")
        .option("txnAppId", app_id)
        .option("txnVersion", version)
        .option("userMetadata", f"{app_id}:{version}")
        .save(str(path))
    )


def _txn_entries(path: Path) -> list[dict[str, object]]:
    entries = []
    for log in sorted((path / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "txn" in action:
                entries.append(action["txn"])
    return entries


def test_replayed_txn_version_is_skipped(spark, tmp_path):
    table = tmp_path / "bronze"
    _append(spark, table, [(1, "a"), (2, "b")], "orders-v1", 0)
    _append(spark, table, [(3, "c")], "orders-v1", 1)
    # A crash after the commit and before the checkpoint: Spark replays batch 1.
    _append(spark, table, [(3, "c")], "orders-v1", 1)
    # An older batch id is skipped too.
    _append(spark, table, [(1, "a")], "orders-v1", 0)

    rows = sorted(tuple(r) for r in spark.read.format("delta").load(str(table)).collect())
    assert rows == [(1, "a"), (2, "b"), (3, "c")]
    assert [(t["appId"], t["version"]) for t in _txn_entries(table)] == [
        ("orders-v1", 0),
        ("orders-v1", 1),
    ]
    history = spark.sql(f"DESCRIBE HISTORY delta.`{table}`").orderBy("version").collect()
    assert [h["userMetadata"] for h in history] == ["orders-v1:0", "orders-v1:1"]


def test_another_app_id_is_not_skipped(spark, tmp_path):
    table = tmp_path / "bronze"
    _append(spark, table, [(1, "a")], "orders-v1", 5)
    _append(spark, table, [(1, "a")], "orders-v1#facts", 5)
    assert spark.read.format("delta").load(str(table)).count() == 2


def test_missing_jars_say_which_files_to_put_there(tmp_path, monkeypatch):
    monkeypatch.setenv("MSSQL_CDC_JARS", str(tmp_path))
    with pytest.raises(FileNotFoundError) as raised:
        delta_jars()
    assert f"no Delta jars in MSSQL_CDC_JARS={tmp_path}" in str(raised.value)
    assert "delta-spark_<spark>_2.13-<delta>.jar and delta-storage-<delta>.jar" in str(raised.value)
    assert "unset MSSQL_CDC_JARS" in str(raised.value)


def test_jars_are_on_disk_not_resolved_at_run_time(spark):
    jars = spark.conf.get("spark.jars")
    assert "delta-spark_4.2_2.13-4.4.0.jar" in jars
    assert spark.conf.get("spark.jars.packages", "") == ""
    assert all(Path(j).is_file() for j in jars.split(","))
    assert [p.name for p in delta_jars() if p.name.startswith("delta-spark_")] == [
        "delta-spark_4.2_2.13-4.4.0.jar"
    ]
