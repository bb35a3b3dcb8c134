"""Windows time zone names, as SQL Server reports them, mapped to IANA zones.

SQL Server names its zone the Windows way (``CURRENT_TIMEZONE_ID()`` returns e.g.
``Pacific Standard Time``; ``AT TIME ZONE`` takes the same names). The DST rules come from the
IANA database (``zoneinfo`` with the ``tzdata`` package); the name mapping is CLDR's
``windowsZones.xml`` (territory "001"), as the maintained ``tzlocal`` package ships it.
"""

from __future__ import annotations

from functools import cache
from zoneinfo import ZoneInfo

from tzlocal.windows_tz import win_tz

__all__ = ["windows_to_iana", "windows_zone"]


@cache
def _by_lower_name() -> dict[str, str]:
    return {name.lower(): iana for name, iana in win_tz.items()}


def windows_to_iana(name: str) -> str:
    """Return the IANA zone name for a Windows time zone name (case-insensitive).

    Raises:
        ValueError: ``name`` is not a Windows time zone name CLDR knows; the message gives a
            few examples of valid names.
    """
    iana = _by_lower_name().get(name.strip().lower())
    if iana is None:
        raise ValueError(
            f"unknown Windows time zone {name!r}; expected a name such as 'UTC', "
            "'Pacific Standard Time' or 'W. Europe Standard Time' (see CURRENT_TIMEZONE_ID())"
        )
    return iana


def windows_zone(name: str) -> ZoneInfo:
    """Return the :class:`zoneinfo.ZoneInfo` for a Windows time zone name."""
    return ZoneInfo(windows_to_iana(name))
