"""The streaming job of the crash tests, run in its own process group by
``test_crash.py``: one availableNow ``to_delta`` run that SIGKILLs its whole process group
(this Python driver, Spark's JVM and its Python workers) at one step of a micro-batch.

Usage: ``python _crash_job.py JOB.json`` where the JSON holds ``options``, ``bronze``,
``facts``, ``checkpoint``, ``app_id``, optionally ``to_delta`` (more keyword arguments of
``to_delta``) and ``crash`` (``null`` to run to the end, or ``[step, batch_id]``). Steps:

* ``read``: the sink checked the batch and is about to write it (or, for a replay, counted
  it); nothing is written yet;
* ``bronze``: the bronze append committed; the facts commit has not happened;
* ``facts``: the facts commit landed; the sink has not returned;
* ``commit``: the sink returned; Spark has not written the batch's commit log entry;
* ``resnapshot_bronze`` (batch ``-1``: before the query): a re-snapshot's bronze append
  committed; its ``resnapshot`` facts row is not written;
* ``resnapshot_facts`` (batch ``-1``): the ``resnapshot`` facts row landed; the generation
  state is not recorded.

The hooks wrap the sink from the outside (the library has no crash hooks): the call of the
``DeltaSink`` that ``to_delta`` builds, the sink's ``count_batch``, ``DeltaSink._write`` and
``TableRef.append``.

With a ``chaos`` object in the JSON (the fault harness, tests/chaos) the job runs instead
until told to stop, restarting a failed query in the same process, and is killed from the
outside: see :func:`run_chaos`.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, run as a script
from local_spark import master, spark_config


def start(spark, job: dict, trigger: dict | None = None):
    """The job's ``to_delta`` query, started (``test_crash.py`` runs the runs that do not crash
    in its own session with it)."""
    from mssql_cdc import stream

    return stream(spark, job["options"]).to_delta(
        job["bronze"],
        app_id=job["app_id"],
        checkpoint=job["checkpoint"],
        facts_table=job["facts"],
        trigger=trigger or {"availableNow": True},
        **job.get("to_delta", {}),
    )


def main(job_file: str) -> int:
    job = json.loads(Path(job_file).read_text())
    if job.get("chaos"):
        return run_chaos(job)
    step, at = job["crash"] or (None, -1)
    current = {"batch": -1}

    def crash(here: str) -> None:
        if here == step and current["batch"] == at:
            sys.stdout.flush()
            os.killpg(os.getpgrp(), signal.SIGKILL)

    import mssql_cdc.sink.delta as sink_delta
    from mssql_cdc.sink.delta import DeltaSink
    from mssql_cdc.sink.tables import TableRef

    real_call, real_count, real_write, real_append = (
        DeltaSink.__call__,
        sink_delta.count_batch,
        DeltaSink._write,
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

    def write(self, spark, df, batch_id, *, observe):
        crash("read")  # a new bronze table's first batch is not counted first (ADR 0157)
        return real_write(self, spark, df, batch_id, observe=observe)

    def append(self, df, txn, metadata=None, *, merge_schema=False):
        real_append(self, df, txn, metadata, merge_schema=merge_schema)
        app_id, version = txn if txn is not None else (None, None)
        if app_id == job["app_id"]:
            crash("bronze")
        elif app_id == job["app_id"] + "#facts":
            crash("facts")
        elif app_id == job["app_id"] + "#events" and version >= 1:
            crash("resnapshot_facts" if self.path == job["facts"] else "resnapshot_bronze")

    DeltaSink.__call__ = call
    sink_delta.count_batch = count_batch
    DeltaSink._write = write
    TableRef.append = append

    from mssql_cdc.spark import get_spark

    spark = get_spark(
        "mssql-cdc-crash",
        master(),
        config=spark_config(),
    )
    query = start(spark, job)
    query.awaitTermination()
    batches = [p["batchId"] for p in query.recentProgress]
    print(json.dumps({"batches": batches, "name": query.name}))
    spark.stop()
    return 0


def _state(spark, job) -> dict:
    """What bronze, the facts and the verdict hold now (bronze's change rows as keys)."""
    from mssql_cdc import finalization

    state: dict = {"verdict": None, "bronze": [], "facts": []}
    verdict = finalization.finalized_until(spark, job["chaos"]["control"], job["bronze"])
    state["verdict"] = verdict.isoformat() if verdict is not None else None
    if Path(job["bronze"], "_delta_log").exists():
        cols = [
            "_start_lsn",
            "_seqval",
            "_operation",
            "_command_id",
            "_batch_id",
            "id",
            "name",
            "qty",
        ]
        rows = spark.read.format("delta").load(job["bronze"]).where("_operation <> 0")
        state["bronze"] = [list(r) for r in rows.select(*cols).collect()]
    if Path(job["facts"], "_delta_log").exists():
        facts = spark.read.format("delta").load(job["facts"]).where("event IS NULL")
        state["facts"] = [[r["app_id"], r["batch_id"], r["rows"]] for r in facts.collect()]
    return state


def run_chaos(job) -> int:
    """The fault harness's driver: runs ``to_delta`` with ``job["trigger"]`` (availableNow runs
    back to back), a failed query restarted in this process, until the file ``chaos.stop``
    exists; then one last availableNow run. Finalization tracks every run into
    ``chaos.control``. Appends to ``chaos.state`` (a JSON list) the state before the first
    query, so what a killed predecessor left, and the state at the end; touches
    ``chaos.ready`` once a query has started."""
    import time

    from mssql_cdc import finalization
    from mssql_cdc.spark import get_spark

    chaos = job["chaos"]
    spark = get_spark(
        "mssql-cdc-chaos",
        chaos.get("master", master()),
        config=spark_config(),
    )
    state_file = Path(chaos["state"])
    states = json.loads(state_file.read_text()) if state_file.exists() else []

    def save(state: dict) -> None:  # atomic: a SIGKILL never leaves half a file
        states.append(state)
        state_file.with_suffix(".tmp").write_text(json.dumps(states))
        os.replace(state_file.with_suffix(".tmp"), state_file)

    save(_state(spark, job))
    failures = 0
    while True:
        stopping = Path(chaos["stop"]).exists()
        trigger = {"availableNow": True} if stopping else job["trigger"]
        try:
            query = start(spark, job, trigger)
            Path(chaos["ready"]).touch()
            listener = finalization.track(
                spark, query, chaos["control"], job["bronze"], granularity="minute"
            )
            try:
                if "availableNow" in trigger:
                    query.awaitTermination()
                else:
                    while not query.awaitTermination(0.2):
                        if Path(chaos["stop"]).exists():
                            query.stop()
                    query.awaitTermination()
            finally:
                listener.offer(query.lastProgress)
                listener.finish()
                listener.join(timeout=900)  # a MERGE can take minutes on a loaded machine
        except Exception as exc:  # a failed query: restart it, as a job scheduler would
            failures += 1
            print(f"query failed ({failures}): {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            if failures > chaos.get("max_failures", 30):
                raise
            time.sleep(0.5)
            continue
        if stopping:
            break
    save(_state(spark, job))
    print(json.dumps({"failures": failures}))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
