"""Chunked snapshots with real Spark and Delta against the test server:
``to_delta(..., bootstrap=True, snapshot="chunked")`` opens, ``CdcStream.backfill()`` reads
tiny chunks in waves while the table changes, resumes after a crash at each step of a wave,
pauses below ``min_headroom_hours``, and the mode rules raise their ``ValueError``."""

from __future__ import annotations

import json
import logging
import uuid

import pytest

from _pipeline import backfill_hook
from mssql_cdc import BackfillStatus, apply_changes, newest_snapshot, stream
from mssql_cdc.sink.ledger import ledger as ledger_module

ORDER = ["_start_lsn", "_command_id", "_seqval", "_operation"]


def _bronze(spark, path):
    return spark.read.format("delta").load(str(path))


def _latest(spark, path, keys, columns):
    """The latest image per key in bronze (snapshot rows ordered by their stamp among the
    changes), deleted keys left out."""
    latest = {}
    for r in _bronze(spark, path).orderBy(*ORDER).collect():
        latest[tuple(r[k] for k in keys)] = r
    return sorted(tuple(r[c] for c in columns) for r in latest.values() if r["_operation"] != 1)


def _table(source, table, columns):
    rows = source.sql(f"SELECT {', '.join(columns)} FROM dbo.{table}")
    return sorted(tuple(r[c] for c in columns) for r in rows)


def _events(spark, facts, event):
    return _bronze(spark, facts).where(f"event = '{event}'").collect()


class _Stream:
    def __init__(self, spark, source, tmp_path, instance, app_id="chunky"):
        self.spark, self.source = spark, source
        self.bronze, self.facts = tmp_path / "bronze", tmp_path / "facts"
        self.cp, self.app_id = tmp_path / "cp", app_id
        self.cdc = stream(spark, source.options(captureInstance=instance, numPartitions="2"))

    def run(self, **extra):
        query = self.cdc.to_delta(
            str(self.bronze),
            app_id=self.app_id,
            checkpoint=str(self.cp),
            facts_table=str(self.facts),
            trigger={"availableNow": True},
            bootstrap=True,
            snapshot="chunked",
            **extra,
        )
        query.awaitTermination()

    def backfill(self, **kwargs) -> BackfillStatus:
        return self.cdc.backfill(
            str(self.bronze), app_id=self.app_id, facts_table=str(self.facts), **kwargs
        )


def _guid(i: int) -> str:
    # the last six bytes carry i, so SQL Server's order differs from the text's order
    return str(uuid.UUID(int=((i * 7919) % 1000) << 100 | i))


TABLES = {
    "int": (
        "CREATE TABLE dbo.k (id int NOT NULL PRIMARY KEY, v int)",
        ["id"],
        ["id", "v"],
        lambda i: f"({i}, {i})",
        lambda i: f"id = {i}",
    ),
    "composite": (
        "CREATE TABLE dbo.k (a int NOT NULL, b nvarchar(10) NOT NULL, v int, PRIMARY KEY (a, b))",
        ["a", "b"],
        ["a", "b", "v"],
        lambda i: f"({i % 3}, N'k{i:03d}', {i})",
        lambda i: f"a = {i % 3} AND b = N'k{i:03d}'",
    ),
    "guid": (
        "CREATE TABLE dbo.k (id uniqueidentifier NOT NULL PRIMARY KEY, v int)",
        ["id"],
        ["id", "v"],
        lambda i: f"('{_guid(i)}', {i})",
        lambda i: f"id = '{_guid(i)}'",
    ),
}


def _create(source, kind, rows):
    ddl, _, _, value, _ = TABLES[kind]
    source.sql(ddl)
    source.sql(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'k', "
        "@role_name = NULL"
    )
    source.sql("INSERT INTO dbo.k VALUES " + ", ".join(value(i) for i in range(rows)))
    source.scan()


@pytest.mark.parametrize("kind", ["int", "composite", "guid"])
def test_chunked_snapshot_reads_every_key_once_while_the_table_changes(
    spark, source, tmp_path, caplog, kind
):
    _create(source, kind, 11)
    _, keys, columns, value, where = TABLES[kind]
    s = _Stream(spark, source, tmp_path, "dbo_k")
    s.run()
    opened = _events(spark, s.facts, "snapshot_open")
    assert len(opened) == 1
    assert json.loads(opened[0]["detail"])["mode"] == "chunked"
    lsn = opened[0]["max_lsn"]
    assert not s.bronze.exists()  # nothing read: the stream had no change after S
    assert newest_snapshot(spark, str(s.bronze), str(s.facts)) is None  # open, not complete

    with caplog.at_level(logging.INFO, logger="mssql_cdc"):
        first = s.backfill(chunk_rows=3, max_waves=1, target_wave_seconds=0)
    assert (first.state, first.chunks_done, first.chunks_total) == ("running", 2, 4)
    assert (first.rows_done, first.rows_estimated) == (6, 11)
    assert first.eta_seconds is not None
    assert first.eta_seconds > 0
    waves = [r.getMessage() for r in caplog.records if "backfill wave" in r.getMessage()]
    assert any("started" in m for m in waves)
    assert any("2 chunks, 6 rows" in m for m in waves)

    # changes between waves: in landed chunks, in chunks still to read, new keys, a delete
    source.sql(f"UPDATE dbo.k SET v = -1 WHERE {where(0)}")
    source.sql(f"UPDATE dbo.k SET v = -2 WHERE {where(9)}")
    source.sql(f"DELETE FROM dbo.k WHERE {where(7)}")
    source.sql(f"INSERT INTO dbo.k VALUES {value(50)}, {value(51)}")
    source.scan()
    s.run()
    done = s.backfill(chunk_rows=99)  # a later chunk_rows is ignored
    assert (done.state, done.chunks_done, done.chunks_total) == ("done", 4, 4)
    assert (done.eta_seconds, done.waves) == (0.0, 1)
    assert any("chunk_rows=99 ignored" in r.getMessage() for r in caplog.records)
    again = s.backfill()  # a call after completion reads nothing
    assert (again.state, again.waves, again.rows_done) == ("done", 0, done.rows_done)

    snap = _bronze(spark, s.bronze).where("_operation = 0").collect()
    read = [tuple(r[k] for k in keys) for r in snap]
    assert len(read) == len(set(read))  # every key read once
    assert done.rows_done == len(snap)
    assert {r["_snapshot"] for r in snap} == {lsn}
    assert all(r["_start_lsn"] >= lsn and r["_chunk"] is not None for r in snap)
    closing = _events(spark, s.facts, "bootstrap")
    assert [(c["rows"], c["max_lsn"]) for c in closing] == [(len(snap), lsn)]
    assert json.loads(closing[0]["detail"])["chunks"] == 4
    assert len(_events(spark, s.facts, "snapshot_plan")) == 1
    chunks = _events(spark, s.facts, "snapshot_chunk")
    landed = {json.loads(c["detail"])["chunk"]: c["rows"] for c in chunks}
    assert sorted(landed) == [0, 1, 2, 3]
    assert sum(landed.values()) == len(snap)
    assert newest_snapshot(spark, str(s.bronze), str(s.facts))["lsn"] == lsn

    s.run()  # the stream catches up: the latest image per key is the table
    assert _latest(spark, s.bronze, keys, columns) == _table(source, "k", columns)


class _CrashError(RuntimeError):
    pass


def _crash_at(step: str):
    def hook(at: str, last_chunk: int) -> None:
        if at == step:
            raise _CrashError(f"{at} of the wave ending at chunk {last_chunk}")

    return hook


def test_backfill_resumes_after_crashes_pauses_for_headroom_and_keeps_one_mode(
    spark, source, tmp_path, monkeypatch, caplog
):
    source.sql(
        "INSERT INTO dbo.orders VALUES " + ", ".join(f"({i}, N'n{i}', {i})" for i in range(10))
    )
    source.scan()
    s = _Stream(spark, source, tmp_path, "dbo_orders")
    none = s.backfill()  # nothing opened yet: a paused state, not an error
    assert (none.state, none.paused, none.done, none.snapshot) == ("no_snapshot", True, False, None)
    assert (none.chunks_done, none.chunks_total, none.waves) == (0, None, 0)
    assert "has no chunked snapshot" in (none.reason or "")
    with pytest.raises(ValueError, match="snapshot='chunked' needs facts_table"):
        s.cdc.to_delta(str(s.bronze), "x", str(tmp_path / "x"), bootstrap=True, snapshot="chunked")
    s.run()
    source.sql("UPDATE dbo.orders SET qty = 100 WHERE id = 8")
    source.scan()
    s.run()  # a micro-batch facts row with the retention headroom

    open_rule = "chunked snapshot of .* open .* one open snapshot per stream"
    with pytest.raises(ValueError, match=open_rule):
        s.cdc.snapshot(str(s.bronze), app_id=s.app_id, facts_table=str(s.facts))
    copy = spark.createDataFrame([(1, "a", 1)], "id INT, name STRING, qty INT")
    with pytest.raises(ValueError, match=open_rule):
        s.cdc.seed(
            str(s.bronze), copy, "0x00000000000000000001", app_id=s.app_id, facts_table=str(s.facts)
        )
    with pytest.raises(ValueError, match=open_rule):
        s.cdc.to_delta(
            str(s.bronze), s.app_id, str(s.cp), str(s.facts), bootstrap=True, snapshot="full"
        )
    with pytest.raises(ValueError, match="a second one would interleave"):
        s.cdc.to_delta(
            str(s.bronze),
            "other",
            str(tmp_path / "cp2"),
            str(s.facts),
            bootstrap=True,
            snapshot="chunked",
        )

    paused = s.backfill(chunk_rows=3, min_headroom_hours=1e6)
    assert (paused.state, paused.paused, paused.chunks_done, paused.chunks_total) == (
        "waiting_headroom",
        True,
        0,
        4,
    )
    assert "below min_headroom_hours=1e+06" in (paused.reason or "")

    monkeypatch.setattr(ledger_module, "commit_hook", backfill_hook(_crash_at("after_append")))
    with pytest.raises(_CrashError):
        s.backfill(max_waves=1)
    assert _events(spark, s.facts, "snapshot_chunk") == []  # landed in bronze, not recorded
    monkeypatch.setattr(ledger_module, "commit_hook", backfill_hook(_crash_at("before_append")))
    with caplog.at_level(logging.INFO, logger="mssql_cdc"), pytest.raises(_CrashError):
        s.backfill(max_waves=1)
    assert any("without their facts rows" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(ledger_module, "commit_hook", None)
    done = s.backfill()
    assert (done.state, done.chunks_done, done.chunks_total) == ("done", 4, 4)

    snap = _bronze(spark, s.bronze).where("_operation = 0").collect()
    assert sorted(r["id"] for r in snap) == list(range(10))  # each key once, none missing
    chunks = sorted(
        json.loads(c["detail"])["chunk"] for c in _events(spark, s.facts, "snapshot_chunk")
    )
    assert chunks == [0, 1, 2, 3]
    assert [c["rows"] for c in _events(spark, s.facts, "bootstrap")] == [10]
    assert len(_events(spark, s.facts, "snapshot_plan")) == 1
    s.run()
    assert _latest(spark, s.bronze, ["id"], ["id", "name", "qty"]) == _table(
        source, "orders", ["id", "name", "qty"]
    )
    # silver rebuilds from the completed chunked snapshot: its chunk rows are the snapshot's
    silver = tmp_path / "silver"
    result = apply_changes(
        spark,
        str(s.bronze),
        str(silver),
        capture_instance="dbo_orders",
        keys=["id"],
        control_table=str(tmp_path / "control"),
        facts_table=str(s.facts),
    )
    assert result.rebuilt
    rows = _bronze(spark, silver).select("id", "name", "qty").collect()
    assert sorted(tuple(r) for r in rows) == _table(source, "orders", ["id", "name", "qty"])
