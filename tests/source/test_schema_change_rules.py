"""The schema-change rules without a server (docs/schema-changes.md): which type changes the
running query holds, which DDL a batch holds, when a newer capture instance is switched to in
place, and the messages."""

from __future__ import annotations

import datetime as dt

import pytest

from mssql_cdc import Lsn, SchemaChangedError, is_schema_changed
from mssql_cdc.source.client import CapturedColumn, DdlChange
from mssql_cdc.source.schema import Column, holds
from mssql_cdc.source.schema_changes import (
    TypeChange,
    ddl_in_range,
    describe_ddl,
    fail_policy_error,
    sql_type_text,
    switch_error,
    switch_findings,
    type_change_error,
    unheld_types,
)


def lsn(n: int) -> Lsn:
    return Lsn(n.to_bytes(10, "big"))


def col(name, data_type, *, length=None, precision=None, scale=None, column_id=1):
    return CapturedColumn(name, column_id, data_type, length, precision, scale, None)


def ddl(n, command="ALTER TABLE dbo.t ADD c int NULL", instance="dbo_t"):
    return DdlChange(lsn(n), dt.datetime(2026, 1, 1), command, False, instance)


@pytest.mark.parametrize(
    ("new", "old", "held"),
    [
        ("STRING", "STRING", True),  # varchar(10) -> varchar(50)
        ("BIGINT", "INT", True),
        ("INT", "SMALLINT", True),
        ("DOUBLE", "INT", True),
        ("DOUBLE", "FLOAT", True),
        ("TIMESTAMP_NTZ", "DATE", True),
        ("DECIMAL(10,0)", "INT", True),
        ("DECIMAL(9,0)", "INT", False),
        ("DECIMAL(20,0)", "BIGINT", True),
        ("DECIMAL(18,4)", "DECIMAL(9,2)", True),
        ("DECIMAL(9,2)", "DECIMAL(18,4)", False),
        ("DECIMAL(12,1)", "DECIMAL(9,2)", False),  # scale shrinks
        ("INT", "BIGINT", False),
        ("DOUBLE", "BIGINT", False),
        ("INT", "STRING", False),
        ("STRING", "INT", False),
    ],
)
def test_holds_is_the_widening_table(new, old, held):
    assert holds(new, old) is held


def test_a_type_the_running_query_cannot_hold_is_named_with_its_sql_type():
    running = [Column("id", "INT"), Column("qty", "INT"), Column("name", "STRING")]
    captured = [
        col("id", "int"),
        col("qty", "bigint"),
        col("name", "varchar", length=50),
        col("extra", "int"),
    ]
    assert unheld_types(running, captured) == [TypeChange("qty", "BIGINT", "INT")]
    assert unheld_types(running, captured, only={"name"}) == []
    assert sql_type_text(col("p", "decimal", precision=18, scale=4)) == "DECIMAL(18,4)"
    assert sql_type_text(col("s", "nvarchar", length=-1)) == "NVARCHAR(MAX)"


def test_the_type_change_message_says_how_to_recover():
    changes = unheld_types([Column("qty", "INT")], [col("qty", "bigint")])
    exc = type_change_error("dbo_t", changes, [ddl(7, "ALTER TABLE dbo.t ALTER COLUMN qty bigint")])
    assert isinstance(exc, SchemaChangedError)
    assert is_schema_changed(exc)
    text = str(exc)
    assert text.startswith("dbo_t: the type of captured column(s) qty BIGINT (read as INT)")
    assert "changed inside the batch (ALTER TABLE dbo.t ALTER COLUMN qty bigint at 0x" in text
    assert "Restart the query to re-infer the schema" in text
    assert "delta.enableTypeWidening on bronze for a widening" in text


def test_the_fail_policy_message_names_the_ddl_and_the_way_on():
    text = str(fail_policy_error("dbo_t", [ddl(9)]))
    assert f"dbo_t: DDL at {lsn(9)} inside the batch" in text
    assert "schemaChangePolicy=fail" in text
    assert "schemaChangePolicy=classify" in text


def test_ddl_in_range_keeps_the_batch_range_once_each_in_lsn_order():
    history = [ddl(5), ddl(9, "ALTER TABLE dbo.t DROP COLUMN b"), ddl(12)]
    twice = [*history, ddl(9, "ALTER TABLE dbo.t DROP COLUMN b", instance="dbo_t_v2")]
    found = ddl_in_range(twice, lsn(6), lsn(12))
    assert [(d.lsn, d.command) for d in found] == [
        (lsn(9), "ALTER TABLE dbo.t DROP COLUMN b"),
        (lsn(12), "ALTER TABLE dbo.t ADD c int NULL"),
    ]
    assert ddl_in_range(history, lsn(13), lsn(20)) == []


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("ALTER TABLE dbo.t ADD c int NULL", "enable a new capture instance"),
        ("ALTER TABLE dbo.t DROP COLUMN b", "NULL from then on"),
        ("ALTER TABLE dbo.t ALTER COLUMN a nvarchar(50)", "still hold"),
        ("ALTER TABLE dbo.t ALTER COLUMN a int NOT NULL", "still hold"),
    ],
)
def test_each_ddl_kind_has_its_warning(command, says):
    assert says in describe_ddl(command)


def test_a_newer_instance_is_switched_in_place_only_when_the_schema_holds_it():
    running = [Column("id", "INT"), Column("name", "STRING"), Column("qty", "INT")]
    same = [col("id", "int"), col("name", "nvarchar", length=20), col("qty", "int")]
    assert switch_findings(running, same, declared=False).in_place

    wider = [col("id", "int"), col("name", "nvarchar", length=40), col("qty", "smallint")]
    assert switch_findings(running, wider, declared=False).in_place

    added = [*same, col("note", "nvarchar", length=10)]
    found = switch_findings(running, added, declared=False)
    assert not found.in_place
    assert found.missing == ["note"]
    text = str(switch_error("dbo_t", "dbo_t_v2", lsn(40), found))
    assert text.startswith(f"The stream reaches capture instance 'dbo_t_v2' at {lsn(40)}")
    assert "note" in text
    assert "Restart the query" in text

    narrower = [col("id", "int"), col("name", "nvarchar", length=20), col("qty", "bigint")]
    found = switch_findings(running, narrower, declared=False)
    assert not found.in_place
    assert found.unheld[0].column == "qty"

    fewer = [col("id", "int"), col("name", "nvarchar", length=20)]
    found = switch_findings(running, fewer, declared=False)
    assert found.in_place
    assert found.not_captured == ["qty"]


def test_with_declared_columns_the_declared_list_decides():
    running = [Column("id", "INT"), Column("qty", "STRING")]
    added = [col("id", "int"), col("qty", "bigint"), col("note", "nvarchar", length=10)]
    found = switch_findings(running, added, declared=True)
    assert found.in_place
    assert found.left_out == ["note"]
