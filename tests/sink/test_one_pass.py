"""The sink reads each micro-batch once and never persists it (ADR 0090), on classic Spark and
on Spark Connect: the counts of the facts row are observed on the bronze write, and equal what
bronze holds for batches mixing every operation."""

from __future__ import annotations

import uuid
from pathlib import Path

from _changes import change, changes

from mssql_cdc.sink import counts, delta_sink

REFUSED = (
    "[NOT_SUPPORTED_WITH_SERVERLESS] PERSIST TABLE is not supported on serverless compute. "
    "SQLSTATE: 0A000"
)

BATCHES = [
    # insert, update (before and after image), delete, across two commits
    [change(1, 2, 1, "a"), change(2, 3, 1, "a"), change(2, 4, 1, "a2"), change(2, 1, 7, None)],
    [change(3, 2, 2, "b"), change(4, 2, 3, "c"), change(4, 3, 2, "b"), change(4, 4, 2, "b2")],
    [change(5, 1, 3, None), change(6, 2, 4, "d"), change(7, 3, 4, "d"), change(7, 4, 4, "d2")],
]


def _counted(spark, rows, reads: Path):
    """The change rows in two partitions; each evaluation of a partition (a read) leaves a file
    ``p<partition>-<uuid>`` in ``reads``."""
    marks = str(reads)

    def read(batches):
        import uuid as _uuid
        from pathlib import Path as _Path

        from pyspark import TaskContext

        _Path(marks).mkdir(parents=True, exist_ok=True)
        (_Path(marks) / f"p{TaskContext.get().partitionId()}-{_uuid.uuid4().hex}").touch()
        yield from batches

    df = changes(spark, rows).repartition(2)
    return df.mapInArrow(read, df.schema)


def _reads(path: Path) -> tuple[int, int]:
    """How often partitions 0 and 1 were read."""
    names = [p.name for p in path.iterdir()] if path.exists() else []
    return (
        sum(n.startswith("p0-") for n in names),
        sum(n.startswith("p1-") for n in names),
    )


def _refuse_persist(monkeypatch, df) -> None:
    def refuse(self, *args, **kwargs):
        raise RuntimeError(REFUSED)

    monkeypatch.setattr(type(df), "persist", refuse)
    monkeypatch.setattr(type(df), "cache", refuse)


def test_each_batch_is_read_once_and_its_facts_match_bronze(any_spark, tmp_path, monkeypatch):
    spark = any_spark
    bronze, facts = str(tmp_path / "bronze"), str(tmp_path / "facts")
    sink = delta_sink(bronze, "one-pass", facts)
    for batch_id, rows in enumerate(BATCHES):
        df = _counted(spark, rows, tmp_path / "reads" / str(batch_id))
        _refuse_persist(monkeypatch, df)  # serverless: the sink must not need it
        sink(df, batch_id)

    # before bronze exists the sink asks whether batch 0 is empty (an empty batch must not
    # create it) with a limit of one row: classic Spark reads the first partition only, and so
    # does Spark Connect without adaptive query execution; with it, Connect starts every
    # partition and stops each after its first row (a local limit per partition). The write
    # that creates bronze then reads every partition once. Once bronze exists the write is the
    # only read.
    connect = spark.__class__.__module__.startswith("pyspark.sql.connect")
    adaptive = spark.conf.get("spark.sql.adaptive.enabled") == "true"
    first = (2, 2) if connect and adaptive else (2, 1)
    assert [_reads(tmp_path / "reads" / str(n)) for n in range(3)] == [first, (1, 1), (1, 1)]

    landed = spark.read.format("delta").load(bronze)
    from pyspark.sql import functions as sf

    def ops(code):
        return sf.sum(sf.when(sf.col("_operation") == code, 1).otherwise(0))

    expected = {
        r["_batch_id"]: (
            r["rows"],
            r["deletes"],
            r["inserts"],
            r["updates"],
            r["min_lsn"],
            r["max_lsn"],
            r["min_ts"],
            r["max_ts"],
        )
        for r in landed.groupBy("_batch_id")
        .agg(
            sf.count(sf.lit(1)).alias("rows"),
            ops(1).alias("deletes"),
            ops(2).alias("inserts"),
            ops(4).alias("updates"),
            sf.min("_start_lsn").alias("min_lsn"),
            sf.max("_start_lsn").alias("max_lsn"),
            sf.min("_commit_ts").alias("min_ts"),
            sf.max("_commit_ts").alias("max_ts"),
        )
        .collect()
    }
    got = {
        r["batch_id"]: (
            r["rows"],
            r["deletes"],
            r["inserts"],
            r["updates"],
            r["min_lsn"],
            r["max_lsn"],
            r["min_commit_ts"],
            r["max_commit_ts"],
        )
        for r in spark.read.format("delta").load(facts).where("event IS NULL").collect()
    }
    assert got == expected
    assert [got[b][:4] for b in range(3)] == [(4, 1, 1, 1), (4, 0, 2, 1), (4, 1, 1, 1)]
    assert sum(v[0] for v in got.values()) == sum(len(b) for b in BATCHES)


def test_a_write_delta_skips_is_counted_instead(spark, tmp_path, monkeypatch, caplog):
    bronze, facts = str(tmp_path / "bronze"), str(tmp_path / "facts")
    sink = delta_sink(bronze, "skipped", facts)
    sink(changes(spark, BATCHES[0]), 0)
    # another writer under the same app_id commits batch 1 to bronze behind the sink's back
    other = delta_sink(bronze, "skipped", str(tmp_path / "other-facts"))
    other(changes(spark, BATCHES[1]), 1)
    monkeypatch.setattr(counts, "OBSERVED_WAIT_SECONDS", 0.5)
    with caplog.at_level("WARNING", logger="mssql_cdc.sink"):
        sink(changes(spark, BATCHES[1]), 1)
    assert "observed no rows: Delta skipped it" in caplog.text
    row = spark.read.format("delta").load(facts).where("batch_id = 1").first()
    assert (row["rows"], row["inserts"], row["updates"]) == (4, 2, 1)
    assert spark.read.format("delta").load(bronze).count() == 8  # batch 1 once


def test_observed_counts_of_an_empty_write(spark, tmp_path):
    path = str(tmp_path / f"t{uuid.uuid4().hex}")
    observed = counts.ObservedCounts(changes(spark, []))
    observed.df.write.format("delta").save(path)
    assert observed.result() == counts.BatchCounts(rows=0)
