"""The control API tests use: an in-process emulator on a free port, plus its levers.

Example::

    with Emulator() as emu:
        conn = pytds.connect(emu.host, port=emu.port, user="sa", password=emu.password)
        ...
        emu.scan()                      # one capture scan, like EXEC sys.sp_cdc_scan
        emu.advance_clock(timedelta(hours=1))

Fault injection: ``refuse_logins(seconds)`` and ``delay_responses(seconds)`` work; dropping a
connection at a chosen point and deadlock victims are not implemented yet
(:meth:`Emulator.inject_fault` raises ``NotImplementedError``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import threading
import time
from pathlib import Path
from types import TracebackType

from mssql_cdc.emulator.clock import Clock
from mssql_cdc.emulator.database import Database
from mssql_cdc.emulator.server import DEFAULT_PASSWORD, EmulatorServer
from mssql_cdc.emulator.tls import Certificate

__all__ = ["Emulator"]

log = logging.getLogger("mssql_cdc.emulator.control")


class Emulator:
    """A running emulator in a background thread (its own asyncio loop)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        password: str = DEFAULT_PASSWORD,
        time_zone: str = "UTC",
        polling_interval: float | None = None,
        certificate: Certificate | None = None,
        database: str = "master",
    ) -> None:
        self.host = host
        self.port = port
        self.password = password
        self.clock = Clock(time_zone)
        self.db = Database(name=database, clock=self.clock)
        self.server = EmulatorServer(self.db, password=password, certificate=certificate)
        self._polling_interval = polling_interval
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None

    def __repr__(self) -> str:  # no password
        return f"Emulator(host={self.host!r}, port={self.port})"

    # --- lifecycle ---

    def start(self) -> Emulator:
        self._thread = threading.Thread(target=self._main, name="mssql-cdc-emulator", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError("emulator failed to start") from self._error
        self.set_polling_interval(self._polling_interval)
        return self

    def _main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve())
        except BaseException as exc:  # reported to start()
            self._error = exc
            self._ready.set()
        finally:
            loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        self.host, self.port = await self.server.start(self.host, self.port)
        self._ready.set()
        await self._stop.wait()
        await self.server.close()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join()
            self._thread = None
        self.db.close()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- connection details ---

    @property
    def ca_pem(self) -> bytes:
        """The self-signed certificate, for clients that validate the server."""
        return self.server.certificate.cert_pem

    def write_ca(self, path: str | Path) -> Path:
        target = Path(path)
        target.write_bytes(self.ca_pem)
        return target

    def connection_string(self, *, encrypt: str = "no") -> str:
        """An ODBC-style connection string (it holds the password: do not log it)."""
        return (
            f"Server=tcp:{self.host},{self.port};UID=sa;PWD={self.password};"
            f"Encrypt={encrypt};TrustServerCertificate=yes"
        )

    # --- CDC levers ---

    def scan(self) -> int:
        """Run one capture scan now; returns how many committed transactions it read."""
        return self.db.scan()

    def set_polling_interval(self, seconds: float | None) -> None:
        """Run the capture job every ``seconds`` (``None`` stops it: scans only on demand)."""
        self.db.capture_job.configure(seconds)

    def cleanup(self, retention_minutes: int | None = None) -> int:
        """Run the cleanup job now; returns the change rows it deleted."""
        return self.db.cleanup(retention_minutes)

    def set_retention(self, minutes: int) -> None:
        self.db.cdc.retention_minutes = minutes

    # --- clock ---

    def advance_clock(self, delta: dt.timedelta) -> None:
        self.clock.advance(delta)

    def set_clock(self, when: dt.datetime) -> None:
        """Jump to ``when`` (aware, or naive = server local time)."""
        self.clock.set(when)

    # --- faults ---

    def refuse_logins(self, seconds: float) -> None:
        """Logins fail with error 18456 for the next ``seconds``."""
        self.server.refuse_logins_until = time.monotonic() + seconds

    def delay_responses(self, seconds: float) -> None:
        """Hold every response for ``seconds`` (0 turns it off)."""
        self.server.response_delay = seconds

    def inject_fault(self, kind: str, **options: object) -> None:
        """Placeholder for the remaining faults (drop connection, deadlock victim)."""
        raise NotImplementedError(f"fault {kind!r} is not implemented yet")
