"""Replay mode: serve one recorded response from memory to any TDS client, as fast as the
network allows, so client decoders can be measured without the server as the bottleneck
(issue 3, "Speed"; bench/decode.py).

The replay server speaks just enough TDS for a client to log in (PRELOGIN answered with
ENCRYPT_NOT_SUP, so the session is plaintext; LOGIN7 answered with LOGINACK, a packet-size
ENVCHANGE and DONE, whatever the credentials), then answers every SQLBatch or RPC with the
recorded token stream, framed once per packet size and sent from memory. Attention gets a DONE
with the ATTN bit. It is a measuring tool, not a SQL Server: it never parses the request.

    payload = record(emulator.db, "SELECT ...")      # or any token-stream bytes
    with ReplayServer(payload) as server:
        connect(f"Server=127.0.0.1,{server.port};Encrypt=optional", ...)

Command line: ``python -m mssql_cdc.emulator.replay --payload FILE [--port 0]`` prints
``ready HOST:PORT`` and serves until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import signal
import socket
import struct
import sys
import threading
from pathlib import Path
from types import TracebackType

from mssql_cdc.emulator.engine.database import Database
from mssql_cdc.emulator.engine.executor import Executor
from mssql_cdc.emulator.protocol import packets, prelogin, tokens
from mssql_cdc.emulator.server.render import render

__all__ = ["ReplayServer", "record"]

log = logging.getLogger("mssql_cdc.emulator.replay")

_HEADER = struct.Struct(">BBHHBB")
_ENV_PACKET_SIZE = 4
_TDS74 = 0x74000004


def record(db: Database, sql: str) -> bytes:
    """The token stream the emulator answers ``sql`` with (a SQLBatch response payload)."""
    executor = Executor(db, spid=0)
    return render(executor.run_batch(sql), nocount=executor.nocount)


def _read_exact(conn: socket.socket, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _read_message(conn: socket.socket) -> tuple[int, bytes] | None:
    """One client message: (packet type, payload), or None when the client left."""
    parts: list[bytes] = []
    while True:
        header = _read_exact(conn, _HEADER.size)
        if header is None:
            return None
        ptype, status, length, _, _, _ = _HEADER.unpack(header)
        if length < _HEADER.size:
            return None
        body = _read_exact(conn, length - _HEADER.size)
        if body is None:
            return None
        parts.append(body)
        if status & 0x01:
            return ptype, b"".join(parts)


class ReplayServer:
    """Serves ``payload`` (a response token stream) to every request on a loopback port.

    With ``marker``, only requests whose text holds it get the recording; others (a driver's
    own statements after login) get an empty DONE.

    With ``repeat=(body, times, tail)`` the answer is ``payload + body * times + tail``,
    streamed packet by packet instead of held whole: a result of tens of millions of rows
    (e.g. ``payload`` = COLMETADATA, ``body`` = 100,000 ROW tokens, ``tail`` = DONE) for
    memory measurements, at the cost of some server time per packet.
    """

    def __init__(
        self,
        payload: bytes,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        repeat: tuple[bytes, int, bytes] | None = None,
        marker: str | None = None,
    ) -> None:
        self.payload = payload
        self.repeat = repeat
        # Requests without the marker text (a driver's own set-up statements after login)
        # get an empty DONE instead of the recording.
        self.marker = marker.encode("utf-16-le") if marker else None
        self._framed: dict[int, bytes] = {}
        self._framed_lock = threading.Lock()
        self._listener = socket.create_server((host, port))
        self.host, self.port = self._listener.getsockname()[:2]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="replay-accept", daemon=True)

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        self._listener.close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def framed(self, packet_size: int) -> bytes:
        """The payload as reply packets of ``packet_size`` bytes (framed once, then cached)."""
        with self._framed_lock:
            if packet_size not in self._framed:
                self._framed[packet_size] = packets.frame(0x04, self.payload, packet_size)
            return self._framed[packet_size]

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._session, args=(conn,), daemon=True).start()

    def _session(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        packet_size = 4096
        try:
            while True:
                message = _read_message(conn)
                if message is None:
                    return
                ptype, body = message
                if ptype == 0x12:  # PRELOGIN: no encryption here
                    reply = prelogin.build_response(prelogin.ENCRYPT_NOT_SUP)
                    conn.sendall(packets.frame(0x04, reply, packet_size))
                elif ptype == 0x10:  # LOGIN7: take the packet size it asks for
                    asked = struct.unpack_from("<I", body, 8)[0] if len(body) >= 12 else 4096
                    packet_size = min(max(asked, 512), 32767) if asked else 4096
                    size = str(packet_size)
                    reply = (
                        tokens.loginack(_TDS74, (16, 0, 4135))
                        + tokens.env_text(_ENV_PACKET_SIZE, size, "4096")
                        + tokens.done()
                    )
                    conn.sendall(packets.frame(0x04, reply, packet_size))
                elif ptype == 0x06:  # Attention
                    conn.sendall(packets.frame(0x04, tokens.done(0x0020), packet_size))
                elif self.marker is not None and self.marker not in body:
                    conn.sendall(packets.frame(0x04, tokens.done(), packet_size))
                elif self.repeat is None:
                    conn.sendall(self.framed(packet_size))
                else:
                    self._stream(conn, packet_size)
        except OSError:
            return
        finally:
            conn.close()

    def _stream(self, conn: socket.socket, packet_size: int) -> None:
        """Sends payload + body * times + tail, framing packet by packet."""
        assert self.repeat is not None
        body, times, tail = self.repeat
        room = packet_size - _HEADER.size
        total = len(self.payload) + len(body) * times + len(tail)
        sent = 0
        packet_id = 1
        carry = b""  # the start of the next packet (shorter than room)

        def send(chunk: bytes) -> None:
            nonlocal sent, packet_id
            sent += len(chunk)
            header = _HEADER.pack(0x04, 1 if sent == total else 0, len(chunk) + 8, 0, packet_id, 0)
            conn.sendall(header + chunk)
            packet_id = (packet_id + 1) % 256

        for piece in (self.payload, *([body] * times), tail):
            view = memoryview(piece)
            if carry:
                need = room - len(carry)
                carry += bytes(view[:need])
                view = view[need:]
                if len(carry) < room:
                    continue
                send(carry)
                carry = b""
            full = len(view) - len(view) % room
            for offset in range(0, full, room):
                send(bytes(view[offset : offset + room]))
            carry = bytes(view[full:])
        if carry or sent < total or total == 0:
            send(carry)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mssql_cdc.emulator.replay",
        description="Serve a recorded TDS response from memory to every request (plaintext).",
    )
    parser.add_argument("--payload", required=True, type=Path, help="token-stream bytes to serve")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = ReplayServer(args.payload.read_bytes(), host=args.host, port=args.port).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"ready {server.host}:{server.port}", flush=True)
    stop.wait()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
