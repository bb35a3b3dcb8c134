"""delta_sink with real Spark and Delta: the evidence an empty batch leaves against a rewound
checkpoint, one target per app_id, tables named in three parts or in two spellings, and two
sinks creating one table at once."""

from __future__ import annotations

import threading
import uuid

import pytest
from _changes import T0, change, changes, lsn, write_offset

from mssql_cdc.sink import delta_sink
from mssql_cdc.sink.tables import table_ref


def _db(spark) -> str:
    db = f"ident_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {db}")
    return db


def _batches(spark, facts: str):
    df = spark.read.format("delta").load(facts).where("event IS NULL").orderBy("batch_id")
    return [(r.batch_id, r.rows, r.end_lsn, r.end_commit_ts) for r in df.collect()]


def test_an_empty_batch_records_its_end_offset_so_a_rewind_is_not_taken_for_a_replay(
    spark, tmp_path
):
    bronze, facts, cp = str(tmp_path / "bronze"), str(tmp_path / "facts"), str(tmp_path / "cp")
    write_offset(cp, 0, lsn(5), "2026-11-30T05:00:05.000Z")
    delta_sink(bronze, "q1", facts, checkpoint=cp)(changes(spark, []), 0)
    # an empty batch: no partition ran, yet the facts row knows where the batch ended
    assert _batches(spark, facts) == [(0, 0, lsn(5), T0.replace(second=5))]

    # Spark replays batch 0 with the same offset log entry: skipped silently
    delta_sink(bronze, "q1", facts, checkpoint=cp)(changes(spark, []), 0)
    assert _batches(spark, facts) == [(0, 0, lsn(5), T0.replace(second=5))]

    # the checkpoint is deleted; the new batch 0 reads a new change: a rewind, not a replay
    new_cp = str(tmp_path / "cp2")
    write_offset(new_cp, 0, lsn(7), "2026-11-30T05:00:07.000Z")
    with pytest.raises(ValueError, match=r"micro-batch 0 has the id of the last batch.*end LSN"):
        delta_sink(bronze, "q1", facts, checkpoint=new_cp)(
            changes(spark, [change(7, 2, 1, "a")]), 0
        )
    # without an offset log the rows alone tell: an empty batch cannot replay into rows
    with pytest.raises(ValueError, match=r"micro-batch 0 has the id of the last batch.*rows"):
        delta_sink(bronze, "q1", facts)(changes(spark, [change(7, 2, 1, "a")]), 0)
    assert _batches(spark, facts) == [(0, 0, lsn(5), T0.replace(second=5))]


def test_an_app_id_pointed_at_another_target_is_refused(spark, tmp_path):
    facts = str(tmp_path / "facts")
    first, second = str(tmp_path / "bronze"), str(tmp_path / "bronze2")
    delta_sink(first, "one", facts)(changes(spark, [change(1, 2, 1, "a")]), 0)
    # the same target in another spelling is the same table
    delta_sink(first + "/", "one", facts)(changes(spark, [change(2, 2, 2, "b")]), 1)

    with pytest.raises(ValueError, match=rf"app_id 'one' writes to {first}.*new app_id"):
        delta_sink(second, "one", facts)(changes(spark, [change(3, 2, 3, "c")]), 2)
    assert not (tmp_path / "bronze2").exists()
    assert [b[0] for b in _batches(spark, facts)] == [0, 1]


def test_three_part_names_reach_sql_quoted(spark):
    db = _db(spark)
    bronze, facts = f"spark_catalog.{db}.orders", f"spark_catalog.{db}.`ingestion_facts`"
    sink = delta_sink(bronze, "three", facts)
    sink(changes(spark, [change(1, 2, 1, "a")]), 0)
    sink(changes(spark, []), 1)
    assert [r.id for r in spark.table(bronze).collect()] == [1]
    got = spark.table(facts).orderBy("batch_id").collect()
    assert [(r.batch_id, r.rows, r.target) for r in got] == [(0, 1, bronze), (1, 0, bronze)]
    detail = spark.sql(f"DESCRIBE DETAIL {facts}").first()
    assert detail.properties["mssql_cdc.schema_version"] == "12"
    assert "delta_sink" in detail.description
    # a restarted sink reads its records through the quoted names
    delta_sink(bronze, "three", facts)(changes(spark, []), 1)
    assert spark.table(facts).count() == 2


def test_table_names_are_quoted_part_by_part():
    ref = table_ref("`my-cat`.sales.`odd``name`", "target")
    assert ref.parts == ("my-cat", "sales", "odd`name")
    assert ref.sql == "`my-cat`.`sales`.`odd``name`"
    assert table_ref("bronze.orders", "target").sql == "`bronze`.`orders`"
    with pytest.raises(ValueError, match=r"target 'a\.\.b': an empty name part"):
        table_ref("a..b", "target")


def test_a_facts_table_naming_the_target_in_another_spelling_is_refused(spark, tmp_path):
    bronze = str(tmp_path / "bronze")
    with pytest.raises(ValueError, match=r"facts_table .* is the target"):
        delta_sink(bronze, "s1", bronze + "/")
    with pytest.raises(ValueError, match=r"facts_table .* is the target"):
        delta_sink(bronze, "s1", f"delta.`{bronze}//`")

    db = _db(spark)
    current = spark.catalog.currentCatalog()
    sink = delta_sink(f"{db}.orders", "s2", f"{current}.{db}.ORDERS")
    with pytest.raises(ValueError, match=r"facts_table .* is the target"):
        sink(changes(spark, [change(1, 2, 1, "a")]), 0)
    assert not spark.catalog.tableExists(f"{db}.orders")  # checked before anything is written


def test_two_sinks_creating_one_new_catalog_facts_table_at_once_both_write(spark, tmp_path):
    db = _db(spark)
    facts = f"{db}.shared_facts"
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def run(name: str) -> None:
        sink = delta_sink(str(tmp_path / name), name, facts)
        start.wait()
        try:
            sink(changes(spark, [change(1, 2, 1, name)]), 0)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in ("left", "right")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    got = spark.table(facts).collect()
    assert sorted((r.app_id, r.batch_id, r.rows) for r in got) == [("left", 0, 1), ("right", 0, 1)]
