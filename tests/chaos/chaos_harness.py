"""The randomized fault harness (issue 17): trials of the main job under a workload and
injected faults, each checked for exactly-once delivery.

A trial is planned entirely from its seed (:func:`plan`): the trigger, the partitions,
``maxCommitsPerBatch``, the workload's transactions and the faults with their moments. It then
runs against a fresh in-process emulator (:mod:`mssql_cdc.emulator.control`):

1. the driver (``tests/pipeline/_crash_job.py`` in its ``chaos`` mode, the crash tests' driver,
   in its own process group) streams ``dbo_orders`` into bronze with facts and a finalization
   verdict, restarting a failed query in the same process;
2. a workload thread commits transactions on ``dbo.orders`` and ``dbo.other`` (inserts,
   updates, deletes, key-changing updates, multi-table, large and rolled-back transactions),
   advancing the emulator's clock now and then so the minute verdict moves;
3. the faults fire at their moments: SIGKILL of the driver's process group (a new driver is
   started), a failed statement in the next connection (a failed task or planning call),
   connections dropped mid-result and between requests, refused logins, deadlock victims
   (1205), slow responses, the capture job stopped (and started a few seconds later), cleanup
   inside the retention window;
4. the faults are cleared, everything is captured, the driver is told to stop, runs one last
   availableNow run (restarted until it does) and reports what bronze, the facts and the
   verdict hold.

:func:`check` then compares with the emulator's change history: every change in bronze exactly
once with its values, one facts row per batch id whose ``rows`` equals bronze's rows of that
batch, and each verdict seen (before each driver start, so after a kill, and at the end) never
past what bronze held at that moment: every change committed before the verdict was in bronze.

What the seed fixes is the plan; where a fault lands inside Spark's work depends on timing, so a
replay repeats the plan exactly and the interleaving approximately.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from mssql_cdc import _native
from mssql_cdc.emulator import Emulator
from mssql_cdc.emulator.core.faults import Fault

#: how long the faults armed for "the next connection" may wait for one after the workload
FIRE_SECONDS = 60.0

DRIVER = Path(__file__).resolve().parents[1] / "pipeline" / "_crash_job.py"

#: the kinds of injected faults, in the table's order
KINDS = (
    "sigkill",
    "failed_task",
    "drop_mid_result",
    "drop_between_requests",
    "refuse_logins",
    "deadlock",
    "slow_responses",
    "capture_job_stopped",
    "cleanup",
)


@dataclasses.dataclass
class Plan:
    seed: int
    trigger: dict[str, Any]
    partitions: int
    max_commits: int | None
    transactions: list[tuple[str, int]]  # (kind, size)
    faults: list[tuple[float, str, dict[str, Any]]]  # (seconds after start, kind, params)
    sigkill_limit: int

    def describe(self) -> str:
        trig = "availableNow" if "availableNow" in self.trigger else "processingTime"
        return (
            f"seed {self.seed}: {trig}, {self.partitions} partition(s), maxCommitsPerBatch "
            f"{self.max_commits or 'off'}, {len(self.transactions)} transactions, faults "
            + ", ".join(f"{k}@{t:.1f}s" for t, k, _ in self.faults)
        )


#: a trial's workload seconds and the most changes of its large transaction, unless told
DEFAULT_SECONDS = 8.0
DEFAULT_LARGE = 10_000


def plan(seed: int, *, seconds: float = DEFAULT_SECONDS, large: int = DEFAULT_LARGE) -> Plan:
    """A trial's plan from its seed: ``seconds`` of workload and faults, transactions of up
    to ``large`` changes."""
    rng = random.Random(seed)
    trigger: dict[str, Any] = (
        {"availableNow": True} if rng.random() < 0.5 else {"processingTime": "1 second"}
    )
    kinds = ["single"] * 6 + ["key_change", "multi_table", "rollback", "delete"] * 2
    transactions = [(rng.choice(kinds), rng.randint(1, 5)) for _ in range(rng.randint(15, 40))]
    if rng.random() < 0.6:  # one large transaction somewhere
        transactions.insert(rng.randrange(len(transactions)), ("large", rng.randint(500, large)))
    faults: list[tuple[float, str, dict[str, Any]]] = []
    for _ in range(rng.randint(2, 5)):
        kind = rng.choice(KINDS)
        at = rng.uniform(0.5, seconds)
        params: dict[str, Any] = {}
        if kind == "drop_mid_result":
            params = {"after_rows": rng.randint(0, 50)}
        elif kind == "drop_between_requests":
            params = {"after_requests": rng.randint(1, 4)}
        elif kind in ("refuse_logins", "capture_job_stopped"):
            params = {"seconds": round(rng.uniform(1.0, 4.0), 1)}
        elif kind == "slow_responses":
            params = {"delay": round(rng.uniform(0.05, 0.5), 2), "seconds": rng.uniform(1, 3)}
        faults.append((at, kind, params))
    return Plan(
        seed=seed,
        trigger=trigger,
        partitions=rng.randint(1, 4),
        max_commits=rng.choice([None, rng.randint(1, 20)]),
        transactions=transactions,
        faults=sorted(faults, key=lambda f: f[0]),
        sigkill_limit=1,
    )


# ---- the source database and its workload -----------------------------------------------------


def _sql(conn: Any, text: str) -> list[dict[str, Any]]:
    result = conn.execute(text)
    return pa.table(result).to_pylist() if result.has_rows else []


def _connect(emu: Emulator) -> Any:
    return _native.connect(
        f"Server=tcp:{emu.host},{emu.port};Encrypt=no;TrustServerCertificate=yes",
        user="sa",
        password=emu.password,
    )


def create_source(emu: Emulator) -> None:
    conn = _connect(emu)
    _sql(conn, "CREATE TABLE dbo.orders (id int NOT NULL PRIMARY KEY, name nvarchar(20), qty int)")
    _sql(conn, "CREATE TABLE dbo.other (id int NOT NULL PRIMARY KEY, note nvarchar(20))")
    _sql(conn, "EXEC sys.sp_cdc_enable_db")
    for table in ("orders", "other"):
        _sql(
            conn,
            f"EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'{table}', "
            "@role_name = NULL",
        )
    conn.close()


class Workload:
    """Commits a plan's transactions on one connection opened before any fault is armed
    (faults for "the next connection" never hit it)."""

    def __init__(self, emu: Emulator, plan_: Plan, seconds: float) -> None:
        self.emu = emu
        self.plan = plan_
        self.rng = random.Random(plan_.seed * 7919 + 1)
        self.seconds = seconds
        self.keys: list[int] = []
        self.next_id = 1
        self.conn = _connect(emu)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="chaos-workload", daemon=True)

    def _insert_rows(self, n: int) -> str:
        rows = []
        for _ in range(n):
            i = self.next_id
            self.next_id += 1
            self.keys.append(i)
            rows.append(f"({i}, N'n{i}', {self.rng.randint(0, 99)})")
        return "INSERT INTO dbo.orders VALUES " + ", ".join(rows)

    def _pick(self, n: int) -> list[int]:
        return self.rng.sample(self.keys, min(n, len(self.keys)))

    def _transaction(self, kind: str, size: int) -> None:
        run = self.conn.execute
        if kind == "single" or not self.keys:
            run(self._insert_rows(size))
            ids = self._pick(2)
            if ids:
                run(f"UPDATE dbo.orders SET qty = qty + 1 WHERE id IN ({', '.join(map(str, ids))})")
        elif kind == "delete":
            ids = self._pick(min(size, 2))
            run(f"DELETE FROM dbo.orders WHERE id IN ({', '.join(map(str, ids))})")
            self.keys = [k for k in self.keys if k not in ids]
        elif kind == "key_change":  # logged by CDC as a delete and an insert
            old = self._pick(1)[0]
            new = self.next_id
            self.next_id += 1
            run(f"UPDATE dbo.orders SET id = {new}, name = N'k{new}' WHERE id = {old}")
            self.keys = [new if k == old else k for k in self.keys]
        elif kind == "multi_table":
            ids = self._pick(1)
            note = self.rng.randint(0, 1 << 30)
            run(
                f"BEGIN TRAN; {self._insert_rows(size)}; "
                f"INSERT INTO dbo.other VALUES ({note}, N'o'); "
                f"UPDATE dbo.orders SET name = N'm' WHERE id = {ids[0]}; COMMIT TRAN"
            )
        elif kind == "rollback":
            saved = (list(self.keys), self.next_id)
            ids = self._pick(1)
            run(
                f"BEGIN TRAN; {self._insert_rows(size)}; "
                f"DELETE FROM dbo.orders WHERE id = {ids[0]}; ROLLBACK TRAN"
            )
            self.keys, self.next_id = saved
        elif kind == "large":
            statements = []
            left = size
            while left > 0:
                statements.append(self._insert_rows(min(left, 1000)))
                left -= 1000
            run("BEGIN TRAN; " + "; ".join(statements) + "; COMMIT TRAN")

    def _run(self) -> None:
        pause = self.seconds / max(len(self.plan.transactions), 1)
        try:
            for kind, size in self.plan.transactions:
                self._transaction(kind, size)
                if self.rng.random() < 0.15:  # let the minute verdict move
                    self.emu.advance_clock(dt.timedelta(seconds=self.rng.randint(20, 90)))
                time.sleep(self.rng.uniform(0, 2 * pause))  # pacing, not waiting for an event
        except BaseException as exc:
            self.error = exc

    def start(self) -> None:
        self.thread.start()

    def join(self) -> None:
        self.thread.join()
        self.conn.close()
        if self.error is not None:
            raise RuntimeError(f"the workload failed: {self.error}") from self.error


def history(emu: Emulator) -> tuple[dict[tuple[Any, ...], tuple[Any, ...]], dict[str, dt.datetime]]:
    """The change history of ``dbo_orders`` keyed by (start LSN, seqval, operation, command id)
    with its (id, name, qty), and each LSN's commit time."""
    conn = _connect(emu)
    rows = _sql(
        conn,
        "SELECT __$start_lsn AS l, __$seqval AS s, __$operation AS o, __$command_id AS c, "
        "id, name, qty FROM cdc.dbo_orders_CT "
        "WHERE __$start_lsn >= sys.fn_cdc_get_min_lsn(N'dbo_orders')",
    )
    times = _sql(conn, "SELECT start_lsn AS l, tran_end_time AS t FROM cdc.lsn_time_mapping")
    conn.close()
    changes = {
        ("0x" + r["l"].hex().upper(), "0x" + r["s"].hex().upper(), r["o"], r["c"]): (
            r["id"],
            r["name"],
            r["qty"],
        )
        for r in rows
    }
    return changes, {"0x" + r["l"].hex().upper(): r["t"] for r in times}


# ---- the driver -------------------------------------------------------------------------------


class Driver:
    """The job in its own process group (``start_new_session``), so SIGKILL takes its JVM and
    Python workers with it."""

    def __init__(self, job: dict[str, Any], workdir: Path) -> None:
        self.job = job
        self.workdir = workdir
        self.job_file = workdir / "job.json"
        self.job_file.write_text(json.dumps(job))
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        log = (self.workdir / f"driver{self.starts}.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(DRIVER), str(self.job_file)],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def kill(self) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        """Kill the driver's process group if it still runs (a trial that stops early)."""
        if self.proc is not None and self.proc.poll() is None:
            self.kill()

    def wait_ready(self, timeout: float = 900) -> None:
        """Until the first query started (the driver touches ``ready``) or the driver exited."""
        ready = Path(self.job["chaos"]["ready"])
        deadline = time.monotonic() + timeout
        while not ready.exists():
            assert self.proc is not None
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the driver never started a query:\n{self.log_tail()}")
            time.sleep(0.2)

    def finish(self, timeout: float = 900) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return -9

    def log_tail(self, chars: int = 3000) -> str:
        text = "".join(
            p.read_text(errors="replace") for p in sorted(self.workdir.glob("driver*.log"))
        )
        return text[-chars:]


# ---- one trial ------------------------------------------------------------------------------


@dataclasses.dataclass
class TrialResult:
    seed: int
    description: str
    faults: collections.Counter[str]
    #: the faults that hit: a connection fault fires when a connection comes
    fired: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    duplicates: int = 0
    losses: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    changes: int = 0
    batches: int = 0
    query_failures: int = 0
    #: the harness could not finish the trial (a driver that never started or finished): no
    #: verdict on exactly-once, reported apart from broken promises
    inconclusive: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems


def _inject(
    emu: Emulator, driver: Driver, kind: str, params: dict[str, Any], later: list
) -> Fault | None:
    """Injects one fault; ``later`` collects (when, undo) pairs. Returns the armed fault of the
    kinds that wait for a connection (they fire when one comes), ``None`` for the others."""
    now = time.monotonic()
    if kind == "sigkill":
        driver.kill()
        driver.start()
    elif kind == "failed_task":
        return emu.fail_statement(message="chaos: an injected task failure")
    elif kind == "drop_mid_result":
        return emu.drop_connection("mid_result", after_rows=params["after_rows"])
    elif kind == "drop_between_requests":
        return emu.drop_connection("between_requests", after_requests=params["after_requests"])
    elif kind == "refuse_logins":
        emu.refuse_logins(params["seconds"])
    elif kind == "deadlock":
        return emu.deadlock_victim()
    elif kind == "slow_responses":
        emu.delay_responses(params["delay"])
        later.append((now + params["seconds"], lambda: emu.delay_responses(0)))
    elif kind == "capture_job_stopped":
        emu.stop_capture_job()
        later.append((now + params["seconds"], emu.start_capture_job))
    elif kind == "cleanup":
        emu.cleanup()  # the database's retention (3 days): nothing the stream needs goes
    return None


def _job(emu: Emulator, p: Plan, workdir: Path) -> dict[str, Any]:
    """The driver's job file: the main job on ``dbo_orders`` with the plan's settings."""
    options = {
        "connectionString": (
            f"Server=tcp:{emu.host},{emu.port};Database=master;Encrypt=no;"
            "TrustServerCertificate=yes"
        ),
        "user": "sa",
        "password": emu.password,
        "captureInstance": "dbo_orders",
        "numPartitions": str(p.partitions),
    }
    if p.max_commits is not None:
        options["maxCommitsPerBatch"] = str(p.max_commits)
    return {
        "options": options,
        "bronze": str(workdir / "bronze"),
        "facts": str(workdir / "facts"),
        "checkpoint": str(workdir / "cp"),
        "app_id": "orders-chaos",
        "trigger": p.trigger,
        "crash": None,
        "chaos": {
            "control": str(workdir / "control"),
            "stop": str(workdir / "stop"),
            "ready": str(workdir / "ready"),
            "state": str(workdir / "state.json"),
            "master": "local[2]",
        },
    }


def _inject_all(
    emu: Emulator, driver: Driver, p: Plan, result: TrialResult
) -> list[tuple[str, Fault]]:
    """Injects the plan's faults at their moments (seconds after this call); returns the armed
    faults that wait for a connection."""
    armed: list[tuple[str, Fault]] = []
    start = time.monotonic()
    later: list[tuple[float, Callable[[], None]]] = []
    kills = 0
    for at, kind, params in p.faults:
        while True:  # the fault's moment, undoing earlier timed faults on the way
            for item in [u for u in later if u[0] <= time.monotonic()]:
                later.remove(item)
                item[1]()
            wait = start + at - time.monotonic()
            if wait <= 0:
                break
            time.sleep(min(wait, 0.1))
        if kind == "sigkill":
            if kills >= p.sigkill_limit:
                continue
            kills += 1
        fault = _inject(emu, driver, kind, params, later)
        if fault is not None:
            armed.append((kind, fault))
        else:
            result.fired[kind] += 1
        result.faults[kind] += 1
    for _, undo in later:
        undo()
    return armed


def _await_fired(armed: list[tuple[str, Fault]], result: TrialResult, seconds: float) -> None:
    """Gives the armed faults up to ``seconds`` in all to hit a connection, counting those that
    did; the rest are cleared unfired (a short trial may open no new connection)."""
    deadline = time.monotonic() + seconds
    for kind, fault in armed:
        if fault.wait(max(deadline - time.monotonic(), 0.0)):
            result.fired[kind] += 1


def _calm(emu: Emulator) -> None:
    """Every fault off and every committed change captured."""
    emu.server.faults.clear()
    emu.refuse_logins(0)
    emu.delay_responses(0)
    emu.start_capture_job()
    emu.scan()


def run_trial(
    seed: int, workdir: Path, *, seconds: float = DEFAULT_SECONDS, large: int = DEFAULT_LARGE
) -> TrialResult:
    """Plans, runs and checks one trial in ``workdir`` (which must not exist)."""
    began = time.monotonic()
    p = plan(seed, seconds=seconds, large=large)
    result = TrialResult(seed, p.describe(), collections.Counter())
    workdir.mkdir(parents=True)
    emu = Emulator(polling_interval=0.5).start()
    driver: Driver | None = None
    try:
        create_source(emu)
        job = _job(emu, p, workdir)
        driver = Driver(job, workdir)
        driver.start()
        driver.wait_ready()
        workload = Workload(emu, p, seconds)
        workload.start()
        armed = _inject_all(emu, driver, p, result)
        workload.join()
        _await_fired(armed, result, FIRE_SECONDS)
        _calm(emu)
        Path(job["chaos"]["stop"]).touch()
        for _attempt in range(3):
            if driver.finish() == 0:
                break
            driver.start()  # killed or crashed during the last run: once more
        else:
            result.problems.append(f"the driver never finished:\n{driver.log_tail()}")
            result.inconclusive = True
            return result
        result.query_failures = sum(
            1
            for path in workdir.glob("driver*.log")
            for line in path.read_text(errors="replace").splitlines()
            if line.startswith("query failed")
        )
        changes, times = history(emu)
        check(result, changes, times, _read_states(job))
    except Exception as exc:
        result.problems.append(f"the trial itself failed: {type(exc).__name__}: {exc}")
        result.inconclusive = True
    finally:
        if driver is not None:
            driver.stop()
        emu.stop()
        result.seconds = time.monotonic() - began
    return result


def _read_states(job: dict[str, Any]) -> list[dict[str, Any]]:
    path = Path(job["chaos"]["state"])
    return json.loads(path.read_text()) if path.exists() else []


def check(
    result: TrialResult,
    changes: dict[tuple[Any, ...], tuple[Any, ...]],
    times: dict[str, dt.datetime],
    states: list[dict[str, Any]],
) -> None:
    """Exactly once: the last state's bronze against the history; facts against bronze; every
    state's verdict against that state's bronze."""
    final = states[-1]
    bronze = collections.Counter()
    values: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    per_batch: collections.Counter[int] = collections.Counter()
    for lsn, seqval, op, cmd, batch, i, name, qty in final["bronze"]:
        key = (lsn, seqval, op, cmd)
        bronze[key] += 1
        values[key] = (i, name, qty)
        per_batch[batch] += 1
    result.changes = len(changes)
    result.duplicates = sum(n - 1 for n in bronze.values() if n > 1)
    lost = [k for k in changes if k not in bronze]
    result.losses = len(lost)
    extra = [k for k in bronze if k not in changes]
    wrong = [k for k in changes if k in values and values[k] != changes[k]]
    if result.duplicates:
        dup = [k for k, n in bronze.items() if n > 1][:3]
        result.problems.append(f"{result.duplicates} duplicate change rows in bronze, e.g. {dup}")
    if lost:
        result.problems.append(f"{len(lost)} changes missing from bronze, e.g. {lost[:3]}")
    if extra:
        result.problems.append(f"{len(extra)} bronze rows not in the history, e.g. {extra[:3]}")
    if wrong:
        result.problems.append(f"{len(wrong)} bronze rows with wrong values, e.g. {wrong[:3]}")
    facts = collections.Counter((app, batch) for app, batch, _ in final["facts"])
    twice = [k for k, n in facts.items() if n > 1]
    if twice:
        result.problems.append(f"facts rows written twice for batches {twice[:5]}")
    fact_rows = {batch: rows for _, batch, rows in final["facts"]}
    result.batches = len(fact_rows)
    off = {b: (fact_rows.get(b), n) for b, n in per_batch.items() if fact_rows.get(b) != n}
    off |= {b: (r, 0) for b, r in fact_rows.items() if r and b not in per_batch}
    if off:
        result.problems.append(f"facts rows != bronze rows (batch: (facts, bronze)) {off}")
    for n, state in enumerate(states):
        if state["verdict"] is None:
            continue
        verdict = dt.datetime.fromisoformat(state["verdict"])
        held = {tuple(row[:4]) for row in state["bronze"]}
        early = [k for k in changes if times[k[0]].replace(tzinfo=None) < verdict and k not in held]
        if early:
            result.problems.append(
                f"state {n}: verdict {verdict} is past bronze: {len(early)} changes committed "
                f"before it are not in bronze, e.g. {early[:3]}"
            )


# ---- many trials -------------------------------------------------------------------------------


def table(results: list[TrialResult]) -> str:
    """The summary table (Markdown)."""
    faults: collections.Counter[str] = collections.Counter()
    fired: collections.Counter[str] = collections.Counter()
    for r in results:
        faults.update(r.faults)
        fired.update(r.fired)
    seconds = sum(r.seconds for r in results)
    lines = [
        "| trials | broken promises | inconclusive | duplicates | losses | changes checked "
        "| batches | query restarts | seconds per trial |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        f"| {len(results)} | {sum(not r.ok and not r.inconclusive for r in results)} "
        f"| {sum(r.inconclusive for r in results)} "
        f"| {sum(r.duplicates for r in results)} | {sum(r.losses for r in results)} "
        f"| {sum(r.changes for r in results)} | {sum(r.batches for r in results)} "
        f"| {sum(r.query_failures for r in results)} "
        f"| {seconds / max(len(results), 1):.0f} |",
        "",
        "| fault | injected | hit |",
        "|---|---:|---:|",
        *(f"| {kind} | {faults[kind]} | {fired[kind]} |" for kind in KINDS),
    ]
    return "\n".join(lines)


def replay_command(
    seed: int, *, seconds: float = DEFAULT_SECONDS, large: int = DEFAULT_LARGE
) -> str:
    """The one command that replays trial ``seed`` (the plan depends on the workload's seconds
    and the large transaction's size too: they are passed when not the defaults)."""
    shaping = []
    if seconds != DEFAULT_SECONDS:
        shaping.append(f"--seconds {seconds:g}")
    if large != DEFAULT_LARGE:
        shaping.append(f"--large {large}")
    args = f' CHAOS_ARGS="{" ".join(shaping)}"' if shaping else ""
    return f"make chaos TRIALS=1 SEED={seed}{args}"
