"""The Spark data sources ``mssql_cdc`` and ``mssql_cdc_snapshot`` (docs/data-sources.md,
docs/reference/bronze-schema.md).

Importing this package does not import PySpark; :mod:`mssql_cdc.source.datasource` does.
"""

from __future__ import annotations

from mssql_cdc.options import SourceOptions
from mssql_cdc.source.registration import register

__all__ = ["SourceOptions", "register"]
