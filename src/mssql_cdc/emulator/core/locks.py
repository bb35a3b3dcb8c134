"""Table locks owned by sessions' transactions: what makes READ COMMITTED readers wait.

The model is table-granular ("Transaction locking and row versioning guide", Microsoft docs,
reduced to one resource per table):

* a writer (INSERT/UPDATE/DELETE, DDL) takes an exclusive lock on its table and keeps it until
  its transaction ends (at once for an autocommit statement);
* a READ COMMITTED (or REPEATABLE READ / SERIALIZABLE) reader waits until no other session
  holds the table exclusively; READ UNCOMMITTED, ``WITH (NOLOCK)`` and SNAPSHOT readers never
  wait, and SNAPSHOT sees the last committed data (the engine's own MVCC);
* ``SET LOCK_TIMEOUT n``: a wait longer than ``n`` ms fails with error 1222 (``-1`` waits for
  ever, ``0`` fails at once) ("SET LOCK_TIMEOUT", Microsoft docs);
* a wait that closes a cycle of waiting sessions makes the waiter the deadlock victim (1205).

Waits use a condition on the database lock, so a waiting session releases the engine to the
others (its writer can commit) and re-takes it before it goes on. Each wait is counted for its
session as SQL Server's wait types name it (``LCK_M_S`` for a reader, ``LCK_M_X`` for a
writer: "sys.dm_os_wait_stats (Transact-SQL)"), for ``sys.dm_exec_session_wait_stats``.
"""

from __future__ import annotations

import threading
import time

from mssql_cdc.emulator.core.errors import SqlError

__all__ = ["LockManager", "WaitStats", "deadlock_victim", "lock_timeout"]

Key = tuple[str, str]


def lock_timeout() -> SqlError:
    return SqlError(1222, "Lock request time out period exceeded.", state=51)


def deadlock_victim(spid: int) -> SqlError:
    return SqlError(
        1205,
        f"Transaction (Process ID {spid}) was deadlocked on lock resources with another "
        "process and has been chosen as the deadlock victim. Rerun the transaction.",
        state=51,
        klass=13,
    )


class WaitStats:
    """One session's waits of one type: count, total and longest milliseconds."""

    def __init__(self) -> None:
        self.count = 0
        self.total_ms = 0
        self.max_ms = 0

    def add(self, ms: int) -> None:
        self.count += 1
        self.total_ms += ms
        self.max_ms = max(self.max_ms, ms)


class LockManager:
    def __init__(self, lock: threading.RLock) -> None:
        self.cond = threading.Condition(lock)
        self.owner: dict[Key, int] = {}
        self.held: dict[int, set[Key]] = {}
        self.waiting: dict[int, Key] = {}
        #: per session, per wait type (LCK_M_S, LCK_M_X)
        self.waits: dict[int, dict[str, WaitStats]] = {}

    def forget(self, spid: int) -> None:
        """A session ended: its wait statistics go ("sys.dm_exec_session_wait_stats")."""
        with self.cond:
            self.waits.pop(spid, None)

    @staticmethod
    def key(schema: str, table: str) -> Key:
        return (schema.lower(), table.lower())

    def _blocker(self, spid: int, key: Key) -> int | None:
        owner = self.owner.get(key)
        return None if owner is None or owner == spid else owner

    def _cycle(self, spid: int, blocker: int) -> bool:
        seen = set()
        current: int | None = blocker
        while current is not None and current not in seen:
            if current == spid:
                return True
            seen.add(current)
            wanted = self.waiting.get(current)
            current = None if wanted is None else self._blocker(current, wanted)
        return False

    def _wait(self, spid: int, key: Key, timeout_ms: int, wait_type: str) -> None:
        """Wait (the database lock held) until no other session owns ``key``; a wait that
        happened is counted under ``wait_type``."""
        began = time.monotonic()
        waited = [False]
        try:
            self._wait_for(spid, key, timeout_ms, waited)
        finally:
            if waited[0]:
                ms = int((time.monotonic() - began) * 1000)
                with self.cond:
                    stats = self.waits.setdefault(spid, {}).setdefault(wait_type, WaitStats())
                    stats.add(ms)

    def _wait_for(self, spid: int, key: Key, timeout_ms: int, waited: list[bool]) -> None:
        deadline = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000
        announced = False
        with self.cond:
            while (blocker := self._blocker(spid, key)) is not None:
                if self._cycle(spid, blocker):
                    raise deadlock_victim(spid)
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise lock_timeout()
                self.waiting[spid] = key
                waited[0] = True
                if not announced:  # once: observers (tests, deadlock checks) see the new wait
                    self.cond.notify_all()
                    announced = True
                try:
                    self.cond.wait(remaining)
                finally:
                    self.waiting.pop(spid, None)

    def wait_readable(self, spid: int, schema: str, table: str, timeout_ms: int) -> None:
        self._wait(spid, self.key(schema, table), timeout_ms, "LCK_M_S")

    def acquire(self, spid: int, schema: str, table: str, timeout_ms: int) -> None:
        """Take the table exclusively for ``spid``'s transaction."""
        key = self.key(schema, table)
        self._wait(spid, key, timeout_ms, "LCK_M_X")
        with self.cond:
            self.owner[key] = spid
            self.held.setdefault(spid, set()).add(key)

    def holds(self, spid: int) -> bool:
        with self.cond:
            return bool(self.held.get(spid))

    def release_all(self, spid: int) -> None:
        with self.cond:
            for key in self.held.pop(spid, set()):
                if self.owner.get(key) == spid:
                    del self.owner[key]
            self.cond.notify_all()
