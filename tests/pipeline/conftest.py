"""Fixtures of the pipeline tests: ``dbo.orders`` and ``dbo.other`` with CDC on the test
server (see ``_pipeline.Source``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _pipeline import Source

from mssql_cdc import _native


@pytest.fixture
def source(sql_server) -> Iterator[Source]:
    conn = _native.connect(
        f"Server=tcp:{sql_server.host},{sql_server.port};Encrypt=no;TrustServerCertificate=yes",
        user=sql_server.user,
        password=sql_server.password,
    )
    src = Source(conn, sql_server, sql_server.emulator)
    src.sql("CREATE TABLE dbo.orders (id int NOT NULL PRIMARY KEY, name nvarchar(20), qty int)")
    src.sql("CREATE TABLE dbo.other (id int NOT NULL PRIMARY KEY, note nvarchar(20))")
    src.sql("EXEC sys.sp_cdc_enable_db")
    for table in ("orders", "other"):
        src.sql(
            f"EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N'{table}', "
            "@role_name = NULL"
        )
    yield src
    conn.close()
