"""Fixtures of the compatibility tests: the pipeline tests' ``dbo.orders`` / ``dbo.other``
source (tests/_pipeline.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _pipeline import Source


@pytest.fixture
def source(sql_server) -> Iterator[Source]:
    tables = {
        "orders": "id int NOT NULL PRIMARY KEY, name nvarchar(20), qty int",
        "other": "id int NOT NULL PRIMARY KEY, note nvarchar(20)",
    }
    with Source.opened(sql_server, sql_server.emulator, tables) as src:
        yield src
