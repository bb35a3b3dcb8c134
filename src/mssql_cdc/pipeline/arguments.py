"""Checking ``stream()`` and ``to_delta()`` arguments before anything reaches Spark.

Pure Python. Each error names the parameter (or option), the value received when it holds no
secret, and what is allowed.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from mssql_cdc.options import OPTION_NAMES

__all__ = [
    "TRIGGER_KINDS",
    "Recovery",
    "check_recovery",
    "check_trigger",
    "copy_options",
    "interval_micros",
    "path_argument",
    "text_argument",
]

#: the triggers ``to_delta`` runs (keyword arguments of ``DataStreamWriter.trigger``)
TRIGGER_KINDS = ("availableNow", "processingTime", "once")
_ALLOWED = (
    "{'availableNow': True}, {'processingTime': '<interval>'} such as '10 seconds', or "
    "{'once': True}"
)

# Spark's interval text as DataStreamWriter.trigger(processingTime=...) reads it: an optional
# "interval", then "<number> <unit>" pairs; a fraction only for seconds; no month or year.
_MICROS = {
    "week": 7 * 86_400_000_000,
    "day": 86_400_000_000,
    "hour": 3_600_000_000,
    "minute": 60_000_000,
    "second": 1_000_000,
    "millisecond": 1_000,
    "microsecond": 1,
}
_PART = re.compile(
    r"\+?([0-9]+)(?:\.([0-9]+))?\s+(weeks?|days?|hours?|minutes?|seconds?|milliseconds?|"
    r"microseconds?)",
    re.IGNORECASE,
)
_INTERVAL = re.compile(rf"(?:interval\s+)?{_PART.pattern}(?:\s+{_PART.pattern})*", re.IGNORECASE)
_MAX_MICROS = 2**63 - 1


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


def interval_micros(text: str) -> int | None:
    """The length of a ``processingTime`` interval in microseconds, ``None`` when Spark would
    not read it (``"10 seconds"``, ``"interval 1 minute"``, ``"1 hour 30 minutes"``,
    ``"1.5 seconds"`` are read; ``"10"``, ``"10s"``, ``"1 month"``, ``"-1 second"`` are not)."""
    body = text.strip()
    if not _INTERVAL.fullmatch(body):
        return None
    total = 0
    for whole, fraction, unit in _PART.findall(body):
        name = unit.lower().removesuffix("s")
        if fraction and name != "second":
            return None
        total += int(whole) * _MICROS[name] + int((fraction + "000000")[:6] or 0)
    return total if total <= _MAX_MICROS else None


def trigger_problem(kind: object, value: object, *, serverless: bool = False) -> str | None:
    """Why ``to_delta`` refuses the one-key trigger ``{kind: value}``, ``None`` when it runs it
    (the rule of :func:`check_trigger`, worded without the mapping so that ``mssql-cdc stream``
    can name its own ``--trigger`` argument)."""
    if kind == "continuous":
        return (
            "continuous processing runs neither foreachBatch, which to_delta writes through, "
            "nor Python data sources; for low latency use a processingTime trigger of '1 second'"
        )
    if kind not in TRIGGER_KINDS:
        return f"{kind!r} is not a trigger to_delta runs"
    if kind in ("availableNow", "once") and value is not True:
        return f"{kind} must be True, got {value!r}"
    if kind == "processingTime" and (not isinstance(value, str) or interval_micros(value) is None):
        return (
            f"processingTime must be an interval Spark reads, got {value!r}: '<number> <unit>' "
            "pairs, units week, day, hour, minute, second (a fraction allowed), millisecond, "
            "microsecond, e.g. '10 seconds' or '1 hour 30 minutes'"
        )
    if serverless and kind != "availableNow":
        return (
            "Databricks serverless compute runs only the availableNow trigger; schedule the job "
            "for fresher data"
        )
    return None


def check_trigger(trigger: object, *, serverless: bool = False) -> dict[str, object] | None:
    """``trigger``: ``None`` (Spark's default, back-to-back batches) or a mapping with exactly
    one of ``availableNow=True``, ``processingTime=<interval text Spark reads>``,
    ``once=True``, e.g. ``{"availableNow": True}``. On Databricks serverless compute
    (``serverless``) only ``{"availableNow": True}`` runs.

    Raises:
        TypeError: not a mapping.
        ValueError: no key, several keys, another key (``continuous`` among them: continuous
            processing runs neither ``foreachBatch`` nor Python data sources), a value other
            than ``True`` for ``availableNow``/``once``, an interval Spark would not read, or
            a trigger serverless compute refuses.
    """
    if trigger is None:
        if serverless:
            raise ValueError(
                "trigger None (Spark's default) does not run on Databricks serverless compute, "
                "which runs only trigger={'availableNow': True}: pass it, and schedule the job "
                "for fresher data"
            )
        return None
    if not isinstance(trigger, Mapping):
        raise TypeError(
            "trigger must be a dict of DataStreamWriter.trigger keyword arguments such as "
            f"{{'availableNow': True}}, got {type(trigger).__name__}"
        )
    keys = list(trigger)
    why = (
        trigger_problem(keys[0], trigger[keys[0]], serverless=serverless)
        if len(keys) == 1
        else "give exactly one trigger"
    )
    if why is not None:
        raise ValueError(f"trigger {dict(trigger)!r}: {why}; allowed: {_ALLOWED}")
    return {keys[0]: trigger[keys[0]]}


@dataclass(frozen=True)
class Recovery:
    """``to_delta``'s data-loss arguments, checked."""

    resnapshot: bool
    interval_days: float
    snapshot_on_switch: bool = False
    #: ``"full"`` or ``"chunked"``
    snapshot: str = "full"


def check_recovery(
    on_data_loss: object,
    resnapshot_interval_days: object,
    snapshot_on_switch: object,
    snapshot: object,
) -> Recovery:
    """``on_data_loss`` (``"fail"`` or ``"resnapshot"``), ``resnapshot_interval_days`` (a
    finite number >= 0), ``snapshot_on_switch`` (``True`` or ``False``) and ``snapshot``
    (``"full"`` or ``"chunked"``: how the bootstrap and a re-snapshot after data loss read
    the table; ADRs 0160, 0163).

    Raises:
        TypeError: a value of the wrong type.
        ValueError: a value not allowed; the message names the parameter and the values.
    """
    if on_data_loss not in ("fail", "resnapshot"):
        raise ValueError(f"on_data_loss must be 'fail' or 'resnapshot', got {on_data_loss!r}")
    days = resnapshot_interval_days
    if isinstance(days, bool) or not isinstance(days, (int, float)):
        raise TypeError(
            f"resnapshot_interval_days must be a number of days, got {type(days).__name__}"
        )
    if not math.isfinite(days) or days < 0:
        raise ValueError(
            f"resnapshot_interval_days must be a finite number >= 0 (0 allows a re-snapshot at "
            f"every run), got {days!r}"
        )
    if not isinstance(snapshot_on_switch, bool):
        raise TypeError(
            f"snapshot_on_switch must be True or False, got {type(snapshot_on_switch).__name__}"
        )
    if snapshot not in ("full", "chunked"):
        raise ValueError(f"snapshot must be 'full' or 'chunked', got {snapshot!r}")
    if snapshot == "chunked" and snapshot_on_switch:
        raise ValueError(
            "snapshot='chunked' with snapshot_on_switch=True: the switch snapshot reads the "
            "whole table inside one batch, which a chunked snapshot exists to avoid; pass one "
            "of them"
        )
    return Recovery(on_data_loss == "resnapshot", float(days), snapshot_on_switch, str(snapshot))
