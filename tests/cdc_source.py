"""The CDC test database both the data source and the pipeline tests drive: T-SQL through the
native client, a capture scan, the options that read ``dbo_orders`` and its change history in
the order bronze and the stream give it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

from mssql_cdc import _native

if TYPE_CHECKING:
    from typing import Self  # Python 3.11; the tests also run on 3.10 (make install-lowest)


@dataclass
class CdcSource:
    """``sql()`` runs T-SQL as sa; ``options()`` read ``dbo_orders``."""

    conn: _native.Connection
    server: Any
    emulator: Any

    #: options every reader of this source gets (subclasses add their own)
    base_options: ClassVar[dict[str, str]] = {"captureInstance": "dbo_orders"}

    @classmethod
    @contextmanager
    def opened(cls, server: Any, emulator: Any, tables: dict[str, str]) -> Iterator[Self]:
        """Connect to ``server`` as its user, create each ``dbo.<name> (<columns>)`` of
        ``tables``, enable CDC on the database and on each table (capture instance
        ``dbo_<name>``, no gating role); close the connection on exit."""
        conn = _native.connect(
            f"Server=tcp:{server.host},{server.port};Database={server.database};"
            "Encrypt=no;TrustServerCertificate=yes",
            user=server.user,
            password=server.password,
        )
        try:
            src = cls(conn, server, emulator)
            for name, columns in tables.items():
                src.sql(f"CREATE TABLE dbo.{name} ({columns})")
            src.sql("EXEC sys.sp_cdc_enable_db")
            for name in tables:
                src.sql(
                    "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', "
                    f"@source_name = N'{name}', @role_name = NULL"
                )
                grant = getattr(server, "grant_reader", None)
                if grant is not None:  # a real server with MSSQL_CDC_TEST_READER
                    grant("dbo", name, f"dbo_{name}")
            yield src
        finally:
            conn.close()

    def sql(self, text: str, params: list[object] | None = None) -> list[dict[str, object]]:
        result = self.conn.execute(text, params)
        return pa.table(result).to_pylist() if result.has_rows else []

    def scan(self) -> None:
        """One capture scan (the server's lever: the emulator's, or ``sys.sp_cdc_scan``)."""
        scan = getattr(self.server, "scan", None)
        if scan is not None:
            scan()
        else:
            self.emulator.scan()

    @property
    def connection_string(self) -> str:
        return (
            f"Server=tcp:{self.server.host},{self.server.port};Database={self.server.database};"
            "Encrypt=no;TrustServerCertificate=yes"
        )

    def options(self, **extra: str) -> dict[str, str]:
        return {
            "connectionString": self.connection_string,
            "user": getattr(self.server, "reader_user", self.server.user),
            "password": getattr(self.server, "reader_password", self.server.password),
            **self.base_options,
            **extra,
        }

    def changes(self, instance: str = "dbo_orders") -> list[tuple[object, ...]]:
        """The whole change history of a capture instance of dbo.orders, ordered by
        (start LSN, command id, seqval, operation), as (start_lsn, seqval, operation,
        command_id, id, name, qty) with LSNs as 0x text: read from the change table, the only
        place that has ``__$command_id``, from the instance's low endpoint on."""
        rows = self.sql(
            "SELECT __$start_lsn AS l, __$seqval AS s, __$operation AS o, __$command_id AS c, "
            f"id, name, qty FROM cdc.[{instance}_CT] "
            f"WHERE __$start_lsn >= sys.fn_cdc_get_min_lsn(N'{instance}') "
            "ORDER BY __$start_lsn, __$command_id, __$seqval, __$operation"
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
