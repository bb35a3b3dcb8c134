"""The one rule for a command-line value a subcommand refuses: :class:`UsageError`, which
``mssql-cdc`` prints as one line on stderr and ends with exit code :data:`USAGE_EXIT` (2), the
code of argparse's own refusals; a failure of the work itself ends with 1."""

from __future__ import annotations

__all__ = ["USAGE_EXIT", "UsageError"]

#: the exit code of a command given bad arguments (argparse's own)
USAGE_EXIT = 2


class UsageError(ValueError):
    """An argument value the command refuses (a range, a combination, a malformed ``--option``,
    a secret on the command line), found before any work starts: one line on stderr and exit
    code :data:`USAGE_EXIT`, like argparse's own errors."""
