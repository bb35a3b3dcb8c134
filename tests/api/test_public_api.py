"""The package's public surface: exactly the names documented, importable without Spark."""

from __future__ import annotations

import subprocess
import sys

import mssql_cdc
from mssql_cdc import _native, errors

PUBLIC = {
    "HAS_ADMISSION_CONTROL",
    "OPERATIONS",
    "ApplyResult",
    "BackfillState",
    "BackfillStatus",
    "BatchDetail",
    "DataSkippedDetail",
    "Granularity",
    "Isolation",
    "MssqlCdcDataSource",
    "SnapshotChunkDetail",
    "SnapshotCompletionDetail",
    "SnapshotMode",
    "SnapshotOpenDetail",
    "SnapshotPlanDetail",
    "SparkSessionLike",
    "StreamingQueryLike",
    "WaveMetadata",
    "CdcStream",
    "CheckItem",
    "CheckReport",
    "DataLossError",
    "Lsn",
    "MssqlCdcError",
    "Offset",
    "OnDataLoss",
    "ReconcileResult",
    "SchemaChangedError",
    "SourceOptions",
    "__version__",
    "apply_changes",
    "await_all",
    "check",
    "is_data_loss",
    "is_schema_changed",
    "leave_database",
    "parked_tables",
    "newest_snapshot",
    "reconcile",
    "register",
    "start_database",
    "start_many",
    "stop_all",
    "stream",
}


def test_all_lists_exactly_the_public_names():
    assert set(mssql_cdc.__all__) == PUBLIC
    for name in mssql_cdc.__all__:
        assert hasattr(mssql_cdc, name), name


def test_version_comes_from_the_installed_distribution():
    assert mssql_cdc.__version__ == "0.1.0"
    assert _native.version() == "0.1.0"


def test_native_core_links_openssl():
    assert _native.tls_library_version().startswith("OpenSSL 3.")


def test_import_does_not_load_pyspark():
    code = (
        "import sys, mssql_cdc, mssql_cdc.spark, mssql_cdc.silver; mssql_cdc.apply_changes; "
        "print('pyspark' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_error_tree():
    assert issubclass(errors.DataLossError, errors.MssqlCdcError)
    assert issubclass(errors.DataLossError, RuntimeError)
    assert issubclass(errors.SchemaChangedError, RuntimeError)
    assert mssql_cdc.Lsn.__module__ == "mssql_cdc"


def test_recovery_surface_is_typed():
    import typing

    from mssql_cdc.pipeline import cdc_stream
    from mssql_cdc.types import ON_DATA_LOSS

    for method in (mssql_cdc.CdcStream.snapshot, mssql_cdc.CdcStream.seed):
        assert method.__annotations__["return"] == "Offset"
    assert mssql_cdc.CdcStream.to_delta.__annotations__["on_data_loss"] == "OnDataLoss"
    assert (cdc_stream.Offset, cdc_stream.OnDataLoss) == (mssql_cdc.Offset, mssql_cdc.OnDataLoss)
    assert typing.get_args(mssql_cdc.OnDataLoss) == ON_DATA_LOSS == ("fail", "resnapshot")
    assert set(mssql_cdc.Offset.__annotations__) == {"lsn", "commit_ts"}
    assert mssql_cdc.newest_snapshot.__annotations__["return"] == "Offset | None"


def test_backfill_surface_is_typed():
    import typing

    from mssql_cdc.types import BACKFILL_STATES, BackfillStatus

    assert mssql_cdc.BackfillStatus is BackfillStatus
    assert mssql_cdc.CdcStream.backfill.__annotations__["return"] == "BackfillStatus"
    assert typing.get_args(typing.get_type_hints(BackfillStatus)["state"]) == BACKFILL_STATES
    assert BACKFILL_STATES == (
        "done",
        "running",
        "waiting_headroom",
        "waiting_metrics",
        "no_snapshot",
    )
    status = BackfillStatus("waiting_headroom", "0x01", 1, 4, 3, 12, None, reason="headroom")
    assert (status.paused, status.done, status.snapshot, status.chunks_total) == (
        True,
        False,
        "0x01",
        4,
    )
    paused = {s for s in BACKFILL_STATES if BackfillStatus(s, None, 0, None, 0, 0, None).paused}
    assert paused == {"waiting_headroom", "waiting_metrics", "no_snapshot"}
    assert BackfillStatus("done", "0x01", 4, 4, 12, 12, 0.0).done
