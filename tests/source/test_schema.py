"""The output schema: metadata columns first, the type map, unions, the columns option."""

from __future__ import annotations

import pytest

from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.source.client import CapturedColumn
from mssql_cdc.source.schema import (
    Column,
    declared_columns,
    holds,
    output_columns,
    spark_type,
    union_columns,
)
from mssql_cdc.source.sql import change_query, column_expression


def cc(name, data_type, precision=None, scale=None):
    return CapturedColumn(name, 1, data_type, None, precision, scale, None)


@pytest.mark.parametrize(
    ("sql", "spark"),
    [
        ("bit", "BOOLEAN"),
        ("tinyint", "SMALLINT"),
        ("smallint", "SMALLINT"),
        ("int", "INT"),
        ("bigint", "BIGINT"),
        ("real", "FLOAT"),
        ("float", "DOUBLE"),
        ("money", "DECIMAL(19,4)"),
        ("smallmoney", "DECIMAL(10,4)"),
        ("date", "DATE"),
        ("datetime", "TIMESTAMP_NTZ"),
        ("datetime2", "TIMESTAMP_NTZ"),
        ("smalldatetime", "TIMESTAMP_NTZ"),
        ("datetimeoffset", "TIMESTAMP"),
        ("time", "STRING"),
        ("nvarchar", "STRING"),
        ("xml", "STRING"),
        ("uniqueidentifier", "STRING"),
        ("sql_variant", "STRING"),
        ("hierarchyid", "STRING"),
        ("varbinary", "BINARY"),
        ("timestamp", "BINARY"),
        ("geography", "BINARY"),
        ("geometry", "BINARY"),
        ("some_clr_type", "BINARY"),
    ],
)
def test_type_map(sql, spark):
    assert spark_type(cc("c", sql)) == spark


def test_decimal_keeps_precision_and_scale():
    assert spark_type(cc("c", "numeric", 18, 2)) == "DECIMAL(18,2)"


def test_metadata_columns_come_first_in_order():
    cols = output_columns([Column("id", "INT")], include_command_id=True)
    assert [c.name for c in cols] == [
        "_capture_instance",
        "_start_lsn",
        "_seqval",
        "_operation",
        "_command_id",
        "_commit_ts",
        "id",
    ]
    assert [c.name for c in output_columns([], include_command_id=False)][3:] == [
        "_operation",
        "_commit_ts",
    ]


@pytest.mark.parametrize("name", ["_Operation", "_batch_id", "_CHUNK", "_snapshot"])
def test_a_source_column_named_like_a_library_column_is_refused(name):
    with pytest.raises(ValueError, match=name):
        output_columns([Column(name, "INT")], include_command_id=True)


def test_union_of_instances_widens_and_leaves_computed_columns_out(caplog):
    old = [cc("id", "int"), cc("qty", "smallint"), cc("total", "int")]
    new = [cc("id", "int"), cc("qty", "int"), cc("note", "nvarchar")]
    cols = union_columns([("dbo_t", old, {"total"}), ("dbo_t_v2", new, set())])
    assert [(c.name, c.spark_type) for c in cols] == [
        ("id", "INT"),
        ("qty", "INT"),
        ("note", "STRING"),
    ]
    assert "total" in caplog.text


def test_union_refuses_a_type_the_newer_instance_cannot_hold():
    with pytest.raises(SchemaChangedError, match="qty"):
        union_columns([("a", [cc("qty", "bigint")], set()), ("b", [cc("qty", "int")], set())])


def test_holds_follows_the_widening_rules():
    assert holds("BIGINT", "INT")
    assert holds("DECIMAL(12,2)", "INT")
    assert not holds("DECIMAL(9,2)", "INT")
    assert holds("DECIMAL(20,4)", "DECIMAL(18,2)")
    assert not holds("DECIMAL(10,4)", "DECIMAL(9,2)")
    assert not holds("INT", "BIGINT")


def test_columns_option_is_spark_ddl():
    cols = declared_columns("order_id INT NOT NULL, `a b` DECIMAL(18, 2), status string")
    assert [(c.name, c.spark_type, c.nullable) for c in cols] == [
        ("order_id", "INT", False),
        ("a b", "DECIMAL(18,2)", True),
        ("status", "STRING", True),
    ]


def test_columns_option_refuses_unknown_types():
    with pytest.raises(ValueError, match="ARRAY<INT>"):
        declared_columns("x ARRAY<INT>")


def test_change_query_reads_the_change_table_in_commit_then_statement_order():
    sql = change_query("dbo_orders", [("id", "int"), ("h", "hierarchyid")], include_command_id=True)
    # __$command_id is only in the change table, never in the query function's result
    assert "FROM cdc.[dbo_orders_CT] AS c " in sql
    assert "fn_cdc_get_all_changes" not in sql
    assert "WHERE c.__$start_lsn >= @P1 AND c.__$start_lsn <= @P2 " in sql
    assert sql.startswith("SELECT c.__$start_lsn, c.__$seqval, c.__$operation, c.__$command_id, ")
    assert sql.endswith("ORDER BY c.__$start_lsn, c.__$command_id, c.__$seqval, c.__$operation")
    assert "CAST(c.[h] AS nvarchar(4000)) AS [h]" in sql
    assert column_expression("g", "geography") == "[g].STAsBinary() AS [g]"
    odd = change_query("dbo_Café x", [], include_command_id=False)
    assert "cdc.[dbo_Café x_CT]" in odd
    assert "__$command_id" not in odd
