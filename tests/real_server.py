"""The tests' control API on a real SQL Server (``MSSQL_CDC_TEST_SERVER``), where SQL Server
itself can do what the emulator's levers do.

``MSSQL_CDC_TEST_SERVER`` is an ODBC-style connection string of a sysadmin login (CDC is enabled
by sysadmin, "sys.sp_cdc_enable_db"); SQL Server Agent may run. Each test gets a database of its
own, created here and dropped after the test (with its CDC jobs), so tests that create the same
tables never meet. ``MSSQL_CDC_TEST_READER`` (``login:password``, optional) names a
least-privileged login: the data sources then read as that login, with the grants of
``sql/setup.sql`` given to it for each table a test captures (:meth:`RealServer.grant_reader`).

What maps onto SQL Server:

* a capture scan: ``sys.sp_cdc_scan`` with ``@continuous = 0``, in the test's session, as the
  emulator's. The test database's capture job is made without being started, so nothing else
  captures; should a job hold the log reader anyway (error 22903: SQL Server refuses a second
  reader), it is stopped (``sys.sp_cdc_stop_job``) and the scan retried;
* cleanup below an LSN: ``sys.sp_cdc_cleanup_change_table`` (``@low_water_mark``);
* the cleanup job's retention: ``sys.sp_cdc_change_job @job_type = N'cleanup'``.

The emulator's clock, its faults, its TLS certificate and its counters have no SQL Server
equivalent: tests that need them skip there (``tests/conftest.py`` says which lever each needs).
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from mssql_cdc import _native
from mssql_cdc.errors import SqlServerError

#: "Another connection is already running 'sp_replcmds' for Change Data Capture in the current
#: database": the capture job holds the log reader
LOG_READER_BUSY = 22903
#: how long a stopped capture job may take to release the log reader
STOP_WAIT_SECONDS = 60.0


def parse_connection_string(text: str) -> dict[str, str]:
    """``key=value;...`` with lower-case keys (braces are not needed by the tests' strings)."""
    out: dict[str, str] = {}
    for part in text.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            out[key.strip().lower()] = value.strip()
    return out


@dataclass
class RealServer:
    """A sysadmin session on the real server, in the test's own database."""

    host: str
    port: int
    user: str
    password: str = field(repr=False)
    #: the database the test runs in (created by :meth:`create_database`)
    database: str = "master"
    encrypt: str = "yes"
    trust: str = "yes"
    _conn: Any = field(default=None, repr=False)

    @classmethod
    def from_environment(cls) -> RealServer:
        opts = parse_connection_string(os.environ["MSSQL_CDC_TEST_SERVER"])
        server = opts.get("server", "127.0.0.1").removeprefix("tcp:")
        host, _, port = server.partition(",")
        return cls(
            host=host,
            port=int(port or 1433),
            user=opts.get("uid") or opts.get("user id", "sa"),
            password=opts.get("pwd") or opts.get("password", ""),
            encrypt=opts.get("encrypt", "yes"),
            trust=opts.get("trustservercertificate", "yes"),
        )

    def connection_string(self, database: str | None = None) -> str:
        return (
            f"Server=tcp:{self.host},{self.port};Database={database or self.database};"
            f"Encrypt={self.encrypt};TrustServerCertificate={self.trust}"
        )

    def sql(self, text: str, params: list[object] | None = None) -> list[dict[str, object]]:
        """Run ``text`` as sysadmin in the test's database; the rows of its last result."""
        if self._conn is None or self._conn.closed:
            self._conn = _native.connect(
                self.connection_string(), user=self.user, password=self.password
            )
        result = self._conn.execute(text, params)
        return pa.table(result).to_pylist() if result.has_rows else []

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # --- the test's database ---

    def create_database(self) -> None:
        """A new database for one test, named ``mssqlcdc_test_<random>``, with CDC enabled and
        its capture and cleanup jobs made but not started (``sys.sp_cdc_add_job @start_job =
        0``): the first ``sys.sp_cdc_enable_table`` then finds them and starts none, so changes
        are captured only when a test scans, as on the emulator."""
        name = f"mssqlcdc_test_{uuid.uuid4().hex[:12]}"
        master = RealServer(self.host, self.port, self.user, self.password, "master")
        try:
            master.sql(f"CREATE DATABASE [{name}]")
        finally:
            master.close()
        self.database = name
        self.sql("EXEC sys.sp_cdc_enable_db")
        for job in ("capture", "cleanup"):
            self.sql(f"EXEC sys.sp_cdc_add_job @job_type = N'{job}', @start_job = 0")

    def drop_database(self) -> None:
        """Drop the test's database: CDC off first (its Agent jobs go with it), then the
        database, closing the sessions still in it."""
        self.close()
        name = self.database
        master = RealServer(self.host, self.port, self.user, self.password, "master")
        try:
            if master.sql("SELECT is_cdc_enabled FROM sys.databases WHERE name = @P1", [name]) == [
                {"is_cdc_enabled": True}
            ]:
                master.sql(f"EXEC [{name}].sys.sp_cdc_disable_db")
            master.sql(f"ALTER DATABASE [{name}] SET SINGLE_USER WITH ROLLBACK IMMEDIATE")
            master.sql(f"DROP DATABASE [{name}]")
        finally:
            master.close()

    # --- levers ---

    def scan(self) -> None:
        """Capture what the log holds now (``sys.sp_cdc_scan``, one pass, not continuous);
        stops the database's capture job first when it holds the log reader."""
        deadline = time.monotonic() + STOP_WAIT_SECONDS
        stopped = False
        while True:
            try:
                self.sql("EXEC sys.sp_cdc_scan @maxtrans = 5000, @maxscans = 10, @continuous = 0")
                return
            except SqlServerError as exc:
                if exc.number != LOG_READER_BUSY or time.monotonic() > deadline:
                    raise
            if not stopped:
                self.sql("EXEC sys.sp_cdc_stop_job @job_type = N'capture'")
                stopped = True
            time.sleep(0.5)  # the job's session ends asynchronously: no event to await

    def cleanup_below(self, capture_instance: str, low_water_mark: bytes) -> None:
        """Delete ``capture_instance``'s changes below ``low_water_mark`` (an LSN of
        ``cdc.lsn_time_mapping``) and move its low endpoint there."""
        self.sql(
            "EXEC sys.sp_cdc_cleanup_change_table @capture_instance = @P1, "
            "@low_water_mark = @P2, @threshold = 5000",
            [capture_instance, low_water_mark],
        )

    def set_retention(self, minutes: int) -> None:
        """The cleanup job's retention (it takes effect when the job runs next)."""
        self.sql("EXEC sys.sp_cdc_change_job @job_type = N'cleanup', @retention = @P1", [minutes])

    def grant_reader(self, schema: str, table: str, capture_instance: str) -> None:
        """``sql/setup.sql``'s grants for one table to ``MSSQL_CDC_TEST_READER``'s login (its
        user made in the test's database on first use); nothing when no reader is set."""
        reader = os.environ.get("MSSQL_CDC_TEST_READER")
        if not reader:
            return
        login = reader.partition(":")[0]
        exists = self.sql("SELECT 1 AS x FROM sys.database_principals WHERE name = @P1", [login])
        if not exists:
            self.sql(f"CREATE USER [{login}] FOR LOGIN [{login}]")
            self.sql(f"GRANT SELECT ON cdc.lsn_time_mapping TO [{login}]")
            self.sql(f"GRANT SELECT ON cdc.change_tables TO [{login}]")

        def q(name: str) -> str:  # a bracketed identifier, ``]`` doubled
            return "[" + name.replace("]", "]]") + "]"

        self.sql(f"GRANT SELECT ON {q(schema)}.{q(table)} TO [{login}]")
        self.sql(f"GRANT SELECT ON cdc.{q(capture_instance + '_CT')} TO [{login}]")


def reader_login() -> tuple[str, str] | None:
    """``MSSQL_CDC_TEST_READER`` as ``(login, password)``, or ``None``."""
    reader = os.environ.get("MSSQL_CDC_TEST_READER")
    if not reader:
        return None
    login, _, password = reader.partition(":")
    return login, password
