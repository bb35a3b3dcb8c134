"""The Spark data sources ``mssql_cdc`` and ``mssql_cdc_snapshot`` (docs/data-sources.md,
docs/reference/bronze-schema.md), and the surface the stream and the snapshots use:
:func:`register`, a bootstrap's :func:`snapshot_position`, a seed's :func:`seed_position`, the
data-loss check before a query starts (:func:`find_loss`) and the capture instances of a schema
(:func:`schema_capture_instances`) and a database stream's reads (:class:`ServerReads`).
``mssql_cdc.pipeline`` and ``mssql_cdc.snapshots`` import the source only from here.

Importing this package does not import PySpark; :mod:`mssql_cdc.source.datasource` does.
"""

from __future__ import annotations

from mssql_cdc.options import SourceOptions
from mssql_cdc.source.catalog import check_reachable, schema_capture_instances
from mssql_cdc.source.chunk_plan import ChunkPlan, chunk_key, plan_chunks
from mssql_cdc.source.database_reads import ServerReads
from mssql_cdc.source.offsets import format_utc
from mssql_cdc.source.positions import SnapshotPosition, seed_position, snapshot_position
from mssql_cdc.source.registration import register
from mssql_cdc.source.retention import Loss, find_loss
from mssql_cdc.source.tallies import SourceTallies, open_tallies

__all__ = [
    "ChunkPlan",
    "Loss",
    "ServerReads",
    "SnapshotPosition",
    "SourceOptions",
    "SourceTallies",
    "check_reachable",
    "chunk_key",
    "find_loss",
    "format_utc",
    "open_tallies",
    "plan_chunks",
    "register",
    "schema_capture_instances",
    "seed_position",
    "snapshot_position",
]
