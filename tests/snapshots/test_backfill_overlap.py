"""Two ``backfill()`` runs on one chunked snapshot at once (a scheduled job overrunning into its
next run): they share the work, each chunk lands once in bronze and once in the facts table,
and both calls end ``done`` (docs/bootstrap.md, "Overlapping runs")."""

from __future__ import annotations

import json
import logging
import threading

import pytest

from mssql_cdc import stream
from mssql_cdc.sink.ledger import ledger as ledger_module

ROWS = 12  # chunk_rows=2: six chunks


def _open(spark, source, tmp_path):
    """dbo.orders with ROWS rows, a chunked snapshot opened by a stream that has written one
    micro-batch facts row (backfill waits for one); returns its to_delta/backfill arguments."""
    source.sql(
        "INSERT INTO dbo.orders VALUES " + ", ".join(f"({i}, N'n{i}', {i})" for i in range(ROWS))
    )
    source.scan()
    where = {
        "target": str(tmp_path / "bronze"),
        "app_id": "overlap",
        "facts_table": str(tmp_path / "facts"),
    }
    cdc = stream(spark, source.options(captureInstance="dbo_orders", numPartitions="2"))
    for _ in range(2):  # the second run writes a micro-batch row
        query = cdc.to_delta(
            **where,
            checkpoint=str(tmp_path / "cp"),
            trigger={"availableNow": True},
            bootstrap=True,
            snapshot="chunked",
        )
        query.awaitTermination()
        source.sql("UPDATE dbo.orders SET qty = 100 WHERE id = 3")
        source.scan()
    return where


def _runner(spark, source, partitions: int, where):
    cdc = stream(spark, source.options(captureInstance="dbo_orders", numPartitions=str(partitions)))
    return lambda **kw: cdc.backfill(**where, chunk_rows=2, target_wave_seconds=0, **kw)


def _landed_once(spark, where):
    bronze = spark.read.format("delta").load(where["target"])
    ids = sorted(r["id"] for r in bronze.where("_snapshot IS NOT NULL").collect())
    assert ids == list(range(ROWS))  # every key once, none missing
    facts = spark.read.format("delta").load(where["facts_table"])
    chunks = sorted(
        json.loads(r["detail"])["chunk"] for r in facts.where("event = 'snapshot_chunk'").collect()
    )
    assert chunks == list(range(ROWS // 2))  # one facts row per chunk
    assert [r["rows"] for r in facts.where("event = 'bootstrap'").collect()] == [ROWS]


def test_a_run_overtaken_by_a_wider_one_goes_on_after_its_chunks(
    spark, source, tmp_path, monkeypatch, caplog
):
    """The second run reads waves of three chunks, the first of two: before the first run's
    wave of chunks 0-1 is appended, the second lands 0-2. The ledger's check finds them in
    bronze, so the first run reads nothing, and goes on from chunk 3 (when its waves were keyed
    by their last chunk and the check missing, Delta skipped the append, and its next wave, 2-3,
    appended chunk 2 a second time)."""
    where = _open(spark, source, tmp_path)
    narrow, wide = _runner(spark, source, 2, where), _runner(spark, source, 3, where)
    overtaken = []

    def hook(kind, when, txn):
        if (kind, when) == ("chunk_wave", "before") and not overtaken:
            overtaken.append(txn.version)
            other = wide(max_waves=1)  # the other run, in the middle of this one's wave
            assert (other.state, other.chunks_done) == ("running", 3)

    monkeypatch.setattr(ledger_module, "commit_hook", hook)
    with caplog.at_level(logging.INFO, logger="mssql_cdc"):
        status = narrow()
    assert overtaken == [0]  # the narrow run's first wave, keyed by its first chunk
    assert (status.state, status.chunks_done, status.chunks_total) == ("done", 6, 6)
    _landed_once(spark, where)
    assert any(
        "another backfill() run" in r.getMessage() and "WaveOvertakenError" in r.getMessage()
        for r in caplog.records
    )


def test_a_wave_landed_between_the_check_and_the_append_leaves_no_chunk_twice(
    spark, source, tmp_path, monkeypatch
):
    """The window the ledger's check leaves: the wide run (waves of three chunks) asks what
    bronze holds (nothing), then the narrow run lands its wave of chunks 0-1 before the wide
    run's append starts. Keyed by its last chunk, the wide wave (version 2, above 1) was
    appended and chunks 0 and 1 were in bronze twice; keyed by its first chunk (version 0, not
    above 0) Delta skips it, and the wide run records the narrow run's chunks and goes on from
    chunk 2."""
    where = _open(spark, source, tmp_path)
    narrow, wide = _runner(spark, source, 2, where), _runner(spark, source, 3, where)
    asked = ledger_module.Ledger.chunks_appended
    state = {"armed": False, "done": False}

    def hook(kind, when, txn):
        if (kind, when) == ("chunk_wave", "before") and not state["done"]:
            state["armed"] = True  # the wide run's first wave, about to ask

    def chunks_appended(self, snap):
        answer = asked(self, snap)
        if state["armed"] and not state["done"]:
            state["done"] = True
            other = narrow(max_waves=1)  # lands chunks 0-1 after the wide run's question
            assert (other.state, other.chunks_done) == ("running", 2)
        return answer

    monkeypatch.setattr(ledger_module, "commit_hook", hook)
    monkeypatch.setattr(ledger_module.Ledger, "chunks_appended", chunks_appended)
    status = wide()
    assert state["done"]
    assert (status.state, status.chunks_done, status.chunks_total) == ("done", 6, 6)
    _landed_once(spark, where)


def test_a_wave_another_run_landed_without_its_facts_is_recorded_as_that_runs(
    spark, source, tmp_path, monkeypatch
):
    """As above, but the narrow run dies between its wave's bronze append and its facts rows:
    the wide run, its own append skipped by Delta, records chunks 0-1 from bronze with the
    narrow run's stamp (their rows') and no pace, since they are not its wave (bronze's wave
    commit names another run), and counts no wave of its own for them."""
    where = _open(spark, source, tmp_path)
    narrow, wide = _runner(spark, source, 2, where), _runner(spark, source, 3, where)
    asked = ledger_module.Ledger.chunks_appended
    state = {"armed": False, "done": False, "in_narrow": False}

    def hook(kind, when, txn):
        if (kind, when) == ("chunk_wave", "before") and not state["done"]:
            state["armed"] = True
        if (kind, when) == ("chunk_facts", "before") and state["in_narrow"]:
            raise RuntimeError("the narrow run dies before its facts rows")

    def chunks_appended(self, snap):
        answer = asked(self, snap)
        if state["armed"] and not state["done"]:
            state["done"] = state["in_narrow"] = True
            with pytest.raises(RuntimeError, match="dies before its facts rows"):
                narrow(max_waves=1)
            state["in_narrow"] = False
        return answer

    monkeypatch.setattr(ledger_module, "commit_hook", hook)
    monkeypatch.setattr(ledger_module.Ledger, "chunks_appended", chunks_appended)
    status = wide()
    assert (status.state, status.chunks_done, status.chunks_total) == ("done", 6, 6)
    assert status.waves == 2  # chunks 2-4 and 5; not the skipped wave of chunks 0-2
    _landed_once(spark, where)
    bronze = spark.read.format("delta").load(where["target"]).where("_chunk IS NOT NULL")
    stamps = {r["_chunk"]: r["_start_lsn"] for r in bronze.collect()}
    facts = spark.read.format("delta").load(where["facts_table"])
    rows = {
        json.loads(r["detail"])["chunk"]: r
        for r in facts.where("event = 'snapshot_chunk'").collect()
    }
    for n in (0, 1):
        assert rows[n]["min_lsn"] == stamps[n]  # the narrow run's stamp, read from bronze
        assert rows[n]["duration_ms"] is None  # not the wide run's pace
    assert all(rows[n]["duration_ms"] is not None for n in (2, 3, 4, 5))


def test_two_runs_started_together_both_finish_and_land_each_chunk_once(
    spark, source, tmp_path, monkeypatch
):
    """Two threads meet before their first append, so both commit the same wave at the same
    moment: the loser sees the winner's chunks (the ledger's check or Delta's conflict) and
    follows; neither call fails (it died with ConcurrentTransactionException before)."""
    where = _open(spark, source, tmp_path)
    runs = [_runner(spark, source, 2, where), _runner(spark, source, 2, where)]
    meet = threading.Barrier(2, timeout=120)
    met: set[str] = set()

    def hook(kind, when, txn):
        me = threading.current_thread().name
        if (kind, when) == ("chunk_wave", "before") and me not in met:
            met.add(me)
            meet.wait()

    monkeypatch.setattr(ledger_module, "commit_hook", hook)
    results: dict[int, object] = {}

    def call(i):
        try:
            results[i] = runs[i]()
        except Exception as exc:  # reported below with the other run's result
            results[i] = exc
            meet.abort()  # the other run does not wait for this one

    threads = [threading.Thread(target=call, args=(i,), name=f"run{i}") for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    states = [getattr(results[i], "state", results[i]) for i in range(2)]
    assert states == ["done", "done"], [str(results[i])[:3000] for i in range(2)]
    assert met == {"run0", "run1"}
    _landed_once(spark, where)
