"""Running the crash job (``pipeline/_crash_job.py``) of the crash tests in
``tests/pipeline/test_crash.py`` and ``tests/snapshots/test_crash_resnapshot.py``: in a process
group of its own that it SIGKILLs at one step, or to the end in the test's own Spark session."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

JOB = Path(__file__).resolve().parent / "pipeline" / "_crash_job.py"


def run_job(tmp_path, job, crash, timeout=600):
    """``job`` run as its own driver process that kills its process group at ``crash``."""
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
    if str(JOB.parent) not in sys.path:
        sys.path.insert(0, str(JOB.parent))
    from _crash_job import start

    query = start(spark, job)
    query.awaitTermination()
    return [p["batchId"] for p in query.recentProgress], query.name
