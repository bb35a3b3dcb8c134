"""The fault harness's driver: one trial kind's job, run by ``chaos_harness`` in its own
process group and SIGKILLed from the outside, through the product's public API only.

Usage: ``python driver.py JOB.json START`` (``START``: this driver's start number in the
trial). ``JOB.json`` holds the kind, the source options, the table paths, the trigger and the
kind's parameters (see ``kinds.job``). Every step is idempotent when a restarted driver runs it
again, and one-shot steps (``snapshot()`` calls, ``seed()``, the first generation of a
re-snapshot trial) record their completion in ``progress.json``, so a restart resumes where
its predecessor was killed:

* ``stream``: ``to_delta`` (the main job);
* ``bootstrap_full``/``bootstrap_chunked``: ``to_delta(bootstrap=True[, snapshot="chunked"])``,
  and for chunked a thread calling ``backfill(max_waves=1)`` until ``done`` (in half the
  chunked trials a second such thread with its own ``numPartitions``, 1 or 3: overlapping runs);
* ``snapshot``: the planned ``snapshot()`` calls, then ``to_delta(bootstrap=True)``;
* ``seed``: ``seed()`` of the copy the harness read, then ``to_delta(bootstrap=True)``;
* ``resnapshot_full``/``resnapshot_chunked``: generation 0 to the end (availableNow), then,
  once the harness purged the changes after it, ``to_delta(on_data_loss="resnapshot", ...)``
  (and the backfill thread for chunked);
* ``switch``: ``to_delta(snapshot_on_switch=True)`` while the harness adds a column and a
  second capture instance;
* ``silver_type1``/``silver_type2``: ``to_delta`` and a thread calling ``apply_changes``;
* ``database``: ``start_database`` over ``dbo_orders`` and ``dbo_other`` (one query, one
  checkpoint, each table's bronze and sink id from the templates), restarted as ``to_delta`` is.

A failed query is restarted in this process, as a scheduler would. With ``track`` the verdict
of bronze follows every run (``finalization.track``). The driver touches marker files
(``markers/<name>.<START>``: ``spark`` once its session is up, ``ready`` once a query started,
``snapshot_taken`` after each ``snapshot()`` call, ``gen0`` after a re-snapshot trial's first
part, ``phase_b`` when its second part starts, ``table_writing`` and ``table_committed`` when a
database stream's first bronze commit of a table starts and lands) and writes what each thread
is doing to ``phase.<thread>``, which the harness reads when it kills. A database stream's
commits are observed through the sink ledger's ``commit_hook`` (:func:`observe_commits`: it
only writes the phase ``db``, never changes what the product does), so that a kill can say
where inside a database batch it landed. It appends to ``state.json`` the state at its start
(what a killed predecessor left: the verdicts, then bronze's change rows) and, once told to stop
(the file ``stop``), after one last availableNow run, the final finished backfill and one last
``apply_changes``, the whole state: bronze, the facts, the control table and silver.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, run as a script
from local_spark import spark_config
from mssql_cdc import apply_changes, finalization, start_database, stream
from mssql_cdc.spark import get_spark

#: a failed query or call is retried this many times before the driver gives up
MAX_FAILURES = 40


class Job:
    def __init__(self, path: str, start: int) -> None:
        self.spec: dict[str, Any] = json.loads(Path(path).read_text())
        self.dir = Path(self.spec["dir"])
        self.start = start
        self.stop_file = self.dir / "stop"
        self.failures = 0
        self.lock = threading.Lock()

    def __getitem__(self, name: str) -> Any:
        return self.spec[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.spec.get(name, default)

    def mark(self, name: str) -> None:
        (self.dir / "markers").mkdir(exist_ok=True)
        (self.dir / "markers" / f"{name}.{self.start}").touch()

    def phase(self, thread: str, what: str) -> None:
        _write_atomic(self.dir / f"phase.{thread}", what)

    def progress(self) -> dict[str, Any]:
        path = self.dir / "progress.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def record(self, name: str, value: Any) -> None:
        with self.lock:
            progress = self.progress()
            progress[name] = value
            _write_atomic(self.dir / "progress.json", json.dumps(progress))

    def failed(self, what: str, exc: BaseException) -> None:
        with self.lock:
            self.failures += 1
            n = self.failures
        print(f"{what} failed ({n}): {type(exc).__name__}: {str(exc)[:300]}", flush=True)
        if n > MAX_FAILURES:
            raise exc


def _write_atomic(path: Path, text: str) -> None:
    """A SIGKILL never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _jsonable(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    return value


def _rows(spark: Any, path: str, where: str | None = None) -> list[dict[str, Any]]:
    # A table exists once its first commit file does: a killed first commit can leave an
    # empty _delta_log behind, which Delta reads as DELTA_TABLE_NOT_FOUND.
    if not any(Path(path, "_delta_log").glob("*.json")):
        return []
    df = spark.read.format("delta").load(path)
    if where:
        df = df.where(where)
    return [{k: _jsonable(v) for k, v in r.asDict().items()} for r in df.collect()]


def _verdicts(spark: Any, job: Job) -> dict[str, Any]:
    """Every row of the control table (bronze's verdict, silver's position and verdict)."""
    return {r["table_name"]: r for r in _rows(spark, job["control"])}


def save_state(spark: Any, job: Job, *, final: bool) -> None:
    """Appends the state to ``state.json``: the control rows first (a verdict read before what
    it speaks of), then bronze's change identities, or at the end every table whole (a
    database stream: each table's bronze under ``tables``, by capture instance)."""
    state: dict[str, Any] = {"start": job.start, "final": final, "control": _verdicts(spark, job)}
    database = job.get("database")
    if database is not None:
        where = None if final else "_operation <> 0"
        state["tables"] = {ci: _rows(spark, path, where) for ci, path in database["tables"].items()}
        if final:
            state["facts"] = _rows(spark, job["facts"])
    elif final:
        state["bronze"] = _rows(spark, job["bronze"])
        state["facts"] = _rows(spark, job["facts"])
        if job.get("silver"):
            state["silver"] = _rows(spark, job["silver"]["path"])
    else:
        changes = _rows(spark, job["bronze"], "_operation <> 0")
        state["bronze"] = [
            {k: r[k] for k in ("_start_lsn", "_seqval", "_operation", "_command_id")}
            for r in changes
        ]
    path = job.dir / "state.json"
    states = json.loads(path.read_text()) if path.exists() else []
    states.append(state)
    _write_atomic(path, json.dumps(states))


# ---- the stream ---------------------------------------------------------------------------


def _start_query(spark: Any, job: Job, extra: dict[str, Any], trigger: dict[str, Any]) -> Any:
    """The kind's query: ``to_delta``, or ``start_database`` for the database kind."""
    database = job.get("database")
    if database is None:
        job.phase("stream", "to_delta")
        return stream(spark, job["options"]).to_delta(
            job["bronze"],
            app_id=job["app_id"],
            checkpoint=job["checkpoint"],
            facts_table=job["facts"],
            trigger=trigger,
            **extra,
        )
    job.phase("stream", "start_database")
    settings: dict[str, Any] = {"trigger": trigger, "parallel": database["parallel"]}
    if database.get("heartbeat_seconds") is not None:
        settings["heartbeat_seconds"] = database["heartbeat_seconds"]
    return start_database(
        spark,
        job["options"],
        database["instances"],
        target=database["target"],
        app_id=database["app_id"],
        checkpoint=job["checkpoint"],
        facts_table=job["facts"],
        name=database["name"],
        **settings,
    )


def observe_commits(job: Job) -> None:
    """Writes the phase ``db`` around every commit of the sink's ledger (``writing <commit>
    <before|after> <txnAppId>:<version>``, ``idle`` once a database batch's facts commit
    landed) and touches the markers ``table_writing`` and ``table_committed`` when this
    driver's first bronze commit of a table starts (its write: the read and the files) and
    lands. Observes only: the hook never raises into the product."""
    import importlib  # noqa: PLC0415 (the ledger module, not the package of the same name)

    module = importlib.import_module("mssql_cdc.sink.ledger.ledger")
    lock = threading.Lock()
    marked: set[str] = set()
    markers = {"before": "table_writing", "after": "table_committed"}

    def hook(kind: str, when: str, txn: Any) -> None:
        try:
            with lock:
                what = "" if txn is None else f" {txn.app_id}:{txn.version}"
                if (kind, when) == ("database_facts", "after"):
                    job.phase("db", f"idle after{what}")
                else:
                    job.phase("db", f"writing {kind} {when}{what}")
                if kind == "batch" and markers[when] not in marked:
                    marked.add(markers[when])
                    job.mark(markers[when])
        except Exception as exc:  # an observer only: the product goes on
            print(f"observe_commits: {type(exc).__name__}: {exc}", flush=True)

    module.commit_hook = hook


def run_stream(
    spark: Any,
    job: Job,
    extra: dict[str, Any],
    *,
    until: Callable[[], bool],
    ready: str = "ready",
) -> None:
    """``to_delta`` (or ``start_database``) with ``job["trigger"]`` (availableNow runs back to
    back), a failed query restarted, until ``until()``; then one last availableNow run
    (restarted until it ends). Touches the marker ``ready`` once a query started."""
    while True:
        stopping = until()
        trigger = {"availableNow": True} if stopping else job["trigger"]
        try:
            query = _start_query(spark, job, extra, trigger)
            job.phase("stream", "query")
            job.mark(ready)
            listener = None
            if job.get("track"):
                listener = finalization.track(
                    spark, query, job["control"], job["bronze"], granularity="minute"
                )
            try:
                if "availableNow" in trigger:
                    query.awaitTermination()
                else:
                    while not query.awaitTermination(0.2):
                        if until():
                            query.stop()
                    query.awaitTermination()
            finally:
                if listener is not None:
                    listener.offer(query.lastProgress)
                    listener.finish()
                    listener.join(timeout=900)  # a MERGE can take minutes on a loaded machine
        except Exception as exc:  # a failed query: restart it, as a job scheduler would
            job.failed("query", exc)
            time.sleep(0.5)
            continue
        if stopping:
            job.phase("stream", "done")
            return


def stopped(job: Job) -> Callable[[], bool]:
    return job.stop_file.exists


# ---- threads next to the stream ------------------------------------------------------------


def backfill_loop(
    spark: Any, job: Job, name: str = "backfill", partitions: int | None = None
) -> None:
    """``backfill`` one wave at a time until ``done`` (a pause or no snapshot yet: again).
    ``name``: the thread's phase and progress name; ``partitions``: its own ``numPartitions``
    (a second run next to the first reads waves of another size, ADR 0200)."""
    args = job["backfill"]
    options = dict(job["options"])
    if partitions is not None:
        options["numPartitions"] = str(partitions)
    cdc = stream(spark, options)
    while True:
        try:
            job.phase(name, "wave")
            status = cdc.backfill(
                job["bronze"],
                app_id=job["app_id"],
                facts_table=job["facts"],
                chunk_rows=args["chunk_rows"],
                max_waves=1,
                target_wave_seconds=0,
                min_headroom_hours=args.get("min_headroom_hours"),
            )
        except Exception as exc:
            job.phase(name, "failed")
            job.failed(name, exc)
            time.sleep(0.5)
            continue
        job.phase(name, status.state)
        if status.done:
            job.record(name, "done")
            return
        if status.paused:
            time.sleep(0.5)  # pacing: a paused backfill is asked again, as a scheduler would


def apply_once(spark: Any, job: Job) -> None:
    silver = job["silver"]
    apply_changes(
        spark,
        job["bronze"],
        silver["path"],
        capture_instance="dbo_orders",
        keys=["id"],
        control_table=job["control"],
        facts_table=job["facts"],
        options=job["options"] if silver.get("options") else None,
        granularity="minute",
        scd_type=silver["scd_type"],
    )


def silver_loop(spark: Any, job: Job, done: threading.Event) -> None:
    """``apply_changes`` again and again until ``done``."""
    while not done.is_set():
        try:
            job.phase("silver", "apply")
            apply_once(spark, job)
            job.phase("silver", "idle")
        except Exception as exc:
            job.phase("silver", "failed")
            job.failed("apply_changes", exc)
        done.wait(0.5)


def _thread(target: Callable[..., None], *args: Any) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def _retry(job: Job, what: str, action: Callable[[], Any]) -> Any:
    while True:
        try:
            return action()
        except Exception as exc:
            job.failed(what, exc)
            time.sleep(0.5)


# ---- the kinds -----------------------------------------------------------------------------


def snapshot_calls(spark: Any, job: Job) -> None:
    """The planned ``snapshot()`` calls not done yet, a pause between two (the workload goes
    on); each call's offset recorded once it returned."""
    cdc = stream(spark, job["options"])
    calls = job["snapshot"]["calls"]
    done = job.progress().get("snapshots", [])
    for n in range(len(done), len(calls)):
        job.phase("main", f"snapshot {n}")
        call = calls[n]
        offset = _retry(
            job,
            "snapshot()",
            lambda call=call: cdc.snapshot(
                job["bronze"],
                resnapshot=call["resnapshot"],
                app_id=job["app_id"],
                facts_table=job["facts"] if call["facts"] else None,
            ),
        )
        done = [*done, dict(offset)]
        job.record("snapshots", done)
        job.mark("snapshot_taken")
        time.sleep(call["pause"])  # pacing: the workload commits between two snapshots


def seed_call(spark: Any, job: Job) -> None:
    if job.progress().get("seed"):
        return
    spec = job["seed"]
    job.phase("main", "seed")
    df = spark.createDataFrame([tuple(r) for r in spec["rows"]], "id INT, name STRING, qty INT")
    as_of: Any = spec["as_of"]
    if spec["mode"] == "time":
        as_of = dt.datetime.fromisoformat(as_of)
    offset = _retry(
        job,
        "seed()",
        lambda: stream(spark, job["options"]).seed(
            job["bronze"], df, as_of, app_id=job["app_id"], facts_table=job["facts"]
        ),
    )
    job.record("seed", dict(offset))


def generation_zero(spark: Any, job: Job) -> None:
    """A re-snapshot trial's first part: generation 0 to the end, then the harness purges."""
    if not job.progress().get("gen0"):
        job.phase("main", "generation 0")
        run_stream(spark, job, job["gen0_to_delta"], until=lambda: True, ready="ready_gen0")
        job.record("gen0", True)
    job.mark("gen0")
    job.phase("main", "waiting for the purge")
    while not (job.dir / "purged").exists():
        time.sleep(0.2)  # waiting on a file the harness writes
    job.mark("phase_b")


def main(job_file: str, start: int) -> int:
    job = Job(job_file, start)
    spark = get_spark("mssql-cdc-chaos", job.get("master", "local[2]"), config=spark_config())
    job.mark("spark")
    job.phase("main", "state")
    save_state(spark, job, final=False)
    kind = job["kind"]
    if kind == "database":
        observe_commits(job)
    threads: list[threading.Thread] = []
    silver_done = threading.Event()
    if kind == "snapshot":
        snapshot_calls(spark, job)
    elif kind == "seed":
        seed_call(spark, job)
    elif kind.startswith("resnapshot"):
        generation_zero(spark, job)
    if job.get("backfill") and not job.progress().get("backfill"):
        threads.append(_thread(backfill_loop, spark, job))
    overlap = (job.get("backfill") or {}).get("overlap_partitions")
    if overlap and not job.progress().get("backfill2"):  # a second run, overrunning into it
        threads.append(_thread(backfill_loop, spark, job, "backfill2", overlap))
    if job.get("silver"):
        threads.append(_thread(silver_loop, spark, job, silver_done))
    job.phase("main", "stream")
    run_stream(spark, job, job.get("to_delta", {}), until=stopped(job))
    silver_done.set()
    job.phase("main", "joining")
    for thread in threads:
        thread.join()
    if job.get("silver"):
        job.phase("main", "last apply")
        _retry(job, "apply_changes", lambda: apply_once(spark, job))
    job.phase("main", "final state")
    save_state(spark, job, final=True)
    print(json.dumps({"failures": job.failures}), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
