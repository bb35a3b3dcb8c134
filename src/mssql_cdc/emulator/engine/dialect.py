"""The T-SQL dialect the emulator parses with: sqlglot's, but for the functions the rewriter
answers itself, which sqlglot would otherwise turn into another function of its own
(``SYSDATETIME()`` would become ``GETDATE()``'s node and lose its ``datetime2(7)`` type;
``DATEPART(TZOFFSET, ...)`` an ``EXTRACT`` of the offset's minutes only). Those stay plain
function calls (``exp.Anonymous``) for :mod:`rewrite`.
"""

from __future__ import annotations

from typing import ClassVar

from sqlglot.dialects.tsql import TSQL
from sqlglot.parsers.tsql import TSQLParser

__all__ = ["OWN_FUNCTIONS", "EmulatorTSQL"]

#: functions whose sqlglot translation the emulator does not use
OWN_FUNCTIONS = frozenset(
    {
        "SYSDATETIME",
        "DATEPART",
        "DATEADD",
        "DATEDIFF",
        "DATEDIFF_BIG",
        "LEN",
        "LEFT",
        "RIGHT",
        "CHARINDEX",
        "DAY",
        "MONTH",
        "YEAR",
        "SUBSTRING",
        "REPLACE",
    }
)


class _Parser(TSQLParser):
    FUNCTIONS: ClassVar = {k: v for k, v in TSQLParser.FUNCTIONS.items() if k not in OWN_FUNCTIONS}
    FUNCTION_PARSERS: ClassVar = {
        k: v for k, v in TSQLParser.FUNCTION_PARSERS.items() if k not in OWN_FUNCTIONS
    }


class EmulatorTSQL(TSQL):
    """sqlglot's T-SQL with :data:`OWN_FUNCTIONS` left as function calls."""

    Parser = _Parser
