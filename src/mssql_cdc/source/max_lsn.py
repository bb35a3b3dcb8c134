"""One ``sys.fn_cdc_get_max_lsn()`` poll shared by the streams of one database (ADR 0170).

Spark runs each stream's planner in its own Python process on the driver, so N streams on one
database would poll the newest commit N times per trigger. :class:`SharedPoll` lets them share
one poll through a small file per source in a private directory of the driver (a lock file and
the last poll's result), under one rule (:func:`reusable`): a stream takes another stream's
result only when

* that poll **started after this stream's trigger started planning** (so it sees every commit
  this stream's own poll would have seen: no batch ends before a change it would have
  included), and
* its LSN is **not older than the newest LSN this stream already saw** (offsets stay
  monotonic even if the server went back, e.g. after a failover).

Otherwise the stream polls itself, holding the lock so that the streams planning at the same
moment wait for its result instead of sending the same query. Spark fires the processing-time
triggers of all queries on the same clock ticks, but their calls arrive a few milliseconds
apart; so when other streams took the last poll (other streams of the source are running), the
polling stream first waits :data:`GATHER_S` for the calls of the same tick to arrive: they
began planning before the poll starts, so they may take it. A lone stream never waits.

Streams share only with the same source: the same connection string (its secrets left out),
login and token provider; a stream that connects with a fixed ``accessToken`` never shares.
Where file locks are missing (not POSIX) or the directory cannot be used, or the environment
variable ``MSSQL_CDC_SHARED_MAX_LSN_POLL`` is ``0`` in the driver, every stream polls alone.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from mssql_cdc._native import Lsn
from mssql_cdc.connection_string import attributes
from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.client import Commit

try:
    import fcntl
except ImportError:  # pragma: no cover (Windows)
    fcntl = None  # type: ignore[assignment]

__all__ = ["PollRecord", "SharedPoll", "reusable", "source_key"]

log = logging.getLogger("mssql_cdc.source")

#: connection-string keywords left out of the key (secrets)
_SECRET_KEYS = frozenset({"pwd", "password", "accesstoken", "access token"})
#: ``0`` in the driver's environment: every stream polls alone
ENV_SWITCH = "MSSQL_CDC_SHARED_MAX_LSN_POLL"
#: how long a polling stream lets the other streams' calls of the same trigger arrive
GATHER_S = 0.05
#: how long a stream waits for another stream's poll before it polls on its own
LOCK_WAIT_S = 5.0


def _boot_id() -> str:
    """Names this boot of the machine: monotonic clock readings of another boot are
    meaningless."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return str(round(time.time() - time.monotonic(), -1))


_BOOT = _boot_id()


def source_key(options: ReaderOptions) -> str | None:
    """The name of the source a poll is shared on (a hash, never a secret), ``None`` when the
    stream must not share (a fixed access token: its login cannot be told without the token).
    """
    if options.access_token and not options.access_token_provider:
        return None
    try:
        pairs = sorted(
            (a.key.strip().lower(), a.value)
            for a in attributes(options.connection_string)
            if a.key.strip().lower() not in _SECRET_KEYS
        )
    except ValueError:
        return None
    text = json.dumps([pairs, options.user or "", options.access_token_provider or ""])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class PollRecord:
    """One poll: when it started (``time.monotonic_ns()`` of this boot), what it found, the
    process that sent it and how many other streams took it."""

    started_ns: int
    boot: str
    newest: Commit | None
    pid: int = 0
    takers: int = 0

    def to_json(self) -> str:
        commit = self.newest
        return json.dumps(
            {
                "started_ns": self.started_ns,
                "boot": self.boot,
                "lsn": None if commit is None else bytes(commit.lsn).hex(),
                "local_time": None if commit is None else commit.local_time.isoformat(),
                "pid": self.pid,
                "takers": self.takers,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> PollRecord:
        data = json.loads(text)
        commit = None
        if data["lsn"] is not None:
            lsn = Lsn(bytes.fromhex(data["lsn"]))
            commit = Commit(lsn, dt.datetime.fromisoformat(data["local_time"]))
        return cls(
            int(data["started_ns"]),
            str(data["boot"]),
            commit,
            int(data.get("pid", 0)),
            int(data.get("takers", 0)),
        )


def reusable(record: PollRecord | None, since_ns: int, floor: Lsn | None) -> bool:
    """Whether a stream that started planning at ``since_ns`` and already saw ``floor`` may
    take ``record`` instead of polling: the poll started at or after ``since_ns`` (this boot)
    and found at least ``floor``."""
    if record is None or record.boot != _BOOT or record.started_ns < since_ns:
        return False
    if floor is None:
        return True
    return record.newest is not None and record.newest.lsn >= floor


def _directory() -> Path:
    return Path(tempfile.gettempdir()) / f"mssql-cdc-{os.getuid()}" / "max-lsn"


class SharedPoll:
    """The newest commit for one stream, from a poll shared with the streams of its source."""

    def __init__(self, options: ReaderOptions, directory: Path | None = None) -> None:
        enabled = os.environ.get(ENV_SWITCH, "1").strip() != "0" and fcntl is not None
        key = source_key(options) if enabled else None
        self._paths: tuple[Path, Path] | None = None
        if key is not None:
            folder = directory or _directory()
            self._paths = (folder / f"{key}.lock", folder / f"{key}.json")
        #: polls this stream sent / took from another stream (for tests and benchmarks)
        self.polled = 0
        self.shared = 0

    def newest(
        self, poll: Callable[[], Commit | None], since_ns: int, floor: Lsn | None
    ) -> Commit | None:
        """The newest commit: a shared poll that :func:`reusable` accepts, else ``poll()`` (its
        result then shared)."""
        if self._paths is None:
            return self._poll(poll)
        lock_path, record_path = self._paths
        with self._locked(lock_path) as locked:
            if not locked:
                return self._poll(poll)
            record = _read(record_path)
            if reusable(record, since_ns, floor):
                assert record is not None
                self.shared += 1
                _write(record_path, replace(record, takers=record.takers + 1))
                return record.newest
            if record is not None and (record.takers or record.pid != os.getpid()):
                self._gather()
            started = time.monotonic_ns()
            newest = self._poll(poll)
            _write(record_path, PollRecord(started, _BOOT, newest, os.getpid()))
            return newest

    def _gather(self) -> None:
        """Other streams of the source run: let the calls of this trigger arrive (they wait on
        the lock and take the poll that follows)."""
        time.sleep(GATHER_S)

    def _poll(self, poll: Callable[[], Commit | None]) -> Commit | None:
        self.polled += 1
        return poll()

    @contextlib.contextmanager
    def _locked(self, path: Path) -> Iterator[bool]:
        """Hold the source's lock (waiting up to :data:`LOCK_WAIT_S`); yields ``False`` when
        it cannot be had, and the caller polls alone."""
        assert fcntl is not None
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            log.debug("max-LSN poll not shared: %s", exc)
            yield False
            return
        try:
            deadline = time.monotonic() + LOCK_WAIT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        yield False
                        return
                    time.sleep(0.002)  # another stream is polling: its result comes soon
            yield True
        finally:
            os.close(fd)  # closing the descriptor releases the lock


def _read(path: Path) -> PollRecord | None:
    try:
        return PollRecord.from_json(path.read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write(path: Path, record: PollRecord) -> None:
    temp = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        temp.write_text(record.to_json())
        os.replace(temp, path)
    except OSError as exc:
        log.debug("max-LSN poll not recorded: %s", exc)
