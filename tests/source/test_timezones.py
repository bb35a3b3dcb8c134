"""Windows time zone names map to IANA zones with real DST rules (mssql_cdc._timezones)."""

from __future__ import annotations

import datetime as dt

import pytest

from mssql_cdc._timezones import windows_to_iana, windows_zone


@pytest.mark.parametrize(
    ("windows", "iana"),
    [
        ("UTC", "Etc/UTC"),
        ("Pacific Standard Time", "America/Los_Angeles"),
        ("W. Europe Standard Time", "Europe/Berlin"),
        ("pacific standard time", "America/Los_Angeles"),
        (" Tokyo Standard Time ", "Asia/Tokyo"),
    ],
)
def test_known_names_map_to_cldr_zones(windows, iana):
    assert windows_to_iana(windows) == iana


def test_unknown_name_is_a_value_error_with_examples():
    with pytest.raises(ValueError, match=r"unknown Windows time zone 'Mars Time'.*Pacific"):
        windows_to_iana("Mars Time")


def test_dst_rules_are_real():
    zone = windows_zone("Pacific Standard Time")
    winter = dt.datetime(2026, 1, 15, 12, tzinfo=zone)
    summer = dt.datetime(2026, 7, 15, 12, tzinfo=zone)
    assert winter.utcoffset() == dt.timedelta(hours=-8)
    assert summer.utcoffset() == dt.timedelta(hours=-7)
    # 2026-11-01 01:30 happens twice in Los Angeles (fall back); fold picks the second.
    first = dt.datetime(2026, 11, 1, 1, 30, tzinfo=zone)
    second = first.replace(fold=1)
    assert second.astimezone(dt.timezone.utc) - first.astimezone(dt.timezone.utc) == dt.timedelta(
        hours=1
    )
