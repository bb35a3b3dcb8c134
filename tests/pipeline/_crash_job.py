"""The streaming job of the crash tests, run in its own process group by
``test_crash.py``: one availableNow ``to_delta`` run that SIGKILLs its whole process group
(this Python driver, Spark's JVM and its Python workers) at one step of a micro-batch.

Usage: ``python _crash_job.py JOB.json`` where the JSON holds ``options``, ``bronze``,
``facts``, ``checkpoint``, ``app_id``, optionally ``to_delta`` (more keyword arguments of
``to_delta``) and ``crash`` (``null`` to run to the end, or ``[step, batch_id]``). Steps:

* ``read``: the sink read and counted the batch; nothing is written yet;
* ``bronze``: the bronze append committed; the facts commit has not happened;
* ``facts``: the facts commit landed; the sink has not returned;
* ``commit``: the sink returned; Spark has not written the batch's commit log entry;
* ``resnapshot_bronze`` (batch ``-1``: before the query): a re-snapshot's bronze append
  committed; its ``resnapshot`` facts row is not written;
* ``resnapshot_facts`` (batch ``-1``): the ``resnapshot`` facts row landed; the generation
  state is not recorded.

The hooks wrap the sink from the outside (the library has no crash hooks): the call of the
``DeltaSink`` that ``to_delta`` builds, the sink's ``count_batch`` and ``TableRef.append``.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path


def main(job_file: str) -> int:
    job = json.loads(Path(job_file).read_text())
    step, at = job["crash"] or (None, -1)
    current = {"batch": -1}

    def crash(here: str) -> None:
        if here == step and current["batch"] == at:
            sys.stdout.flush()
            os.killpg(os.getpgrp(), signal.SIGKILL)

    import mssql_cdc.sink.delta as sink_delta
    from mssql_cdc.sink.delta import DeltaSink
    from mssql_cdc.sink.tables import TableRef

    real_call, real_count, real_append = (
        DeltaSink.__call__,
        sink_delta.count_batch,
        TableRef.append,
    )

    def call(self, df, batch_id):
        current["batch"] = int(batch_id)
        real_call(self, df, batch_id)
        crash("commit")

    def count_batch(df):
        counts = real_count(df)
        crash("read")
        return counts

    def append(self, df, app_id, version, metadata, *, merge_schema):
        real_append(self, df, app_id, version, metadata, merge_schema=merge_schema)
        if app_id == job["app_id"]:
            crash("bronze")
        elif app_id == job["app_id"] + "#facts":
            crash("facts")
        elif app_id == job["app_id"] + "#events" and version >= 1:
            crash("resnapshot_facts" if self.path == job["facts"] else "resnapshot_bronze")

    DeltaSink.__call__ = call
    sink_delta.count_batch = count_batch
    TableRef.append = append

    from mssql_cdc import stream
    from mssql_cdc.spark import get_spark

    spark = get_spark(
        "mssql-cdc-crash",
        "local[2]",
        config={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2"},
    )
    query = stream(spark, job["options"]).to_delta(
        job["bronze"],
        app_id=job["app_id"],
        checkpoint=job["checkpoint"],
        facts_table=job["facts"],
        trigger={"availableNow": True},
        **job.get("to_delta", {}),
    )
    query.awaitTermination()
    batches = [p["batchId"] for p in query.recentProgress]
    print(json.dumps({"batches": batches, "name": query.name}))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
