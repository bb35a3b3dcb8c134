"""One trial of the fault harness on every CI run (tests/chaos/chaos_harness.py): a short
availableNow trial of the ``stream`` kind whose plan holds a SIGKILL of the driver, a deadlock
victim, a connection dropped mid-result, refused logins and a cleanup. `make chaos` runs many
more, of every kind; CI keeps to one (two driver starts, 95 s for this file on the 2-core
machine shared with other test runs) to stay inside its time budget. The checks themselves
are proven on hand-made rows in test_checks.py."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest
from chaos_harness import FocusKiller, plan, replay_command, run_trial
from kinds import TRIAL_KINDS, WORK, in_work, kind_of, plan_kind

SEED = 1
#: the CI trial's shape: a short workload, a small large transaction
SECONDS, LARGE = 4.0, 1000


def test_the_ci_seed_plans_a_kill_among_its_faults():
    kinds = [kind for _, kind, _ in plan(SEED, seconds=SECONDS, large=LARGE).faults]
    assert "sigkill" in kinds
    assert len(kinds) >= 3


def test_the_replay_command_carries_what_shapes_the_plan():
    assert replay_command(7) == "make chaos TRIALS=1 SEED=7 KINDS=stream"
    assert replay_command(7, kind="seed", seconds=SECONDS, large=LARGE) == (
        'make chaos TRIALS=1 SEED=7 KINDS=seed CHAOS_ARGS="--seconds 4 --large 1000"'
    )


def test_a_seed_keeps_its_stream_plan_whatever_the_kinds():
    """The kind is drawn apart from the plan: seed 2060's documented plan (docs/reliability.md)
    is the same in a trial of any kind, and round robin shares contiguous seeds evenly."""
    assert plan(2060).describe() == (  # as when it was run (a SIGKILL 1 s in)
        "seed 2060: processingTime, 4 partition(s), maxCommitsPerBatch off, 25 transactions, "
        "faults sigkill@1.0s, capture_job_stopped@2.1s, sigkill@3.4s, slow_responses@6.4s"
    )
    assert kind_of(2060, ["stream"]) == "stream"
    kinds = [kind_of(s, list(TRIAL_KINDS)) for s in range(3000, 3000 + 30 * len(TRIAL_KINDS))]
    assert {k: kinds.count(k) for k in TRIAL_KINDS} == dict.fromkeys(TRIAL_KINDS, 30)
    # a kind added at the end leaves a list of the older kinds as it was
    assert TRIAL_KINDS[-1] == "database"
    older = list(TRIAL_KINDS[:10])
    assert [kind_of(s, older) for s in (3000, 3001, 3009)] == [
        "stream",
        "bootstrap_full",
        "silver_type2",
    ]
    assert plan_kind("stream", 5).focus == []
    assert all(plan_kind(k, 5).focus for k in TRIAL_KINDS[1:])


@pytest.mark.spark
def test_a_trial_under_faults_delivers_every_change_once(tmp_path):
    pytest.importorskip("pyspark")
    result = run_trial(SEED, tmp_path / "trial", seconds=SECONDS, large=LARGE)
    detail = f"{result.description}\n" + "\n".join(result.problems)
    assert result.ok, f"{detail}\nreplay: {replay_command(SEED, seconds=SECONDS, large=LARGE)}"
    assert result.changes > 0
    assert (result.duplicates, result.losses) == (0, 0)
    assert result.faults["sigkill"] == 1


def test_a_kill_counts_in_the_kinds_work_by_what_the_driver_was_doing():
    assert in_work("silver_type2", "main=stream,silver=apply,stream=query")
    assert not in_work("silver_type2", "main=stream,silver=idle,stream=query")
    assert in_work("bootstrap_chunked", "backfill=wave,main=stream,stream=query")
    assert not in_work("seed", "starting")
    assert in_work("database", "db=writing batch after chaos-dbo_orders:3,main=stream")
    assert not in_work("database", "db=idle after chaos-db#facts:3,main=stream,stream=query")
    assert set(WORK) == set(TRIAL_KINDS)


class _Proc:
    def __init__(self, code: int | None) -> None:
        self.code = code

    def poll(self) -> int | None:
        return self.code


class _Driver:
    """A driver whose restart the test performs by hand: the killed process ended, the new one
    not yet assigned, under the lock (as ``Driver.restart`` holds it)."""

    def __init__(self, markers) -> None:
        self.lock = threading.RLock()
        self.proc = _Proc(None)
        self.markers = markers
        self.restarts = 0

    def marker(self, name: str):
        return self.markers / name

    def restart(self) -> None:
        self.restarts += 1


def test_a_focus_kill_waiting_through_a_planned_restart_is_not_lost(tmp_path):
    """Seed 101 of the database kind: the planned SIGKILL restarted the driver while the focus
    kill waited for its marker, which saw the killed process before the new one was assigned
    and gave up its kill. It now reads the process under the driver's lock."""
    driver = _Driver(tmp_path)
    workload = SimpleNamespace(thread=threading.Thread(), switched=threading.Event())
    focus = FocusKiller(driver, [("table_committed", 0.0)], workload)  # type: ignore[arg-type]
    with driver.lock:  # a restart halfway: the old process ended
        driver.proc = _Proc(-9)
        focus.start()
        time.sleep(0.3)  # the focus thread polls (a real restart takes that long)
        driver.proc = _Proc(None)  # the new driver
    (tmp_path / "table_committed").touch()
    focus.join()
    assert driver.restarts == 1
