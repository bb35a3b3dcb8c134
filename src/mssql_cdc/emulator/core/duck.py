"""Reading DuckDB results in the emulator: always to the end.

DuckDB 2 keeps a result open on its connection until a fetch returns no more rows, and refuses
other work on that connection meanwhile ("connection has an unfinished result from execute()").
A ``fetchone()`` of a one-row aggregate leaves it open, so the next statement of the session
failed; :func:`one_row` reads the whole result instead (DuckDB 1.x behaves the same with it).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["one_row"]


class _Fetchable(Protocol):
    def fetchall(self) -> list[Any]: ...


def one_row(result: _Fetchable) -> tuple[Any, ...] | None:
    """The first row of ``result`` (a DuckDB connection or relation after ``execute``), or
    ``None`` when it has none; the result is read to its end, so the connection is free."""
    rows = result.fetchall()
    return rows[0] if rows else None
