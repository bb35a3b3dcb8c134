"""The one rule for a command-line value a subcommand refuses: :class:`UsageError`, which
``mssql-cdc`` prints as one line on stderr and ends with exit code :data:`USAGE_EXIT` (2), the
code of argparse's own refusals; a failure of the work itself ends with 1."""

from __future__ import annotations

import math

__all__ = ["USAGE_EXIT", "UsageError", "check_non_negative", "check_positive"]

#: the exit code of a command given bad arguments (argparse's own)
USAGE_EXIT = 2


class UsageError(ValueError):
    """An argument value the command refuses (a range, a combination, a malformed ``--option``,
    a secret on the command line), found before any work starts: one line on stderr and exit
    code :data:`USAGE_EXIT`, like argparse's own errors."""


def check_positive(flag: str, value: float | None) -> None:
    """Refuses ``value`` (the argument ``flag``, e.g. ``"--hours"``) unless it is ``None`` or a
    finite number above zero: argparse's ``float`` also reads ``nan`` and ``inf``.

    Raises:
        UsageError: naming ``flag`` and the value.
    """
    if value is not None and not (math.isfinite(value) and value > 0):
        raise UsageError(f"{flag} must be positive, got {value:g}")


def check_non_negative(flag: str, value: float | None) -> None:
    """Refuses ``value`` (the argument ``flag``) unless it is ``None`` or a finite number of zero
    or more (a threshold where zero means something, e.g. "alert once headroom is gone").

    Raises:
        UsageError: naming ``flag`` and the value.
    """
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise UsageError(f"{flag} must be zero or more, got {value:g}")
