"""One trial of the fault harness on every CI run (tests/chaos/chaos_harness.py): a short
availableNow trial whose plan holds a SIGKILL of the driver, a deadlock victim, a connection
dropped mid-result, refused logins and a cleanup. `make chaos` runs many more; CI keeps to one
(two driver starts, estimated at about a minute and a half on an idle machine) to stay
inside its time budget."""

from __future__ import annotations

import pytest
from chaos_harness import plan, replay_command, run_trial

SEED = 1
#: the CI trial's shape: a short workload, a small large transaction
SECONDS, LARGE = 4.0, 1000


def test_the_ci_seed_plans_a_kill_among_its_faults():
    kinds = [kind for _, kind, _ in plan(SEED, seconds=SECONDS, large=LARGE).faults]
    assert "sigkill" in kinds
    assert len(kinds) >= 3


def test_the_replay_command_carries_what_shapes_the_plan():
    assert replay_command(7) == "make chaos TRIALS=1 SEED=7"
    assert replay_command(7, seconds=SECONDS, large=LARGE) == (
        'make chaos TRIALS=1 SEED=7 CHAOS_ARGS="--seconds 4 --large 1000"'
    )


@pytest.mark.spark
def test_a_trial_under_faults_delivers_every_change_once(tmp_path):
    pytest.importorskip("pyspark")
    result = run_trial(SEED, tmp_path / "trial", seconds=SECONDS, large=LARGE)
    detail = f"{result.description}\n" + "\n".join(result.problems)
    assert result.ok, f"{detail}\nreplay: {replay_command(SEED, seconds=SECONDS, large=LARGE)}"
    assert result.changes > 0
    assert (result.duplicates, result.losses) == (0, 0)
    assert result.faults["sigkill"] == 1
