"""Turns executor outcomes into token streams: result sets, DONE tokens, ERROR tokens.

A SQLBatch answer ends with a DONE without the MORE bit; each statement before gets DONE with
MORE (MS-TDS 2.2.7.6). An RPC answer uses DONEINPROC per statement, then RETURNSTATUS and
DONEPROC (2.2.7.7/2.2.7.8). Rows are encoded before anything is sent, so a value that cannot be
encoded becomes an ERROR instead of a half-written result.
"""

from __future__ import annotations

import logging
import struct

from mssql_cdc.emulator.core.errors import SqlError
from mssql_cdc.emulator.core.results import BatchOutcome, StatementResult
from mssql_cdc.emulator.protocol import tokens
from mssql_cdc.emulator.protocol.arrowrows import encode_rows

__all__ = ["render"]

log = logging.getLogger("mssql_cdc.emulator.server.render")


def _result(result: StatementResult) -> bytes:
    assert result.columns is not None
    parts = [tokens.colmetadata(result.columns)]
    fast = encode_rows(result.columns, result.rows)
    if fast is not None:
        parts.append(fast)
        return b"".join(parts)
    for row in result.rows:
        parts.append(tokens.row(result.columns, row))
    return b"".join(parts)


def _error(err: SqlError) -> bytes:
    return tokens.error(err.number, err.state, err.klass, err.message)


def render(outcome: BatchOutcome, *, rpc: bool = False, nocount: bool = False) -> bytes:
    parts: list[bytes] = []
    done_token = tokens.DONEINPROC if rpc else tokens.DONE
    error = outcome.error
    results = outcome.results
    for index, result in enumerate(results):
        parts.extend(result.env)
        status = 0
        if result.columns is not None:
            try:
                parts.append(_result(result))
            except (ValueError, OverflowError, TypeError, struct.error) as exc:
                log.info("value could not be encoded: %s", exc)
                error = SqlError(
                    8115,
                    "Arithmetic overflow error converting expression to data "
                    "type of the result column.",
                )
                break
            status |= tokens.DONE_COUNT
        elif result.rowcount is not None and not nocount:
            status |= tokens.DONE_COUNT
        last = index == len(results) - 1 and error is None and not rpc
        if not last:
            status |= tokens.DONE_MORE
        parts.append(tokens.done(status, result.curcmd, result.rowcount or 0, token=done_token))
    if error is not None:
        parts.append(_error(error))
        more = tokens.DONE_MORE if rpc else 0
        parts.append(tokens.done(tokens.DONE_ERROR | more, 0, 0, token=done_token))
    if rpc:
        parts.append(tokens.returnstatus(0 if error is None else 1))
        status = tokens.DONE_ERROR if error is not None else 0
        parts.append(tokens.done(status, 0xE0, 0, token=tokens.DONEPROC))
    elif not results and error is None:
        parts.append(tokens.done())
    return b"".join(parts)
