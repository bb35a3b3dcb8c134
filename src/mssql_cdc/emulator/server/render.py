"""Turns executor outcomes into token streams: result sets, DONE tokens, ERROR tokens.

A SQLBatch answer ends with a DONE without the MORE bit; each statement before gets DONE with
MORE (MS-TDS 2.2.7.6). An RPC answer uses DONEINPROC per statement, then RETURNSTATUS, a
RETURNVALUE per output parameter (the handle of ``sp_prepare``/``sp_prepexec``) and DONEPROC
(2.2.7.7/2.2.7.8, 2.2.7.18).

:func:`render_stream` yields the reply in pieces: a result set's rows are encoded a piece at a
time (about :data:`STREAM_BYTES` each), as the session sends them, so a client decodes the
first rows while later ones are encoded and a client that stops reading stops the encoding
(SQL Server streams a result the same way). The first piece of a result set holds its
COLMETADATA and its first :data:`FIRST_ROWS` rows, so a value that cannot be encoded there
becomes an ERROR instead of a half-written result; in a later piece, the pieces before it have
been sent and the ERROR follows them (the rows of its own piece are not sent), as SQL Server
reports an error met in the middle of a result. :func:`render` is the whole reply.

A :class:`Cut` handed to :func:`render_stream` stops a reply early, when the client's Attention
comes while it is sent (ADR 0176): from then on only the ENVCHANGE tokens of the statements
that ran are yielded, and the session ends the reply with the Attention's acknowledgement.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator

from mssql_cdc.emulator.core.errors import SqlError
from mssql_cdc.emulator.core.results import BatchOutcome, StatementResult
from mssql_cdc.emulator.protocol import tokens
from mssql_cdc.emulator.protocol.arrowrows import ArrowRows, encode_rows

__all__ = ["FIRST_ROWS", "STREAM_BYTES", "STREAM_ROWS", "Cut", "render", "render_stream"]

log = logging.getLogger("mssql_cdc.emulator.server.render")

#: rows in the first piece of a result set (which also holds its COLMETADATA)
FIRST_ROWS = 256
#: about how many bytes of ROW tokens each later piece holds: the rows per piece follow the
#: width of the rows encoded so far (about 10,000 of the 12-column change row)
STREAM_BYTES = 1 << 20
#: at most this many rows in a piece
STREAM_ROWS = 16_384

_ENCODING_ERRORS = (ValueError, OverflowError, TypeError, struct.error)


def _rows(result: StatementResult) -> Iterator[bytes]:
    """The ROW tokens of ``result`` (the C encoder, or the Python one where it declines):
    Arrow rows in pieces of :data:`FIRST_ROWS`, then of about :data:`STREAM_BYTES` (at most
    :data:`STREAM_ROWS` rows); other rows in one piece."""
    assert result.columns is not None
    rows = result.rows
    total = len(rows)
    step = FIRST_ROWS if isinstance(rows, ArrowRows) else total
    start = 0
    while start < total:
        part = rows[start : start + step]
        piece = encode_rows(result.columns, part)
        if piece is None:
            piece = b"".join(tokens.row(result.columns, row) for row in part)
        yield piece
        start += len(part)
        step = max(1, min(STREAM_ROWS, len(part) * STREAM_BYTES // max(len(piece), 1)))


class Cut:
    """Whether a reply is to stop early: the session sets :attr:`requested` when the client's
    Attention has come; :func:`render_stream` then leaves out the rest of the reply (rows, DONE,
    ERROR and RETURNSTATUS tokens) except the ENVCHANGE tokens of the statements that ran (the
    engine ran the whole batch before its reply: a transaction it began or a database it
    switched to is the session's state, which the client must hear of). :attr:`applied` tells
    whether anything was left out; when not, the reply ended before the Attention was seen."""

    def __init__(self) -> None:
        self.requested = False
        self.applied = False

    def __call__(self) -> bool:
        """Asked only where something would follow: ``True`` means it is left out."""
        if self.requested:
            self.applied = True
        return self.requested


def _never() -> bool:
    return False


def _result(result: StatementResult, stop: Callable[[], bool]) -> Iterator[bytes]:
    """COLMETADATA with the first rows, then the other rows piece by piece until ``stop()``;
    raises one of :data:`_ENCODING_ERRORS` for a value that cannot be encoded."""
    assert result.columns is not None
    pieces = _rows(result)
    yield tokens.colmetadata(result.columns) + next(pieces, b"")
    while not stop():  # a piece is encoded only when asked for: a stop ends the encoding
        piece = next(pieces, None)
        if piece is None:
            return
        yield piece


def _error(err: SqlError) -> bytes:
    return tokens.error(err.number, err.state, err.klass, err.message)


def render_stream(  # noqa: PLR0912 (a dispatch over token kinds)
    outcome: BatchOutcome, *, rpc: bool = False, nocount: bool = False, cut: Cut | None = None
) -> Iterator[bytes]:
    """The reply to ``outcome`` in pieces, encoded as they are asked for; ``cut`` may stop it
    early (:class:`Cut`)."""
    stop: Callable[[], bool] = cut if cut is not None else _never
    done_token = tokens.DONEINPROC if rpc else tokens.DONE
    error = outcome.error
    results = outcome.results
    for index, result in enumerate(results):
        yield from result.env
        if stop():
            continue
        status = 0
        if result.columns is not None:
            try:
                yield from _result(result, stop)
            except _ENCODING_ERRORS as exc:
                log.info("value could not be encoded: %s", exc)
                error = SqlError(
                    8115,
                    "Arithmetic overflow error converting expression to data "
                    "type of the result column.",
                )
                # the statements after it have run: what they changed (a transaction begun,
                # say) is the session's, so the client hears of it; their results are dropped
                for later in results[index + 1 :]:
                    yield from later.env
                break
            if stop():
                continue
            status |= tokens.DONE_COUNT
        elif result.rowcount is not None and not nocount:
            status |= tokens.DONE_COUNT
        last = index == len(results) - 1 and error is None and not rpc
        if not last:
            status |= tokens.DONE_MORE
        yield tokens.done(status, result.curcmd, result.rowcount or 0, token=done_token)
    if (error is not None or rpc or not results) and stop():
        return
    if error is not None:
        yield _error(error)
        more = tokens.DONE_MORE if rpc else 0
        yield tokens.done(tokens.DONE_ERROR | more, 0, 0, token=done_token)
    if rpc:
        yield tokens.returnstatus(0 if error is None else 1)
        for out in outcome.outputs:
            yield tokens.returnvalue(out.ordinal, out.name, out.type, out.value)
        status = tokens.DONE_ERROR if error is not None else 0
        yield tokens.done(status, 0xE0, 0, token=tokens.DONEPROC)
    elif not results and error is None:
        yield tokens.done()


def render(outcome: BatchOutcome, *, rpc: bool = False, nocount: bool = False) -> bytes:
    """The whole reply to ``outcome``."""
    return b"".join(render_stream(outcome, rpc=rpc, nocount=nocount))
