"""Exactly once under a crash during a re-snapshot: the driver process group SIGKILLed after
the re-snapshot's bronze append and after its facts row; the restart opens generation 1 with
the snapshot's rows in bronze once and one ``resnapshot`` facts row."""

from __future__ import annotations

import json
import signal

from test_recovery import purge_after_stop, rebuilt

from _crash import run_job, run_to_the_end


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
    run_to_the_end(spark, job)
    purge_after_stop(source, emulator, 10)
    for step in ("resnapshot_bronze", "resnapshot_facts"):
        done = run_job(tmp_path, job, [step, -1])
        assert done.returncode == -signal.SIGKILL, (step, done.stderr[-3000:])
    assert run_to_the_end(spark, job)[1] == "orders-crash.g1"

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
