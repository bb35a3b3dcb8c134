"""The emulator's controllable clock and its Windows time zone.

SQL Server names its time zone with a Windows name (``CURRENT_TIMEZONE_ID()`` returns e.g.
``Pacific Standard Time``) and writes ``cdc.lsn_time_mapping`` in local time
("cdc.lsn_time_mapping", Microsoft docs). Names map to IANA zones, with real DST rules, through
:mod:`mssql_cdc._timezones` (CLDR's table as tzlocal ships it, and tzdata).
"""

from __future__ import annotations

import datetime as dt
import threading

from mssql_cdc._timezones import windows_to_iana, windows_zone

__all__ = ["Clock", "windows_to_iana"]


class Clock:
    """UTC 'now' = the real clock plus an offset that tests can advance; thread-safe."""

    def __init__(self, windows_zone_name: str = "UTC", *, start: dt.datetime | None = None) -> None:
        self.windows_zone = windows_zone_name
        self.zone = windows_zone(windows_zone_name)
        self._lock = threading.Lock()
        self._offset = dt.timedelta()
        self._frozen: dt.datetime | None = None
        if start is not None:
            self.set(start)

    def utcnow(self) -> dt.datetime:
        with self._lock:
            if self._frozen is not None:
                return self._frozen
            return dt.datetime.now(dt.timezone.utc) + self._offset

    def now(self) -> dt.datetime:
        """Aware local time in the server's zone."""
        return self.utcnow().astimezone(self.zone)

    def local_naive(self) -> dt.datetime:
        """Local wall-clock time without offset, as ``GETDATE()`` and ``datetime`` hold it."""
        return self.now().replace(tzinfo=None)

    def advance(self, delta: dt.timedelta) -> None:
        with self._lock:
            self._offset += delta
            if self._frozen is not None:
                self._frozen += delta

    def set(self, when: dt.datetime, *, freeze: bool = False) -> None:
        """Jump to an aware instant (naive means server local time; an ambiguous local time
        is its first occurrence, ``fold=0``). ``freeze`` stops the clock there until the next
        ``set`` (``advance`` still moves it), so commits can share a time."""
        if when.tzinfo is None:
            when = when.replace(tzinfo=self.zone)
        when = when.astimezone(dt.timezone.utc)
        with self._lock:
            self._offset = when - dt.datetime.now(dt.timezone.utc)
            self._frozen = when if freeze else None
