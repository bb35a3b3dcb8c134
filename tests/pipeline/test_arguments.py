"""The rules ``to_delta`` applies to its arguments before anything is read or written: triggers
(checked against Spark's own interval parser), Databricks checkpoints, serverless triggers."""

from __future__ import annotations

import pytest

from mssql_cdc.pipeline.arguments import check_trigger, interval_micros
from mssql_cdc.pipeline.locations import check_checkpoint
from mssql_cdc.pipeline.platform import Platform, detect_platform

# Interval texts Spark reads (True) or refuses (False) in DataStreamWriter.trigger(processingTime=)
INTERVALS = {
    "10 seconds": True,
    "10 second": True,
    "10 SECONDS": True,
    "1 minute": True,
    "interval 1 minute": True,
    "INTERVAL 10 seconds": True,
    "1 hour 30 minutes": True,
    "  10 seconds  ": True,
    "10  seconds": True,
    "+10 seconds": True,
    "0 seconds": True,
    "2 weeks": True,
    "1 day": True,
    "500 milliseconds": True,
    "100 microseconds": True,
    "1.5 seconds": True,
    "10": False,
    "10s": False,
    "10 sec": False,
    "1 min": False,
    "500 ms": False,
    "1 month": False,
    "1 year": False,
    "1.5 minutes": False,
    "-10 seconds": False,
    "banana": False,
    "1 minute, 2 seconds": False,
    "'1 minute'": False,
    "00:00:10": False,
    "PT10S": False,
    "1e3 milliseconds": False,
}


@pytest.mark.parametrize(("text", "read"), INTERVALS.items())
def test_intervals_are_read_as_spark_reads_them(text, read):
    assert (interval_micros(text) is not None) is read


def test_the_interval_rule_agrees_with_spark(spark):
    writer = spark.readStream.format("rate").load().writeStream
    spark_reads = {}
    for text in INTERVALS:
        try:
            writer.trigger(processingTime=text)
            spark_reads[text] = True
        except Exception:
            spark_reads[text] = False
    assert spark_reads == INTERVALS


def test_interval_lengths():
    assert interval_micros("1 hour 30 minutes") == 5_400_000_000
    assert interval_micros("interval 1.5 seconds") == 1_500_000
    assert interval_micros("99999999999999 weeks") is None  # past Spark's 64-bit microseconds


def test_the_triggers_to_delta_runs():
    assert check_trigger(None) is None
    assert check_trigger({"availableNow": True}) == {"availableNow": True}
    assert check_trigger({"once": True}) == {"once": True}
    assert check_trigger({"processingTime": "10 seconds"}) == {"processingTime": "10 seconds"}


@pytest.mark.parametrize(
    ("trigger", "message"),
    [
        ({"processingTime": "banana"}, r"processingTime must be an interval Spark reads, got 'ba"),
        ({"processingTime": 10}, r"processingTime must be an interval Spark reads, got 10"),
        ({"processingTime": ""}, r"processingTime must be an interval"),
        ({"availableNow": False}, r"availableNow must be True, got False"),
        ({"once": "yes"}, r"once must be True, got 'yes'"),
        ({"continuous": "1 second"}, r"continuous processing runs neither foreachBatch"),
        ({"every": "1 minute"}, r"'every' is not a trigger to_delta runs"),
        ({}, r"give exactly one trigger"),
        ({"once": True, "availableNow": True}, r"give exactly one trigger"),
    ],
)
def test_bad_triggers_name_the_allowed_ones(trigger, message):
    with pytest.raises(ValueError, match=message) as info:
        check_trigger(trigger)
    assert "allowed: {'availableNow': True}, {'processingTime': '<interval>'}" in str(info.value)


def test_serverless_runs_only_available_now():
    assert check_trigger({"availableNow": True}, serverless=True) == {"availableNow": True}
    for trigger in ({"processingTime": "1 minute"}, {"once": True}):
        with pytest.raises(ValueError, match="serverless compute runs only"):
            check_trigger(trigger, serverless=True)
    with pytest.raises(ValueError, match=r"trigger None .* serverless compute"):
        check_trigger(None, serverless=True)


def test_platform_detection(spark):
    assert detect_platform(None, {}) == Platform(databricks=False, serverless=False)
    assert detect_platform(spark, {}) == Platform()  # local Spark has no cluster id
    cluster = {"DATABRICKS_RUNTIME_VERSION": "15.4"}
    assert detect_platform(None, cluster) == Platform(databricks=True, serverless=False)
    serverless = {"DATABRICKS_RUNTIME_VERSION": "client.3.1"}
    assert detect_platform(None, serverless) == Platform(databricks=True, serverless=True)


@pytest.mark.parametrize(
    "path",
    [
        "/Volumes/main/ops/checkpoints/orders",
        "/Volumes/main/ops/checkpoints",
        "dbfs:/Volumes/main/ops/checkpoints/orders",
        "s3://bucket/checkpoints/orders",
        "abfss://c@account.dfs.core.windows.net/cp",
        "gs://bucket/cp",
        "dbfs:/checkpoints/orders",
    ],
)
def test_databricks_takes_volumes_and_uris(path):
    check_checkpoint(path, databricks=True)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/checkpoints/orders", r"Spark reads a path without a scheme on DBFS"),
        ("cp/orders", r"Spark reads a path without a scheme on DBFS"),
        ("/tmp/cp", r"Spark reads a path without a scheme on DBFS"),
        ("/dbfs/checkpoints/orders", r"Spark reads it as dbfs:/dbfs/checkpoints/orders while"),
        ("/Volumes/main/ops", r"a Volume path names a directory inside a volume"),
    ],
)
def test_databricks_refuses_paths_spark_and_python_read_in_two_places(path, message):
    with pytest.raises(ValueError, match=message) as info:
        check_checkpoint(path, databricks=True)
    assert "/Volumes/<catalog>/<schema>/<volume>/<dir>" in str(info.value)
    check_checkpoint(path, databricks=False)  # elsewhere both read the same local path
