"""How the client reads SQL Server's answers by name: a missing column is a ResultShapeError
naming the statement, the column and the server version (never a KeyError); alias types are
resolved to their base type; computed columns come from sys.columns; a refused SELECT on an
object (229) or a column (230) is the PermissionError with the GRANT. No server: the answers
are given as Arrow tables."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest

from mssql_cdc import _native
from mssql_cdc.errors import ResultShapeError, SqlServerError
from mssql_cdc.options import parse_options
from mssql_cdc.source.client import (
    CaptureInstance,
    CdcClient,
    is_permission_denied,
    permission_error,
)
from mssql_cdc.source.schema import spark_type

OPTIONS = {"connectionString": "Server=x", "user": "reader", "captureInstance": "dbo_orders"}


@dataclass
class _Connection:
    server_version: str = "16.0.4135"
    closed: bool = False


class AnsweringClient(CdcClient):
    """A CdcClient whose statements are answered from ``answers`` (first matching prefix)."""

    def __init__(self, answers: dict[str, list[dict[str, Any]] | pa.Table]) -> None:
        super().__init__(parse_options(OPTIONS))
        self.answers = answers
        self.sent: list[str] = []
        self._conn = _Connection()  # type: ignore[assignment]

    def table(self, sql: str, params: Any = None) -> pa.Table:
        self.sent.append(sql)
        for prefix, answer in self.answers.items():
            if sql.startswith(prefix):
                return answer if isinstance(answer, pa.Table) else pa.Table.from_pylist(answer)
        raise AssertionError(f"unexpected statement {sql!r}")


def _captured(**overrides: Any) -> dict[str, Any]:
    row = {
        "source_schema": "dbo",
        "source_table": "orders",
        "capture_instance": "dbo_orders",
        "column_name": "id",
        "column_id": 1,
        "column_ordinal": 1,
        "data_type": "int",
        "character_maximum_length": None,
        "numeric_precision": 10,
        "numeric_precision_radix": 10,
        "numeric_scale": 0,
        "datetime_precision": None,
    }
    row.update(overrides)
    return row


GET_COLUMNS = "EXEC sys.sp_cdc_get_captured_columns"


def test_captured_columns_are_read_in_column_ordinal_order():
    client = AnsweringClient(
        {
            GET_COLUMNS: [
                _captured(column_name="b", column_id=3, column_ordinal=2),
                _captured(column_name="a", column_id=7, column_ordinal=1),
            ]
        }
    )
    assert [c.name for c in client.captured_columns("dbo_orders")] == ["a", "b"]


def test_a_result_without_a_column_the_client_reads_names_statement_column_and_version():
    old = _captured()
    old["ordinal_position"] = old.pop("column_ordinal")  # the 2008-2012 pages' name
    client = AnsweringClient({GET_COLUMNS: [old]})
    with pytest.raises(ResultShapeError) as info:
        client.captured_columns("dbo_orders")
    err = info.value
    assert err.columns == ("column_ordinal",)
    assert err.server_version == "16.0.4135"
    assert err.statement.startswith(GET_COLUMNS)
    assert "ordinal_position" in err.received
    text = str(err)
    assert "SQL Server 16.0.4135" in text
    assert "'column_ordinal'" in text
    assert GET_COLUMNS in text


def test_an_empty_result_is_still_checked_by_its_columns():
    empty = pa.table({"column_name": pa.array([], pa.string())})
    client = AnsweringClient({GET_COLUMNS: empty})
    with pytest.raises(ResultShapeError, match="'column_id', 'column_ordinal'"):
        client.captured_columns("dbo_orders")


def test_an_alias_type_is_read_as_its_base_type_and_a_clr_type_as_binary():
    client = AnsweringClient(
        {
            GET_COLUMNS: [
                _captured(column_name="Name", data_type="Name", character_maximum_length=50),
                _captured(column_name="Flag", column_ordinal=2, data_type="Flag"),
                _captured(column_name="Shape", column_ordinal=3, data_type="Polygon"),
                _captured(column_name="id", column_ordinal=4, data_type="int"),
            ],
            "SELECT t.name, TYPE_NAME(t.system_type_id)": [
                {"name": "Name", "base_type": "nvarchar", "is_assembly_type": False},
                {"name": "Flag", "base_type": "bit", "is_assembly_type": False},
                {"name": "Polygon", "base_type": "hierarchyid", "is_assembly_type": True},
            ],
        }
    )
    columns = client.captured_columns("dbo_orders")
    assert [c.data_type for c in columns] == ["nvarchar", "bit", "polygon", "int"]
    assert [spark_type(c) for c in columns] == ["STRING", "BOOLEAN", "BINARY", "INT"]


def test_system_types_alone_send_no_type_query():
    client = AnsweringClient({GET_COLUMNS: [_captured()]})
    client.captured_columns("dbo_orders")
    assert client.sent == [f"{GET_COLUMNS} @capture_instance = @P1"]


INSTANCE = CaptureInstance(
    name="dbo_orders",
    source_schema="dbo",
    source_table="orders",
    start_lsn=_native.Lsn(bytes(10)),
    index_columns=("id",),
    columns=("id", "total"),
)
SYS_COLUMNS = "SELECT c.name, c.is_computed FROM sys.columns"


def test_computed_columns_come_from_sys_columns_limited_to_the_captured_ones():
    client = AnsweringClient(
        {
            SYS_COLUMNS: [
                {"name": "id", "is_computed": False},
                {"name": "Total", "is_computed": True},
                {"name": "not_captured", "is_computed": True},
            ]
        }
    )
    assert client.computed_columns(INSTANCE) == {"Total"}


def test_a_table_whose_metadata_the_login_cannot_see_is_warned_not_taken_as_no_computed(caplog):
    client = AnsweringClient({SYS_COLUMNS: pa.table({"name": [], "is_computed": []})})
    with caplog.at_level(logging.WARNING, logger="mssql_cdc.source"):
        assert client.computed_columns(INSTANCE) == set()
    assert "computed columns of capture instance 'dbo_orders' cannot be detected" in caplog.text


@pytest.mark.parametrize("number", [229, 230])
def test_select_denied_on_an_object_or_a_column_is_a_permission_denial(number):
    assert is_permission_denied(SqlServerError("denied", number=number))
    assert not is_permission_denied(SqlServerError("invalid object", number=208))


def test_a_denied_commit_time_table_asks_for_its_own_grant():
    options = parse_options(OPTIONS)
    cause = (
        "[229] The SELECT permission was denied on the object 'lsn_time_mapping', database "
        "'sales', schema 'cdc'."
    )
    err = permission_error(options, "dbo_orders", cause)
    assert "GRANT SELECT ON cdc.lsn_time_mapping TO [reader];" in str(err)
    other = permission_error(options, "dbo_orders", "[230] denied on the column 'qty'")
    assert "GRANT SELECT ON cdc.[dbo_orders_CT] TO [reader];" in str(other)
