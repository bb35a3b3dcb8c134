"""Fixtures of the data source tests: a CDC-enabled ``dbo.orders`` on the test server, the
options that read it, and a helper to run T-SQL through the native client."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from cdc_source import CdcSource


class Source(CdcSource):
    """dbo.orders with CDC on the test server (tests/cdc_source.py)."""


ORDERS = {"orders": "id int NOT NULL PRIMARY KEY, name nvarchar(20), qty int"}


@pytest.fixture
def source(sql_server) -> Iterator[Source]:
    with Source.opened(sql_server, sql_server.emulator, ORDERS) as src:
        yield src


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

        with Source.opened(Server(), emu, ORDERS) as src:
            yield src
