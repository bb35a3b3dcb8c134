"""A client that stalls inside a packet, or never logs in, is disconnected after the emulator's
read timeout instead of holding a session for ever; a logged-in client may stay idle between
requests (SQL Server keeps an idle session open). A statement the emulator does not support is
answered with an error, never a hang."""

from __future__ import annotations

import socket
import struct
import time

import pytest

from mssql_cdc import _native
from mssql_cdc.errors import SqlServerError

TIMEOUT = 0.3


@pytest.fixture
def server(sql_server, emulator):
    emulator.server.read_timeout = TIMEOUT
    return sql_server


def _closed_within(sock: socket.socket, seconds: float) -> float:
    """Seconds until the server closes ``sock`` (fails if it does not within ``seconds``)."""
    sock.settimeout(seconds)
    started = time.monotonic()
    while True:
        try:
            data = sock.recv(4096)
        except TimeoutError:
            pytest.fail(f"the server kept the connection open for {seconds} s")
        except ConnectionResetError:
            data = b""
        if not data:
            return time.monotonic() - started


@pytest.mark.parametrize(
    "sent",
    [
        b"",  # connects and sends nothing
        b"\x12\x01\x00",  # half a PRELOGIN header
        struct.pack(">BBHHBB", 0x12, 0x01, 200, 0, 1, 0) + b"\x00" * 20,  # a cut packet
        struct.pack(">BBHHBB", 0x12, 0x00, 8 + 4, 0, 1, 0) + b"\x00" * 4,  # no EOM packet
    ],
    ids=["nothing", "half-header", "cut-packet", "first-of-two-packets"],
)
def test_a_client_stalling_before_login_is_disconnected(server, sent):
    with socket.create_connection((server.host, server.port)) as sock:
        sock.sendall(sent)
        took = _closed_within(sock, 10)
    assert took < 5


def test_a_logged_in_client_may_idle_but_not_stall_inside_a_packet(server):
    text = f"Server=tcp:{server.host},{server.port};Encrypt=no"
    with _native.connect(text, user=server.user, password=server.password) as conn:
        time.sleep(3 * TIMEOUT)  # idle between requests for longer than the timeout
        assert conn.scalar("SELECT 1") == 1
    with socket.create_connection((server.host, server.port)) as sock:
        sock.sendall(b"\x12\x01")
        assert _closed_within(sock, 10) < 5


@pytest.mark.parametrize(
    "sql",
    [
        "BACKUP DATABASE master TO DISK = N'/tmp/x.bak'",
        "CREATE ASSEMBLY a FROM 0x00",
        "DBCC CHECKDB",
        "SELECT 1 FROM OPENROWSET('x', 'y', 'z')",
        "WAITFOR RECEIVE TOP (1) * FROM q",
    ],
)
def test_an_unsupported_statement_is_an_error_not_a_hang(server, sql):
    text = f"Server=tcp:{server.host},{server.port};Encrypt=no"
    with _native.connect(
        text, user=server.user, password=server.password, query_timeout=20
    ) as conn:
        with pytest.raises(SqlServerError) as info:
            conn.execute(sql)
        assert info.value.number > 0
        assert info.value.severity >= 11
        assert conn.scalar("SELECT 2") == 2
