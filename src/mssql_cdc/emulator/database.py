"""The one emulated database: engine connection, catalog, log, CDC state and capture job.

Statements of all sessions run one at a time under :attr:`Database.lock`, each on its
session's own DuckDB connection (so open transactions stay per session); the capture job and
cleanup use :attr:`Database.system`.
"""

from __future__ import annotations

import logging
import threading

import duckdb

from mssql_cdc.emulator.catalog import Catalog
from mssql_cdc.emulator.cdc import CdcState
from mssql_cdc.emulator.clock import Clock
from mssql_cdc.emulator.log import TransactionLog

__all__ = ["CaptureJob", "Database"]

log = logging.getLogger("mssql_cdc.emulator.database")
DEFAULT_POLLING_INTERVAL = 5.0


class Database:
    def __init__(self, *, name: str = "master", clock: Clock | None = None) -> None:
        self.name = name
        self.clock = clock or Clock("UTC")
        self.engine = duckdb.connect(":memory:")
        self.system = self.engine.cursor()
        self.system.execute("CREATE SCHEMA IF NOT EXISTS dbo")
        self.system.execute("CREATE SCHEMA IF NOT EXISTS cdc")
        self.catalog = Catalog()
        self.log = TransactionLog()
        self.cdc = CdcState(self)
        self.lock = threading.RLock()
        self.capture_job = CaptureJob(self)

    def cursor(self) -> duckdb.DuckDBPyConnection:
        with self.lock:
            return self.engine.cursor()

    def scan(self) -> int:
        with self.lock:
            return self.cdc.scan()

    def cleanup(self, retention_minutes: int | None = None) -> int:
        with self.lock:
            return self.cdc.cleanup(retention_minutes)

    def close(self) -> None:
        self.capture_job.stop()
        with self.lock:
            self.engine.close()


class CaptureJob:
    """The capture job: a thread that scans every ``interval`` seconds while running."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.interval: float | None = None
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopping = False

    def configure(self, interval: float | None) -> None:
        """Start (or retime) the job; ``None`` stops it."""
        self.stop()
        self.interval = interval
        if interval is None:
            return
        self._stopping = False
        self._wake.clear()
        self._thread = threading.Thread(target=self._run, name="cdc-capture-job", daemon=True)
        self._thread.start()

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
            self._thread.join()
            self._thread = None
