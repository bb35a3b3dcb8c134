"""The native client against a server that sends too much or too slowly (issue 17): one row,
so one value, is held up to ``max_buffer`` bytes and no more (an ``UnsupportedDataError`` naming the
limit and the reader option); ``query_timeout`` is a deadline for the whole request, so a
server that trickles bytes cannot hold a query open past it."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from mssql_cdc import _native
from mssql_cdc.errors import SqlTimeoutError, UnsupportedDataError
from mssql_cdc.source.retry import with_retry

MIB = 1 << 20


def _text(host: str, port: int) -> str:
    return f"Server=tcp:{host},{port};Encrypt=yes;TrustServerCertificate=yes"


@pytest.fixture
def blobs(sql_server):
    """dbo.blobs: id 1 holds 3 MiB, id 2 holds 600 KiB (varbinary(max))."""
    text = _text(sql_server.host, sql_server.port)
    with _native.connect(text, user=sql_server.user, password=sql_server.password) as conn:
        conn.execute("CREATE TABLE dbo.blobs (id int PRIMARY KEY, b varbinary(max))")
        conn.execute("INSERT INTO dbo.blobs VALUES (1, @P1)", [bytes(range(256)) * (3 * 4096)])
        conn.execute("INSERT INTO dbo.blobs VALUES (2, @P1)", [b"\x07" * (600 * 1024)])
    return text


def test_a_value_larger_than_max_buffer_is_refused_naming_the_limit(sql_server, blobs):
    conn = _native.connect(
        blobs, user=sql_server.user, password=sql_server.password, max_buffer=MIB
    )
    small = conn.execute("SELECT b FROM dbo.blobs WHERE id = 2").reader().read_all()
    assert small.column(0)[0].as_py() == b"\x07" * (600 * 1024)
    with pytest.raises(UnsupportedDataError) as info:
        conn.execute("SELECT b FROM dbo.blobs WHERE id = 1").reader().read_all()
    message = str(info.value)
    assert f"more than {MIB} bytes" in message
    assert "max_buffer" in message
    assert "maxRowBytes" in message
    conn.close()


def test_a_value_larger_than_max_buffer_is_not_retried(sql_server, blobs):
    """Regression: the limit was a ProtocolError, which driver retries treat as transient, so
    a too-large row was read four times (and waited ~14 s) before failing."""
    conn = _native.connect(
        blobs, user=sql_server.user, password=sql_server.password, max_buffer=MIB
    )
    waits: list[float] = []

    class Client:
        def close(self) -> None:
            pass

    def read() -> object:
        return conn.execute("SELECT b FROM dbo.blobs WHERE id = 1").reader().read_all()

    with pytest.raises(UnsupportedDataError, match="maxRowBytes"):
        with_retry(Client(), "read", read, sleep=waits.append)  # type: ignore[arg-type]
    assert waits == []
    conn.close()


def test_the_default_limit_holds_a_value_of_a_few_mib(sql_server, blobs):
    with _native.connect(blobs, user=sql_server.user, password=sql_server.password) as conn:
        table = conn.execute("SELECT b FROM dbo.blobs WHERE id = 1").reader().read_all()
        assert table.column(0)[0].as_py() == bytes(range(256)) * (3 * 4096)


def test_max_buffer_must_not_be_negative(sql_server):
    with pytest.raises(ValueError, match="max_buffer"):
        _native.connect(_text(sql_server.host, sql_server.port), max_buffer=-1)


class TrickleProxy:
    """A TCP proxy in front of the server; once ``slow`` is set it forwards the server's bytes
    8 at a time every 10 ms (a server that keeps a connection busy but never finishes)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.slow = threading.Event()
        self.stop = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.threads: list[threading.Thread] = []
        self.sockets: list[socket.socket] = []
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self.threads.append(accept)

    def _accept(self) -> None:
        try:
            client, _ = self.listener.accept()
        except OSError:
            return
        server = socket.create_connection(self.target)
        self.sockets += [client, server]
        for src, dst, trickle in ((client, server, False), (server, client, True)):
            t = threading.Thread(target=self._pump, args=(src, dst, trickle), daemon=True)
            t.start()
            self.threads.append(t)

    def _pump(self, src: socket.socket, dst: socket.socket, trickle: bool) -> None:
        try:
            while not self.stop.is_set():
                data = src.recv(65536)
                if not data:
                    break
                while data and trickle and self.slow.is_set() and not self.stop.is_set():
                    dst.sendall(data[:8])
                    data = data[8:]
                    self.stop.wait(0.01)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        for s in self.sockets:
            s.close()
        for t in self.threads:
            t.join(timeout=5)


@pytest.fixture
def proxy(sql_server) -> Iterator[TrickleProxy]:
    p = TrickleProxy(sql_server.host, sql_server.port)
    yield p
    p.close()


def test_query_timeout_is_a_deadline_for_the_whole_query(sql_server, blobs, proxy):
    """600 KiB at 800 bytes/s would take minutes; every read gets bytes within 10 ms, so only a
    deadline for the whole request ends it, about when it is due."""
    conn = _native.connect(
        _text("127.0.0.1", proxy.port),
        user=sql_server.user,
        password=sql_server.password,
        query_timeout=1.0,
    )
    assert conn.scalar("SELECT 1") == 1
    proxy.slow.set()
    started = time.monotonic()
    with pytest.raises(SqlTimeoutError, match="query_timeout") as info:
        conn.execute("SELECT b FROM dbo.blobs WHERE id = 2").reader().read_all()
    took = time.monotonic() - started
    assert "1 s" in str(info.value)
    assert 0.9 <= took < 10, took
    with pytest.raises(Exception, match="query_timeout"):
        conn.scalar("SELECT 2")
    conn.close()
