"""SQL Server CDC emulator: a TDS server with a T-SQL subset and CDC semantics.

Start it with ``python -m mssql_cdc.emulator`` or, in tests, with :class:`Emulator`.
Needs the ``emulator`` extra (sqlglot, duckdb, cryptography).

The package is layered by concern, each layer importing only those below it
(``scripts/check_imports.py`` checks it; docs/architecture.md draws it): ``protocol`` (TDS
bytes and SQL Server data types), ``core`` (errors, catalog, transaction log, locks, result
sets), ``cdc`` (capture instances, change functions, cleanup), ``engine`` (the T-SQL executor
over DuckDB, the database), ``server`` (TDS sessions), then this package's own modules: the
in-process :class:`Emulator`, the command lines, AdventureWorks, the workload and replay.
The names below resolve on first use, so importing one layer loads only what it needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mssql_cdc.emulator.control import Emulator
    from mssql_cdc.emulator.server.server import DEFAULT_PASSWORD

__all__ = ["DEFAULT_PASSWORD", "Emulator"]

_HOMES = {
    "DEFAULT_PASSWORD": "mssql_cdc.emulator.server.server",
    "Emulator": "mssql_cdc.emulator.control",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
