"""The pipeline: ``stream(spark, options).to_delta(...)``, ``snapshot()``, ``seed()`` and
:func:`newest_snapshot` (docs/streaming.md, docs/bootstrap.md, docs/data-loss.md).

Importing it does not import PySpark (ADR 0004); Spark is used when ``to_delta`` runs.
"""

from __future__ import annotations

from mssql_cdc.pipeline.cdc_stream import CdcStream, stream
from mssql_cdc.pipeline.fanout import await_all, start_many, stop_all
from mssql_cdc.pipeline.snapshots import newest_snapshot

__all__ = ["CdcStream", "await_all", "newest_snapshot", "start_many", "stop_all", "stream"]
