"""The SQL Server clock: converting ``cdc.lsn_time_mapping`` times to UTC.

``lsn_time_mapping`` holds zone-less server-local times. :class:`ServerClock` is either a named
zone (IANA rules from the Windows name SQL Server reports) or a fixed UTC offset (servers before
2022 without ``sourceTimeZone``, exact only without DST). Each commit is converted with its own
offset. In a fall-back hour a local time names two instants; a commit takes the earlier one
unless that would put it before the previous commit, so commit times follow commit order.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc

from mssql_cdc._timezones import windows_to_iana
from mssql_cdc.errors import SqlServerError
from mssql_cdc.source.arrow import scalar, timestamps

__all__ = ["ServerClock", "resolve_clock"]

log = logging.getLogger("mssql_cdc.source")

_UTC_NAMES = frozenset({"utc", "etc/utc", "etc/gmt", "gmt", "etc/universal"})


@dataclass(frozen=True)
class ServerClock:
    """How server-local commit times map to UTC: ``zone`` (IANA name) or ``offset_minutes``."""

    zone: str | None = None
    offset_minutes: int = 0

    @property
    def is_utc(self) -> bool:
        if self.zone is not None:
            return self.zone.lower() in _UTC_NAMES
        return self.offset_minutes == 0

    def to_utc(self, local: dt.datetime, previous: dt.datetime | None = None) -> dt.datetime:
        """One commit's UTC time (naive); ``previous`` is the UTC time of the commit before.

        Runs wherever offsets or rows are made, once per commit.
        """
        local = local.replace(tzinfo=None)
        if self.zone is None:
            return local - dt.timedelta(minutes=self.offset_minutes)
        if self.is_utc:
            return local
        zone = ZoneInfo(self.zone)
        first = _utc(local.replace(tzinfo=zone, fold=0))
        second = _utc(local.replace(tzinfo=zone, fold=1))
        if first == second or second < first:  # not ambiguous (or a gap: take the first)
            return first
        if previous is not None and first < previous:
            return second
        return first

    def to_utc_array(
        self, local: pa.Array, previous: dt.datetime | None
    ) -> tuple[pa.Array, dt.datetime | None]:
        """UTC times (``timestamp[us]``) of commit times in LSN order, and the last one.

        Runs on executors, once per Arrow batch; vectorized except in a fall-back hour, where
        the batch's rows are resolved one by one against the previous commit.
        """
        local = local.cast(pa.timestamp("us"))
        if len(local) == 0:
            return local, previous
        if self.zone is None:
            shift = scalar(dt.timedelta(minutes=self.offset_minutes), pa.duration("us"))
            out = pc.subtract(local, shift)
        elif self.is_utc:
            out = local
        else:
            early = pc.assume_timezone(
                local, timezone=self.zone, ambiguous="earliest", nonexistent="earliest"
            ).cast(pa.timestamp("us"))
            late = pc.assume_timezone(
                local, timezone=self.zone, ambiguous="latest", nonexistent="earliest"
            ).cast(pa.timestamp("us"))
            if pc.any(pc.not_equal(early, late)).as_py():
                values: list[dt.datetime | None] = []
                last = previous
                for item in local.to_pylist():
                    if item is None:
                        values.append(None)
                        continue
                    last = self.to_utc(item, last)
                    values.append(last)
                return timestamps(values), last
            out = early
        tail = out[len(out) - 1].as_py()
        return out, tail if tail is not None else previous


def _utc(aware: dt.datetime) -> dt.datetime:
    return aware.astimezone(dt.timezone.utc).replace(tzinfo=None)


def resolve_clock(option: str, query_zone: object, query_offset: object) -> ServerClock:
    """The clock for ``sourceTimeZone`` = ``option``.

    ``query_zone()`` returns ``CURRENT_TIMEZONE_ID()`` (raising ``SqlServerError`` on a server
    before 2022); ``query_offset()`` the server's current UTC offset in minutes. Runs on the
    driver, once per run (and once per batch in the offset fallback).
    """
    if option.lower() != "auto":
        return ServerClock(zone=windows_to_iana(option))
    try:
        name = query_zone()  # type: ignore[operator]
    except SqlServerError as exc:
        name = None
        reason = f"CURRENT_TIMEZONE_ID() failed ({exc})"
    else:
        reason = f"CURRENT_TIMEZONE_ID() returned {name!r}"
    if isinstance(name, str) and name:
        try:
            return ServerClock(zone=windows_to_iana(name))
        except ValueError:
            reason = f"CURRENT_TIMEZONE_ID() returned {name!r}, which is not a known zone"
    minutes = int(query_offset())  # type: ignore[operator]
    log.warning(
        "sourceTimeZone=auto: %s; converting commit times with the server's current UTC offset "
        "(%+d min), exact only for zones without DST: set sourceTimeZone to the server's "
        "Windows time zone name",
        reason,
        minutes,
    )
    return ServerClock(offset_minutes=minutes)
