"""A backfill whose driver process group is SIGKILLed before a wave's bronze append, restarted
and SIGKILLed again after the append (before its facts rows), restarted and SIGKILLed once more
after the last chunk's facts rows (before the closing ``bootstrap`` row), then restarted: no
chunk twice, none missing, one facts row per chunk, the plan written once, one closing row. The
run that goes to the end runs in the test's own Spark session (saves a JVM start)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from mssql_cdc import stream

JOB = Path(__file__).with_name("_backfill_job.py")


def _killed_at(job_file: Path, job: dict[str, object]) -> None:
    """Runs the backfill job in its own process group; it must end SIGKILLed at ``step``."""
    job_file.write_text(json.dumps(job))
    done = subprocess.run(
        [sys.executable, str(JOB), str(job_file)],
        capture_output=True,
        text=True,
        timeout=600,
        start_new_session=True,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, (job["step"], done.stderr[-3000:])


def test_backfill_killed_before_and_after_the_append_resumes_without_a_chunk_twice(
    spark, source, tmp_path
):
    source.sql(
        "INSERT INTO dbo.orders VALUES " + ", ".join(f"({i}, N'n{i}', {i})" for i in range(7))
    )
    source.scan()
    options = source.options(numPartitions="2")
    bronze, facts = str(tmp_path / "bronze"), str(tmp_path / "facts")
    cdc = stream(spark, options)
    cdc.to_delta(
        bronze,
        app_id="killed",
        checkpoint=str(tmp_path / "cp"),
        facts_table=facts,
        trigger={"availableNow": True},
        bootstrap=True,
        snapshot="chunked",
    ).awaitTermination()
    job = {"options": options, "bronze": bronze, "facts": facts, "app_id": "killed"}
    job_file = tmp_path / "job.json"
    # killed before the first wave's append (planned, nothing of the wave written), then
    # after the rerun's append (in bronze, its facts rows not written)
    for step in ("before_append", "after_append"):
        _killed_at(job_file, {**job, "chunk_rows": 2, "max_waves": 1, "step": step})
        chunk_rows = spark.read.format("delta").load(facts).where("event = 'snapshot_chunk'")
        assert chunk_rows.count() == 0
        plans = spark.read.format("delta").load(facts).where("event = 'snapshot_plan'")
        assert plans.count() == 1  # planned once, by the first run
        if step == "before_append":
            assert not (tmp_path / "bronze").exists()  # nothing appended
    landed = spark.read.format("delta").load(bronze).where("_operation = 0").count()
    assert landed == 4  # chunks 0 and 1 (two rows each) in bronze, their facts rows not written

    # every chunk read and recorded (0 and 1 from bronze), killed before the closing row
    _killed_at(job_file, {**job, "chunk_rows": 2, "max_waves": None, "step": "before_close"})
    recorded = spark.read.format("delta").load(facts)
    assert recorded.where("event = 'snapshot_chunk'").count() == 4
    assert recorded.where("event = 'bootstrap'").count() == 0
    assert spark.read.format("delta").load(bronze).where("_operation = 0").count() == 7

    status = cdc.backfill(bronze, app_id="killed", facts_table=facts)
    assert (status.state, status.chunks_done, status.chunks_total) == ("done", 4, 4)
    assert status.waves == 0  # nothing read again: only the closing row written
    closing = spark.read.format("delta").load(facts).where("event = 'bootstrap'").collect()
    assert [(c["app_id"], c["rows"]) for c in closing] == [("killed", 7)]
    snap = spark.read.format("delta").load(bronze).where("_operation = 0").collect()
    assert sorted(r["id"] for r in snap) == list(range(7))
    chunks = spark.read.format("delta").load(facts).where("event = 'snapshot_chunk'").collect()
    assert sorted(json.loads(c["detail"])["chunk"] for c in chunks) == [0, 1, 2, 3]
    assert sorted(c["rows"] for c in chunks) == [1, 2, 2, 2]
