"""The native TDS client (mssql_cdc._native) against the SQL Server stand-in: connections, TLS
modes, login errors, timeouts (issue 4, proof 3)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pyarrow as pa
import pytest

from mssql_cdc import _native
from mssql_cdc.errors import (
    ConnectionLostError,
    LoginError,
    MssqlCdcError,
    SqlServerError,
    SqlTimeoutError,
    TlsError,
)


def conn_str(server, *, encrypt="yes", trust=True, host=None, extra=""):
    host = host or server.host
    text = f"Server=tcp:{host},{server.port};Database={server.database};Encrypt={encrypt}"
    if trust:
        text += ";TrustServerCertificate=yes"
    return text + extra


def connect(server, **kw):
    return _native.connect(
        conn_str(server, **kw), user=server.user, password=server.password, login_timeout=10
    )


@pytest.mark.parametrize("encrypt", ["no", "optional", "yes", "mandatory", "strict"])
def test_every_encrypt_mode_logs_in_and_queries(sql_server, encrypt):
    host = "localhost" if encrypt == "strict" else None
    with connect(sql_server, encrypt=encrypt, host=host) as conn:
        assert conn.scalar("SELECT 40 + 2") == 42
        stats = conn.stats()
        assert stats["round_trips"] >= 3  # PRELOGIN, LOGIN7, the query
        assert stats["bytes_received"] > 0
        assert stats["packets"] >= 3
    assert conn.closed


@pytest.mark.parametrize(
    ("encrypt", "tds_version", "requested"),
    [
        ("no", 0x74000004, 32767),  # only LOGIN7 travels in TLS
        ("yes", 0x74000004, 16383),
        ("strict", 0x08000000, 16383),
    ],
)
def test_login_asks_the_packet_size_and_tds_version_its_encryption_allows(
    sql_server, emulator, encrypt, tds_version, requested
):
    """16,383 bytes is the largest packet of an encrypted connection ("Configure the network
    packet size Server Configuration Option"); a strict login says TDS 8.0 as mssql-jdbc's."""
    host = "localhost" if encrypt == "strict" else None
    with connect(sql_server, encrypt=encrypt, host=host) as conn:
        assert conn.scalar("SELECT 1") == 1
        (record,) = emulator.logins().values()
    assert (record.tds_version, record.packet_size_requested) == (tds_version, requested)
    assert record.packet_size_granted == requested
    assert record.encrypted is (encrypt != "no")


def test_strict_accepts_a_server_that_selects_no_application_protocol(sql_server, emulator):
    """Only a server that selects another protocol than tds/8.0 is refused (as mssql-jdbc
    does); one whose TLS stack selects none is accepted."""
    emulator.set_strict_alpn(())
    with connect(sql_server, encrypt="strict", host="localhost") as conn:
        assert conn.scalar("SELECT 1") == 1
        (record,) = emulator.logins().values()
    assert record.tds_version == 0x08000000


def test_certificate_is_validated_against_the_ca(sql_server, emulator, tmp_path, monkeypatch):
    ca = emulator.write_ca(tmp_path / "ca.pem")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    for host in ("localhost", "127.0.0.1"):
        with connect(sql_server, trust=False, host=host) as conn:
            assert conn.scalar("SELECT 1") == 1


def test_untrusted_certificate_is_a_clean_tls_error(sql_server, emulator, tmp_path, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "no-such-ca.pem"))
    with pytest.raises(TlsError, match="certificate was not accepted") as info:
        connect(sql_server, trust=False, host="localhost")
    assert isinstance(info.value, ConnectionError)
    assert info.value.number is None


def test_wrong_host_name_is_a_clean_tls_error(sql_server, emulator, tmp_path, monkeypatch):
    monkeypatch.setenv("SSL_CERT_FILE", str(emulator.write_ca(tmp_path / "ca.pem")))
    with pytest.raises(TlsError, match="hostname mismatch"):
        connect(sql_server, trust=False, host="localhost", extra=";HostNameInCertificate=db.other")


def test_wrong_password_is_login_error_18456_without_the_password(sql_server):
    secret = "definitely-Wrong-pw-31337"
    with pytest.raises(LoginError) as info:
        _native.connect(conn_str(sql_server), user=sql_server.user, password=secret)
    err = info.value
    assert err.number == 18456
    assert "Login failed" in str(err)
    assert isinstance(err, SqlServerError)
    assert secret not in str(err)
    assert secret not in repr(err)


def test_password_from_the_connection_string_works_and_never_shows(sql_server):
    text = conn_str(sql_server) + f";UID={sql_server.user};PWD={{{sql_server.password}}}"
    conn = _native.connect(text)
    assert sql_server.password not in repr(conn)
    assert conn.scalar("SELECT 7") == 7
    conn.close()
    with pytest.raises(LoginError) as info:
        _native.connect(conn_str(sql_server) + ";UID=sa;PWD={x;y}}z}")
    assert "x;y}z" not in str(info.value)


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server that accepts and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for s in accepted:
        s.close()
    listener.close()


def test_login_timeout_fires(silent_server):
    start = time.monotonic()
    with pytest.raises(SqlTimeoutError, match="login timed out"):
        _native.connect(
            f"Server=127.0.0.1,{silent_server};Encrypt=no",
            user="sa",
            password="x",
            login_timeout=0.5,
        )
    assert time.monotonic() - start < 5


def test_refused_connection_is_connection_lost_error():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()  # nothing listens there now
    with pytest.raises(ConnectionLostError, match=f"cannot connect to 127.0.0.1,{port}"):
        _native.connect(f"Server=127.0.0.1,{port};Encrypt=no", user="sa", password="x")


def test_bad_connection_strings_are_value_errors():
    with pytest.raises(ValueError, match="Encrypt=maybe is not valid"):
        _native.connect("Server=h;Encrypt=maybe")
    with pytest.raises(ValueError, match="Server is required"):
        _native.connect("Database=x;Encrypt=no")
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="login_timeout must be a finite number"):
            _native.connect("Server=h", login_timeout=bad)
    with pytest.raises(ValueError, match="query_timeout must be a finite number"):
        _native.connect("Server=h", query_timeout=float("nan"))


def test_unknown_keywords_warn(sql_server):
    with pytest.warns(UserWarning, match="unknown keywords ignored: Foo"):
        connect(sql_server, extra=";Foo=bar").close()


def test_errors_are_one_tree():
    for cls in (LoginError, TlsError, SqlTimeoutError, ConnectionLostError):
        assert issubclass(cls, SqlServerError)
        assert issubclass(cls, MssqlCdcError)


def test_result_is_an_arrow_stream(sql_server):
    with connect(sql_server) as conn:
        reader = pa.RecordBatchReader.from_stream(conn.execute("SELECT 1 AS a, N'x' AS b"))
        assert reader.schema.names == ["a", "b"]
        assert reader.read_all().to_pylist() == [{"a": 1, "b": "x"}]


def test_secrets_never_leak_through_parse_errors_or_warnings(sql_server):
    # An unbraced ';' cuts the password: its tail must not be quoted back.
    with pytest.raises(ValueError, match="offset") as info:
        _native.connect("Server=h;PWD=abc;secretTail")
    assert "secretTail" not in str(info.value)
    with (
        pytest.warns(UserWarning, match="names not shown") as warned,
        pytest.raises(LoginError),
    ):
        _native.connect(conn_str(sql_server) + ";UID=sa;PWD=abc;secretTail=x")
    assert all("secretTail" not in str(w.message) for w in warned)
    # A lone surrogate would make Python's UnicodeEncodeError carry the whole string.
    for kwargs in ({"password": "pw\udc80secret"}, {"access_token": "tok\udc80secret"}):
        with pytest.raises(ValueError, match="lone surrogate") as info:
            _native.connect(conn_str(sql_server), user="sa", **kwargs)
        assert "secret" not in repr(info.value)
    with pytest.raises(ValueError, match="connection_string is not valid") as info:
        _native.connect("Server=h;PWD=x\udc80secret")
    assert "secret" not in repr(info.value)


@pytest.fixture
def trickling_server() -> Iterator[int]:
    """Answers PRELOGIN, then sends the login response one byte every 0.2 s (bounded)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    stop = threading.Event()

    def serve():
        listener.settimeout(5)
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        with conn:
            conn.recv(4096)  # PRELOGIN
            reply = bytes.fromhex("0100060001ff02")  # ENCRYPTION = NOT_SUP
            conn.sendall(bytes([4, 1, 0, 8 + len(reply), 0, 0, 1, 0]) + reply)
            conn.recv(8192)  # LOGIN7
            for _ in range(100):  # at most 20 s, far past the 1 s login timeout
                if stop.wait(0.2):
                    return
                try:
                    conn.sendall(b"\x04")
                except OSError:
                    return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    listener.close()


def test_login_timeout_is_a_deadline_for_the_whole_login(trickling_server):
    start = time.monotonic()
    with pytest.raises(SqlTimeoutError):
        _native.connect(
            f"Server=127.0.0.1,{trickling_server};Encrypt=optional",
            user="sa",
            password="x",
            login_timeout=1,
        )
    assert time.monotonic() - start < 5
