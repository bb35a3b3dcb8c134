"""The randomized fault harness (issues 17 and 37): trials of the product's jobs under a
workload and injected faults, each checked for exactly-once delivery. A trial has a seed and a
kind (``kinds.TRIAL_KINDS``): the main stream, a full or chunked bootstrap (with ``backfill``
waves next to the stream), ``snapshot()`` calls, ``seed()``, a full or chunked re-snapshot after
a purge, the switch snapshot, ``apply_changes`` of type 1 or 2 next to the stream, or a database
stream (``start_database``: one query keeping ``dbo_orders`` and ``dbo_other`` in bronze).

A trial is planned entirely from its seed: :func:`plan` (the trigger, the partitions,
``maxCommitsPerBatch``, the workload's transactions and the faults with their moments, drawn as
they always were, so a ``stream`` seed replays the plan it had before the kinds existed) and
:func:`kinds.plan_kind` (the rows in the table beforehand, the kind's arguments and its focus
kills). It then runs against a fresh in-process emulator (:mod:`mssql_cdc.emulator.control`):

1. the driver (``tests/chaos/driver.py``, in its own process group) runs the kind's job
   through the public API, restarting a failed query or call in the same process;
2. a workload thread commits transactions on ``dbo.orders`` and ``dbo.other`` (inserts,
   updates, deletes, key-changing updates, multi-table, large and rolled-back transactions;
   for ``switch`` also the new column and the second capture instance), advancing the
   emulator's clock now and then so the minute verdict moves; a re-snapshot trial first runs
   generation 0 to the end, then commits, moves the clock two days on and purges; a database
   trial also inserts, updates, moves and deletes rows of ``dbo.other`` on its own (a random
   stream of its own, so the planned transactions stay what they were);
3. the faults fire at their moments: SIGKILL of the driver's process group (a new driver is
   started), a failed statement in the next connection (a failed task or planning call),
   connections dropped mid-result and between requests, refused logins, deadlock victims
   (1205), slow responses, the capture job stopped (and started a few seconds later), cleanup
   inside the retention window; and the kind's focus kills, a SIGKILL at a random delay after
   a marker of the kind's own work;
4. the faults are cleared, everything is captured, the driver is told to stop, runs one last
   availableNow run (restarted until it does), finishes its backfill and its last
   ``apply_changes``, and reports what bronze (each table's, for a database stream), the facts,
   the control table and silver hold.

:func:`kinds.check` then compares with the emulator's change history and table (see
``checks.py``). What the seed fixes is the plan; where a fault lands inside Spark's work depends
on timing, so a replay repeats the plan exactly and the interleaving approximately.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import checks
import kinds
import pyarrow as pa
from checks import Change, Findings
from sqlglot import exp

from mssql_cdc import _native
from mssql_cdc.emulator import Emulator
from mssql_cdc.emulator.core.faults import Fault

#: how long the faults armed for "the next connection" may wait for one after the workload
FIRE_SECONDS = 60.0

DRIVER = Path(__file__).resolve().with_name("driver.py")

#: the kinds of injected faults, in the table's order
FAULTS = (
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

V2 = (
    "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
    "@role_name = NULL, @capture_instance = N'dbo_orders_v2'"
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
    kinds_ = ["single"] * 6 + ["key_change", "multi_table", "rollback", "delete"] * 2
    transactions = [(rng.choice(kinds_), rng.randint(1, 5)) for _ in range(rng.randint(15, 40))]
    if rng.random() < 0.6:  # one large transaction somewhere
        transactions.insert(rng.randrange(len(transactions)), ("large", rng.randint(500, large)))
    faults: list[tuple[float, str, dict[str, Any]]] = []
    for _ in range(rng.randint(2, 5)):
        kind = rng.choice(FAULTS)
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


def untyped_min_max() -> bool:
    """A workaround in this process's emulator until it types a derived table's columns: MIN
    and MAX over an expression it cannot type are computed untyped (as before ADR 0195)
    instead of failing with error 40517, so that ``maxCommitsPerBatch``'s query (``SELECT
    MAX(x.start_lsn) FROM (SELECT TOP (n) ...) AS x``), which SQL Server answers, works
    (``tests/source/test_max_commits_query.py``). A no-op for every expression the emulator
    types. Returns whether it was installed now."""
    from mssql_cdc.emulator.engine import builtins  # noqa: PLC0415 (the emulator's own)

    if getattr(builtins.annotate, "chaos_untyped_min_max", False):
        return False
    typed = builtins.annotate

    def annotate(node: exp.Expression, type_of: Callable[[exp.Expression], Any]) -> Any:
        if isinstance(node, (exp.Min, exp.Max)) and type_of(node.this) is None:
            return node
        return typed(node, type_of)

    annotate.chaos_untyped_min_max = True  # type: ignore[attr-defined]
    builtins.annotate = annotate
    return True


def _sql(conn: Any, text: str) -> list[dict[str, Any]]:
    result = conn.execute(text)
    return pa.table(result).to_pylist() if result.has_rows else []


def _connect(emu: Emulator) -> Any:
    return _native.connect(
        f"Server=tcp:{emu.host},{emu.port};Encrypt=no;TrustServerCertificate=yes",
        user="sa",
        password=emu.password,
    )


def _lsn(value: bytes) -> str:
    return "0x" + value.hex().upper()


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
    (faults for "the next connection" never hit it). ``switch_at`` (a fraction of the plan's
    transactions) adds a column and a second capture instance there."""

    def __init__(
        self,
        emu: Emulator,
        plan_: Plan,
        seconds: float,
        *,
        switch_at: float | None = None,
        other: bool = False,
    ) -> None:
        self.emu = emu
        self.plan = plan_
        self.rng = random.Random(plan_.seed * 7919 + 1)
        self.seconds = seconds
        self.keys: list[int] = []
        self.next_id = 1
        self.conn = _connect(emu)
        self.error: BaseException | None = None
        self.note = False  # the table has the column ``note`` (after the switch)
        self.switched = threading.Event()
        self.gate: Callable[[], bool] | None = None
        self.transactions = list(plan_.transactions)
        #: ``other``: transactions of ``dbo.other`` too, from a generator of their own (the
        #: planned ones, and ``rng``'s draws, stay what they are); its keys above the ids the
        #: ``multi_table`` inserts draw
        self.other_rng = random.Random(plan_.seed * 7919 + 2) if other else None
        self.other_keys: list[int] = []
        self.other_next = (1 << 30) + 1
        if switch_at is not None:
            self.transactions.insert(int(len(self.transactions) * switch_at), ("switch", 0))
        self.thread = threading.Thread(target=self._run, name="chaos-workload", daemon=True)

    def _insert_rows(self, n: int) -> str:
        rows = []
        for _ in range(n):
            i = self.next_id
            self.next_id += 1
            self.keys.append(i)
            note = f", N'w{self.rng.randint(0, 9)}'" if self.note else ""
            rows.append(f"({i}, N'n{i}', {self.rng.randint(0, 99)}{note})")
        columns = "(id, name, qty, note)" if self.note else "(id, name, qty)"
        return f"INSERT INTO dbo.orders {columns} VALUES " + ", ".join(rows)

    def _other_insert(self, n: int) -> str:
        assert self.other_rng is not None
        rows = []
        for _ in range(n):
            i = self.other_next
            self.other_next += 1
            self.other_keys.append(i)
            rows.append(f"({i}, N'p{self.other_rng.randint(0, 999)}')")
        return "INSERT INTO dbo.other (id, note) VALUES " + ", ".join(rows)

    def prefill_other(self, n: int) -> None:
        """``n`` rows of ``dbo.other`` committed before the job starts."""
        while n > 0:
            size = min(n, 1000)
            self.conn.execute(self._other_insert(size))
            n -= size

    def _other_transaction(self) -> None:
        """One transaction of ``dbo.other``: an insert, an update, a key change, a delete, or an
        update of both tables in one commit."""
        rng, run = self.other_rng, self.conn.execute
        assert rng is not None
        kind = rng.choice(["insert", "update", "update", "move", "delete", "both"])
        if kind == "insert" or not self.other_keys:
            run(self._other_insert(rng.randint(1, 4)))
        elif kind == "update":
            ids = rng.sample(self.other_keys, min(2, len(self.other_keys)))
            run(
                f"UPDATE dbo.other SET note = N'u{rng.randint(0, 999)}' "
                f"WHERE id IN ({', '.join(map(str, ids))})"
            )
        elif kind == "move":
            old, new = rng.choice(self.other_keys), self.other_next
            self.other_next += 1
            run(f"UPDATE dbo.other SET id = {new}, note = N'k{new}' WHERE id = {old}")
            self.other_keys = [new if k == old else k for k in self.other_keys]
        elif kind == "delete":
            old = rng.choice(self.other_keys)
            run(f"DELETE FROM dbo.other WHERE id = {old}")
            self.other_keys.remove(old)
        else:  # one commit in both tables
            key = rng.choice(self.other_keys)
            orders = ""
            if self.keys:
                orders = f"; UPDATE dbo.orders SET qty = qty + 1 WHERE id = {rng.choice(self.keys)}"
            run(
                f"BEGIN TRAN; UPDATE dbo.other SET note = N'b{rng.randint(0, 999)}' "
                f"WHERE id = {key}{orders}; COMMIT TRAN"
            )

    def _pick(self, n: int) -> list[int]:
        return self.rng.sample(self.keys, min(n, len(self.keys)))

    def prefill(self, n: int) -> None:
        """``n`` rows committed before the job starts (their inserts captured too)."""
        while n > 0:
            size = min(n, 1000)
            rows = []
            for _ in range(size):
                i = self.next_id
                self.next_id += 1
                self.keys.append(i)
                rows.append(f"({i}, N'p{i}', {i % 100})")
            self.conn.execute("INSERT INTO dbo.orders (id, name, qty) VALUES " + ", ".join(rows))
            n -= size

    def _transaction(self, kind: str, size: int) -> None:
        run = self.conn.execute
        if kind == "switch":  # the DBA's procedure: a column, then an instance that has it
            run("ALTER TABLE dbo.orders ADD note nvarchar(20) NULL")
            run(V2)
            self.note = True
            self.switched.set()
        elif kind == "single" or not self.keys:
            run(self._insert_rows(size))
            ids = self._pick(2)
            if ids:
                note = f", note = N'u{self.rng.randint(0, 9)}'" if self.note else ""
                run(
                    f"UPDATE dbo.orders SET qty = qty + 1{note} "
                    f"WHERE id IN ({', '.join(map(str, ids))})"
                )
        elif kind == "delete":
            ids = self._pick(min(size, 2))
            run(f"DELETE FROM dbo.orders WHERE id IN ({', '.join(map(str, ids))})")
            self.keys = [k for k in self.keys if k not in ids]
        elif kind == "key_change":  # the old key's row before, the new key's after
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

    def commit(self, kinds_: list[tuple[str, int]]) -> None:
        """Commits ``kinds_`` now, in this thread (before the workload thread starts)."""
        for kind, size in kinds_:
            self._transaction(kind, size)

    def purge(self) -> tuple[str, list[Change], dict[str, dt.datetime]]:
        """A stream stopped too long: changes after what it read, two days later more, and
        cleanup with one hour's retention purging the first ones. Returns the last LSN before
        them, and the history and commit times before the cleanup."""
        self.emu.scan()
        before = max_lsn(self.emu)
        ids = self._pick(3)
        self.conn.execute(
            f"UPDATE dbo.orders SET qty = qty + 100 WHERE id IN ({', '.join(map(str, ids))})"
        )
        self.commit([("single", 2), ("delete", 1)])
        self.emu.scan()
        self.emu.advance_clock(dt.timedelta(days=2))
        self.commit([("single", 1), ("key_change", 1)])
        self.emu.scan()
        kept, times = history(self.emu)
        if self.emu.cleanup(retention_minutes=60) == 0:
            raise RuntimeError("the purge deleted no change rows")
        return before, kept, times

    def _run(self) -> None:
        pause = self.seconds / max(len(self.transactions), 1)
        middle = len(self.transactions) // 2
        try:
            for n, (kind, size) in enumerate(self.transactions):
                if n == middle and self.gate is not None:
                    self._wait(self.gate)
                self._transaction(kind, size)
                if self.other_rng is not None and self.other_rng.random() < 0.6:
                    self._other_transaction()
                if self.rng.random() < 0.15:  # let the minute verdict move
                    self.emu.advance_clock(dt.timedelta(seconds=self.rng.randint(20, 90)))
                time.sleep(self.rng.uniform(0, 2 * pause))  # pacing, not waiting for an event
        except BaseException as exc:
            self.error = exc
            self.switched.set()  # nobody waits for a switch that will not come

    @staticmethod
    def _wait(gate: Callable[[], bool], timeout: float = 900) -> None:
        deadline = time.monotonic() + timeout
        while not gate() and time.monotonic() < deadline:
            time.sleep(0.2)  # waiting on a file the driver writes

    def start(self, gate: Callable[[], bool] | None = None) -> None:
        """Starts committing; with ``gate``, the second half of the transactions waits until
        ``gate()`` (a query started, so the snapshot the kind takes first is in; or the first
        ``snapshot()`` call returned), so that changes commit both while the snapshot is read
        and after it."""
        self.gate = gate
        self.thread.start()

    def join(self) -> None:
        self.thread.join()
        self.conn.close()
        if self.error is not None:
            raise RuntimeError(f"the workload failed: {self.error}") from self.error


def max_lsn(emu: Emulator) -> str:
    conn = _connect(emu)
    rows = _sql(conn, "SELECT CONVERT(varchar(22), sys.fn_cdc_get_max_lsn(), 1) AS m")
    conn.close()
    return str(rows[0]["m"])


def history(emu: Emulator) -> tuple[list[Change], dict[str, dt.datetime]]:
    """The change history of ``dbo.orders``, and each LSN's commit time. With a second
    capture instance (``dbo_orders_v2``, which adds ``note``) the history is the first
    instance's changes below the second's start and the second's from it, as the stream reads
    them; every image then has ``note`` (NULL from the first instance)."""
    conn = _connect(emu)
    starts = {
        r["ci"]: _lsn(r["s"])
        for r in _sql(
            conn,
            "SELECT capture_instance AS ci, start_lsn AS s FROM cdc.change_tables "
            "WHERE capture_instance LIKE N'dbo_orders%'",
        )
    }
    v2 = starts.get("dbo_orders_v2")
    changes = []
    for instance in sorted(starts):
        note = ", note" if instance == "dbo_orders_v2" else ""
        rows = _sql(
            conn,
            "SELECT __$start_lsn AS l, __$seqval AS s, __$operation AS o, __$command_id AS c, "
            f"id, name, qty{note} FROM cdc.{instance}_CT",
        )
        for r in rows:
            lsn = _lsn(r["l"])
            if v2 is not None and (lsn < v2) != (instance == "dbo_orders"):
                continue  # the stream reads the older instance below the newer one's start
            image = (r["id"], r["name"], r["qty"]) + ((r.get("note"),) if v2 else ())
            changes.append(Change(lsn, _lsn(r["s"]), r["o"], r["c"], image, instance))
    times = _sql(conn, "SELECT start_lsn AS l, tran_end_time AS t FROM cdc.lsn_time_mapping")
    conn.close()
    return changes, {_lsn(r["l"]): r["t"] for r in times}


def instance_history(emu: Emulator, instance: str, columns: tuple[str, ...]) -> list[Change]:
    """The change history of one capture instance (its change table), images of ``columns``."""
    conn = _connect(emu)
    rows = _sql(
        conn,
        "SELECT __$start_lsn AS l, __$seqval AS s, __$operation AS o, __$command_id AS c, "
        f"{', '.join(columns)} FROM cdc.{instance}_CT",
    )
    conn.close()
    return [
        Change(_lsn(r["l"]), _lsn(r["s"]), r["o"], r["c"], tuple(r[c] for c in columns), instance)
        for r in rows
    ]


def table_rows(emu: Emulator, table: str, columns: tuple[str, ...]) -> dict[Any, tuple[Any, ...]]:
    """A source table's rows by key (the first column)."""
    conn = _connect(emu)
    rows = _sql(conn, f"SELECT {', '.join(columns)} FROM {table}")
    conn.close()
    return {r[columns[0]]: tuple(r[c] for c in columns) for r in rows}


def source_table(emu: Emulator, *, note: bool) -> dict[Any, tuple[Any, ...]]:
    conn = _connect(emu)
    rows = _sql(conn, "SELECT id, name, qty" + (", note" if note else "") + " FROM dbo.orders")
    conn.close()
    return {r["id"]: tuple(r.values()) for r in rows}


def seed_copy(emu: Emulator, workload: Workload, mode: str, between: int) -> dict[str, Any]:
    """A copy of ``dbo.orders`` as a user would take one: the position recorded first (the
    LSN, or the time of its commit), ``between`` transactions, then the rows read."""
    emu.scan()
    lsn = max_lsn(emu)
    as_of: str = lsn
    if mode == "time":
        conn = _connect(emu)
        rows = _sql(
            conn,
            "SELECT tran_end_time AS t FROM cdc.lsn_time_mapping "
            f"WHERE start_lsn = CONVERT(binary(10), '{lsn}', 1)",
        )
        conn.close()
        as_of = rows[0]["t"].isoformat()
    workload.commit([("single", 1)] * between)
    table = source_table(emu, note=False)
    return {"mode": mode, "as_of": as_of, "lsn": lsn, "rows": [list(r) for r in table.values()]}


# ---- the driver -------------------------------------------------------------------------------


class Driver:
    """The job in its own process group (``start_new_session``), so SIGKILL takes its JVM and
    Python workers with it. Kills and restarts hold a lock: the planned faults and the focus
    kills come from two threads."""

    def __init__(self, job: dict[str, Any], workdir: Path) -> None:
        self.job = job
        self.workdir = workdir
        self.job_file = workdir / "job.json"
        self.job_file.write_text(json.dumps(job))
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.lock = threading.RLock()
        #: what the driver's threads were doing at each kill
        self.killed_in: list[str] = []

    def start(self) -> None:
        with self.lock:
            self.starts += 1
            log = (self.workdir / f"driver{self.starts}.log").open("wb")
            self.proc = subprocess.Popen(
                [sys.executable, str(DRIVER), str(self.job_file), str(self.starts)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            log.close()

    def phases(self) -> str:
        """What each thread of the driver is doing (``phase.<thread>`` files)."""
        parts = []
        for path in sorted(self.workdir.glob("phase.*")):
            if not path.name.endswith(".tmp"):
                parts.append(f"{path.name[6:]}={path.read_text()}")
        return ",".join(parts) or "starting"

    def kill(self) -> None:
        with self.lock:
            assert self.proc is not None
            if self.proc.poll() is None:
                self.killed_in.append(self.phases())
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            for path in self.workdir.glob("phase.*"):
                path.unlink(missing_ok=True)

    def restart(self) -> None:
        with self.lock:
            self.kill()
            self.start()

    def stop(self) -> None:
        """Kill the driver's process group if it still runs (a trial that stops early)."""
        with self.lock:
            if self.proc is not None and self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def marker(self, name: str, start: int | None = None) -> Path:
        return self.workdir / "markers" / f"{name}.{start or self.starts}"

    def wait_marker(self, name: str, timeout: float = 900) -> None:
        """Until the current driver touched marker ``name``, or it exited."""
        deadline = time.monotonic() + timeout
        while not self.marker(name).exists():
            assert self.proc is not None
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the driver never reached {name!r}:\n{self.log_tail()}")
            time.sleep(0.2)  # waiting on a file the driver writes

    def finish(self, timeout: float = 900) -> int:
        assert self.proc is not None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            return -9

    def log_tail(self, chars: int = 3000) -> str:
        text = "".join(
            p.read_text(errors="replace")
            for p in sorted(self.workdir.glob("driver*.log"), key=lambda p: int(p.stem[6:]))
        )
        return text[-chars:]


class FocusKiller:
    """The kind's focus kills: each waits for its marker (in whichever driver runs then; the
    ``switched`` marker is the workload's DDL) and kills the driver that many seconds later."""

    def __init__(self, driver: Driver, focus: list[tuple[str, float]], workload: Workload) -> None:
        self.driver = driver
        self.focus = focus
        self.workload = workload
        self.kills = 0
        self.thread = threading.Thread(target=self._run, name="chaos-focus", daemon=True)

    def _reached(self, marker: str) -> bool:
        if marker == "switched":
            return self.workload.switched.is_set()
        return self.driver.marker(marker).exists()

    def _given_up(self, marker: str, idle_since: list[float]) -> bool:
        """A marker that may never come (``kinds.MAY_NOT_COME``: the driver may find nothing
        to write) is given up 90 s after the workload finished (a restarted driver's session
        takes 20-40 s to start on the 2-core machine)."""
        if marker not in kinds.MAY_NOT_COME or self.workload.thread.is_alive():
            return False
        if not idle_since:
            idle_since.append(time.monotonic())
        return time.monotonic() - idle_since[0] > 90

    def _run(self) -> None:
        idle_since: list[float] = []
        for marker, delay in self.focus:
            deadline = time.monotonic() + 900
            while not self._reached(marker):
                with self.driver.lock:  # a restart (the kill, then the start) never seen halfway
                    proc = self.driver.proc
                    ended = proc is not None and proc.poll() is not None
                if time.monotonic() > deadline or ended:
                    return  # the driver ended (or never got there): no kill to make
                if self._given_up(marker, idle_since):
                    return
                time.sleep(0.1)  # waiting on a file the driver writes
            time.sleep(delay)  # the planned moment after the marker
            self.driver.restart()
            self.kills += 1

    def start(self) -> None:
        self.thread.start()

    def join(self) -> None:
        self.thread.join()


# ---- one trial ------------------------------------------------------------------------------


@dataclasses.dataclass
class TrialResult:
    seed: int
    description: str
    faults: collections.Counter[str]
    kind: str = "stream"
    #: the faults that hit: a connection fault fires when a connection comes
    fired: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    duplicates: int = 0
    losses: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    changes: int = 0
    batches: int = 0
    query_failures: int = 0
    #: SIGKILLs of the driver in all (planned and focus), and what it was doing at each
    kills: int = 0
    killed_in: list[str] = dataclasses.field(default_factory=list)
    #: what the checks compared, by what
    checked: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    #: the harness could not finish the trial (a driver that never started or finished): no
    #: verdict on exactly-once, reported apart from broken promises
    inconclusive: bool = False
    #: what the checks noted that breaks no promise (a database stream's table parked, ...)
    notes: list[str] = dataclasses.field(default_factory=list)

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
        driver.restart()
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


def _base_job(emu: Emulator, p: Plan) -> dict[str, Any]:
    """The driver job's source options and trigger, from the plan."""
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
    return {"options": options, "trigger": p.trigger, "master": "local[2]"}


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


def _prepare(
    emu: Emulator, p: Plan, k: kinds.KindPlan, workdir: Path, seconds: float
) -> tuple[Workload, dict[str, Any] | None, dict[str, Any]]:
    """The source, its workload (with the rows the kind wants beforehand), a seed's copy, and
    the driver's job."""
    create_source(emu)
    switch_at = k.params.get("at") if k.kind == "switch" else None
    database = k.kind == "database"
    workload = Workload(emu, p, seconds, switch_at=switch_at, other=database)
    workload.prefill(k.prefill)
    if database:
        workload.prefill_other(k.params["other_prefill"])
    copy = None
    if k.kind == "seed":
        copy = seed_copy(emu, workload, k.params["as_of"], k.params["between"])
    elif k.kind.startswith("resnapshot"):
        workload.commit([("single", 2)] * k.params["before"])
    emu.scan()
    return workload, copy, kinds.job(k, _base_job(emu, p), workdir, seed_copy=copy)


def _finish(driver: Driver, result: TrialResult, workdir: Path) -> bool:
    """Tells the driver to stop and waits until it finished (restarting it when killed or
    crashed during its last run); False, the trial inconclusive, when it never does."""
    (workdir / "stop").touch()
    for _attempt in range(3):
        if driver.finish() == 0:
            break
        driver.start()  # killed or crashed during the last run: once more
    else:
        result.problems.append(f"the driver never finished:\n{driver.log_tail()}")
        result.inconclusive = True
        return False
    result.kills = len(driver.killed_in)
    result.killed_in = driver.killed_in
    # the driver's own lines (``<what> failed (<n>): ...``), not the product's retries
    # (``<what> failed (<error>); retrying ...``)
    failed = re.compile(r" failed \(\d+\): ")
    result.query_failures = sum(
        1
        for path in workdir.glob("driver*.log")
        for line in path.read_text(errors="replace").splitlines()
        if failed.search(line)
    )
    return True


def run_trial(
    seed: int,
    workdir: Path,
    *,
    kind: str = "stream",
    seconds: float = DEFAULT_SECONDS,
    large: int = DEFAULT_LARGE,
) -> TrialResult:
    """Plans, runs and checks one trial of ``kind`` in ``workdir`` (which must not exist)."""
    began = time.monotonic()
    workdir = workdir.resolve()  # Delta takes a path table's path only when absolute
    p = plan(seed, seconds=seconds, large=large)
    k = kinds.plan_kind(kind, seed, large=sum(n for t, n in p.transactions if t == "large"))
    result = TrialResult(seed, f"{p.describe()}\n  {k.describe()}", collections.Counter(), kind)
    workdir.mkdir(parents=True)
    untyped_min_max()
    emu = Emulator(polling_interval=0.5).start()
    driver: Driver | None = None
    try:
        workload, copy, job = _prepare(emu, p, k, workdir, seconds)
        driver = Driver(job, workdir)
        driver.start()
        purged_after, kept, kept_times = None, [], {}
        if kind.startswith("resnapshot"):
            driver.wait_marker("gen0")
            purged_after, kept, kept_times = workload.purge()
            (workdir / "purged").touch()
        first = {"stream": "ready", "database": "ready"}
        driver.wait_marker(first.get(kind, "phase_b" if purged_after else "spark"))
        gate = "snapshot_taken" if kind == "snapshot" else "ready"
        started = lambda: any((workdir / "markers").glob(f"{gate}.*"))  # noqa: E731
        workload.start(None if kind in ("stream", "switch", "database") else started)
        focus = FocusKiller(driver, k.focus, workload)
        focus.start()
        armed = _inject_all(emu, driver, p, result)
        workload.join()
        focus.join()
        _await_fired(armed, result, FIRE_SECONDS)
        _calm(emu)
        if not _finish(driver, result, workdir):
            return result
        data = _read(
            emu,
            workdir,
            kind=kind,
            kept=(kept, kept_times),
            purged_after=purged_after,
            copy=copy,
        )
        found = Findings()
        kinds.check(found, k, data, workdir)
        result.duplicates, result.losses = found.duplicates, found.losses
        result.problems += found.problems
        result.notes += found.notes
        result.checked = found.checked
        result.changes = found.checked["changes"]
        result.batches = found.checked["batches"]
    except Exception as exc:
        result.problems.append(f"the trial itself failed: {type(exc).__name__}: {exc}")
        result.inconclusive = True
    finally:
        if driver is not None:
            driver.stop()
        emu.stop()
        result.seconds = time.monotonic() - began
    return result


def _read(
    emu: Emulator,
    workdir: Path,
    *,
    kind: str,
    kept: tuple[list[Change], dict[str, dt.datetime]],
    purged_after: str | None,
    copy: dict[str, Any] | None,
) -> kinds.TrialData:
    """What the trial left: the history (with what the purge deleted), the table, the driver's
    states and progress, bronze's Delta log and the generation file."""
    changes, times = history(emu)
    known = {c.ident for c in changes}
    changes += [c for c in kept[0] if c.ident not in known]
    times = {**kept[1], **times}
    note = kind == "switch"
    log_dir = workdir / "bronze" / "_delta_log"
    bronze_log = checks.delta_log(
        {int(p.stem): p.read_text().splitlines() for p in log_dir.glob("*.json")}
        if log_dir.exists()
        else {}
    )
    generation_file = workdir / "cp" / "_mssql_cdc_generation.json"
    progress_file = workdir / "progress.json"
    tables = {}
    if kind == "database":
        for ci, columns in kinds.DATABASE_TABLES.items():
            if ci == "dbo_orders":  # as the stream kind reads it
                tables[ci] = kinds.TableTruth(changes, source_table(emu, note=False), columns)
                continue
            source = table_rows(emu, "dbo." + ci.removeprefix("dbo_"), columns)
            tables[ci] = kinds.TableTruth(instance_history(emu, ci, columns), source, columns)
    return kinds.TrialData(
        history=changes,
        times={lsn: t.replace(tzinfo=None) for lsn, t in times.items()},
        table=source_table(emu, note=note),
        states=json.loads((workdir / "state.json").read_text()),
        progress=json.loads(progress_file.read_text()) if progress_file.exists() else {},
        bronze_log=bronze_log,
        generation=json.loads(generation_file.read_text()) if generation_file.exists() else None,
        purged_after=purged_after,
        seed_copy=copy,
        columns=("id", "name", "qty", "note") if note else ("id", "name", "qty"),
        tables=tables,
    )


# ---- many trials -------------------------------------------------------------------------------


def table(results: list[TrialResult]) -> str:
    """The summary tables (Markdown): per kind, then the faults."""
    faults: collections.Counter[str] = collections.Counter()
    fired: collections.Counter[str] = collections.Counter()
    for r in results:
        faults.update(r.faults)
        fired.update(r.fired)
    by_kind: dict[str, list[TrialResult]] = collections.defaultdict(list)
    for r in results:
        by_kind[r.kind].append(r)
    lines = [
        "| kind | trials | broken promises | inconclusive | kills (in its work) | faults hit "
        "| duplicates | losses | changes checked | snapshot rows | silver rows | restarts "
        "| seconds per trial |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    groups = [(k, by_kind[k]) for k in kinds.TRIAL_KINDS if by_kind.get(k)]
    if len(groups) > 1:
        groups.append(("all", results))
    for name, rs in groups:
        seconds = sum(r.seconds for r in rs) / max(len(rs), 1)
        silver = sum(r.checked["silver rows"] + r.checked["silver versions"] for r in rs)
        hit = sum(sum(r.fired.values()) - r.fired["sigkill"] for r in rs)
        work = sum(kinds.in_work(r.kind, phases) for r in rs for phases in r.killed_in)
        lines.append(
            f"| {name} | {len(rs)} | {sum(not r.ok and not r.inconclusive for r in rs)} "
            f"| {sum(r.inconclusive for r in rs)} | {sum(r.kills for r in rs)} ({work}) | {hit} "
            f"| {sum(r.duplicates for r in rs)} | {sum(r.losses for r in rs)} "
            f"| {sum(r.changes for r in rs)} | {sum(r.checked['snapshot rows'] for r in rs)} "
            f"| {silver} | {sum(r.query_failures for r in rs)} | {seconds:.0f} |"
        )
    lines += [
        "",
        "| fault | injected | hit |",
        "|---|---:|---:|",
        *(f"| {kind} | {faults[kind]} | {fired[kind]} |" for kind in FAULTS),
    ]
    return "\n".join(lines)


def replay_command(
    seed: int,
    *,
    kind: str = "stream",
    seconds: float = DEFAULT_SECONDS,
    large: int = DEFAULT_LARGE,
) -> str:
    """The one command that replays trial ``seed`` of ``kind`` (the plan depends on the
    workload's seconds and the large transaction's size too: they are passed when not the
    defaults)."""
    shaping = []
    if seconds != DEFAULT_SECONDS:
        shaping.append(f"--seconds {seconds:g}")
    if large != DEFAULT_LARGE:
        shaping.append(f"--large {large}")
    args = f' CHAOS_ARGS="{" ".join(shaping)}"' if shaping else ""
    return f"make chaos TRIALS=1 SEED={seed} KINDS={kind}{args}"
