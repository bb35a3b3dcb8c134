"""The emulator's TDS server as third-party clients see it (python-tds, pymssql)."""

from __future__ import annotations

import datetime as dt
import socket
import struct
import subprocess
import sys
import uuid
from decimal import Decimal

import pytest

pytds = pytest.importorskip("pytds")


def connect(server, **kwargs):
    return pytds.connect(
        server.host,
        port=server.port,
        user=server.user,
        password=server.password,
        database=server.database,
        autocommit=True,
        **kwargs,
    )


def test_plaintext_connection_runs_a_query(sql_server):
    with connect(sql_server) as conn, conn.cursor() as cur:
        cur.execute("SELECT 42 AS answer")
        assert cur.fetchall() == [(42,)]
        assert cur.description[0][0] == "answer"


def test_encrypted_connection_validates_the_emulator_ca(emulator, tmp_path):
    pytest.importorskip("OpenSSL", reason="python-tds encrypts through pyOpenSSL (dev extra)")
    ca = emulator.write_ca(tmp_path / "ca.pem")
    target = emulator_target(emulator)
    with connect(target, cafile=str(ca), validate_host=False) as conn, conn.cursor() as cur:
        cur.execute("SELECT N'over TLS'")
        assert cur.fetchall() == [("over TLS",)]


def emulator_target(emu):
    class Target:
        host = emu.host
        port = emu.port
        user = "sa"
        password = emu.password
        database = "master"

    return Target


def test_wrong_password_is_error_18456(sql_server):
    with pytest.raises(pytds.tds_base.Error) as info:
        pytds.connect(
            sql_server.host, port=sql_server.port, user="sa", password="wrong", autocommit=True
        )
    assert "Login failed for user 'sa'" in str(info.value)
    assert getattr(info.value, "msg_no", 18456) == 18456


def test_typed_values_round_trip_exactly(sql_server):
    sql = """
    SELECT CAST(255 AS tinyint), CAST(-32768 AS smallint), CAST(-2147483648 AS int),
           CAST(9223372036854775807 AS bigint), CAST(1 AS bit),
           CAST('-99999999999999999999999999999999999999' AS decimal(38,0)),
           CAST('0.12345678901234567890123456789012345678' AS decimal(38,38)),
           CAST('922337203685477.5807' AS money), CAST('-214748.3648' AS smallmoney),
           CAST(1.5 AS float), CAST('9999-12-31 23:59:59.9999999' AS datetime2(7)),
           CAST('2024-02-29' AS date), CAST('23:59:59.123' AS time(3)),
           CAST('2024-03-10 01:02:03.456 -08:00' AS datetimeoffset(3)),
           CAST('2024-01-01 10:00:00.003' AS datetime),
           CAST('6F9619FF-8B86-D011-B42D-00C04FC964FF' AS uniqueidentifier),
           CAST('café' AS varchar(10)), N'\U0001f600 ok', CONVERT(binary(10),
           '0x0000002A000001F40003', 1), CAST(NULL AS nvarchar(max))
    """
    with connect(sql_server) as conn, conn.cursor() as cur:
        cur.execute(sql)
        row = cur.fetchone()
    assert row[0] == 255
    assert row[1] == -32768
    assert row[2] == -(2**31)
    assert row[3] == 2**63 - 1
    assert row[4] is True
    assert row[5] == Decimal("-99999999999999999999999999999999999999")
    assert row[6] == Decimal("0.12345678901234567890123456789012345678")
    assert row[7] == Decimal("922337203685477.5807")
    assert row[8] == Decimal("-214748.3648")
    assert row[9] == 1.5
    assert row[10] == dt.datetime(9999, 12, 31, 23, 59, 59, 999999)
    assert row[11] == dt.date(2024, 2, 29)
    assert row[12] == dt.time(23, 59, 59, 123000)
    assert row[13] == dt.datetime(
        2024, 3, 10, 1, 2, 3, 456000, tzinfo=dt.timezone(dt.timedelta(hours=-8))
    )
    assert row[14] == dt.datetime(2024, 1, 1, 10, 0, 0, 3000)
    assert row[15] == uuid.UUID("6F9619FF-8B86-D011-B42D-00C04FC964FF")
    assert row[16] == "café"
    assert row[17] == "\U0001f600 ok"
    assert row[18] == bytes.fromhex("0000002A000001F40003")
    assert row[19] is None


def test_sp_executesql_parameters_are_typed(sql_server):
    with connect(sql_server) as conn, conn.cursor() as cur:
        cur.execute(
            "SELECT %s AS i, %s AS s, %s AS b, CONVERT(varchar(22), %s, 1) AS lsn",
            (
                7,
                "text",
                pytds.Binary(b"\x01\x02"),
                pytds.Binary(bytes.fromhex("0000002A000001F40003")),
            ),
        )
        assert cur.fetchall() == [(7, "text", b"\x01\x02", "0x0000002A000001F40003")]


def test_unsupported_tsql_is_a_sql_error_and_the_session_goes_on(sql_server):
    with connect(sql_server) as conn, conn.cursor() as cur:
        with pytest.raises(pytds.tds_base.Error):
            cur.execute("SELECT * FROM dbo.no_such_table")
        cur.execute("SELECT 1")
        assert cur.fetchall() == [(1,)]


def test_malformed_tds_closes_only_that_connection(emulator):
    with socket.create_connection((emulator.host, emulator.port), timeout=5) as bad:
        bad.sendall(struct.pack(">BBHHBB", 0x12, 0x01, 4, 0, 1, 0))  # length < header
        assert bad.recv(100) == b""  # closed by the server
    with connect(emulator_target(emulator)) as conn, conn.cursor() as cur:
        cur.execute("SELECT 2")
        assert cur.fetchall() == [(2,)]


def test_pymssql_freetds_reads_typed_values(sql_server):
    pymssql = pytest.importorskip("pymssql")
    conn = pymssql.connect(
        server=sql_server.host,
        port=str(sql_server.port),
        user=sql_server.user,
        password=sql_server.password,
        tds_version="7.4",
    )
    try:
        cur = conn.cursor()
        cur.execute(
            "SELECT 1 AS a, N'x' AS b, CAST('2020-01-01 10:00:00.1234567' AS datetime2(7)) AS c"
        )
        assert cur.fetchall() == [(1, "x", dt.datetime(2020, 1, 1, 10, 0, 0, 123456))]
    finally:
        conn.close()


def test_command_line_prints_ready_and_stops_on_sigterm():
    proc = subprocess.Popen(
        [sys.executable, "-m", "mssql_cdc.emulator", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith("ready 127.0.0.1:")
        port = int(line.strip().rsplit(":", 1)[1])
        conn = pytds.connect(
            "127.0.0.1", port=port, user="sa", password="Emulator-Passw0rd!", autocommit=True
        )
        with conn.cursor() as cur:
            cur.execute("SELECT CURRENT_TIMEZONE_ID()")
            assert cur.fetchall() == [("UTC",)]
        conn.close()
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        assert proc.stdout.read() == ""
    finally:
        proc.kill()
