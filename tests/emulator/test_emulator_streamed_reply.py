"""The emulator streams a large result as SQL Server does (emulator/server/render.py,
emulator/protocol/packets.py): rows are encoded a piece at a time as the reply is sent, so a
client decodes while the rest is encoded and a client that stops reading stops the encoding.

* the packets of a message handed over in pieces are the packets of the whole message;
* a result of several pieces is encoded lazily, piece by piece, and reads back whole;
* an error met after rows were sent follows them (ERROR, then DONE with the error bit);
* a connection that fails while a reply is sent stops the encoding there.
"""

from __future__ import annotations

import asyncio
import random
import types
from typing import Any

import pyarrow as pa
import pytest

from mssql_cdc import _native
from mssql_cdc.emulator.core.faults import FaultRegistry
from mssql_cdc.emulator.engine.executor import Executor
from mssql_cdc.emulator.protocol import arrowrows, tokens
from mssql_cdc.emulator.protocol.packets import (
    HEADER,
    STATUS_EOM,
    Framer,
    Message,
    PacketType,
    frame,
)
from mssql_cdc.emulator.server import render
from mssql_cdc.emulator.server.session import Session

ROWS = render.FIRST_ROWS + render.STREAM_ROWS + 7  # three pieces, the last a short one


def test_packets_of_a_message_in_pieces_are_those_of_the_whole_message():
    r = random.Random(7)
    for _ in range(300):
        size = r.choice([0, 1, 503, 504, 505, 4088, 20_000, r.randrange(0, 70_000)])
        message = r.randbytes(size)
        packet_size = r.choice([512, 4096, 8000, 32_767])
        framer = Framer(PacketType.REPLY, packet_size, spid=51)
        out, at = [], 0
        while at < size:
            step = r.choice([0, 1, 7, 503, 504, 5000, 40_000])
            out.append(framer.feed(message[at : at + step]))
            at += step
        out.append(framer.finish())
        data = b"".join(out)
        assert data == frame(PacketType.REPLY, message, packet_size, spid=51)
        # checked without the framing code (``frame`` is built on ``Framer``): the payloads
        # put back together are the message, every packet but the last is full, ids count up
        headers, payload = _packets(data)
        assert payload == message
        room = packet_size - HEADER.size
        assert all(size == room for _, size, _ in headers[:-1])
        assert [status for status, _, _ in headers] == [0] * (len(headers) - 1) + [STATUS_EOM]
        assert [i for _, _, i in headers] == [n % 256 for n in range(1, len(headers) + 1)]


def _packets(data: bytes) -> tuple[list[tuple[int, int, int]], bytes]:
    """(status, payload size, packet id) of each packet of ``data``, and the payloads."""
    headers, payloads, at = [], [], 0
    while at < len(data):
        _type, status, length, _spid, packet_id, _ = HEADER.unpack_from(data, at)
        headers.append((status, length - HEADER.size, packet_id))
        payloads.append(data[at + HEADER.size : at + length])
        at += length
    return headers, b"".join(payloads)


def test_every_packet_but_the_last_is_full_and_only_the_last_has_eom():
    framer = Framer(PacketType.REPLY, 512, spid=1)
    data = framer.feed(b"x" * 1000) + framer.feed(b"y" * 24) + framer.finish()
    room = 512 - HEADER.size
    headers, _ = _packets(data)
    assert headers == [(0, room, 1), (0, room, 2), (STATUS_EOM, 1024 - 2 * room, 3)]


@pytest.fixture
def many_rows(emulator: Any) -> Executor:
    """``dbo.stream_rows`` with :data:`ROWS` rows (id, name), filled in the engine."""
    executor = Executor(emulator.db, 1)
    outcome = executor.run_batch(
        "CREATE TABLE dbo.stream_rows (id int NOT NULL PRIMARY KEY, name nvarchar(20))"
    )
    assert outcome.error is None, outcome.error
    emulator.db.system.execute(
        'INSERT INTO dbo."stream_rows" '
        "SELECT i::INTEGER, 'row ' || i::VARCHAR FROM range(?) t(i)",
        [ROWS],
    )
    yield executor
    executor.close()


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the C encoder's calls made by the renderer (rows per call)."""
    calls: list[int] = []
    real = arrowrows.encode_rows

    def counted(columns: Any, rows: Any) -> bytes | None:
        calls.append(len(rows))
        return real(columns, rows)

    monkeypatch.setattr(render, "encode_rows", counted)
    return calls


def test_a_large_result_is_encoded_a_piece_at_a_time(many_rows, monkeypatch):
    outcome = many_rows.run_batch("SELECT id, name FROM dbo.stream_rows ORDER BY id")
    result = outcome.results[0]
    whole = arrowrows.encode_rows(result.columns, result.rows)
    calls = _counting(monkeypatch)
    pieces = render.render_stream(outcome)
    first = next(pieces)
    assert calls == [render.FIRST_ROWS]  # only the first piece's rows are encoded yet
    assert first.startswith(tokens.colmetadata(result.columns))
    rest = list(pieces)
    # these narrow rows reach the most rows a piece holds once the first piece is measured
    assert calls == [
        render.FIRST_ROWS,
        render.STREAM_ROWS,
        ROWS - render.FIRST_ROWS - render.STREAM_ROWS,
    ]
    reply = first + b"".join(rest)
    assert whole is not None
    assert reply.startswith(tokens.colmetadata(result.columns) + whole)
    assert reply == render.render(outcome)


def test_wide_rows_make_pieces_of_about_stream_bytes(emulator):
    """4,000-byte rows: about 262 to a piece, not 16,384 (64 MB)."""
    executor = Executor(emulator.db, 1)
    outcome = executor.run_batch("CREATE TABLE dbo.wide_rows (id int NOT NULL, pad nchar(2000))")
    assert outcome.error is None, outcome.error
    emulator.db.system.execute(
        "INSERT INTO dbo.\"wide_rows\" SELECT i::INTEGER, repeat('w', 2000) FROM range(?) t(i)",
        [2_000],
    )
    outcome = executor.run_batch("SELECT id, pad FROM dbo.wide_rows ORDER BY id")
    executor.close()
    pieces = list(render.render_stream(outcome))
    rows = pieces[1:-1]  # the first holds COLMETADATA, the last is the DONE token
    assert len(rows) >= 5
    assert all(render.STREAM_BYTES * 0.9 < len(p) <= render.STREAM_BYTES for p in rows[:-1])
    assert b"".join(pieces) == render.render(outcome)


def test_a_streamed_result_reads_back_whole(sql_server, many_rows):
    text = f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=no"
    with _native.connect(text, user=sql_server.user, password=sql_server.password) as conn:
        table = pa.table(
            conn.execute("SELECT id, name FROM dbo.stream_rows ORDER BY id", batch_rows=5_000)
        )
    assert table.num_rows == ROWS
    assert table.column("id").to_pylist() == list(range(ROWS))
    assert table.column("name")[ROWS - 1].as_py() == f"row {ROWS - 1}"


def test_an_error_after_rows_were_sent_follows_them(many_rows, monkeypatch):
    """The second piece cannot be encoded: the first piece's rows stay sent, then error 8115
    and a DONE with the error bit (SQL Server reports an error met mid-result the same way)."""
    outcome = many_rows.run_batch("SELECT id, name FROM dbo.stream_rows ORDER BY id")
    calls = _counting(monkeypatch)
    real = render.encode_rows

    def second_declined(columns: Any, rows: Any) -> bytes | None:
        return real(columns, rows) if not calls else None

    def overflow(columns: Any, row: Any) -> bytes:
        raise OverflowError("value out of range")

    monkeypatch.setattr(render, "encode_rows", second_declined)
    monkeypatch.setattr(tokens, "row", overflow)
    pieces = list(render.render_stream(outcome))
    result = outcome.results[0]
    first = tokens.colmetadata(result.columns) + arrowrows.encode_rows(
        result.columns, result.rows[: render.FIRST_ROWS]
    )
    assert pieces[0] == first
    message = "Arithmetic overflow error converting expression to data type of the result column."
    assert pieces[1:] == [
        tokens.error(8115, 1, 16, message),
        tokens.done(tokens.DONE_ERROR, 0, 0),
    ]


def _session() -> Session:
    """A session with what ``_reply`` uses (no fault armed, 4,096-byte packets), no socket."""
    session = Session.__new__(Session)
    session.server = types.SimpleNamespace(faults=FaultRegistry())
    session.packet_size = 4096
    session.spid = 1
    return session


class _FailingChannel:
    """Takes ``writes`` writes, then fails as a connection the client closed does."""

    def __init__(self, writes: int) -> None:
        self.left = writes

    async def write(self, data: bytes) -> None:
        if not self.left:
            raise ConnectionResetError("connection reset by peer")
        self.left -= 1


def test_a_failed_connection_stops_the_encoding(many_rows, monkeypatch):
    outcome = many_rows.run_batch("SELECT id, name FROM dbo.stream_rows ORDER BY id")
    calls = _counting(monkeypatch)
    session = _session()
    with pytest.raises(ConnectionResetError):
        asyncio.run(session._reply(_FailingChannel(1), outcome, render.render_stream(outcome)))
    # the first piece is written, the second fails to be: the third is never encoded
    assert calls == [render.FIRST_ROWS, render.STREAM_ROWS]


class _Channel:
    def __init__(self) -> None:
        self.writes: list[bytes] = []

    async def write(self, data: bytes) -> None:
        self.writes.append(data)


def test_the_event_loop_runs_other_work_between_pieces(many_rows):
    """A socket that takes every write at once must not keep a kill or another session
    waiting until the whole reply is sent."""
    outcome = many_rows.run_batch("SELECT id, name FROM dbo.stream_rows ORDER BY id")
    session = _session()
    channel = _Channel()
    seen: list[int] = []

    async def reply() -> None:
        asyncio.get_running_loop().call_soon(lambda: seen.append(len(channel.writes)))
        await session._reply(channel, outcome, render.render_stream(outcome))

    asyncio.run(reply())
    assert seen == [1]  # it ran after the first piece's packets, not after the last


def _next_message(msg: Message | None) -> asyncio.Future[Message | None]:
    """The read of the client's next message, already finished with ``msg``."""
    future: asyncio.Future[Message | None] = asyncio.get_running_loop().create_future()
    future.set_result(msg)
    return future


def _reply_with_next(
    outcome: Any, msg: Message | None, *, before_piece: int = 0
) -> tuple[bool, list[bytes]]:
    """``_reply`` where the client's next message, ``msg``, has been read by the time piece
    number ``before_piece`` (0: the first) is handed over; (its result, the writes)."""
    session = _session()
    channel = _Channel()
    cut = render.Cut()

    async def reply() -> bool:
        incoming: asyncio.Future[Message | None] = asyncio.get_running_loop().create_future()

        def pieces() -> Any:
            for number, piece in enumerate(render.render_stream(outcome, cut=cut)):
                if number == before_piece:
                    incoming.set_result(msg)
                yield piece

        return await session._reply(channel, outcome, pieces(), incoming, cut)

    return asyncio.run(reply()), channel.writes


def test_an_attention_during_a_reply_cuts_it_and_is_acknowledged_in_it(many_rows, monkeypatch):
    """SQL Server stops a result on an Attention and ends the reply with DONE (ATTN)."""
    outcome = many_rows.run_batch("SELECT id, name FROM dbo.stream_rows ORDER BY id")
    result = outcome.results[0]
    calls = _counting(monkeypatch)
    cut, writes = _reply_with_next(outcome, Message(PacketType.ATTENTION, STATUS_EOM, b""))
    assert cut
    assert calls == [render.FIRST_ROWS]  # the rest is never encoded
    headers, payload = _packets(b"".join(writes))
    assert [status for status, _, _ in headers][-1] == STATUS_EOM  # one message
    first = tokens.colmetadata(result.columns) + arrowrows.encode_rows(
        result.columns, result.rows[: render.FIRST_ROWS]
    )
    assert payload == first + tokens.done(tokens.DONE_ATTN)


def test_a_request_read_during_a_reply_waits_for_it(many_rows):
    """Only an Attention cuts a reply; another message is served after it, whole."""
    outcome = many_rows.run_batch("SELECT id, name FROM dbo.stream_rows ORDER BY id")
    cut, writes = _reply_with_next(outcome, Message(PacketType.SQL_BATCH, STATUS_EOM, b""))
    assert not cut
    assert _packets(b"".join(writes))[1] == render.render(outcome)


def test_a_client_gone_during_a_reply_stops_it(many_rows, monkeypatch):
    outcome = many_rows.run_batch("SELECT id, name FROM dbo.stream_rows ORDER BY id")
    calls = _counting(monkeypatch)
    cut, writes = _reply_with_next(outcome, None)
    assert not cut
    assert calls == [render.FIRST_ROWS]
    headers, _ = _packets(b"".join(writes))
    assert STATUS_EOM not in [status for status, _, _ in headers]  # nothing more is sent


def test_an_attention_after_the_last_piece_is_acknowledged_in_a_message_of_its_own(many_rows):
    """The reply had ended (its last DONE handed over) when the Attention was read: it is sent
    whole, and the Attention is answered on its own after it."""
    outcome = many_rows.run_batch("SELECT id, name FROM dbo.stream_rows ORDER BY id")
    last = len(list(render.render_stream(outcome))) - 1
    attention = Message(PacketType.ATTENTION, STATUS_EOM, b"")
    cut, writes = _reply_with_next(outcome, attention, before_piece=last)
    assert not cut
    assert _packets(b"".join(writes))[1] == render.render(outcome)


def test_a_cut_reply_still_reports_what_the_statements_after_it_changed(many_rows):
    """The engine ran the whole batch: the transaction its last statement began is the
    session's, so its ENVCHANGE comes before the acknowledgement; the rest is left out."""
    outcome = many_rows.run_batch(
        "SELECT id, name FROM dbo.stream_rows ORDER BY id; BEGIN TRANSACTION"
    )
    result, began = outcome.results
    attention = Message(PacketType.ATTENTION, STATUS_EOM, b"")
    cut, writes = _reply_with_next(outcome, attention)
    assert cut
    first = tokens.colmetadata(result.columns) + arrowrows.encode_rows(
        result.columns, result.rows[: render.FIRST_ROWS]
    )
    assert began.env  # the ENVCHANGE (begin transaction)
    payload = _packets(b"".join(writes))[1]
    assert payload == first + b"".join(began.env) + tokens.done(tokens.DONE_ATTN)
    many_rows.run_batch("ROLLBACK")


def test_an_encoding_error_still_reports_what_the_statements_after_it_changed(
    many_rows, monkeypatch
):
    """The result of the first statement cannot be encoded; the transaction the second began
    is the session's, so its ENVCHANGE comes before the error."""
    outcome = many_rows.run_batch(
        "SELECT id, name FROM dbo.stream_rows ORDER BY id; BEGIN TRANSACTION"
    )
    began = outcome.results[1]

    def declined(columns: Any, rows: Any) -> bytes | None:
        return None

    def overflow(columns: Any, row: Any) -> bytes:
        raise OverflowError("value out of range")

    monkeypatch.setattr(render, "encode_rows", declined)
    monkeypatch.setattr(tokens, "row", overflow)
    message = "Arithmetic overflow error converting expression to data type of the result column."
    assert began.env
    assert list(render.render_stream(outcome)) == [
        *began.env,
        tokens.error(8115, 1, 16, message),
        tokens.done(tokens.DONE_ERROR, 0, 0),
    ]
    many_rows.run_batch("ROLLBACK")
