"""Silver tables from bronze: :func:`apply_changes` keeps a table's current state (SCD type 1)
or its full history (SCD type 2) with one MERGE per call (docs/silver.md).

Modules: ``rules`` (pure: argument checks, column choice, the MERGE statements), ``plan`` (what a
call reads from bronze), ``scd2`` (the versions a type 2 call writes), ``table`` (silver's
creation, new columns and the MERGE), ``source`` (keys and capture instances from SQL Server),
``apply`` (one call). The position lives in the control table (``mssql_cdc.sink.control``).

Importing this package does not import PySpark (ADR 0004).
"""

from __future__ import annotations

from mssql_cdc.silver.apply import apply_changes
from mssql_cdc.types import ApplyResult

__all__ = ["ApplyResult", "apply_changes"]
