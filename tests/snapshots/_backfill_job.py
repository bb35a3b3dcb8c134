"""The backfill job of ``test_backfill_kill.py``, run in its own process group: one
``CdcStream.backfill()`` call that SIGKILLs its whole process group (this Python driver, Spark's
JVM and its Python workers) at one step.

Usage: ``python _backfill_job.py JOB.json`` where the JSON holds ``options``, ``bronze``,
``facts``, ``app_id``, ``chunk_rows``, ``max_waves`` (``null``: every wave) and ``step``:
``before_append`` (the wave is planned, nothing of it written), ``after_append`` (its bronze
append committed, its facts rows not) or ``before_close`` (every chunk and its facts row
written, the closing ``bootstrap`` row not).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, run as a script
from local_spark import master, spark_config


def main(job_file: str) -> int:
    job = json.loads(Path(job_file).read_text())
    from _pipeline import backfill_hook
    from mssql_cdc import stream
    from mssql_cdc.sink.ledger import ledger as ledger_module
    from mssql_cdc.spark import get_spark

    def crash(at: str, last_chunk: int) -> None:
        if at == job["step"]:
            sys.stdout.flush()
            os.killpg(os.getpgrp(), signal.SIGKILL)

    ledger_module.commit_hook = backfill_hook(crash)
    spark = get_spark(
        "mssql-cdc-backfill-crash",
        master(),
        config=spark_config(),
    )
    stream(spark, job["options"]).backfill(
        job["bronze"],
        app_id=job["app_id"],
        facts_table=job["facts"],
        chunk_rows=job["chunk_rows"],
        max_waves=job["max_waves"],
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
