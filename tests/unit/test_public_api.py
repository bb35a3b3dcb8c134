"""The package's public surface: exactly the names documented, importable without Spark."""

from __future__ import annotations

import subprocess
import sys

import mssql_cdc
from mssql_cdc import _native, errors

PUBLIC = {
    "CdcStream",
    "CheckItem",
    "CheckReport",
    "DataLossError",
    "Lsn",
    "MssqlCdcError",
    "SchemaChangedError",
    "SourceOptions",
    "__version__",
    "await_all",
    "check",
    "is_data_loss",
    "is_schema_changed",
    "register",
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
    code = "import sys, mssql_cdc, mssql_cdc.spark; print('pyspark' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_error_tree():
    assert issubclass(errors.DataLossError, errors.MssqlCdcError)
    assert issubclass(errors.DataLossError, RuntimeError)
    assert issubclass(errors.SchemaChangedError, RuntimeError)
    assert mssql_cdc.Lsn.__module__ == "mssql_cdc"
