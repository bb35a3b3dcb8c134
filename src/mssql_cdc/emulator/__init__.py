"""SQL Server CDC emulator: a TDS server with a T-SQL subset and CDC semantics.

Start it with ``python -m mssql_cdc.emulator`` or, in tests, with :class:`Emulator`.
Needs the ``emulator`` extra (sqlglot, duckdb, cryptography).
"""

from __future__ import annotations

from mssql_cdc.emulator.control import Emulator
from mssql_cdc.emulator.server import DEFAULT_PASSWORD

__all__ = ["DEFAULT_PASSWORD", "Emulator"]
