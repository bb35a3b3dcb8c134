"""Stream offsets: ``{"lsn": "0x" + 20 upper-case hex, "commit_ts": UTC ISO-8601 ms}``.

Spark compares offsets as JSON text, so every offset is built here with the same key order.
``lsn`` is the last processed commit LSN; ``commit_ts`` its commit time in UTC
(``2026-11-30T05:36:11.123Z``), or ``""`` when no commit has that LSN (a start before the
first change, as ``startingLsn=earliest`` makes).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from mssql_cdc._native import Lsn

__all__ = ["format_utc", "make_offset", "offset_lsn", "offset_time", "parse_utc"]


def format_utc(when: dt.datetime | None) -> str:
    """A naive UTC (or aware) datetime as ``YYYY-MM-DDTHH:MM:SS.mmmZ``; ``""`` for None."""
    if when is None:
        return ""
    if when.tzinfo is not None:
        when = when.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def parse_utc(text: str) -> dt.datetime | None:
    """The naive UTC datetime of :func:`format_utc`'s text (``None`` for ``""``)."""
    if not text:
        return None
    return dt.datetime.fromisoformat(text.removesuffix("Z")).replace(tzinfo=None)


def make_offset(lsn: Lsn, commit_ts: str) -> dict[str, str]:
    """An offset dict, keys always in the order ``lsn``, ``commit_ts``."""
    return {"lsn": str(lsn), "commit_ts": commit_ts}


def offset_lsn(offset: Mapping[str, object]) -> Lsn:
    """The LSN of an offset Spark hands back.

    Raises
    ------
    ValueError
        The offset was not written by this source (for example another source's checkpoint).
    """
    value = offset.get("lsn") if isinstance(offset, Mapping) else None
    if not isinstance(value, str):
        raise ValueError(
            f"the checkpoint holds the offset {offset!r}, which mssql_cdc did not write; "
            "use a new checkpoint for this source"
        )
    return Lsn.parse(value)


def offset_time(offset: Mapping[str, object]) -> str:
    """The ``commit_ts`` of an offset (``""`` if absent)."""
    value = offset.get("commit_ts", "")
    return value if isinstance(value, str) else ""
