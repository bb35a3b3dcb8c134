"""A new facts table is created beside the first batch's bronze write, so that the facts step
is the facts commit alone (docs/sink.md, "What one micro-batch does")."""

from __future__ import annotations

import threading

import pytest
from _changes import change, changes

import mssql_cdc.sink.delta as sink_module
from mssql_cdc.sink import delta_sink
from mssql_cdc.sink.bronze import BronzeTable
from mssql_cdc.sink.warmup import WARMER

FIRST = [change(1, 2, 1, "a"), change(2, 2, 2, "b")]
SECOND = [change(3, 4, 1, "A")]


def _watch(monkeypatch, *, fail: bool = False) -> dict[str, object]:
    """Records the thread that creates the facts table beside the bronze write and whether it
    had done so when the bronze append began (the append waits for it, up to a minute)."""
    seen: dict[str, object] = {"creators": [], "created_before_bronze": []}
    created = threading.Event()
    ensure, append = sink_module.ensure_facts_table, BronzeTable.append

    def ensure_beside(*args, **kwargs):
        seen["creators"].append(threading.current_thread().name)  # type: ignore[union-attr]
        try:
            if fail:
                raise RuntimeError("the creation beside failed")
            ensure(*args, **kwargs)
        finally:
            created.set()

    def append_after(self, *args, **kwargs):
        if not seen["creators"] and not created.is_set():
            seen["created_before_bronze"].append(False)  # type: ignore[union-attr]
        else:
            seen["created_before_bronze"].append(created.wait(60))  # type: ignore[union-attr]
        append(self, *args, **kwargs)

    monkeypatch.setattr(sink_module, "ensure_facts_table", ensure_beside)
    monkeypatch.setattr(BronzeTable, "append", append_after)
    return seen


def _facts(spark, path) -> list[tuple[int, int]]:
    rows = spark.read.format("delta").load(str(path)).collect()
    return sorted((r["batch_id"], r["rows"]) for r in rows)


@pytest.mark.parametrize("warm_state", [True, "within_batch"])
def test_a_new_facts_table_is_created_beside_the_first_bronze_write(
    spark, tmp_path, monkeypatch, warm_state
):
    seen = _watch(monkeypatch)
    facts = tmp_path / "facts"
    sink = delta_sink(str(tmp_path / "bronze"), "ahead", str(facts), warm_state=warm_state)
    sink(changes(spark, FIRST), 0)
    sink(changes(spark, SECOND), 1)
    assert WARMER.wait_idle(120)

    # created once, on the thread beside the first batch's bronze write, before that write
    assert seen["creators"] == ["mssql_cdc-sink-ahead"]
    assert seen["created_before_bronze"] == [True, True]
    assert _facts(spark, facts) == [(0, 2), (1, 1)]
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{facts}`").first()
    assert detail.properties["mssql_cdc.schema_version"] == "12"
    assert "delta_sink" in detail.description
    # the create and the two facts commits: nothing else wrote the table
    history = spark.sql(f"DESCRIBE HISTORY delta.`{facts}`").collect()
    assert sorted(r["version"] for r in history) == [0, 1, 2]


def test_without_warm_state_nothing_runs_beside_the_batch(spark, tmp_path, monkeypatch):
    seen = _watch(monkeypatch)
    facts = tmp_path / "facts"
    delta_sink(str(tmp_path / "bronze"), "inline", str(facts), warm_state=False)(
        changes(spark, FIRST), 0
    )
    assert seen["creators"] == []
    assert seen["created_before_bronze"] == [False]
    assert _facts(spark, facts) == [(0, 2)]


def test_a_creation_beside_that_fails_is_done_by_the_facts_step(spark, tmp_path, monkeypatch):
    seen = _watch(monkeypatch, fail=True)
    facts = tmp_path / "facts"
    delta_sink(str(tmp_path / "bronze"), "again", str(facts))(changes(spark, FIRST), 0)
    assert WARMER.wait_idle(120)
    assert seen["creators"] == ["mssql_cdc-sink-ahead"]
    assert _facts(spark, facts) == [(0, 2)]
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{facts}`").first()
    assert detail.properties["mssql_cdc.schema_version"] == "12"


def test_an_existing_facts_table_is_still_asked_of_the_warmer_and_withdrawn(
    spark, tmp_path, monkeypatch
):
    """Once the facts table exists, ``within_batch`` queues its state to the warmer before the
    bronze write and withdraws a request not started by the facts commit (ADR 0180)."""
    from test_state_warmup import _Held, _warmer

    from mssql_cdc.sink.tables import table_ref

    facts = tmp_path / "facts"
    sink = delta_sink(str(tmp_path / "bronze"), "queued", str(facts), warm_state="within_batch")
    sink(changes(spark, FIRST), 0)
    assert WARMER.wait_idle(120)
    held = _Held()
    warmer = _warmer(held)
    monkeypatch.setattr(sink_module, "WARMER", warmer)
    warmer.request(spark, table_ref("/data/elsewhere", "target"))
    assert held.started.wait(30)
    sink(changes(spark, SECOND), 1)
    held.release.set()
    assert warmer.wait_idle(30)
    assert held.asked == ["/data/elsewhere"]
    assert _facts(spark, facts) == [(0, 2), (1, 1)]


def test_a_failed_bronze_write_waits_for_the_creation_beside_it(spark, tmp_path, monkeypatch):
    """The thread that creates the facts table never outlives its batch: when the bronze write
    fails, the sink raises only once that thread is done (it was left running, creating the
    table and computing its state in the failed query's job group)."""
    go, threads = threading.Event(), []
    ensure = sink_module.ensure_facts_table

    def ensure_once_bronze_failed(*args, **kwargs):
        threads.append(threading.current_thread())
        assert go.wait(60)
        ensure(*args, **kwargs)

    def append_fails(self, *args, **kwargs):
        go.set()
        raise RuntimeError("bronze append refused")

    monkeypatch.setattr(sink_module, "ensure_facts_table", ensure_once_bronze_failed)
    monkeypatch.setattr(BronzeTable, "append", append_fails)
    facts = tmp_path / "facts"
    sink = delta_sink(str(tmp_path / "bronze"), "fails", str(facts))
    with pytest.raises(RuntimeError, match="bronze append refused"):
        sink(changes(spark, FIRST), 0)
    assert [t.name for t in threads] == ["mssql_cdc-sink-ahead"]
    assert not threads[0].is_alive()
    assert spark.sql(f"DESCRIBE DETAIL delta.`{facts}`").first().numFiles == 0
