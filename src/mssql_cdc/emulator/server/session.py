"""One client connection: PRELOGIN, TLS, LOGIN7, then requests until the client leaves.

The state machine is MS-TDS 3.3.5 (server side). A connection whose first byte is 0x16 (a TLS
record) is TDS 8.0 strict; otherwise the first message must be PRELOGIN. Malformed input
(:class:`ProtocolError`) closes only this connection, with the reason logged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import logging
from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from mssql_cdc.emulator.core.errors import SqlError
from mssql_cdc.emulator.core.results import BatchOutcome, StatementResult
from mssql_cdc.emulator.engine.executor import Executor
from mssql_cdc.emulator.engine.prepared import PROCEDURES as PREPARED_PROCEDURES
from mssql_cdc.emulator.engine.prepared import Prepared
from mssql_cdc.emulator.protocol import login7, prelogin, tokens
from mssql_cdc.emulator.protocol.packets import (
    HEADER,
    Channel,
    Framer,
    Message,
    PacketReader,
    PacketType,
    frame,
)
from mssql_cdc.emulator.protocol.rpc import RpcCall, parse_batch, parse_rpc, parse_tm
from mssql_cdc.emulator.protocol.tls import RawChannel, TlsChannel
from mssql_cdc.emulator.protocol.types import CLIENT_UTF8, COLLATION_CP1252
from mssql_cdc.emulator.protocol.wire import ProtocolError
from mssql_cdc.emulator.server.render import Cut, render, render_stream

if TYPE_CHECKING:
    from mssql_cdc.emulator.server.server import EmulatorServer

__all__ = ["Session"]

log = logging.getLogger("mssql_cdc.emulator.server.session")
TDS74 = 0x74000004
PRE_LOGIN_PACKET_SIZE = 4096
MAX_PACKET_SIZE = 32767
#: "The maximum network packet size for encrypted connections is 16,383 bytes" ("Configure the
#: network packet size Server Configuration Option", Microsoft Learn)
MAX_ENCRYPTED_PACKET_SIZE = 16383


@dataclasses.dataclass(frozen=True)
class LoginRecord:
    """What a client asked for in its LOGIN7 and what it was granted (tests read it)."""

    tds_version: int
    #: LOGIN7's PacketSize
    packet_size_requested: int
    #: the ENVCHANGE packet size the server answered
    packet_size_granted: int
    #: TLS protects the whole session (not only LOGIN7)
    encrypted: bool


class _Prefixed:
    """A raw channel that first returns bytes already read (the peeked first bytes)."""

    def __init__(self, raw: RawChannel, pending: bytes) -> None:
        self.raw = raw
        self.pending = pending

    async def read_some(self) -> bytes:
        if self.pending:
            out, self.pending = self.pending, b""
            return out
        return await self.raw.read_some()

    async def write(self, data: bytes) -> None:
        await self.raw.write(data)


class _DroppedError(Exception):
    """An injected fault closes the connection (see :mod:`faults`).

    ``graceful`` closes after what was written has been sent; otherwise the connection is
    aborted at once (what was still buffered is lost, as in a network failure).
    """

    def __init__(self, reason: str, *, graceful: bool = False) -> None:
        super().__init__(reason)
        self.graceful = graceful


def _cut_offset(outcome: BatchOutcome, payload: bytes, rows: int, spid: int, size: int) -> int:
    """Framed-byte offset just after the ``rows``-th row of ``outcome``'s reply."""
    remaining = rows
    kept: list[StatementResult] = []
    for result in outcome.results:
        if result.columns is not None and remaining < len(result.rows):
            kept.append(replace(result, rows=result.rows[:remaining]))
            break
        kept.append(result)
        if result.columns is not None:
            remaining -= len(result.rows)
    shorter = render(BatchOutcome(kept))
    same = 0
    limit = min(len(shorter), len(payload))
    step = 4096
    while same < limit:
        end = min(same + step, limit)
        if shorter[same:end] == payload[same:end]:
            same = end
            continue
        while shorter[same] == payload[same]:
            same += 1
        break
    room = max(size - HEADER.size, 1)
    return same + HEADER.size * (same // room + 1)


def _forget(incoming: asyncio.Future[Message | None]) -> None:
    """Stops a read of the next message that will not be awaited (its error, if it has
    one, is the session's end, already logged or moot)."""
    if incoming.done():
        if not incoming.cancelled():
            incoming.exception()  # retrieved: asyncio does not log it as never retrieved
    else:
        incoming.cancel()


class Session:
    def __init__(
        self,
        server: EmulatorServer,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        spid: int,
    ) -> None:
        self.server = server
        self.writer = writer
        self.raw = RawChannel(reader, writer)
        self.spid = spid
        self.packet_size = PRE_LOGIN_PACKET_SIZE
        #: the accepted login's request and answer (``None`` before one)
        self.login_record: LoginRecord | None = None
        self.executor: Executor | None = None
        self.login_name = ""
        peer = writer.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)

    async def run(self) -> None:
        try:
            await self._run()
        except _DroppedError as exc:
            log.info(
                "connection %s (spid %d) dropped by an injected fault: %s",
                self.peer,
                self.spid,
                exc,
            )
            if not exc.graceful:
                self.abort()
        except ProtocolError as exc:
            log.warning("closing connection %s (spid %d): %s", self.peer, self.spid, exc)
        except asyncio.CancelledError:
            log.debug("connection %s (spid %d) closed by shutdown", self.peer, self.spid)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.info("connection %s (spid %d) lost: %s", self.peer, self.spid, exc)
        except Exception:
            log.exception(
                "closing connection %s (spid %d) after an internal error", self.peer, self.spid
            )
        finally:
            if self.executor is not None:
                self.executor.close()
            self.writer.close()

    def abort(self) -> None:
        """Close the connection at once, as a network failure would."""
        transport = self.writer.transport
        if transport is not None and not transport.is_closing():
            transport.abort()

    async def _send(self, channel: Channel, payload: bytes) -> None:
        await channel.write(frame(PacketType.REPLY, payload, self.packet_size, self.spid))

    async def _run(self) -> None:  # noqa: PLR0912, PLR0915 (the login sequence, step by step)
        try:
            first = await asyncio.wait_for(self.raw.read_some(), self.server.read_timeout)
        except TimeoutError:
            raise ProtocolError(
                f"the client sent nothing for {self.server.read_timeout:g} s after connecting"
            ) from None
        if not first:
            return
        channel: Channel
        strict = first[0] == 0x16
        if strict:
            tls = TlsChannel(self.server.strict_context, self.raw)
            await tls.handshake_direct(first)
            channel = tls
        else:
            channel = _Prefixed(self.raw, first)
        packets = PacketReader(channel, read_timeout=self.server.read_timeout, idle_ok=False)
        msg = await packets.read_message()
        if msg is None:
            return
        if msg.type != PacketType.PRELOGIN:
            raise ProtocolError(f"expected PRELOGIN, got packet type 0x{msg.type:02x}")
        options = prelogin.parse(msg.payload)
        client = options.get(prelogin.ENCRYPTION, bytes([prelogin.ENCRYPT_NOT_SUP]))
        client_enc = client[0] if client else prelogin.ENCRYPT_NOT_SUP
        if strict:
            answer: int | None = prelogin.ENCRYPT_NOT_SUP
        else:
            answer = prelogin.negotiate(
                client_enc,
                tls_available=self.server.tls_available,
                force=self.server.force_encryption,
            )
        if answer is None:
            await self._send(channel, prelogin.build_response(prelogin.ENCRYPT_REQ))
            raise ProtocolError(f"client encryption {client_enc} is not acceptable")
        fedauth = prelogin.FEDAUTHREQUIRED in options
        await self._send(channel, prelogin.build_response(answer, fedauth=fedauth))
        login_channel: Channel = channel
        login_packets = packets
        if not strict and answer != prelogin.ENCRYPT_NOT_SUP:
            tls = TlsChannel(self.server.legacy_context, self.raw)
            await tls.handshake_in_prelogin(packets)
            login_channel = tls
            login_packets = PacketReader(tls, read_timeout=self.server.read_timeout, idle_ok=False)
        msg = await login_packets.read_message()
        if msg is None:
            return
        if msg.type != PacketType.LOGIN7:
            raise ProtocolError(f"expected LOGIN7, got packet type 0x{msg.type:02x}")
        login = login7.parse(msg.payload)
        if self.server.faults.take("login", self.spid) is not None:
            raise _DroppedError("during login")
        if answer == prelogin.ENCRYPT_OFF and not strict:
            # only LOGIN7 was encrypted; the rest of the connection is plaintext
            login_channel = channel
            login_packets = packets
        encrypted = strict or answer in (prelogin.ENCRYPT_ON, prelogin.ENCRYPT_REQ)
        if not await self._login(login_channel, login, encrypted=encrypted):
            return
        login_packets.idle_ok = True  # a logged-in client may wait between requests
        await self._serve(login_channel, login_packets)

    async def _login(self, channel: Channel, login: login7.Login7, *, encrypted: bool) -> bool:
        refused = self.server.login_refused()
        fedauth = login.features.get(login7.FEATURE_FEDAUTH)
        if fedauth is not None:
            # MS-TDS 2.2.6.4 FEDAUTH, library SECURITYTOKEN: options byte, u32 length, token
            token = login7.fedauth_token(fedauth)
            user = self.server.token_login(token) if token is not None else None
            if refused or user is None:
                log.info("access-token login refused from %s", self.peer)
                payload = tokens.error(
                    18456, 1, 14, "Login failed for user '<token-identified principal>'."
                ) + tokens.done(tokens.DONE_ERROR)
                await self._send(channel, payload)
                return False
            login = dataclasses.replace(login, username=user)
        elif refused or not self.server.authenticate(login.username, login.password):
            log.info("login failed for user %r from %s", login.username, self.peer)
            payload = tokens.error(
                18456, 1, 14, f"Login failed for user '{login.username}'."
            ) + tokens.done(tokens.DONE_ERROR)
            await self._send(channel, payload)
            return False
        if login.database and not self.server.db.exists(login.database):
            # SQL Server fails the login: 4060 (class 11) then 18456 ("Database Engine events
            # and errors", MSSQLSERVER_4060)
            log.info("login to missing database %r from %s", login.database, self.peer)
            payload = (
                tokens.error(
                    4060,
                    1,
                    11,
                    f'Cannot open database "{login.database}" requested by the login. '
                    "The login failed.",
                )
                + tokens.error(18456, 1, 14, f"Login failed for user '{login.username}'.")
                + tokens.done(tokens.DONE_ERROR)
            )
            await self._send(channel, payload)
            return False
        requested = login.packet_size or PRE_LOGIN_PACKET_SIZE
        negotiated = max(
            512, min(requested, MAX_ENCRYPTED_PACKET_SIZE if encrypted else MAX_PACKET_SIZE)
        )
        database = login.database or self.server.db.name
        version = min(login.tds_version, TDS74) if login.tds_version else TDS74
        if version < 0x70000000:
            version = TDS74
        parts = [
            tokens.env_text(tokens.ENV_DATABASE, database, "master"),
            tokens.info(5701, 2, 0, f"Changed database context to '{database}'."),
            tokens.env_bytes(tokens.ENV_COLLATION, COLLATION_CP1252, b""),
            tokens.env_text(tokens.ENV_LANGUAGE, "us_english", ""),
            tokens.info(5703, 1, 0, "Changed language setting to us_english."),
            tokens.loginack(version, (16, 0, 4135)),
        ]
        if login.features:
            acks = {}
            if login7.FEATURE_UTF8 in login.features:
                acks[login7.FEATURE_UTF8] = b"\x01"
            if fedauth is not None:
                acks[login7.FEATURE_FEDAUTH] = b""  # no nonce was exchanged: empty ack data
            parts.append(tokens.featureextack(acks))
        route = self.server.take_route()
        if route is not None:  # MS-TDS 2.2.7.9 ENVCHANGE type 20: the client reconnects there
            parts.append(tokens.env_routing(*route))
        parts.append(
            tokens.env_text(tokens.ENV_PACKET_SIZE, str(negotiated), str(PRE_LOGIN_PACKET_SIZE))
        )
        parts.append(tokens.done())
        await self._send(channel, b"".join(parts))
        self.packet_size = negotiated
        self.login_record = LoginRecord(login.tds_version, requested, negotiated, encrypted)
        # tds-types work: UTF-8 collations are downgraded for clients without UTF8_SUPPORT
        CLIENT_UTF8.set(login7.FEATURE_UTF8 in login.features)
        self.login_name = login.username
        self.executor = Executor(self.server.db, self.spid, login=login.username)
        self.prepared = Prepared()  # the session's prepared statements
        log.info("spid %d logged in from %s (app %r)", self.spid, self.peer, login.app_name)
        return True

    async def _serve(self, channel: Channel, packets: PacketReader) -> None:
        executor = self.executor
        assert executor is not None
        # The next message is read while a request is served: a client may send an Attention
        # in the middle of a reply (MS-TDS 2.2.1.7), and nothing else.
        incoming = asyncio.ensure_future(packets.read_message())
        try:
            while True:
                msg = await incoming
                if msg is None:
                    return
                incoming = asyncio.ensure_future(packets.read_message())
                if await self._request(channel, executor, msg, incoming):
                    # the reply was cut by an Attention (acknowledged in it): read on
                    incoming = asyncio.ensure_future(packets.read_message())
        finally:
            _forget(incoming)

    async def _request(
        self,
        channel: Channel,
        executor: Executor,
        msg: Message,
        incoming: asyncio.Future[Message | None],
    ) -> bool:
        """Serves one message; ``True`` when an Attention that came during the reply (the
        result of ``incoming``) cut it short."""
        eligible = []
        if msg.type != PacketType.ATTENTION:  # an Attention is not a request
            eligible = self.server.faults.armed_for("between_requests", self.spid)
        await self.server.before_response()
        if msg.type in (PacketType.SQL_BATCH, PacketType.RPC):
            self.server.request_count += 1
        attended = False
        cut = Cut()
        if msg.type == PacketType.SQL_BATCH:
            text = parse_batch(msg.payload)
            self.server.statement_counts[text] += 1
            outcome = await asyncio.to_thread(executor.run_batch, text)
            pieces = render_stream(outcome, nocount=executor.nocount, cut=cut)
            attended = await self._reply(channel, outcome, pieces, incoming, cut)
        elif msg.type == PacketType.RPC:
            calls = parse_rpc(msg.payload)
            merged = BatchOutcome([])
            replies: list[Iterator[bytes]] = []
            for call in calls:
                if call.params and isinstance(call.params[0].value, str):
                    self.server.statement_counts[call.params[0].value] += 1
                outcome = await asyncio.to_thread(self._rpc, executor, call)
                merged.results.extend(outcome.results)
                replies.append(render_stream(outcome, rpc=True, nocount=executor.nocount, cut=cut))
            pieces = itertools.chain.from_iterable(replies)
            attended = await self._reply(channel, merged, pieces, incoming, cut)
        elif msg.type == PacketType.ATTENTION:  # after the reply: acknowledged on its own
            await self._send(channel, tokens.done(tokens.DONE_ATTN))
        elif msg.type == PacketType.TRANSACTION_MANAGER:
            request = parse_tm(msg.payload)
            outcome = await asyncio.to_thread(self._tm, executor, request.kind, request.begin_new)
            await self._send(channel, render(outcome))
        else:
            raise ProtocolError(f"unexpected packet type 0x{msg.type:02x}")
        if self.server.faults.count_request(self.spid, eligible) is not None:
            raise _DroppedError("between requests", graceful=True)
        return attended

    async def _reply(
        self,
        channel: Channel,
        outcome: BatchOutcome,
        pieces: Iterable[bytes],
        incoming: asyncio.Future[Message | None] | None = None,
        cut: Cut | None = None,
    ) -> bool:
        """Send a reply piece by piece as it is encoded (each write waits until the client
        has taken enough of the earlier ones, and the event loop runs other work between two
        pieces), unless a ``mid_result`` fault cuts it and drops the connection.

        ``incoming`` is the read of the client's next message, ``cut`` the :class:`Cut` the
        pieces were rendered with. When an Attention comes before the reply has ended, the rest
        is left out (but the ENVCHANGE tokens of the statements that ran) and the reply ends
        with a DONE token with the ATTN bit, as SQL Server stops a result on an Attention
        (MS-TDS 2.2.1.7, 2.2.2.9, 3.3.5.9); returns ``True`` then. An Attention read after the
        last piece is answered on its own (``False``). When the client has gone, the reply
        stops there.
        """
        fault = self.server.faults.take("mid_result", self.spid)
        if fault is None:
            framer = Framer(PacketType.REPLY, self.packet_size, self.spid)
            for piece in pieces:
                packets = framer.feed(piece)
                if packets:
                    await channel.write(packets)
                # the loop's turn: other sessions, a kill or stop, and the client's next
                # message, between two pieces (a write the socket takes at once gives none)
                await asyncio.sleep(0)
                if incoming is not None and incoming.done() and cut is not None:
                    nxt = None if incoming.exception() is not None else incoming.result()
                    if nxt is None:
                        return False  # a bad next message or a client gone: the session ends
                    if nxt.type == PacketType.ATTENTION:
                        cut.requested = True
            if cut is not None and cut.applied:
                done = tokens.done(tokens.DONE_ATTN)
                await channel.write(framer.feed(done) + framer.finish())
                return True
            await channel.write(framer.finish())
            return False
        payload = b"".join(pieces)
        framed = frame(PacketType.REPLY, payload, self.packet_size, self.spid)
        if fault.after_bytes is not None:
            at = fault.after_bytes
        else:
            rows = fault.after_rows or 0
            at = _cut_offset(outcome, payload, rows, self.spid, self.packet_size)
        await channel.write(framed[: min(at, len(framed) - 1)])
        raise _DroppedError(f"mid-result after {at} bytes", graceful=True)

    @staticmethod
    def _tm(executor: Executor, kind: int, begin_new: bool) -> BatchOutcome:
        try:
            if kind == 5:
                results = [executor.begin()]
            else:
                results = [executor.commit() if kind == 7 else executor.rollback()]
                if begin_new:
                    results.append(executor.begin())
        except SqlError as err:
            return BatchOutcome([], err)
        env = [token for r in results for token in r.env]
        results[-1].env = env
        return BatchOutcome([results[-1]])

    def _rpc(self, executor: Executor, call: RpcCall) -> BatchOutcome:
        name = call.name.lower().split(".")[-1]
        if name in PREPARED_PROCEDURES:
            return self.prepared.call(executor, name, call.params)
        named = {p.name.lstrip("@").lower(): p.value for p in call.params if p.name}
        positional = [p.value for p in call.params if not p.name]
        return executor.run_procedure(call.name, named, positional)
