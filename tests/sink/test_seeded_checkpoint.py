"""A checkpoint written by ``seed_committed_batch``: a ``to_delta`` stream goes on from it with
the next batch id and the next changes, exactly once, on every Spark minor we support (the move
of a table's stream to a checkpoint of its own without reloading)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from _pipeline import bronze_changes
from mssql_cdc import stream
from mssql_cdc.sink.ledger.checkpoint import (
    last_committed_offset,
    parse_offset_log,
    seed_committed_batch,
)

CONF = {"spark.sql.shuffle.partitions": "4"}


def _batches(spark, facts):
    df = spark.read.format("delta").load(str(facts)).where("event IS NULL").orderBy("batch_id")
    return [(r["batch_id"], r["rows"], r["end_lsn"]) for r in df.collect()]


def test_a_stream_goes_on_from_a_seeded_checkpoint_with_the_next_batch_exactly_once(
    spark, source, tmp_path
):
    bronze, facts = tmp_path / "bronze", tmp_path / "facts"

    def run(checkpoint):
        query = stream(spark, source.options()).to_delta(
            str(bronze),
            app_id="seeded",
            checkpoint=str(tmp_path / checkpoint),
            facts_table=str(facts),
            trigger={"availableNow": True},
        )
        query.awaitTermination()
        return [p["batchId"] for p in query.recentProgress if p["numInputRows"]]

    for first_id in (1, 11):
        source.workload(first_id)
        run("cp")
    landed = _batches(spark, facts)
    assert [b[:2] for b in landed] == [(0, 11), (1, 11)]
    last_id, _, end_lsn = landed[-1]
    with open(tmp_path / "cp" / "offsets" / str(last_id), encoding="utf-8") as handle:
        written = handle.read()
    offset = parse_offset_log(written)
    assert offset is not None
    assert offset["lsn"] == end_lsn
    conf = json.loads(written.splitlines()[1])["conf"]
    seed_committed_batch(str(tmp_path / "moved"), last_id, offset, conf)
    shutil.rmtree(tmp_path / "cp")

    source.workload(21)
    assert run("moved") == [2]
    source.workload(31)
    assert run("moved") == [3]
    assert bronze_changes(spark, bronze) == source.changes()
    assert [b[:2] for b in _batches(spark, facts)] == [(0, 11), (1, 11), (2, 11), (3, 11)]


def test_seeding_writes_one_committed_batch_and_refuses_what_it_cannot_seed(tmp_path):
    offset = {"lsn": "0x0000002A000000280003", "commit_ts": "2026-12-05T22:16:47.777Z"}
    seed_committed_batch(str(tmp_path / "cp"), 5, offset, CONF)
    assert sorted(os.listdir(tmp_path / "cp")) == ["commits", "metadata", "offsets"]
    assert sorted(os.listdir(tmp_path / "cp" / "offsets")) == ["4", "5"]
    assert os.listdir(tmp_path / "cp" / "commits") == ["5"]
    assert last_committed_offset(str(tmp_path / "cp")) == offset
    with open(tmp_path / "cp" / "offsets" / "4", encoding="utf-8") as handle:
        assert parse_offset_log(handle.read()) == offset

    seed_committed_batch(str(tmp_path / "first"), 0, offset, CONF)
    assert os.listdir(tmp_path / "first" / "offsets") == ["0"]

    with pytest.raises(ValueError, match="is not empty"):
        seed_committed_batch(str(tmp_path / "cp"), 6, offset, CONF)
    with pytest.raises(ValueError, match="only a local checkpoint"):
        seed_committed_batch("abfss://c@a.dfs.core.windows.net/cp", 6, offset, CONF)
    with pytest.raises(ValueError, match="negative"):
        seed_committed_batch(str(tmp_path / "neg"), -1, offset, CONF)
    with pytest.raises(ValueError, match="has no lsn"):
        seed_committed_batch(str(tmp_path / "nolsn"), 1, {"commit_ts": ""}, CONF)
    assert not (tmp_path / "neg").exists()
