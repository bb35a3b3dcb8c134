"""Replay mode: a recorded response served from memory to any client (emulator.replay)."""

from __future__ import annotations

import pyarrow as pa
import pytds

from mssql_cdc import _native
from mssql_cdc.emulator.engine.database import Database
from mssql_cdc.emulator.replay import ReplayServer, record

QUERY = "SELECT 1 AS id, N'caf\u00e9 \U0001f600' AS name UNION ALL SELECT 2, NULL"
EXPECTED = [{"id": 1, "name": "caf\u00e9 \U0001f600"}, {"id": 2, "name": None}]


def test_recorded_response_is_served_to_every_request_and_client():
    payload = record(Database(), QUERY)
    assert payload[0] == 0x81  # COLMETADATA first
    with ReplayServer(payload) as server:
        text = f"Server=127.0.0.1,{server.port};Encrypt=optional"
        with _native.connect(text, user="any", password="any") as conn:
            for _ in range(3):  # the same answer, request after request
                assert pa.table(conn.execute("SELECT whatever")).to_pylist() == EXPECTED
            assert conn.stats()["round_trips"] == 5
        with pytds.connect(
            server.host, port=server.port, user="any", password="any", autocommit=True
        ) as other:
            cursor = other.cursor()
            cursor.execute("SELECT anything")
            assert cursor.fetchall() == [(1, "caf\u00e9 \U0001f600"), (2, None)]
    assert sorted(server._framed) == [4096, 32767]  # framed once per packet size


def test_repeat_mode_streams_a_long_result_at_every_packet_size():
    db = Database()
    head = record(db, "SELECT 7 AS id")
    meta_end = head.index(b"\xd1")  # COLMETADATA, then one ROW token, then DONE
    row = head[meta_end : head.index(b"\xfd")]
    tail = head[head.index(b"\xfd") :]
    for packet_size in (512, 4096, 32767):
        with ReplayServer(head[:meta_end], repeat=(row, 25_000, tail)) as server:
            text = f"Server=127.0.0.1,{server.port};Encrypt=optional;Packet Size={packet_size}"
            with _native.connect(text, user="any", password="any") as conn:
                table = pa.table(conn.execute("SELECT", batch_rows=4096))
                assert table.num_rows == 25_000
                assert set(table.column("id").to_pylist()) == {7}
