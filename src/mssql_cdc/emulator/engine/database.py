"""The one emulated database: engine connection, catalog, log, CDC state and capture job.

Statements run one at a time under :attr:`Database.lock`, each on its session's own DuckDB
connection (so open transactions stay per session); a session that must wait for a table lock
releases it while it waits (:mod:`locks`). The capture job and cleanup use
:attr:`Database.system`.
"""

from __future__ import annotations

import logging
import threading

import duckdb

from mssql_cdc.emulator.cdc.state import CdcState
from mssql_cdc.emulator.core.catalog import Catalog
from mssql_cdc.emulator.core.clock import Clock
from mssql_cdc.emulator.core.faults import FaultRegistry
from mssql_cdc.emulator.core.locks import LockManager
from mssql_cdc.emulator.core.log import TransactionLog
from mssql_cdc.emulator.core.security import Security
from mssql_cdc.emulator.engine import udfs

__all__ = ["CaptureJob", "Database"]

log = logging.getLogger("mssql_cdc.emulator.engine.database")
DEFAULT_POLLING_INTERVAL = 5.0
#: the system databases every SQL Server has (they all stand for the one emulated database)
SYSTEM_DATABASES = frozenset({"master", "tempdb", "model", "msdb"})


class Database:
    def __init__(self, *, name: str = "master", clock: Clock | None = None) -> None:
        self.name = name
        self.clock = clock or Clock("UTC")
        self.engine = duckdb.connect(":memory:")
        self.system = self.engine.cursor()
        self.system.execute("CREATE SCHEMA IF NOT EXISTS dbo")
        self.system.execute("CREATE SCHEMA IF NOT EXISTS cdc")
        self.catalog = Catalog(self.clock.local_naive)
        self.log = TransactionLog()
        self.cdc = CdcState(self)
        self.lock = threading.RLock()
        self.locks = LockManager(self.lock)
        self.security = Security()
        self.faults = FaultRegistry()
        self.allow_snapshot_isolation = False
        self.capture_job = CaptureJob(self)
        udfs.register(self)

    def exists(self, name: str) -> bool:
        """Whether a database of this name exists: the emulated one or a system database
        (names compare case-insensitively, as in the default server collation)."""
        lowered = name.lower()
        return lowered == self.name.lower() or lowered in SYSTEM_DATABASES

    def cursor(self) -> duckdb.DuckDBPyConnection:
        with self.lock:
            return self.engine.cursor()

    def scan(self) -> int:
        with self.lock:
            count = self.cdc.scan()
        self.capture_job.scanned()
        return count

    def cleanup(self, retention_minutes: int | None = None) -> int:
        with self.lock:
            return self.cdc.cleanup(retention_minutes)

    def close(self) -> None:
        self.capture_job.stop()
        with self.lock:
            self.engine.close()


class CaptureJob:
    """The capture job: a thread that scans every ``interval`` seconds while running.

    ``sys.sp_cdc_stop_job`` / ``sys.sp_cdc_start_job`` (and the control API) stop and start it
    without forgetting the interval; stopping loses no data, the log keeps the transactions
    until the next scan ("sys.sp_cdc_stop_job", Microsoft docs).
    """

    def __init__(self, db: Database) -> None:
        self.db = db
        self.interval: float | None = None
        #: set by ``sp_cdc_change_job``; applied when the job (re)starts
        self.pending_interval: float | None = None
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._scans = threading.Condition()
        self.scan_count = 0

    @property
    def running(self) -> bool:
        return self._thread is not None

    def configure(self, interval: float | None) -> None:
        """Start (or retime) the job; ``None`` stops it."""
        self.stop()
        self.interval = interval
        self.start()

    def start(self) -> None:
        if self.interval is None or self._thread is not None:
            return
        self._stopping = False
        self._wake.clear()
        self._thread = threading.Thread(target=self._run, name="cdc-capture-job", daemon=True)
        self._thread.start()

    def restart(self) -> None:
        """Start the job with the settings ``sp_cdc_change_job`` left (default 5 s)."""
        self.stop()
        if self.pending_interval is not None:
            self.interval, self.pending_interval = self.pending_interval, None
        if self.interval is None:
            self.interval = DEFAULT_POLLING_INTERVAL
        self.start()

    def _run(self) -> None:
        while not self._stopping:
            assert self.interval is not None
            if self._wake.wait(self.interval):
                return
            try:
                self.db.scan()
            except Exception:
                log.exception("capture scan failed")

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            if self._thread is not threading.current_thread():
                self._thread.join()
            self._thread = None

    def scanned(self) -> None:
        with self._scans:
            self.scan_count += 1
            self._scans.notify_all()

    def wait_for_scans(self, count: int, timeout: float = 10.0) -> bool:
        """Block until ``scan_count`` reaches ``count`` (or ``timeout`` seconds passed)."""
        with self._scans:
            return self._scans.wait_for(lambda: self.scan_count >= count, timeout)
