"""``spark.read.format("mssql_cdc")``: the change rows of one LSN range as a batch
(``startingLsn`` < LSN <= ``endingLsn``), planned and read by the stream's own code. The reader's
driver and task sides run here without Spark; one test runs the read in local Spark beside a
stream of the same range."""

from __future__ import annotations

import pytest

import mssql_cdc
from mssql_cdc.options import parse_options
from mssql_cdc.source.catalog import infer_schema
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.datasource import ChangesReader, to_struct


def commit(source, sql: str) -> str:
    """Runs ``sql``, has the capture job see it, and returns its commit LSN as 0x text."""
    source.sql(sql)
    source.scan()
    return source.changes()[-1][0]


def reader(source, **options: str) -> ChangesReader:
    opts = parse_options(source.options(**options))
    client = CdcClient(opts)
    schema = to_struct(infer_schema(client))
    client.close()
    return ChangesReader(opts, schema, 4)


def rows_of(r: ChangesReader) -> list[tuple[object, ...]]:
    parts = r.partitions()
    rows = [row for p in parts for b in r.read(p) for row in b.to_pylist()]
    return [(row["_start_lsn"], row["_seqval"], row["_operation"], row["id"]) for row in rows]


def history(source) -> list[tuple[object, ...]]:
    return [(lsn, seqval, op, key) for lsn, seqval, op, _cmd, key, _n, _q in source.changes()]


def test_a_batch_read_holds_exactly_the_changes_after_starting_lsn_up_to_ending_lsn(source):
    first = commit(source, "INSERT INTO dbo.orders VALUES (1, N'a', 1), (2, N'b', 2)")
    second = commit(source, "UPDATE dbo.orders SET qty = 5 WHERE id = 1")
    third = commit(source, "DELETE FROM dbo.orders WHERE id = 2")
    everything = history(source)
    assert len(everything) == 5  # two inserts, an update's two images, a delete

    assert rows_of(reader(source)) == everything  # earliest to latest
    assert rows_of(reader(source, endingLsn="latest")) == everything
    assert rows_of(reader(source, endingLsn=second)) == everything[:4]
    assert rows_of(reader(source, startingLsn=first, endingLsn=second)) == everything[2:4]
    assert rows_of(reader(source, startingLsn=second)) == everything[4:]
    # nothing after the newest commit, nor in a range that ends where it starts
    assert rows_of(reader(source, startingLsn=third)) == []
    assert rows_of(reader(source, startingLsn="latest")) == []
    assert rows_of(reader(source, startingLsn=second, endingLsn=first)) == []


def test_a_large_range_is_read_in_commit_aligned_partitions(source):
    for i in range(12):
        source.sql(f"INSERT INTO dbo.orders VALUES ({i}, N'n', {i})")
    source.scan()
    r = reader(source)
    r.min_rows_per_partition = 3
    parts = r.partitions()
    assert len(parts) == 4
    assert rows_of(r) == history(source)


def test_an_ending_lsn_past_the_newest_commit_names_it(source):
    newest = commit(source, "INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    past = "0x" + format(int(newest, 16) + 1, "020X")
    with pytest.raises(ValueError, match=r"endingLsn 0x[0-9A-F]{20} is past the newest commit"):
        reader(source, endingLsn=past).partitions()


def test_an_ending_lsn_that_is_not_an_lsn_names_the_option_and_the_allowed_values(source):
    with pytest.raises(ValueError, match=r"endingLsn.*earliest.*allowed: latest, or an LSN"):
        parse_options(source.options(endingLsn="earliest"))


def test_in_spark_a_batch_read_holds_the_rows_a_stream_of_the_range_lands(spark, source, tmp_path):
    first = commit(source, "INSERT INTO dbo.orders VALUES (1, N'a', 1), (2, N'b', 2)")
    commit(source, "UPDATE dbo.orders SET name = N'c' WHERE id = 2")
    last = commit(source, "INSERT INTO dbo.orders VALUES (3, N'd', 3)")
    commit(source, "DELETE FROM dbo.orders WHERE id = 1")  # after the range
    mssql_cdc.register(spark)
    options = source.options(startingLsn=first, endingLsn=last)
    batch = spark.read.format("mssql_cdc").options(**options).load()

    streamed = []
    query = (
        spark.readStream.format("mssql_cdc")
        .options(**source.options(startingLsn=first))
        .load()
        .writeStream.foreachBatch(lambda df, _id: streamed.extend(df.collect()))
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    in_range = sorted(tuple(r) for r in streamed if r["_start_lsn"] <= last)
    assert len(in_range) == 3  # after `first`: the update's two images, then one insert
    assert batch.schema == spark.readStream.format("mssql_cdc").options(**options).load().schema
    assert sorted(tuple(r) for r in batch.collect()) == in_range
    # an empty range plans no partition: Spark then reads one empty partition of its own
    empty = spark.read.format("mssql_cdc").options(**source.options(startingLsn="latest"))
    assert empty.load().collect() == []


def test_an_ending_lsn_given_to_a_stream_is_a_warning(source, caplog):
    from mssql_cdc.source.datasource import MssqlCdcDataSource

    commit(source, "INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    given = source.options(endingLsn="latest")
    data_source = MssqlCdcDataSource({k.lower(): v for k, v in given.items()})
    with caplog.at_level("WARNING", logger="mssql_cdc.source"):
        data_source.streamReader(data_source.schema())
    assert [r.getMessage() for r in caplog.records if "endingLsn" in r.getMessage()] == [
        "endingLsn has no effect on a stream (it ends a batch read, spark.read); an "
        "availableNow trigger stops at the newest commit when the query starts"
    ]
    caplog.clear()
    plain = MssqlCdcDataSource({k.lower(): v for k, v in source.options().items()})
    with caplog.at_level("WARNING", logger="mssql_cdc.source"):
        plain.streamReader(plain.schema())
    assert not [r for r in caplog.records if "endingLsn" in r.getMessage()]


def test_a_batch_read_writes_no_metrics_files_a_stream_would_fold_into_its_facts(
    source, tmp_path, caplog
):
    commit(source, "INSERT INTO dbo.orders VALUES (1, N'a', 1)")
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    with caplog.at_level("WARNING", logger="mssql_cdc.source"):
        r = reader(source, metricsPath=str(metrics))
    assert r.options.metrics_path is None
    assert len(rows_of(r)) == 1
    assert list(metrics.iterdir()) == []
    assert any("metricsPath has no effect" in rec.getMessage() for rec in caplog.records)
