"""Snapshots: every way a tracked table's rows reach bronze as operation-0 rows, each over the
stream's ledger (docs/bootstrap.md, docs/data-loss.md, docs/schema-changes.md). README.md here
names each module's job.

The stream (``mssql_cdc.pipeline``) calls these modules; ``newest_snapshot`` is public. Importing
it does not import PySpark.
"""

from __future__ import annotations

from mssql_cdc.snapshots.newest import newest_snapshot

__all__ = ["newest_snapshot"]
