"""The exactly-once Delta sink of a CDC stream (``delta_sink``) and its tables.

Importing this package does not import PySpark (ADR 0004); Spark is imported when a batch is
written. See docs/sink.md.
"""

from __future__ import annotations

from mssql_cdc.sink.delta import delta_sink

__all__ = ["delta_sink"]
