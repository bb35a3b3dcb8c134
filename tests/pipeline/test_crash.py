"""Exactly once under crashes: the driver process group SIGKILLed at each step of a
micro-batch and restarted; bronze holds every change once and the facts one row per batch.

Only the runs that crash start their own driver process (``_crash_job.py``, run by
``tests/_crash.py``); the runs that go to the end run in the test's own Spark session, which
saves a JVM start each (the re-snapshot case is in ``tests/snapshots/test_crash_resnapshot.py``,
so that pytest-xdist can run the two files at once)."""

from __future__ import annotations

import signal

from _crash import run_job, run_to_the_end
from _pipeline import bronze_changes


def test_killed_at_every_step_of_a_batch_each_change_lands_once(spark, source, tmp_path):
    source.workload(1)
    job = {
        "options": source.options(maxCommitsPerBatch="3"),
        "bronze": str(tmp_path / "bronze"),
        "facts": str(tmp_path / "facts"),
        "checkpoint": str(tmp_path / "cp"),
        "app_id": "orders-crash",
    }
    for step in ("read", "bronze", "facts"):
        done = run_job(tmp_path, job, [step, 0])
        assert done.returncode == -signal.SIGKILL, (step, done.stderr[-3000:])
    source.workload(100)  # more changes while the job is down
    batches, _ = run_to_the_end(spark, job)
    assert batches[0] == 0  # batch 0 replayed

    history = source.changes()
    assert bronze_changes(spark, tmp_path / "bronze") == history
    facts = spark.read.format("delta").load(job["facts"]).where("event IS NULL")
    rows = facts.orderBy("batch_id").collect()
    assert [r["batch_id"] for r in rows] == list(range(len(rows)))
    assert sum(r["rows"] for r in rows) == len(history)
