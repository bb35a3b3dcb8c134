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

from _pipeline import source  # noqa: F401 (the dbo.orders/dbo.other fixture, for every folder)
from local_spark import master, spark_config
from mssql_cdc import _native

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
    "snapshots/test_recovery.py",
    "snapshots/test_backfill.py",
    "silver/test_waves.py",
    "pipeline/test_connect.py",
    "silver/test_apply.py",
    "validate/test_reconcile.py",
    "pipeline/test_crash.py",
    "snapshots/test_backfill_kill.py",
    "snapshots/test_crash_resnapshot.py",
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
# ``sql_server`` yields the SQL Server every server test uses: the in-process emulator, or the
# real server named by MSSQL_CDC_TEST_SERVER (an ODBC-style connection string of a sysadmin;
# each test then gets a database of its own, tests/real_server.py). Its levers (``scan``,
# ``cleanup_below``, ``set_retention``) work on both. ``emulator`` is the emulator's own control
# API (its clock, faults, certificate, counters); a test that requests it is skipped against a
# real server, and the skip names the levers it uses (``emulator_levers``).
import inspect  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

from real_server import RealServer, reader_login  # noqa: E402


@dataclass
class SqlServerTarget:
    """The test server: where to connect (``user`` is a sysadmin), the login the product's
    options read as (``reader_user``; the sysadmin unless ``MSSQL_CDC_TEST_READER`` is set),
    and the levers."""

    host: str
    port: int
    user: str
    password: str = field(repr=False)
    database: str
    emulator: object | None
    real: RealServer | None = field(default=None, repr=False)
    reader_user: str = ""
    reader_password: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        if not self.reader_user:
            self.reader_user, self.reader_password = self.user, self.password

    def __repr__(self) -> str:  # never show a password
        return f"SqlServerTarget({self.host}:{self.port}, emulator={self.emulator is not None})"

    def scan(self) -> None:
        """One capture scan: the emulator's, or ``sys.sp_cdc_scan`` on a real server."""
        if self.real is not None:
            self.real.scan()
        else:
            self.emulator.scan()  # type: ignore[union-attr]

    def cleanup_below(self, capture_instance: str, low_water_mark: bytes) -> None:
        """``sys.sp_cdc_cleanup_change_table`` on either server."""
        if self.real is not None:
            self.real.cleanup_below(capture_instance, low_water_mark)
            return
        conn = _native.connect(
            f"Server=tcp:{self.host},{self.port};Encrypt=no", user=self.user, password=self.password
        )
        try:
            conn.execute(
                "EXEC sys.sp_cdc_cleanup_change_table @capture_instance = @P1, "
                "@low_water_mark = @P2, @threshold = 5000",
                [capture_instance, low_water_mark],
            )
        finally:
            conn.close()

    def grant_reader(self, schema: str, table: str, capture_instance: str) -> None:
        """sql/setup.sql's grants for one table to the reader login (real servers only)."""
        if self.real is not None:
            self.real.grant_reader(schema, table, capture_instance)


@pytest.fixture
def sql_server() -> Iterator[SqlServerTarget]:
    if os.environ.get("MSSQL_CDC_TEST_SERVER"):
        real = RealServer.from_environment()
        real.create_database()
        reader = reader_login() or (real.user, real.password)
        try:
            yield SqlServerTarget(
                real.host,
                real.port,
                real.user,
                real.password,
                real.database,
                None,
                real,
                reader[0],
                reader[1],
            )
        finally:
            real.drop_database()
        return
    pytest.importorskip("duckdb")
    from mssql_cdc.emulator import Emulator

    with Emulator() as emu:
        yield SqlServerTarget(emu.host, emu.port, "sa", emu.password, "master", emu)


#: what each lever of the emulator's control API stands for, for the skip reasons
EMULATOR_LEVERS = {
    "advance_clock": "its clock",
    "set_clock": "its clock",
    "cleanup": "its retention-based cleanup on its clock",
    "drop_connection": "fault injection",
    "kill": "fault injection",
    "deadlock_victim": "fault injection",
    "fail_statement": "fault injection",
    "refuse_logins": "fault injection",
    "delay_responses": "fault injection",
    "inject_fault": "fault injection",
    "route_next_login": "fault injection (routing)",
    "write_ca": "its TLS certificate",
    "set_tls_available": "its TLS settings",
    "set_strict_alpn": "its TLS settings",
    "add_access_token": "its access tokens",
    "load_adventureworks": "AdventureWorks loaded into it",
    "statement_count": "its request counters",
    "request_count": "its request counters",
    "sessions": "its session list",
    "logins": "its record of logins",
    "stop_capture_job": "its capture job",
    "start_capture_job": "its capture job",
    "set_polling_interval": "its capture job",
    "wait_for_scans": "its capture job",
    "scan_count": "its capture job",
    "set_retention": "its cleanup settings",
    "db": "its engine internals",
    "server": "its server internals",
    "clock": "its clock",
}


def emulator_levers(function: object) -> list[str]:
    """The emulator levers a test uses (``emulator.<lever>`` in the test function, else
    ``emulator.<lever>`` or ``emu.<lever>`` in its module's helpers), each with what it stands
    for; ``[]`` when none is named."""
    pattern = r"\b(?:emulator|emu)\.([a-z_]+)"
    for text in (_source(function), _source(inspect.getmodule(function))):
        used = sorted(set(re.findall(pattern, text)) & set(EMULATOR_LEVERS))
        if used:
            return [f"{lever} ({EMULATOR_LEVERS[lever]})" for lever in used]
    return []


def _source(obj: object) -> str:
    try:
        return inspect.getsource(obj)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return ""


@pytest.fixture
def emulator(request: pytest.FixtureRequest, sql_server: SqlServerTarget) -> object:
    if sql_server.emulator is None:
        levers = emulator_levers(request.function)
        itself = "tests/emulator/" in str(request.path).replace("\\", "/")
        why = ", ".join(levers) or "its control API"
        what = "tests the emulator itself" if itself else "needs the emulator"
        pytest.skip(f"{what}: {why} (MSSQL_CDC_TEST_SERVER is set)")
    return sql_server.emulator


# ---- END emulator fixtures -------------------------------------------------------------------
