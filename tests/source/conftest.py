"""Fixtures of the data source tests: a CDC-enabled ``dbo.orders`` on the test server, the
options that read it, and a helper to run T-SQL through the native client."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from cdc_source import CdcSource
from mssql_cdc import _native


class Source(CdcSource):
    """dbo.orders with CDC on the test server (tests/cdc_source.py)."""


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
