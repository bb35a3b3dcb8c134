"""TDS packet framing (MS-TDS 2.2.3): an 8-byte header, then up to packet-size bytes.

The header is type, status, length (u16 big-endian, header included), SPID (u16 BE), packet id
and window. A message is the concatenated payloads up to a packet whose status has EOM (0x01).
Reads go through a :class:`Channel` so the same code runs on plain TCP and inside TLS.
"""

from __future__ import annotations

import asyncio
import struct
from dataclasses import dataclass
from typing import Protocol

from mssql_cdc.emulator.protocol.wire import ProtocolError

__all__ = ["Channel", "Framer", "Message", "PacketReader", "PacketType", "frame"]

HEADER = struct.Struct(">BBHHBB")
STATUS_EOM = 0x01
STATUS_IGNORE = 0x02
#: A client message larger than this is treated as malformed (LOGIN7 is at most 128 KiB; a
#: SQL batch of this size is far beyond anything the product or its tests send).
MAX_MESSAGE = 64 * 1024 * 1024
#: Seconds a client may take to finish a packet it started (and, before login, to send its next
#: packet) before the connection is closed: a client that sends half a header and waits must
#: not hold a session open for ever. Between requests a logged-in client may stay idle.
READ_TIMEOUT = 30.0


class PacketType:
    SQL_BATCH = 0x01
    RPC = 0x03
    REPLY = 0x04
    ATTENTION = 0x06
    TRANSACTION_MANAGER = 0x0E
    LOGIN7 = 0x10
    PRELOGIN = 0x12


class Channel(Protocol):
    """A byte stream: plain TCP or TLS."""

    async def read_some(self) -> bytes:
        """Some bytes, or ``b""`` at end of stream."""

    async def write(self, data: bytes) -> None: ...


@dataclass(frozen=True)
class Message:
    type: int
    status: int
    payload: bytes


class PacketReader:
    """Assembles messages from a channel; keeps bytes read past the last packet.

    ``read_timeout`` bounds the wait for the rest of a packet once its first byte arrived and,
    unless ``idle_ok``, the wait for a packet's first byte too (before login). Passed, it is a
    :class:`ProtocolError`, which closes the connection.
    """

    def __init__(
        self, channel: Channel, *, read_timeout: float = READ_TIMEOUT, idle_ok: bool = True
    ) -> None:
        self.channel = channel
        self.buffer = bytearray()
        self.read_timeout = read_timeout
        self.idle_ok = idle_ok
        self._in_message = False  # a packet without EOM was read: the next one is due

    async def _read(self) -> bytes:
        if self.idle_ok and not self.buffer and not self._in_message:
            return await self.channel.read_some()
        try:
            return await asyncio.wait_for(self.channel.read_some(), self.read_timeout)
        except TimeoutError:
            what = "part of a packet" if self.buffer else "nothing before logging in"
            raise ProtocolError(
                f"the client sent {what} and then nothing for {self.read_timeout:g} s"
            ) from None

    async def _fill(self, n: int) -> bool:
        while len(self.buffer) < n:
            data = await self._read()
            if not data:
                if self.buffer:
                    raise ProtocolError("connection closed in the middle of a packet")
                return False
            self.buffer += data
        return True

    async def read_packet(self) -> tuple[int, int, bytes] | None:
        """One packet as (type, status, payload), or ``None`` at a clean end of stream."""
        if not await self._fill(HEADER.size):
            return None
        ptype, status, length, _spid, _pid, _window = HEADER.unpack_from(self.buffer)
        if length < HEADER.size:
            raise ProtocolError(f"packet length {length} is shorter than its header")
        if not await self._fill(length):
            raise ProtocolError("connection closed in the middle of a packet")
        payload = bytes(self.buffer[HEADER.size : length])
        del self.buffer[:length]
        return ptype, status, payload

    async def read_message(self) -> Message | None:
        """One whole message (up to EOM), or ``None`` at a clean end of stream."""
        first = await self.read_packet()
        if first is None:
            return None
        ptype, status, payload = first
        parts = [payload]
        size = len(payload)
        while not status & STATUS_EOM:
            self._in_message = True
            try:
                nxt = await self.read_packet()
            finally:
                self._in_message = False
            if nxt is None:
                raise ProtocolError("connection closed in the middle of a message")
            ntype, status, payload = nxt
            if ntype != ptype:
                if ntype == PacketType.ATTENTION:
                    return Message(ntype, status, b"")
                raise ProtocolError(f"packet type changed from 0x{ptype:02x} to 0x{ntype:02x}")
            size += len(payload)
            if size > MAX_MESSAGE:
                raise ProtocolError("message exceeds the emulator's size limit")
            parts.append(payload)
        return Message(ptype, status, b"".join(parts))


class Framer:
    """Splits one message, handed over in pieces, into packets of at most ``packet_size``
    bytes (header included): each full packet as soon as its bytes are there, the last one,
    with EOM, at :meth:`finish`. A reply is sent while the rest of it is still being encoded,
    as SQL Server streams rows; the packets are the same as :func:`frame` makes of the whole
    message (every packet but the last full, packet ids counting from 1 modulo 256)."""

    def __init__(self, ptype: int, packet_size: int, spid: int = 0) -> None:
        self.ptype = ptype
        self.spid = spid
        self.room = max(packet_size - HEADER.size, 1)
        self._pending = b""
        self._count = 0

    def _packet(self, chunk: bytes | memoryview, status: int) -> bytes:
        self._count += 1
        size = len(chunk) + HEADER.size
        return HEADER.pack(self.ptype, status, size, self.spid, self._count % 256, 0) + chunk

    def feed(self, data: bytes) -> bytes:
        """The full packets ``data`` completes (possibly none); at least one byte stays back,
        since the last packet is only known at :meth:`finish`."""
        pending = self._pending + data if self._pending else data
        view = memoryview(pending)
        out = []
        at = 0
        while len(pending) - at > self.room:
            out.append(self._packet(view[at : at + self.room], 0))
            at += self.room
        self._pending = bytes(view[at:])
        return b"".join(out)

    def finish(self) -> bytes:
        """The last packet (EOM), holding what is left (possibly nothing)."""
        last = self._packet(self._pending, STATUS_EOM)
        self._pending = b""
        return last


def frame(ptype: int, payload: bytes, packet_size: int, spid: int = 0) -> bytes:
    """Split a message into packets of at most ``packet_size`` bytes (header included)."""
    framer = Framer(ptype, packet_size, spid)
    return framer.feed(payload) + framer.finish()
