"""Exactly once under crashes: the driver process group SIGKILLed at each step of a
micro-batch and restarted; bronze holds every change once and the facts one row per batch."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from _pipeline import bronze_changes
from test_recovery import purge_after_stop, rebuilt

JOB = Path(__file__).with_name("_crash_job.py")


def run_job(tmp_path, job, crash, timeout=240):
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
    done = run_job(tmp_path, job, None)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1])["batches"][0] == 0  # batch 0 replayed

    history = source.changes()
    assert bronze_changes(spark, tmp_path / "bronze") == history
    facts = spark.read.format("delta").load(job["facts"]).where("event IS NULL")
    rows = facts.orderBy("batch_id").collect()
    assert [r["batch_id"] for r in rows] == list(range(len(rows)))
    assert sum(r["rows"] for r in rows) == len(history)


def test_killed_during_a_resnapshot_no_snapshot_row_twice(spark, source, emulator, tmp_path):
    source.sql("INSERT INTO dbo.orders VALUES (1, N'a', 1), (2, N'b', 2), (3, N'c', 3)")
    source.scan()
    job = {
        "options": source.options(),
        "bronze": str(tmp_path / "bronze"),
        "facts": str(tmp_path / "facts"),
        "checkpoint": str(tmp_path / "cp"),
        "app_id": "orders-crash",
        "to_delta": {"bootstrap": True, "on_data_loss": "resnapshot"},
    }
    done = run_job(tmp_path, job, None, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    purge_after_stop(source, emulator, 10)
    for step in ("resnapshot_bronze", "resnapshot_facts"):
        done = run_job(tmp_path, job, [step, -1], timeout=600)
        assert done.returncode == -signal.SIGKILL, (step, done.stderr[-3000:])
    done = run_job(tmp_path, job, None, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1])["name"] == "orders-crash.g1"

    facts = spark.read.format("delta").load(job["facts"])
    resnaps = facts.where("event = 'resnapshot'").collect()
    table = source.table()
    assert [(r["app_id"], r["rows"]) for r in resnaps] == [("orders-crash.g1", len(table))]
    lsn = resnaps[0]["max_lsn"]
    bronze = spark.read.format("delta").load(job["bronze"])
    snapshot = bronze.where(f"_operation = 0 AND _snapshot = '{lsn}'")
    assert snapshot.count() == len(table)  # the table's rows, each once
    assert sorted(r["id"] for r in snapshot.collect()) == [r[0] for r in table]
    assert rebuilt(spark, tmp_path / "bronze", lsn) == table
    state = json.loads((tmp_path / "cp" / "_mssql_cdc_generation.json").read_text())
    assert (state["generation"], state["snapshot_lsn"], "recovering" in state) == (1, lsn, False)
