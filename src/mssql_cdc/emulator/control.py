"""The control API tests use: an in-process emulator on a free port, plus its levers.

Example::

    with Emulator() as emu:
        conn = pytds.connect(emu.host, port=emu.port, user="sa", password=emu.password)
        ...
        emu.scan()                      # one capture scan, like EXEC sys.sp_cdc_scan
        emu.advance_clock(timedelta(hours=1))

AdventureWorks: ``Emulator(adventureworks=True)`` (the default data directory, see
:func:`~mssql_cdc.emulator.adventureworks.default_directory`) or ``adventureworks=path`` loads
the six tables before the server starts; ``emu.load_adventureworks(path, tables=[...])`` loads
them (or some) later. The workload generator is :mod:`mssql_cdc.emulator.workload`.

Faults (:mod:`faults`): ``drop_connection(at, spid=None, ...)`` (``login``, ``mid_result``,
``between_requests``), ``kill(spid)`` (drop now), ``deadlock_victim(spid=None)``,
``fail_statement(number=50000, message=..., spid=None)``,
``refuse_logins(seconds)``, ``delay_responses(seconds)``, ``stop_capture_job()`` /
``start_capture_job()``; ``inject_fault(kind, **options)`` dispatches to them by name. A fault
with ``spid=None`` hits the next connection the server accepts; the returned
:class:`~mssql_cdc.emulator.core.faults.Fault` has ``wait()`` to block until it fired.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from mssql_cdc.emulator.adventureworks import LoadReport, load
from mssql_cdc.emulator.core.clock import Clock
from mssql_cdc.emulator.core.faults import Fault
from mssql_cdc.emulator.engine.database import Database
from mssql_cdc.emulator.protocol.tls import Certificate
from mssql_cdc.emulator.server.server import DEFAULT_PASSWORD, EmulatorServer
from mssql_cdc.emulator.server.session import LoginRecord

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
        adventureworks: str | Path | bool | None = None,
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
        #: what the constructor's ``adventureworks`` loaded (``None`` if nothing)
        self.adventureworks: LoadReport | None = None
        if adventureworks:
            self.adventureworks = self.load_adventureworks(
                None if adventureworks is True else adventureworks
            )

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

    def set_tls_available(self, available: bool) -> None:
        """Whether the server offers TLS: ``False`` answers PRELOGIN with ENCRYPT_NOT_SUP, as a
        SQL Server without a usable certificate does, so a client that requires encryption
        cannot connect (MS-TDS 2.2.6.5)."""
        self.server.tls_available = available

    def set_strict_alpn(self, protocols: tuple[str, ...]) -> None:
        """The application protocols a strict (TDS 8.0) TLS handshake offers: ``("tds/8.0",)``
        by default, ``()`` for a server whose TLS stack selects none."""
        self.server.set_strict_alpn(protocols)

    # --- data ---

    def load_adventureworks(
        self, directory: str | Path | None = None, tables: Iterable[str] | None = None
    ) -> LoadReport:
        """Create and bulk-load the AdventureWorks tables (all, or ``tables`` such as
        ``["Sales.Customer"]``) from ``directory`` (default: the packaged copy, see
        :func:`~mssql_cdc.emulator.adventureworks.default_directory`)."""
        return load(self.db, directory, tables)

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

    def set_clock(self, when: dt.datetime, *, freeze: bool = False) -> None:
        """Jump to ``when`` (aware, or naive = server local time); ``freeze`` stops it there
        (``advance_clock`` still moves it)."""
        self.clock.set(when, freeze=freeze)

    # --- faults ---

    def add_access_token(self, token: str, *, login: str = "sa") -> None:
        """Accept ``token`` as an Entra ID access token (LOGIN7 FEDAUTH) standing for ``login``.

        The emulator checks tokens by equality; it does not validate JWTs."""
        self.server.access_tokens[token] = login

    def route_next_login(self, host: str, port: int) -> None:
        """Send the next login a routing ENVCHANGE (as Azure SQL's redirect and read-only
        routing do), telling the client to reconnect to ``host``:``port``."""
        self.server.route_next_login = (host, port)

    def refuse_logins(self, seconds: float) -> None:
        """Logins fail with error 18456 for the next ``seconds``."""
        self.server.refuse_logins_until = time.monotonic() + seconds

    def delay_responses(self, seconds: float) -> None:
        """Hold every response for ``seconds`` (0 turns it off)."""
        self.server.response_delay = seconds

    def drop_connection(
        self,
        at: str,
        *,
        spid: int | None = None,
        after_rows: int | None = None,
        after_bytes: int | None = None,
        after_requests: int = 1,
    ) -> Fault:
        """Drop a connection at ``at``: ``login``, ``mid_result`` or ``between_requests``."""
        if at not in ("login", "mid_result", "between_requests"):
            raise ValueError(f"unknown drop point {at!r}")
        fault = Fault(
            at,
            spid,
            self.server.faults.next_spid,
            after_rows=after_rows,
            after_bytes=after_bytes,
            after_requests=after_requests,
        )
        return self.server.faults.arm(fault)

    def deadlock_victim(self, *, spid: int | None = None) -> Fault:
        """The session's next statement fails with 1205 and its transaction is rolled back."""
        return self.server.faults.arm(Fault("deadlock", spid, self.server.faults.next_spid))

    def fail_statement(
        self, *, number: int = 50000, message: str = "injected fault", spid: int | None = None
    ) -> Fault:
        """The session's next statement fails with error ``number`` (severity 16); the session
        and its transaction go on."""
        fault = Fault("error", spid, self.server.faults.next_spid, number=number, message=message)
        return self.server.faults.arm(fault)

    def kill(self, spid: int) -> bool:
        """Drop the session's connection now; ``False`` if there is no such session."""
        return self.server.kill(spid)

    def sessions(self) -> list[int]:
        """The spids of the connected sessions."""
        return sorted(self.server.sessions)

    def logins(self) -> dict[int, LoginRecord]:
        """Each logged-in session's LOGIN7 request (TDS version, packet size) and answer."""
        return {
            spid: s.login_record
            for spid, s in sorted(self.server.sessions.items())
            if s.login_record is not None
        }

    def stop_capture_job(self) -> None:
        """Stop the capture job (like ``sys.sp_cdc_stop_job``); changes wait in the log."""
        self.db.capture_job.stop()

    def start_capture_job(self) -> None:
        """Start the capture job again (like ``sys.sp_cdc_start_job``)."""
        self.db.capture_job.restart()

    def wait_for_scans(self, count: int, timeout: float = 10.0) -> bool:
        """Block until the capture job (or anyone) has run ``count`` scans in total."""
        return self.db.capture_job.wait_for_scans(count, timeout)

    @property
    def scan_count(self) -> int:
        return self.db.capture_job.scan_count

    @property
    def request_count(self) -> int:
        """SQL batches and RPC requests the server has answered since it started (every
        connection; an RPC packet counts once however many calls it holds)."""
        return self.server.request_count

    def statement_count(self, fragment: str) -> int:
        """How many SQL batches and ``sp_executesql`` statements containing ``fragment`` the
        server was sent since it started (every connection)."""
        return sum(n for text, n in self.server.statement_counts.items() if fragment in text)

    def inject_fault(self, kind: str, **options: object) -> Fault | None:
        """Arm a fault by name: ``drop_connection`` (``at=...``), ``deadlock_victim``,
        ``fail_statement`` (``number=``, ``message=``),
        ``refuse_logins`` (``seconds=``), ``delay_responses`` (``seconds=``),
        ``stop_capture_job``, ``start_capture_job``."""
        if kind == "drop_connection":
            return self.drop_connection(**options)  # type: ignore[arg-type]
        if kind == "deadlock_victim":
            return self.deadlock_victim(**options)  # type: ignore[arg-type]
        if kind == "fail_statement":
            return self.fail_statement(**options)  # type: ignore[arg-type]
        if kind == "refuse_logins":
            self.refuse_logins(float(options["seconds"]))  # type: ignore[arg-type]
        elif kind == "delay_responses":
            self.delay_responses(float(options["seconds"]))  # type: ignore[arg-type]
        elif kind == "stop_capture_job":
            self.stop_capture_job()
        elif kind == "start_capture_job":
            self.start_capture_job()
        else:
            raise ValueError(f"unknown fault {kind!r}")
        return None
