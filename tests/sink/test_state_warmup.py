"""After each commit the sink has Delta compute the table's state on a background thread, so the
next batch's commit does not rebuild it to look up its transaction id (ADR 0177)."""

from __future__ import annotations

import threading
import types

from _changes import change, changes

from mssql_cdc.sink import delta_sink
from mssql_cdc.sink.txn_ids import compute_transactions
from mssql_cdc.sink.warmup import JOB_GROUP, WARMER


def _jobs(spark, group=None) -> set[int]:
    return set(spark.sparkContext.statusTracker().getJobIdsForGroup(group))


#: two micro-batches of two changes each
FIRST = [change(1, 2, 1, "a"), change(2, 2, 2, "b")]
SECOND = [change(3, 4, 1, "A"), change(4, 1, 2, None)]


def _sinks(tmp_path, name, modes):
    """One sink per ``warm_state`` mode, each with its own bronze and facts table."""
    return {
        mode: delta_sink(
            str(tmp_path / f"bronze-{mode}"),
            f"{name}-{mode}",
            str(tmp_path / f"facts-{mode}"),
            warm_state=mode,
        )
        for mode in modes
    }


def _second_batch_jobs(spark, sinks) -> dict[object, int]:
    """Each sink's batch 1 (``SECOND``): the Spark jobs it ran itself, per mode (the warmer's
    own jobs are in ``JOB_GROUP``, not counted), the warmer idle after each."""
    ran = {}
    for mode, sink in sinks.items():
        before = _jobs(spark)
        sink(changes(spark, SECOND), 1)
        ran[mode] = len(_jobs(spark) - before)
        assert WARMER.wait_idle(120)
    return ran


def _assert_both_batches_landed(spark, tmp_path, modes):
    for mode in modes:
        bronze = spark.read.format("delta").load(str(tmp_path / f"bronze-{mode}"))
        assert sorted(r["_start_lsn"] for r in bronze.collect()) == [
            f"0x{n:020X}" for n in (1, 2, 3, 4)
        ]
        facts = spark.read.format("delta").load(str(tmp_path / f"facts-{mode}"))
        assert sorted((r["batch_id"], r["rows"]) for r in facts.collect()) == [(0, 2), (1, 2)]


def test_the_next_commit_finds_the_state_computed(spark, tmp_path):
    sinks = _sinks(tmp_path, "warm", (False, True))
    for sink in sinks.values():
        sink(changes(spark, FIRST), 0)
    assert WARMER.wait_idle(120)
    assert (str(tmp_path / "bronze-True"), True) in WARMER.done
    assert (str(tmp_path / "facts-True"), True) in WARMER.done
    assert not any("False" in table for table, _ in WARMER.done)

    ran = _second_batch_jobs(spark, sinks)
    assert _jobs(spark, JOB_GROUP)
    # what building one version's state costs here (open-source Delta: one to three jobs, with
    # the session's settings); a second ask is answered from the snapshot
    cold_bronze = str(tmp_path / "bronze-False")
    before = _jobs(spark)
    assert compute_transactions(spark, cold_bronze)
    rebuild = len(_jobs(spark) - before)
    before = _jobs(spark)
    assert compute_transactions(spark, cold_bronze)
    assert len(_jobs(spark) - before) == 0
    # both commits of the warmed sink (bronze, facts) found the state computed
    assert rebuild > 0
    assert ran[False] - ran[True] == 2 * rebuild, (ran, rebuild)
    # a replay of batch 1 after the state was computed is still skipped by Delta
    sinks[True](changes(spark, SECOND), 1)
    assert WARMER.wait_idle(120)
    _assert_both_batches_landed(spark, tmp_path, sinks)


def test_within_a_batch_the_facts_commit_finds_its_state_and_nothing_is_computed_after(
    spark, tmp_path, monkeypatch
):
    """ADR 0180: a query that stops after its batches has the facts table's state computed
    during the bronze write, and nothing computed after the batch's commits."""
    from mssql_cdc.sink.bronze import BronzeTable

    appended = BronzeTable.append

    def append_once_computed(*args, **kwargs):  # the computation ends before the write, here
        assert WARMER.wait_idle(120)
        appended(*args, **kwargs)

    monkeypatch.setattr(BronzeTable, "append", append_once_computed)
    sinks = _sinks(tmp_path, "within", (False, "within_batch"))
    for sink in sinks.values():
        sink(changes(spark, FIRST), 0)
    assert WARMER.wait_idle(120)
    WARMER.done.clear()
    ran = _second_batch_jobs(spark, sinks)
    # asked once, for the facts table, before its commit; never for bronze
    assert list(WARMER.done) == [(str(tmp_path / "facts-within_batch"), True)]
    cold_facts = str(tmp_path / "facts-False")
    before = _jobs(spark)
    assert compute_transactions(spark, cold_facts)
    rebuild = len(_jobs(spark) - before)
    assert rebuild > 0
    # the facts commit found its state computed; bronze's commit built its own
    assert ran[False] - ran["within_batch"] == rebuild, (ran, rebuild)
    # nothing was computed after the commits: the versions batch 1 wrote still need building
    for table in ("bronze", "facts"):
        before = _jobs(spark)
        assert compute_transactions(spark, str(tmp_path / f"{table}-within_batch"))
        assert len(_jobs(spark) - before) == rebuild, table
    _assert_both_batches_landed(spark, tmp_path, sinks)


def test_within_a_batch_a_request_not_started_by_the_facts_commit_is_withdrawn(
    spark, tmp_path, monkeypatch
):
    """The facts request waits behind another table's computation until the facts commit: the
    sink withdraws it, so no computation of the facts table starts after its commit."""
    import mssql_cdc.sink.delta as sink_module
    from mssql_cdc.sink.tables import table_ref

    held = _Held()
    warmer = _warmer(held)
    monkeypatch.setattr(sink_module, "WARMER", warmer)
    warmer.request(spark, table_ref("/data/elsewhere", "target"))
    assert held.started.wait(30)
    sink = delta_sink(
        str(tmp_path / "bronze"), "withdrawn", str(tmp_path / "facts"), warm_state="within_batch"
    )
    sink(changes(spark, FIRST), 0)
    held.release.set()
    assert warmer.wait_idle(30)
    assert held.asked == ["/data/elsewhere"]
    facts = spark.read.format("delta").load(str(tmp_path / "facts"))
    assert [(r["batch_id"], r["rows"]) for r in facts.collect()] == [(0, 2)]


def test_warm_state_takes_a_bool_or_one_of_two_modes(tmp_path):
    import pytest

    from mssql_cdc.sink.delta import warm_mode

    assert warm_mode(True) == "between_batches"
    assert warm_mode(False) is None
    assert warm_mode("between_batches") == "between_batches"
    assert warm_mode("within_batch") == "within_batch"
    target = str(tmp_path / "bronze")
    with pytest.raises(ValueError, match=r"warm_state must be True, False, 'between_batches' or "):
        delta_sink(target, "a", warm_state="after")
    with pytest.raises(TypeError, match=r"warm_state must be .* got int"):
        delta_sink(target, "a", warm_state=1)  # type: ignore[arg-type]


def test_a_query_that_stops_after_its_batches_warms_within_each_batch():
    from mssql_cdc.sink import warm_state_for

    assert warm_state_for(None) == "between_batches"  # Spark's default: batches back to back
    assert warm_state_for({"processingTime": "10 seconds"}) == "between_batches"
    assert warm_state_for({"availableNow": True}) == "within_batch"
    assert warm_state_for({"once": True}) == "within_batch"


def test_a_withdrawn_request_is_dropped_and_a_started_one_finished_first():
    from mssql_cdc.sink.tables import table_ref

    held = _Held()
    warmer = _warmer(held)
    a, b, c = (table_ref(f"/data/{n}", "target") for n in "abc")
    query, other = _Session(group="run-1"), _Session(group="run-2")
    warmer.request(query, a)
    assert held.started.wait(30)  # a is being computed, b and c wait behind it
    warmer.request(query, b)
    warmer.request(other, c)
    assert warmer.withdraw(query, b) is True
    assert warmer.withdraw(query, b) is False  # nothing queued any more
    # c was queued by another query (a shared facts table): left for it
    assert warmer.withdraw(query, c) is False
    # a has started: the withdrawal waits for it to finish, so that nothing of a's is computed
    # once the commit that follows begins
    returned = threading.Event()
    answers = []
    waiting = threading.Thread(
        target=lambda: (answers.append(warmer.withdraw(query, a)), returned.set())
    )
    waiting.start()
    assert not returned.wait(0.5)
    held.release.set()
    assert returned.wait(30)
    waiting.join(30)
    assert answers == [False]
    assert warmer.wait_idle(30)
    assert held.asked == ["/data/a", "/data/c"]
    assert list(warmer.done) == [("/data/a", True), ("/data/c", True)]


class _Context:
    """Records the job group the warmer's thread sets and clears."""

    def __init__(self, group: str | None) -> None:
        self.group = group
        self.set: list[tuple[str, bool]] = []
        self._jsc = self

    def getLocalProperty(self, key):  # noqa: N802 (Spark's name)
        assert key == "spark.jobGroup.id"
        return self.group

    def setJobGroup(self, group, description, interruptOnCancel=False):  # noqa: N802, N803
        self.set.append((group, interruptOnCancel))

    def clearJobGroup(self):  # noqa: N802
        self.set.append(("cleared", False))

    def cancelJobGroup(self, group):  # noqa: N802
        self.set.append(("cancelled " + group, False))


class _Session:
    """A stand-in for a classic session (it has a JVM gateway), recording the JVM's active
    session as the warmer sets and clears it."""

    def __init__(self, group: str | None = None) -> None:
        self.sparkContext = _Context(group)
        self.active: list[object] = []
        self._jsparkSession = object()
        sessions = types.SimpleNamespace(
            setActiveSession=self.active.append,
            clearActiveSession=lambda: self.active.append(None),
        )
        self._jvm = types.SimpleNamespace(
            org=types.SimpleNamespace(
                apache=types.SimpleNamespace(
                    spark=types.SimpleNamespace(sql=types.SimpleNamespace(SparkSession=sessions))
                )
            )
        )


def _warmer(compute, available=lambda spark: True):
    from mssql_cdc.sink.warmup import StateWarmer

    return StateWarmer(compute, available=available, pinned=lambda spark: spark._jvm is not None)


class _Held:
    """A computation that blocks until released, recording what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self, spark, location: str) -> bool:
        self.asked.append(location)
        self.started.set()
        assert self.release.wait(30)
        if location.endswith("broken"):
            raise RuntimeError("the session was stopped")
        if location.endswith("unprintable"):
            raise _UnprintableError
        return True


class _UnprintableError(Exception):
    """An error whose text cannot be had (a py4j error once the gateway is gone)."""

    def __str__(self) -> str:
        raise ConnectionError("the gateway is gone")


def test_at_exit_the_queue_is_dropped_and_a_running_computation_cancelled_after_a_wait():
    from mssql_cdc.sink.tables import table_ref
    from mssql_cdc.sink.warmup import JOB_GROUP

    held = _Held()
    warmer = _warmer(held)
    session = _Session()
    warmer.request(session, table_ref("/data/a", "target"))
    assert held.started.wait(30)
    warmer.request(session, table_ref("/data/b", "target"))
    # the interpreter exits while a is computed: b is dropped, a's jobs cancelled after the wait
    finished = threading.Thread(target=warmer.finish, kwargs={"timeout": 0.2})
    finished.start()
    finished.join(0.1)
    assert finished.is_alive()  # waits for a first
    finished.join(30)
    assert ("cancelled " + JOB_GROUP, False) in session.sparkContext.set
    held.release.set()
    assert warmer.wait_idle(30)
    assert held.asked == ["/data/a"]  # b never started
    # nothing running any more: returns at once, cancels nothing
    warmer.finish(timeout=30)
    cancels = [entry for entry, _ in session.sparkContext.set if entry.startswith("cancelled")]
    assert cancels == ["cancelled " + JOB_GROUP]


def test_a_table_asked_for_again_while_it_waits_is_computed_once():
    from mssql_cdc.sink.tables import table_ref

    held = _Held()
    warmer = _warmer(held)
    a, b = table_ref("/data/a", "target"), table_ref("/data/b", "target")
    warmer.request(_Session(), a)
    assert held.started.wait(30)  # a is being computed: b waits
    for _ in range(3):
        warmer.request(_Session(), b)
    warmer.request(_Session(), a)  # a again: its new version
    held.release.set()
    assert warmer.wait_idle(30)
    assert held.asked == ["/data/a", "/data/b", "/data/a"]
    assert list(warmer.done) == [("/data/a", True), ("/data/b", True), ("/data/a", True)]


def test_a_table_asked_for_first_is_computed_ahead_of_those_waiting():
    from mssql_cdc.sink.tables import table_ref

    held = _Held()
    warmer = _warmer(held)
    a, b, c, facts = (table_ref(f"/data/{n}", "target") for n in ("a", "b", "c", "facts"))
    warmer.request(_Session(), a)
    assert held.started.wait(30)  # a is being computed: b and c wait
    warmer.request(_Session(), b)
    warmer.request(_Session(), c)
    warmer.request(_Session(), facts, first=True)
    warmer.request(_Session(), c, first=True)  # c moves to the front too, once
    held.release.set()
    assert warmer.wait_idle(30)
    assert held.asked == ["/data/a", "/data/c", "/data/facts", "/data/b"]


def test_the_jobs_run_in_the_asking_threads_job_group_with_its_session_active():
    from mssql_cdc.sink.tables import table_ref
    from mssql_cdc.sink.warmup import JOB_GROUP

    held = _Held()
    held.release.set()
    warmer = _warmer(held)
    in_query, alone = _Session(group="run-1234"), _Session(group=None)
    warmer.request(in_query, table_ref("/data/a", "target"))
    assert warmer.wait_idle(30)
    warmer.request(alone, table_ref("/data/b", "target"))
    assert warmer.wait_idle(30)
    # a query's stop cancels its job group: the computation goes with it, its tasks not
    # interrupted (ADR 0183: an interrupted shuffle read logs an ERROR)
    assert in_query.sparkContext.set == [("run-1234", False), ("cleared", False)]
    assert alone.sparkContext.set == [(JOB_GROUP, False), ("cleared", False)]
    assert in_query.active == [in_query._jsparkSession, None]
    assert alone.active == [alone._jsparkSession, None]


class _Elsewhere(_Session):
    """A classic session whose Delta has other class names (Databricks); records catalog
    calls (a table name's location is one)."""

    def __init__(self) -> None:
        super().__init__()
        self.catalog_calls = 0

    @property
    def catalog(self):
        self.catalog_calls += 1
        raise AssertionError("the catalog was asked")


def test_a_failure_is_forgotten_and_a_session_without_the_classes_is_left_alone(caplog):
    from mssql_cdc.sink.tables import table_ref

    held = _Held()
    held.release.set()
    warmer = _warmer(held, available=lambda spark: not isinstance(spark, _Elsewhere))
    connect = _Session()
    connect._jvm = None  # Spark Connect: no JVM gateway
    warmer.request(connect, table_ref("/data/connect", "target"))
    assert warmer.wait_idle(30)
    assert list(warmer.done) == []
    elsewhere = _Elsewhere()
    warmer.request(elsewhere, table_ref("bronze.orders", "target"))
    assert warmer.wait_idle(30)
    assert list(warmer.done) == [("bronze.orders", False)]
    assert elsewhere.catalog_calls == 0
    warmer.done.clear()
    assert held.asked == []
    with caplog.at_level("DEBUG", logger="mssql_cdc.sink"):
        for name in ("broken", "unprintable", "fine"):
            warmer.request(_Session(), table_ref(f"/data/{name}", "target"))
            assert warmer.wait_idle(30)
    assert list(warmer.done) == [
        ("/data/broken", False),
        ("/data/unprintable", False),
        ("/data/fine", True),
    ]
    assert "was not computed ahead of its next commit: the session was stopped" in caplog.text
