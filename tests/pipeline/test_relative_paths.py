"""A stream whose target, facts table and checkpoint are relative paths.

Found while building the fault harness (issue 37): ``to_delta("build/x/bronze", ...,
facts_table="build/x/facts")`` (paths: they hold ``/``, docs/streaming.md) fails its first
batch (or its bootstrap) with ``AnalysisException: [SCHEMA_NOT_FOUND] The schema
`spark_catalog`.`delta` cannot be found``: the sink creates its tables with ``CREATE TABLE ...
delta.`<path>```, and Delta reads ``delta.`<path>``` as a path only when the path is absolute;
a relative one is taken for a table ``<path>`` in a schema named ``delta``. Every restart
fails the same way."""

from __future__ import annotations

import pytest

from mssql_cdc import stream


@pytest.mark.xfail(
    strict=True,
    reason="a relative path target or facts table is CREATE TABLE delta.`<relative>`, which "
    "Delta takes for a table in a schema named delta (SCHEMA_NOT_FOUND)",
)
def test_relative_paths_are_tables_under_the_working_directory(
    spark, source, tmp_path, monkeypatch
):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1), (2, N'b', 2)")
    source.scan()
    monkeypatch.chdir(tmp_path)
    stream(spark, source.options()).to_delta(
        "out/bronze",
        app_id="orders-relative",
        checkpoint="out/cp",
        facts_table="out/facts",
        trigger={"availableNow": True},
    ).awaitTermination()
    bronze = spark.read.format("delta").load(str(tmp_path / "out" / "bronze"))
    assert sorted(r["id"] for r in bronze.collect()) == [1, 2]
    facts = spark.read.format("delta").load(str(tmp_path / "out" / "facts"))
    assert facts.where("event IS NULL").count() >= 1
