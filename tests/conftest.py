"""Shared pytest fixtures.

* ``spark``: one local Spark session (``local[2]``, or the master ``MSSQL_CDC_TEST_MASTER`` names;
  Delta, UTC) for the whole run. Tests that use it get the ``spark`` marker automatically, so
  ``pytest -m "not spark"`` runs without a JVM.
* ``connect_spark``: a Spark Connect session to a local plain Spark Connect server (Delta's SQL
  extension, no Delta Connect plugin) started in its own process for the whole run
  (tests/connect_server.py).
* ``any_spark``: parametrised over ``classic`` (``spark``) and ``connect`` (``connect_spark``);
  tests that use it run once on each. Connect runs get the ``connect`` marker as well, so
  ``pytest -m "not connect"`` leaves them out.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from local_spark import master, spark_config

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    pytest.importorskip("pyspark")
    from mssql_cdc.spark import get_spark

    warehouse: Path = tmp_path_factory.mktemp("spark-warehouse")
    session = get_spark("mssql-cdc-tests", master(), config=spark_config(str(warehouse)))
    yield session
    session.stop()


_SPARK_FIXTURES = frozenset({"spark", "connect_spark", "any_spark"})


@pytest.fixture(scope="session")
def connect_spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    pytest.importorskip("pyspark")
    pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect] (grpcio, pandas)")
    pytest.importorskip("pandas", reason="Spark Connect needs pyspark[connect] (grpcio, pandas)")
    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    from connect_server import launch_on_a_free_port

    base: Path = tmp_path_factory.mktemp("spark-connect")
    port, server = launch_on_a_free_port(base / "warehouse", base / "server.log")
    try:
        with pytest.MonkeyPatch.context() as env:
            env.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
            session = RemoteSparkSession.builder.remote(f"sc://127.0.0.1:{port}").getOrCreate()
        yield session  # type: ignore[misc]
        session.stop()
    finally:
        assert server.stdin is not None
        server.stdin.close()  # the server stops its session and exits
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(params=["classic", "connect"])
def any_spark(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> SparkSession:
    """The classic session, or the Spark Connect one; PySpark's functions module builds
    Connect columns only while ``SPARK_CONNECT_MODE_ENABLED`` is set, so it is set for the
    Connect runs."""
    if request.param == "classic":
        session: SparkSession = request.getfixturevalue("spark")
        return session
    session = request.getfixturevalue("connect_spark")
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    return session


#: the slowest test files (minutes each on the 2-core CI machine), slowest first. With whole
#: files per xdist process (ADR 0071) they are handed out first, so that neither process is
#: left running one of them alone at the end while the other has nothing to do.
SLOWEST_FILES = (
    "pipeline/test_recovery.py",
    "pipeline/test_backfill.py",
    "silver/test_waves.py",
    "pipeline/test_connect.py",
    "silver/test_apply.py",
    "pipeline/test_reconcile.py",
    "pipeline/test_crash.py",
    "pipeline/test_backfill_kill.py",
    "pipeline/test_crash_resnapshot.py",
    "chaos/test_chaos.py",
    "silver/test_history.py",
    "pipeline/test_fanout.py",
)


def _file_rank(path: str, spark_files: set[str]) -> tuple[int, int]:
    """Where a test file runs: the slowest files first, then the other files with a Spark
    test, then the rest (seconds each: they fill the gaps at the end)."""
    for n, name in enumerate(SLOWEST_FILES):
        if path.replace("\\", "/").endswith("tests/" + name):
            return (0, n)
    return (1, 0) if path in spark_files else (2, 0)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    spark_files: set[str] = set()
    for item in items:
        if _SPARK_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)
            spark_files.add(str(item.path))
        callspec = getattr(item, "callspec", None)
        if (
            callspec is not None and callspec.params.get("any_spark") == "connect"
        ) or "connect_spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.connect)
    # a stable sort by file: each file's tests stay together and in their order
    items.sort(key=lambda item: _file_rank(str(item.path), spark_files))


# ---- BEGIN emulator fixtures (mssql_cdc.emulator; owned by the emulator work) ----------------
# ``sql_server`` yields a running SQL Server stand-in: the in-process emulator, or the real
# server named by MSSQL_CDC_TEST_SERVER (an ODBC-style connection string). ``emulator`` is the
# control API; tests that request it are skipped against a real server.
import os  # noqa: E402
from dataclasses import dataclass  # noqa: E402


@dataclass
class SqlServerTarget:
    host: str
    port: int
    user: str
    password: str
    database: str
    emulator: object | None

    def __repr__(self) -> str:  # never show the password
        return f"SqlServerTarget({self.host}:{self.port}, emulator={self.emulator is not None})"


def _parse_connection_string(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in text.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


@pytest.fixture
def sql_server() -> Iterator[SqlServerTarget]:
    real = os.environ.get("MSSQL_CDC_TEST_SERVER")
    if real:
        opts = _parse_connection_string(real)
        server = opts.get("server", "127.0.0.1").removeprefix("tcp:")
        host, _, port = server.partition(",")
        yield SqlServerTarget(
            host,
            int(port or 1433),
            opts.get("uid") or opts.get("user id", "sa"),
            opts.get("pwd") or opts.get("password", ""),
            opts.get("database", "master"),
            None,
        )
        return
    pytest.importorskip("duckdb")
    from mssql_cdc.emulator import Emulator

    with Emulator() as emu:
        yield SqlServerTarget(emu.host, emu.port, "sa", emu.password, "master", emu)


@pytest.fixture
def emulator(sql_server: SqlServerTarget) -> object:
    if sql_server.emulator is None:
        pytest.skip("needs the emulator's control API (MSSQL_CDC_TEST_SERVER is set)")
    return sql_server.emulator


# ---- END emulator fixtures -------------------------------------------------------------------
