"""mssql-cdc: stream SQL Server Change Data Capture into Delta Lake on Spark, exactly once.

The public surface is re-exported here; see ``docs/`` for the guides. Each name resolves on
first use (PEP 562), so ``import mssql_cdc`` and importing one module of the package (the
emulator, the CLI) load only what they need; modules that need Spark import it lazily, so all
of this works without PySpark installed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mssql_cdc._native import Lsn
    from mssql_cdc.errors import (
        DataLossError,
        MssqlCdcError,
        SchemaChangedError,
        is_data_loss,
        is_schema_changed,
    )
    from mssql_cdc.options import SourceOptions
    from mssql_cdc.payloads import (
        BatchDetail,
        DataSkippedDetail,
        SnapshotChunkDetail,
        SnapshotCompletionDetail,
        SnapshotOpenDetail,
        SnapshotPlanDetail,
        WaveMetadata,
    )
    from mssql_cdc.pipeline import (
        CdcStream,
        await_all,
        leave_database,
        parked_tables,
        start_database,
        start_many,
        stop_all,
        stream,
    )
    from mssql_cdc.silver import apply_changes
    from mssql_cdc.snapshots import newest_snapshot
    from mssql_cdc.source.datasource import HAS_ADMISSION_CONTROL, MssqlCdcDataSource
    from mssql_cdc.source.preflight import CheckItem, CheckReport, check
    from mssql_cdc.source.registration import register
    from mssql_cdc.types import (
        OPERATIONS,
        ApplyResult,
        BackfillState,
        BackfillStatus,
        Granularity,
        Isolation,
        Offset,
        OnDataLoss,
        SnapshotMode,
        SparkSessionLike,
        StreamingQueryLike,
    )
    from mssql_cdc.validate.reconcile import ReconcileResult, reconcile

    __version__: str

__all__ = [
    "HAS_ADMISSION_CONTROL",
    "OPERATIONS",
    "ApplyResult",
    "BackfillState",
    "BackfillStatus",
    "BatchDetail",
    "CdcStream",
    "CheckItem",
    "CheckReport",
    "DataLossError",
    "DataSkippedDetail",
    "Granularity",
    "Isolation",
    "Lsn",
    "MssqlCdcDataSource",
    "MssqlCdcError",
    "Offset",
    "OnDataLoss",
    "ReconcileResult",
    "SchemaChangedError",
    "SnapshotChunkDetail",
    "SnapshotCompletionDetail",
    "SnapshotMode",
    "SnapshotOpenDetail",
    "SnapshotPlanDetail",
    "SourceOptions",
    "SparkSessionLike",
    "StreamingQueryLike",
    "WaveMetadata",
    "__version__",
    "apply_changes",
    "await_all",
    "check",
    "is_data_loss",
    "is_schema_changed",
    "leave_database",
    "newest_snapshot",
    "parked_tables",
    "reconcile",
    "register",
    "start_database",
    "start_many",
    "stop_all",
    "stream",
]

#: where each public name lives
_HOMES = {
    "ApplyResult": "mssql_cdc.types",
    "BackfillState": "mssql_cdc.types",
    "BackfillStatus": "mssql_cdc.types",
    "Granularity": "mssql_cdc.types",
    "Isolation": "mssql_cdc.types",
    "OPERATIONS": "mssql_cdc.types",
    "SnapshotMode": "mssql_cdc.types",
    "SparkSessionLike": "mssql_cdc.types",
    "StreamingQueryLike": "mssql_cdc.types",
    "BatchDetail": "mssql_cdc.payloads",
    "DataSkippedDetail": "mssql_cdc.payloads",
    "SnapshotChunkDetail": "mssql_cdc.payloads",
    "SnapshotCompletionDetail": "mssql_cdc.payloads",
    "SnapshotOpenDetail": "mssql_cdc.payloads",
    "SnapshotPlanDetail": "mssql_cdc.payloads",
    "WaveMetadata": "mssql_cdc.payloads",
    "HAS_ADMISSION_CONTROL": "mssql_cdc.source.datasource",
    "MssqlCdcDataSource": "mssql_cdc.source.datasource",
    "apply_changes": "mssql_cdc.silver",
    "CdcStream": "mssql_cdc.pipeline",
    "await_all": "mssql_cdc.pipeline",
    "CheckItem": "mssql_cdc.source.preflight",
    "CheckReport": "mssql_cdc.source.preflight",
    "check": "mssql_cdc.source.preflight",
    "DataLossError": "mssql_cdc.errors",
    "Lsn": "mssql_cdc._native",
    "MssqlCdcError": "mssql_cdc.errors",
    "Offset": "mssql_cdc.types",
    "OnDataLoss": "mssql_cdc.types",
    "ReconcileResult": "mssql_cdc.validate.reconcile",
    "reconcile": "mssql_cdc.validate.reconcile",
    "SchemaChangedError": "mssql_cdc.errors",
    "SourceOptions": "mssql_cdc.options",
    "is_data_loss": "mssql_cdc.errors",
    "is_schema_changed": "mssql_cdc.errors",
    "newest_snapshot": "mssql_cdc.snapshots",
    "register": "mssql_cdc.source.registration",
    "leave_database": "mssql_cdc.pipeline",
    "parked_tables": "mssql_cdc.pipeline",
    "start_database": "mssql_cdc.pipeline",
    "start_many": "mssql_cdc.pipeline",
    "stop_all": "mssql_cdc.pipeline",
    "stream": "mssql_cdc.pipeline",
}


def _version() -> str:
    # imported on first use: at import it costs every new Python worker about 40 ms (ADR 0178)
    from importlib.metadata import PackageNotFoundError  # noqa: PLC0415
    from importlib.metadata import version as _dist_version  # noqa: PLC0415

    try:
        return _dist_version("mssql-cdc")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


#: names of the reference API that exist there only for its ODBC backends, and what to use here
_ODBC_ONLY = {
    "Backend": "the data sources read through this package's own TDS client, so there is no "
    "backend to plug in (the 'backend' option is not read)",
    "CdcClient": "the data sources build their own client from the options; read changes with "
    "spark.readStream.format('mssql_cdc') or mssql_cdc.stream(), current rows with "
    "spark.read.format('mssql_cdc_snapshot'), and query SQL Server with "
    "mssql_cdc._native.connect()",
    "make_client": "the data sources build their own client from the options; use "
    "mssql_cdc.check(options) to test a connection and the login's permissions",
}


class OdbcOnlyError(ImportError):
    """A name of the reference API that exists there only for its ODBC backends: the message
    says what to use instead. An ``ImportError`` (not ``AttributeError``), so that ``from
    mssql_cdc import X`` shows the message rather than Python's generic one."""


def __getattr__(name: str) -> object:
    if name == "__version__":
        value: object = _version()
    elif name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
    elif name in _ODBC_ONLY:
        raise OdbcOnlyError(
            f"mssql_cdc.{name} exists in the reference API only for its ODBC backends: "
            f"{_ODBC_ONLY[name]} (docs/compatibility.md)"
        )
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
