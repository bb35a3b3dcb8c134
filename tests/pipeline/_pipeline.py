"""Helpers of the pipeline tests: the test database (``dbo.orders``, ``dbo.other``) and
bronze read back in the forms the tests compare."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from mssql_cdc import _native

ORDER = ["_start_lsn", "_command_id", "_seqval", "_operation"]
CHANGE = ["_start_lsn", "_seqval", "_operation", "_command_id", "id", "name", "qty"]


@dataclass
class Source:
    """The test database: ``sql()`` runs T-SQL as sa; ``options()`` read ``dbo_orders``."""

    conn: _native.Connection
    server: Any
    emulator: Any

    def sql(self, text: str) -> list[dict[str, object]]:
        result = self.conn.execute(text)
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
            "numPartitions": "1",
            **extra,
        }

    def changes(self) -> list[tuple[object, ...]]:
        """The whole change history of dbo_orders in bronze's order, as CHANGE tuples."""
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
