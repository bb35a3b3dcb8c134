"""Helpers of the server-backed tests: the test database (``dbo.orders``, ``dbo.other``), its
``source`` fixture (registered for every folder by tests/conftest.py; tests/source and some
silver files define their own), and bronze read back in the forms the tests compare."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import pytest

from cdc_source import CdcSource

ORDER = ["_start_lsn", "_command_id", "_seqval", "_operation"]
#: the steps of a backfill wave the crash tests stop at, as the ledger's commit points
BACKFILL_STEPS = {
    ("chunk_wave", "before"): "before_append",  # the wave is read, nothing of it written
    ("chunk_wave", "after"): "after_append",  # its bronze append landed, its facts rows not
    ("snapshot_closed", "before"): "before_close",  # every chunk recorded, the close not
}


def backfill_hook(step_hook: Any) -> Any:
    """The ledger's ``commit_hook`` that calls ``step_hook(step, version)`` at each of
    :data:`BACKFILL_STEPS` (``version``: the commit's ``txnVersion``)."""

    def hook(kind: str, when: str, txn: Any) -> None:
        step = BACKFILL_STEPS.get((kind, when))
        if step is not None:
            step_hook(step, txn.version)

    return hook


CHANGE = ["_start_lsn", "_seqval", "_operation", "_command_id", "id", "name", "qty"]

#: the DBA's playbook on dbo.orders (docs/schema-changes.md): a second capture instance, then
#: the first one disabled
ORDERS_V2 = (
    "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'orders', "
    "@role_name = NULL, @capture_instance = N'dbo_orders_v2'"
)
DISABLE_ORDERS_V1 = (
    "EXEC sys.sp_cdc_disable_table @source_schema = N'dbo', @source_name = N'orders', "
    "@capture_instance = N'dbo_orders'"
)


class Source(CdcSource):
    """The test database (tests/cdc_source.py); the pipeline tests read on one connection."""

    base_options: ClassVar[dict[str, str]] = {"captureInstance": "dbo_orders", "numPartitions": "1"}

    def instance_start(self, capture_instance: str) -> Any:
        """The ``start_lsn`` (an ``Lsn``) ``cdc.change_tables`` gives ``capture_instance``."""
        from mssql_cdc import Lsn

        rows = self.sql(
            "SELECT start_lsn FROM cdc.change_tables WHERE capture_instance = @P1",
            [capture_instance],
        )
        return Lsn(rows[0]["start_lsn"])

    def table(self) -> list[tuple[object, ...]]:
        """dbo.orders' current rows by id."""
        rows = self.sql("SELECT id, name, qty FROM dbo.orders ORDER BY id")
        return [(r["id"], r["name"], r["qty"]) for r in rows]

    def workload(self, first_id: int, *, scan: bool = True) -> None:
        """Five commits on dbo.orders: inserts, updates, a multi-statement transaction and a
        delete (rows ``first_id`` to ``first_id + 2``)."""
        i = first_id
        self.sql(f"INSERT INTO dbo.orders VALUES ({i}, N'a{i}', 1), ({i + 1}, N'b{i}', 2)")
        self.sql(f"UPDATE dbo.orders SET qty = qty + 10 WHERE id = {i}")
        self.sql(
            f"BEGIN TRAN; INSERT INTO dbo.orders VALUES ({i + 2}, N'c{i}', 3); "
            f"UPDATE dbo.orders SET name = N'z' WHERE id = {i + 1}; "
            f"DELETE FROM dbo.orders WHERE id = {i}; COMMIT TRAN"
        )
        self.sql(f"UPDATE dbo.orders SET qty = 7 WHERE id = {i + 2}")
        self.sql(f"DELETE FROM dbo.orders WHERE id = {i + 1}")
        if scan:
            self.scan()


def bronze_changes(spark, path) -> list[tuple[object, ...]]:
    """Bronze's change rows (operation 1-4) in commit order, as CHANGE tuples."""
    df = spark.read.format("delta").load(str(path)).where("_operation <> 0")
    return [tuple(r[c] for c in CHANGE) for r in df.orderBy(*ORDER).collect()]


def latest_images(spark, path) -> list[tuple[object, ...]]:
    """The latest image per key of bronze (snapshot rows first, then changes in order);
    deleted keys left out: what apply_changes would build."""
    rows = spark.read.format("delta").load(str(path)).orderBy(*ORDER).collect()
    latest: dict[object, Any] = {}
    for r in rows:
        latest[r["id"]] = r
    return sorted((r["id"], r["name"], r["qty"]) for r in latest.values() if r["_operation"] != 1)


@pytest.fixture
def source(sql_server) -> Iterator[Source]:
    """``dbo.orders`` and ``dbo.other`` with CDC on the test server."""
    tables = {
        "orders": "id int NOT NULL PRIMARY KEY, name nvarchar(20), qty int",
        "other": "id int NOT NULL PRIMARY KEY, note nvarchar(20)",
    }
    with Source.opened(sql_server, sql_server.emulator, tables) as src:
        yield src
