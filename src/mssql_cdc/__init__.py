"""mssql-cdc: stream SQL Server Change Data Capture into Delta Lake on Spark, exactly once.

The public surface is re-exported here; see ``docs/`` for the guides. Modules that need Spark
import it lazily, so ``import mssql_cdc`` (and the emulator) work without PySpark installed.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version

from mssql_cdc._native import Lsn
from mssql_cdc.errors import (
    DataLossError,
    MssqlCdcError,
    SchemaChangedError,
    is_data_loss,
    is_schema_changed,
)
from mssql_cdc.options import SourceOptions
from mssql_cdc.pipeline import CdcStream, stream
from mssql_cdc.source import register

try:
    __version__ = _dist_version("mssql-cdc")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "CdcStream",
    "DataLossError",
    "Lsn",
    "MssqlCdcError",
    "SchemaChangedError",
    "SourceOptions",
    "__version__",
    "is_data_loss",
    "is_schema_changed",
    "register",
    "stream",
]
