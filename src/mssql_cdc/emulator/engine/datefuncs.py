"""``DATEPART``, ``DATEADD`` and ``DATEDIFF`` / ``DATEDIFF_BIG`` on the emulator's date and
time values (:class:`~mssql_cdc.emulator.protocol.temporal.Temporal`: 100 ns ticks and an
offset), as their Microsoft reference pages state them, under the default ``us_english``
settings (``DATEFIRST 7``: weeks start on Sunday).

* ``DATEPART(part, date)`` ("DATEPART (Transact-SQL)") is an ``int``. ``week`` counts from the
  week holding January 1 (week 1); ``weekday`` is 1 for Sunday; ``iso_week`` is ISO 8601's;
  ``nanosecond`` is the ticks times 100; ``tzoffset`` is the offset in minutes (0 for
  ``datetime2``). A string literal missing a part takes its default (1900-01-01, midnight);
  a column or variable whose type lacks the part is error 9810.
* ``DATEDIFF(part, start, end)`` ("DATEDIFF (Transact-SQL)") counts the part's boundaries
  crossed (``int``, error 535 past its range; ``DATEDIFF_BIG`` a ``bigint``); offsets are
  taken into account (values compare as UTC instants).
* ``DATEADD(part, number, date)`` ("DATEADD (Transact-SQL)") has the type of ``date`` (a
  string literal is ``datetime``); adding months keeps the day unless the month is shorter
  (then its last day); ``number`` is truncated to an integer; past the type's range is error
  517.

The parts' names and abbreviations are the pages' (:data:`PARTS`). The values go through the
engine as canonical text (:mod:`temporal`), so the same code answers constants (the rewriter
folds them) and columns (the engine calls :func:`register`'s functions).
"""

from __future__ import annotations

import calendar
import datetime as dt
from typing import TYPE_CHECKING

from duckdb import func, sqltypes

from mssql_cdc.emulator.core.errors import SqlError
from mssql_cdc.emulator.core.literals import temporal_text
from mssql_cdc.emulator.protocol.temporal import TICKS_PER_DAY, TICKS_PER_SECOND, Temporal
from mssql_cdc.emulator.protocol.temporal import parse_temporal as _parse
from mssql_cdc.emulator.protocol.types import SqlType, scalar

if TYPE_CHECKING:
    import duckdb

__all__ = ["LITERAL", "PARTS", "dateadd", "datediff", "datepart", "part_name", "register"]

#: the type name of a string literal argument (its missing parts take their defaults)
LITERAL = "literal"
PARTS = {
    **dict.fromkeys(("year", "yy", "yyyy"), "year"),
    **dict.fromkeys(("quarter", "qq", "q"), "quarter"),
    **dict.fromkeys(("month", "mm", "m"), "month"),
    **dict.fromkeys(("dayofyear", "dy", "y"), "dayofyear"),
    **dict.fromkeys(("day", "dd", "d"), "day"),
    **dict.fromkeys(("week", "wk", "ww"), "week"),
    **dict.fromkeys(("weekday", "dw"), "weekday"),
    **dict.fromkeys(("hour", "hh"), "hour"),
    **dict.fromkeys(("minute", "mi", "n"), "minute"),
    **dict.fromkeys(("second", "ss", "s"), "second"),
    **dict.fromkeys(("millisecond", "ms"), "millisecond"),
    **dict.fromkeys(("microsecond", "mcs"), "microsecond"),
    **dict.fromkeys(("nanosecond", "ns"), "nanosecond"),
    **dict.fromkeys(("tzoffset", "tz"), "tzoffset"),
    **dict.fromkeys(("iso_week", "isowk", "isoww"), "iso_week"),
}
_DATE_PARTS = frozenset(
    {"year", "quarter", "month", "dayofyear", "day", "week", "weekday", "iso_week"}
)
_TIME_PARTS = frozenset({"hour", "minute", "second", "millisecond", "microsecond", "nanosecond"})
_BASE_DAYS = dt.date(1900, 1, 1).toordinal() - 1
#: ticks per unit of the parts DATEDIFF and DATEADD count in ticks
_TICKS = {
    "hour": 3600 * TICKS_PER_SECOND,
    "minute": 60 * TICKS_PER_SECOND,
    "second": TICKS_PER_SECOND,
    "millisecond": 10_000,
    "microsecond": 10,
}
_INT_RANGE = (-(2**31), 2**31 - 1)


def part_name(text: str, function: str) -> str:
    """The canonical name of datepart ``text``; error 155 if it is not one."""
    name = PARTS.get(text.strip().lower())
    if name is None:
        raise SqlError(155, f"'{text}' is not a recognized {function} option.", klass=15)
    return name


def _unsupported_part(part: str, function: str, type_name: str) -> SqlError:
    return SqlError(
        9810,
        f"The datepart {part} is not supported by date function {function} for data type "
        f"{type_name}.",
    )


def _value(text: object, type_name: str) -> Temporal:
    try:
        return _parse(text)
    except ValueError:
        raise SqlError(
            241, "Conversion failed when converting date and/or time from character string."
        ) from None


def _check(part: str, value: Temporal, type_name: str, function: str) -> None:
    if type_name == LITERAL:
        return
    if (part in _DATE_PARTS and value.days is None) or (
        part in _TIME_PARTS and value.ticks is None and type_name != "date"
    ):
        raise _unsupported_part(part, function, type_name)
    if part in _TIME_PARTS and type_name == "date":
        raise _unsupported_part(part, function, type_name)
    if part == "tzoffset" and type_name not in ("datetimeoffset", "datetime2"):
        raise _unsupported_part(part, function, type_name)


def datepart(part_text: str, text: object, type_name: str) -> int | None:  # noqa: PLR0911, PLR0912 (a dispatch over parts)
    """``DATEPART(part, value)`` of a value (canonical text or a literal) of SQL type
    ``type_name`` (:data:`LITERAL` for a string literal)."""
    if text is None:
        return None
    part = part_name(part_text, "datepart")
    value = _value(text, type_name)
    _check(part, value, type_name, "datepart")
    date = dt.date.fromordinal((value.days if value.days is not None else _BASE_DAYS) + 1)
    ticks = value.ticks or 0
    if part == "year":
        return date.year
    if part == "quarter":
        return (date.month - 1) // 3 + 1
    if part == "month":
        return date.month
    if part == "dayofyear":
        return date.timetuple().tm_yday
    if part == "day":
        return date.day
    if part == "week":
        first = dt.date(date.year, 1, 1)
        return (date.timetuple().tm_yday - 1 + _sunday_index(first)) // 7 + 1
    if part == "weekday":
        return _sunday_index(date) + 1
    if part == "iso_week":
        return date.isocalendar()[1]
    if part == "hour":
        return ticks // _TICKS["hour"]
    if part == "minute":
        return ticks // _TICKS["minute"] % 60
    if part == "second":
        return ticks // TICKS_PER_SECOND % 60
    if part == "millisecond":
        return ticks % TICKS_PER_SECOND // 10_000
    if part == "microsecond":
        return ticks % TICKS_PER_SECOND // 10
    if part == "nanosecond":
        return ticks % TICKS_PER_SECOND * 100
    return value.offset or 0  # tzoffset


def _sunday_index(date: dt.date) -> int:
    """0 for Sunday ... 6 for Saturday."""
    return (date.weekday() + 1) % 7


def _instant(value: Temporal) -> int:
    """Ticks since 0001-01-01 of a value (UTC when it has an offset)."""
    utc = value.utc()
    days = utc.days if utc.days is not None else _BASE_DAYS
    return days * TICKS_PER_DAY + (utc.ticks or 0)


def datediff(
    part_text: str,
    start: object,
    end: object,
    start_type: str,
    end_type: str,
    *,
    big: bool = False,
) -> int | None:
    """``DATEDIFF(part, start, end)``: boundaries of ``part`` crossed from start to end."""
    part = part_name(part_text, "datediff_big" if big else "datediff")
    if start is None or end is None:
        return None
    a, b = _value(start, start_type), _value(end, end_type)
    if part in ("tzoffset", "iso_week"):
        raise _unsupported_part(part, "datediff", start_type)
    ta, tb = _instant(a), _instant(b)
    da, db = (
        dt.date.fromordinal(ta // TICKS_PER_DAY + 1),
        dt.date.fromordinal(tb // TICKS_PER_DAY + 1),
    )
    if part == "year":
        result = db.year - da.year
    elif part == "quarter":
        result = (db.year * 4 + (db.month - 1) // 3) - (da.year * 4 + (da.month - 1) // 3)
    elif part == "month":
        result = (db.year * 12 + db.month) - (da.year * 12 + da.month)
    elif part in ("day", "dayofyear", "weekday"):
        result = tb // TICKS_PER_DAY - ta // TICKS_PER_DAY
    elif part == "week":  # Sunday boundaries: day 0 (0001-01-01) is a Monday
        result = (tb // TICKS_PER_DAY + 1) // 7 - (ta // TICKS_PER_DAY + 1) // 7
    elif part == "nanosecond":
        result = (tb - ta) * 100
    else:
        unit = _TICKS[part]
        result = tb // unit - ta // unit
    if not big and not _INT_RANGE[0] <= result <= _INT_RANGE[1]:
        raise SqlError(
            535,
            "The datediff function resulted in an overflow. The number of dateparts separating "
            "two date/time instances is too large. Try to use datediff with a less precise "
            "datepart.",
        )
    return result


def dateadd(part_text: str, number: object, text: object, t: SqlType) -> str | None:
    """``DATEADD(part, number, value)`` as the canonical text of type ``t``."""
    part = part_name(part_text, "dateadd")
    if number is None or text is None:
        return None
    value = _value(text, t.name)
    if (
        part in ("tzoffset", "iso_week")
        or (part in _TIME_PARTS and t.name == "date")
        or (part in _DATE_PARTS and t.name == "time")
    ):
        raise _unsupported_part(part, "dateadd", t.name)
    n = int(number)  # type: ignore[call-overload]
    days = value.days if value.days is not None else _BASE_DAYS
    ticks = value.ticks or 0
    try:
        if part in ("year", "quarter", "month"):
            months = n * {"year": 12, "quarter": 3, "month": 1}[part]
            date = dt.date.fromordinal(days + 1)
            total = date.year * 12 + date.month - 1 + months
            year, month = divmod(total, 12)
            day = min(date.day, calendar.monthrange(year, month + 1)[1])
            days = dt.date(year, month + 1, day).toordinal() - 1
        else:
            step = {"week": 7 * TICKS_PER_DAY, "nanosecond": 0}.get(
                part, _TICKS.get(part, TICKS_PER_DAY)
            )
            if part == "nanosecond":
                total = days * TICKS_PER_DAY + ticks + n // 100
            else:
                total = days * TICKS_PER_DAY + ticks + n * step
            days, ticks = divmod(total, TICKS_PER_DAY)
            dt.date.fromordinal(days + 1)  # in range
    except (ValueError, OverflowError):
        raise SqlError(517, f"Adding a value to a '{t.name}' column caused an overflow.") from None
    moved = Temporal(
        days if value.days is not None or t.name != "time" else None,
        ticks if value.ticks is not None else None,
        value.offset,
    )
    return temporal_text(t, moved)


def register(engine: duckdb.DuckDBPyConnection) -> None:
    """The engine functions ``__mssql_datepart``, ``__mssql_datediff(_big)`` and
    ``__mssql_dateadd`` (see :mod:`udfs`)."""
    text, integer, big = sqltypes.VARCHAR, sqltypes.INTEGER, sqltypes.BIGINT
    engine.create_function(
        "__mssql_datepart", datepart, [text, text, text], integer, null_handling=func.SPECIAL
    )
    engine.create_function(
        "__mssql_datediff",
        lambda p, a, b, ta, tb: datediff(p, a, b, ta, tb, big=False),
        [text, text, text, text, text],
        integer,
        null_handling=func.SPECIAL,
    )
    engine.create_function(
        "__mssql_datediff_big",
        lambda p, a, b, ta, tb: datediff(p, a, b, ta, tb, big=True),
        [text, text, text, text, text],
        big,
        null_handling=func.SPECIAL,
    )
    engine.create_function(
        "__mssql_dateadd",
        lambda p, n, v, name, scale: dateadd(p, n, v, scalar(name, scale=scale)),
        [text, big, text, text, integer],
        text,
        null_handling=func.SPECIAL,
    )
