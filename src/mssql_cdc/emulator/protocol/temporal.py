"""Date and time values with SQL Server's 100 ns precision and its rounding rules.

Python's ``datetime`` stops at microseconds, but ``time(7)``, ``datetime2(7)`` and
``datetimeoffset(7)`` carry 100 ns ticks, so the emulator keeps temporal values as
:class:`Temporal` (days since 0001-01-01, ticks since midnight, offset minutes) and stores them
in the engine as canonical, fixed-width strings that sort like the values.

Rounding follows the conversion rules of "datetime2 (Transact-SQL)" and "datetime
(Transact-SQL)" on learn.microsoft.com: a lower scale rounds half up; ``datetime`` rounds to
1/300 s (.000, .003, .007).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

__all__ = ["TICKS_PER_DAY", "Temporal", "datetime_text", "parse_temporal"]

TICKS_PER_SECOND = 10_000_000
TICKS_PER_DAY = 86_400 * TICKS_PER_SECOND
_ORDINAL_1900 = dt.date(1900, 1, 1).toordinal() - 1

_PATTERN = re.compile(
    r"^\s*(?:(?P<date>\d{4}-\d{1,2}-\d{1,2}))?"
    r"(?:(?:[ T]+)?(?P<time>\d{1,2}:\d{2}(?::\d{2}(?:\.(?P<frac>\d{0,9}))?)?))?"
    r"\s*(?P<tz>Z|[+-]\d{1,2}:\d{2})?\s*$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Temporal:
    """A date and/or time of day in 100 ns ticks, with an optional UTC offset in minutes.

    ``days`` counts from 0001-01-01 (day 0), as TDS does for ``date``.
    """

    days: int | None
    ticks: int | None
    offset: int | None = None

    def round_ticks(self, scale: int) -> Temporal:
        """Round the time part half up to ``scale`` fractional digits, carrying into the date."""
        if self.ticks is None:
            return self
        unit = 10 ** (7 - scale)
        ticks = (self.ticks + unit // 2) // unit * unit
        days = self.days
        if ticks >= TICKS_PER_DAY:
            ticks -= TICKS_PER_DAY
            days = None if days is None else days + 1
        return Temporal(days, ticks, self.offset)

    def round_datetime(self) -> Temporal:
        """Round to ``datetime``'s 1/300 s grid (exactly, in integer arithmetic)."""
        if self.ticks is None:
            return self
        three_hundredths = (self.ticks * 300 + TICKS_PER_SECOND // 2) // TICKS_PER_SECOND
        days = self.days or 0
        if three_hundredths >= 86_400 * 300:
            three_hundredths -= 86_400 * 300
            days += 1
        ticks = (three_hundredths * TICKS_PER_SECOND + 150) // 300
        return Temporal(days, ticks, self.offset)

    def datetime_parts(self) -> tuple[int, int]:
        """(days since 1900-01-01, 1/300 s ticks) of a value already on the datetime grid."""
        days = (self.days or 0) - _ORDINAL_1900
        three_hundredths = ((self.ticks or 0) * 300 + TICKS_PER_SECOND // 2) // TICKS_PER_SECOND
        return days, three_hundredths

    def utc(self) -> Temporal:
        """The same instant with the offset removed (the wire form of datetimeoffset)."""
        if self.offset is None or self.ticks is None:
            return self
        total = (self.days or 0) * TICKS_PER_DAY + self.ticks - self.offset * 60 * TICKS_PER_SECOND
        return Temporal(total // TICKS_PER_DAY, total % TICKS_PER_DAY, self.offset)

    # --- canonical text, as SQL Server's default CONVERT(varchar) styles show values ---

    def date_text(self) -> str:
        d = dt.date.fromordinal((self.days or 0) + 1)
        return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"

    def time_text(self, scale: int = 7) -> str:
        ticks = self.ticks or 0
        seconds, frac = divmod(ticks, TICKS_PER_SECOND)
        hours, rest = divmod(seconds, 3600)
        minutes, secs = divmod(rest, 60)
        text = f"{hours:02d}:{minutes:02d}:{secs:02d}"
        if scale > 0:
            text += "." + f"{frac:07d}"[:scale]
        return text

    def offset_text(self) -> str:
        offset = self.offset or 0
        sign = "-" if offset < 0 else "+"
        hours, minutes = divmod(abs(offset), 60)
        return f"{sign}{hours:02d}:{minutes:02d}"

    def to_python(self) -> dt.datetime:
        """A ``datetime`` truncated to microseconds (for clock arithmetic only)."""
        base = dt.datetime.combine(dt.date.fromordinal((self.days or 0) + 1), dt.time())
        return base + dt.timedelta(microseconds=(self.ticks or 0) // 10)


def _from_python(value: dt.date | dt.time | dt.datetime) -> Temporal:
    if isinstance(value, dt.datetime):
        offset = None
        if value.tzinfo is not None:
            delta = value.utcoffset() or dt.timedelta()
            offset = int(delta.total_seconds() // 60)
        ticks = (
            value.hour * 3600 + value.minute * 60 + value.second
        ) * TICKS_PER_SECOND + value.microsecond * 10
        return Temporal(value.toordinal() - 1, ticks, offset)
    if isinstance(value, dt.date):
        return Temporal(value.toordinal() - 1, None)
    ticks = (
        value.hour * 3600 + value.minute * 60 + value.second
    ) * TICKS_PER_SECOND + value.microsecond * 10
    return Temporal(None, ticks)


def parse_temporal(value: object) -> Temporal:
    """Parse a string in the ISO-like forms SQL Server accepts, or a Python date/time value.

    Raises ``ValueError`` for anything else (the caller turns it into error 241/242).
    """
    if isinstance(value, Temporal):
        return value
    if isinstance(value, (dt.date, dt.time)):
        return _from_python(value)
    if not isinstance(value, str):
        raise ValueError(f"not a date/time value: {type(value).__name__}")
    match = _PATTERN.match(value)
    if match is None or (match.group("date") is None and match.group("time") is None):
        raise ValueError(
            "Conversion failed when converting date and/or time from character string."
        )
    days: int | None = None
    if match.group("date"):
        year, month, day = (int(p) for p in match.group("date").split("-"))
        days = dt.date(year, month, day).toordinal() - 1
    ticks: int | None = None
    if match.group("time"):
        parts = match.group("time").split(".")[0].split(":")
        hours, minutes = int(parts[0]), int(parts[1])
        seconds = int(parts[2]) if len(parts) > 2 else 0
        if hours > 23 or minutes > 59 or seconds > 59:
            raise ValueError(
                "Conversion failed when converting date and/or time from character string."
            )
        frac = (match.group("frac") or "").ljust(9, "0")
        nanos = int(frac)
        ticks = (hours * 3600 + minutes * 60 + seconds) * TICKS_PER_SECOND + (nanos + 50) // 100
    offset: int | None = None
    tz = match.group("tz")
    if tz is not None:
        if tz.upper() == "Z":
            offset = 0
        else:
            sign = -1 if tz[0] == "-" else 1
            hours_text, minutes_text = tz[1:].split(":")
            offset = sign * (int(hours_text) * 60 + int(minutes_text))
    return Temporal(days, ticks, offset)


def datetime_text(value: dt.datetime) -> str:
    """A local naive datetime as canonical ``datetime`` text (1/300 s grid)."""
    rounded = parse_temporal(value).round_datetime()
    return f"{rounded.date_text()} {rounded.time_text(3)}"
