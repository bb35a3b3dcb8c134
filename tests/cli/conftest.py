"""Fixtures of the command-line tests: ``dbo.orders`` and ``dbo.other`` with CDC on the test
server (see ``tests/_pipeline.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from _pipeline import Source


@pytest.fixture
def source(sql_server) -> Iterator[Source]:
    tables = {
        "orders": "id int NOT NULL PRIMARY KEY, name nvarchar(20), qty int",
        "other": "id int NOT NULL PRIMARY KEY, note nvarchar(20)",
    }
    with Source.opened(sql_server, sql_server.emulator, tables) as src:
        yield src
