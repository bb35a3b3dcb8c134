"""The stream: ``stream(spark, options)`` and its verbs (``to_delta``, ``snapshot()``,
``seed()``, ``backfill()``), ``start_many`` and ``start_database`` (docs/streaming.md,
docs/bootstrap.md, docs/data-loss.md, docs/many-tables.md). The snapshots themselves live in
``mssql_cdc.snapshots``.

Importing it does not import PySpark (ADR 0004); Spark is used when ``to_delta`` runs.
"""

from __future__ import annotations

from mssql_cdc.pipeline.cdc_stream import CdcStream, stream
from mssql_cdc.pipeline.database import leave_database, parked_tables, start_database
from mssql_cdc.pipeline.fanout import await_all, start_many, stop_all

__all__ = [
    "CdcStream",
    "await_all",
    "leave_database",
    "parked_tables",
    "start_database",
    "start_many",
    "stop_all",
    "stream",
]
