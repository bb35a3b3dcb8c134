"""Key predicates, bounds and the failover rule of driver retries, without a server."""

from __future__ import annotations

import datetime as dt
import logging
from decimal import Decimal

import pytest

from mssql_cdc.errors import ConnectionLostError, LoginError
from mssql_cdc.source.retry import with_retry
from mssql_cdc.source.snapshot import to_bound
from mssql_cdc.source.sql import key_at_least, key_below, snapshot_query


class FakeClient:
    closed = 0

    def close(self) -> None:
        self.closed += 1


def failing(*errors: Exception):
    queue = list(errors)

    def call() -> str:
        if queue:
            raise queue.pop(0)
        return "ok"

    return call


def test_a_first_refused_login_is_not_retried():
    client = FakeClient()
    with pytest.raises(LoginError):
        with_retry(client, "x", failing(LoginError("no", number=18456)), sleep=lambda _: None)  # type: ignore[arg-type]
    assert client.closed == 0


def test_a_refused_login_after_a_lost_connection_is_a_failover(caplog):
    client = FakeClient()
    waits: list[float] = []
    call = failing(ConnectionLostError("gone"), LoginError("refused", number=18456))
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.source"):
        assert with_retry(client, "latestOffset", call, sleep=waits.append) == "ok"  # type: ignore[arg-type]
    assert waits == [1.0, 3.0]
    assert client.closed == 2
    assert [r.getMessage().split(" (")[0] for r in caplog.records] == [
        "latestOffset failed",
        "latestOffset failed",
    ]
    assert "LoginError: [18456] refused" in caplog.records[1].getMessage()


def test_key_predicates_order_composite_keys_nulls_first():
    keys = [("o", "int"), ("code", "nvarchar(20)")]
    assert key_at_least(keys, 1) == (
        "([o] > @P1 OR ([o] = @P1 AND [code] >= CAST(@P2 AS nvarchar(20))))"
    )
    assert key_below(keys, 3) == (
        "([o] IS NULL OR [o] < @P3 OR ([o] = @P3 AND ([code] IS NULL OR "
        "[code] < CAST(@P4 AS nvarchar(20)))))"
    )
    sql = snapshot_query("dbo", "t", [("v", "int")], [("id", "uniqueidentifier")], lo=True, hi=True)
    assert sql == (
        "SELECT [v] FROM [dbo].[t] WHERE [id] >= CAST(@P1 AS uniqueidentifier) AND "
        "([id] IS NULL OR [id] < CAST(@P2 AS uniqueidentifier)) ORDER BY [id]"
    )


def test_bounds_are_picklable_values_the_server_can_cast():
    assert to_bound(Decimal("1E+2"), "decimal(8,2)") == "100"
    assert to_bound(dt.datetime(2024, 1, 2, 3, 4, 5, 123456), "datetime") == (
        "2024-01-02T03:04:05.123"
    )
    assert to_bound(dt.datetime(2024, 1, 2, 3, 4, 5, 123456), "datetime2(7)") == (
        "2024-01-02T03:04:05.123456"
    )
    assert to_bound(dt.date(2024, 1, 2), "date") == "2024-01-02"
    assert to_bound(b"\x01", "binary(1)") == b"\x01"
    assert to_bound(3.5, "float") is None
