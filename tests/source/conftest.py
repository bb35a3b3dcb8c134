"""Fixtures of the data source tests: a CDC-enabled ``dbo.orders`` on the test server, the
options that read it, and a helper to run T-SQL through the native client."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

from mssql_cdc import _native


@dataclass
class Source:
    """The test database: ``sql()`` runs T-SQL as sa; ``options`` read ``dbo_orders``."""

    conn: _native.Connection
    server: Any
    emulator: Any

    def sql(self, text: str, params: list[object] | None = None) -> list[dict[str, object]]:
        result = self.conn.execute(text, params)
        return pa.table(result).to_pylist() if result.has_rows else []

    def scan(self) -> None:
        if self.emulator is not None:
            self.emulator.scan()
        else:
            self.sql("EXEC sys.sp_cdc_scan")

    @property
    def connection_string(self) -> str:
        return (
            f"Server=tcp:{self.server.host},{self.server.port};Database={self.server.database};"
            "Encrypt=no;TrustServerCertificate=yes"
        )

    def options(self, **extra: str) -> dict[str, str]:
        return {
            "connectionString": self.connection_string,
            "user": self.server.user,
            "password": self.server.password,
            "captureInstance": "dbo_orders",
            **extra,
        }

    def changes(self) -> list[tuple[object, ...]]:
        """The whole change history of dbo_orders, as the stream should read it."""
        rows = self.sql(
            "SELECT __$start_lsn AS l, __$seqval AS s, __$operation AS o, __$command_id AS c, "
            "id, name, qty FROM cdc.fn_cdc_get_all_changes_dbo_orders("
            "sys.fn_cdc_get_min_lsn(N'dbo_orders'), sys.fn_cdc_get_max_lsn(), "
            "N'all update old') ORDER BY __$start_lsn, __$command_id, __$seqval, __$operation"
        )
        return [
            (
                "0x" + r["l"].hex().upper(),
                "0x" + r["s"].hex().upper(),
                r["o"],
                r["c"],
                r["id"],
                r["name"],
                r["qty"],
            )
            for r in rows
        ]


@pytest.fixture
def source(sql_server) -> Iterator[Source]:
    conn = _native.connect(
        f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=no;TrustServerCertificate=yes",
        user=sql_server.user,
        password=sql_server.password,
    )
    src = Source(conn, sql_server, sql_server.emulator)
    src.sql("CREATE TABLE dbo.orders (id int NOT NULL PRIMARY KEY, name nvarchar(20), qty int)")
    src.sql("EXEC sys.sp_cdc_enable_db")
    src.sql(
        "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
        "@role_name = NULL"
    )
    yield src
    conn.close()


@pytest.fixture
def pacific_source() -> Iterator[Source]:
    """``dbo.orders`` on an emulator whose clock is US Pacific time (with DST)."""
    pytest.importorskip("duckdb")
    from mssql_cdc.emulator import Emulator

    with Emulator(time_zone="Pacific Standard Time") as emu:

        @dataclass
        class Server:
            host: str = emu.host
            port: int = emu.port
            user: str = "sa"
            password: str = emu.password
            database: str = "master"

        conn = _native.connect(
            f"Server=tcp:{emu.host},{emu.port};Encrypt=no", user="sa", password=emu.password
        )
        src = Source(conn, Server(), emu)
        src.sql("CREATE TABLE dbo.orders (id int NOT NULL PRIMARY KEY, name nvarchar(20), qty int)")
        src.sql("EXEC sys.sp_cdc_enable_db")
        src.sql(
            "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
            "@role_name = NULL"
        )
        yield src
        conn.close()
