"""Checking ``stream()`` and ``to_delta()`` arguments before anything reaches Spark.

Pure Python. Each error names the parameter (or option), the value received when it holds no
secret, and what is allowed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from mssql_cdc.options import OPTION_NAMES

__all__ = ["TRIGGER_KINDS", "check_trigger", "copy_options", "path_argument", "text_argument"]

#: the keyword arguments of ``DataStreamWriter.trigger``
TRIGGER_KINDS = ("processingTime", "once", "continuous", "availableNow")


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def copy_options(options: Mapping[str, object]) -> dict[str, str]:
    """A copy of ``options`` with string values (``True`` -> ``"true"``, ``2`` -> ``"2"``) and
    known names in their documented spelling, so no option is given twice in two cases.

    Raises:
        TypeError: ``options`` is not a mapping, or a name is not a string.
        ValueError: two names differ only by case.
    """
    if not isinstance(options, Mapping):
        raise TypeError(
            f"options must be a mapping of option names to values, got {type(options).__name__}"
        )
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(key, str):
            raise TypeError(f"option names must be strings, got {key!r}")
        lowered = key.lower()
        if lowered in seen:
            raise ValueError(
                f"options {seen[lowered]!r} and {key!r} are the same option (names match "
                "ignoring case); give it once"
            )
        seen[lowered] = key
        if value is None:
            continue
        out[OPTION_NAMES.get(lowered, key)] = _text(value)
    return out


def text_argument(name: str, value: object, *, optional: bool = False) -> str | None:
    """A non-empty string argument (``None`` allowed when ``optional``).

    Raises:
        TypeError: not a string.
        ValueError: empty or blank.
    """
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name} is empty")
    return value


def path_argument(name: str, value: object) -> str:
    """A path argument: a non-empty ``str`` or ``os.PathLike``, as text.

    Raises:
        TypeError: neither a string nor a path.
        ValueError: empty.
    """
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a path (str or os.PathLike), got {type(value).__name__}")
    if not value.strip():
        raise ValueError(f"{name} is empty; give a directory such as '/checkpoints/orders'")
    return value


def check_trigger(trigger: object) -> dict[str, object] | None:
    """``trigger``: ``None`` (Spark's default) or a mapping with one of
    ``processingTime``, ``once``, ``continuous``, ``availableNow`` (the keyword arguments of
    ``DataStreamWriter.trigger``), e.g. ``{"availableNow": True}``.

    Raises:
        TypeError: not a mapping.
        ValueError: no key, several keys, or another key.
    """
    if trigger is None:
        return None
    if not isinstance(trigger, Mapping):
        raise TypeError(
            "trigger must be a dict of DataStreamWriter.trigger keyword arguments such as "
            f"{{'availableNow': True}}, got {type(trigger).__name__}"
        )
    keys = list(trigger)
    if len(keys) != 1 or keys[0] not in TRIGGER_KINDS:
        raise ValueError(
            f"trigger {dict(trigger)!r}: give exactly one of {', '.join(TRIGGER_KINDS)}, e.g. "
            "{'availableNow': True} or {'processingTime': '1 minute'}"
        )
    return dict(trigger)
