"""Exactly once under crashes: the driver process group SIGKILLed at each step of a
micro-batch and restarted; bronze holds every change once and the facts one row per batch.

Only the runs that crash start their own driver process (``_crash_job.py``); the runs that go
to the end run in the test's own Spark session, which saves a JVM start each (the re-snapshot
case is in ``test_crash_resnapshot.py``, so that pytest-xdist can run the two files at once)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from _pipeline import bronze_changes

JOB = Path(__file__).with_name("_crash_job.py")


def run_job(tmp_path, job, crash, timeout=600):
    job_file = tmp_path / "job.json"
    job_file.write_text(json.dumps({**job, "crash": crash}))
    return subprocess.run(
        [sys.executable, str(JOB), str(job_file)],
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
        check=False,
    )


def run_to_the_end(spark, job) -> tuple[list[int], str]:
    """The job without a crash, in this Spark session: its batch ids and the query's name."""
    from _crash_job import start

    query = start(spark, job)
    query.awaitTermination()
    return [p["batchId"] for p in query.recentProgress], query.name


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
