"""The TCP listener: accepts connections and runs one :class:`Session` per client."""

from __future__ import annotations

import asyncio
import collections
import logging
import time

from mssql_cdc.emulator.core.faults import FaultRegistry
from mssql_cdc.emulator.engine.database import Database
from mssql_cdc.emulator.protocol.packets import READ_TIMEOUT
from mssql_cdc.emulator.protocol.tls import Certificate, generate_certificate, server_contexts
from mssql_cdc.emulator.server.session import Session

__all__ = ["DEFAULT_PASSWORD", "EmulatorServer"]

log = logging.getLogger("mssql_cdc.emulator.server.server")
#: The ``sa`` password when none is given (meets SQL Server's complexity policy).
DEFAULT_PASSWORD = "Emulator-Passw0rd!"


class EmulatorServer:
    def __init__(
        self,
        db: Database,
        *,
        password: str = DEFAULT_PASSWORD,
        certificate: Certificate | None = None,
        force_encryption: bool = False,
    ) -> None:
        self.db = db
        self.password = password
        self.certificate = certificate or generate_certificate()
        self.legacy_context, self.strict_context = server_contexts(self.certificate)
        self.force_encryption = force_encryption
        #: whether the server offers TLS (PRELOGIN answers ENCRYPT_NOT_SUP when not)
        self.tls_available = True
        self._server: asyncio.Server | None = None
        self._next_spid = 51
        self._tasks: set[asyncio.Task[None]] = set()
        self.sessions: dict[int, Session] = {}
        self.faults: FaultRegistry = db.faults
        self.faults.next_spid = self._next_spid
        self._loop: asyncio.AbstractEventLoop | None = None
        self.refuse_logins_until = 0.0
        self.response_delay = 0.0
        #: SQL batches and RPC requests served since the start (for idle-cost measurements)
        self.request_count = 0
        #: how often each SQL text was sent (batches, and ``sp_executesql`` statements), for
        #: tests and benchmarks that count one kind of query
        self.statement_counts: collections.Counter[str] = collections.Counter()
        #: seconds a client may stall inside a packet (or before login) before it is closed
        self.read_timeout = READ_TIMEOUT
        #: Entra ID access tokens the server accepts (FEDAUTH), mapped to the login they stand for
        self.access_tokens: dict[str, str] = {}
        #: the next login is sent a routing ENVCHANGE to this (host, port), once
        self.route_next_login: tuple[str, int] | None = None

    def set_strict_alpn(self, protocols: tuple[str, ...]) -> None:
        """Rebuild the strict TLS context offering ``protocols`` as ALPN (new sessions)."""
        self.legacy_context, self.strict_context = server_contexts(self.certificate, alpn=protocols)

    def __repr__(self) -> str:
        return f"EmulatorServer(db={self.db.name!r})"

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self._loop = asyncio.get_running_loop()
        self._server = await asyncio.start_server(self._accept, host, port)
        sockname = self._server.sockets[0].getsockname()
        log.info("listening on %s:%d", sockname[0], sockname[1])
        return str(sockname[0]), int(sockname[1])

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        spid = self._next_spid
        self._next_spid += 1
        self.faults.next_spid = self._next_spid
        session = Session(self, reader, writer, spid)
        self.sessions[spid] = session
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await session.run()
        finally:
            self.sessions.pop(spid, None)
            if task is not None:
                self._tasks.discard(task)

    def kill(self, spid: int) -> bool:
        """Drop a session's connection now (thread-safe); ``False`` if no such session."""
        session = self.sessions.get(spid)
        if session is None or self._loop is None:
            return False
        self._loop.call_soon_threadsafe(session.abort)
        return True

    def authenticate(self, login: str, password: str) -> bool:
        """``sa`` with the server password, or a login made by CREATE LOGIN."""
        if login.lower() == "sa":
            return password == self.password
        return self.db.security.authenticate(login, password)

    def token_login(self, token: str) -> str | None:
        """The login an access token stands for, or None if the server does not know it."""
        return self.access_tokens.get(token)

    def take_route(self) -> tuple[str, int] | None:
        """The routing target for this login, if one was set; it applies once."""
        route, self.route_next_login = self.route_next_login, None
        return route

    def login_refused(self) -> bool:
        return time.monotonic() < self.refuse_logins_until

    async def before_response(self) -> None:
        if self.response_delay > 0:
            await asyncio.sleep(self.response_delay)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None
