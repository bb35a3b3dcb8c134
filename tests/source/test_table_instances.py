"""Which instances a ``captureInstance`` reads (``catalog.table_instances``), as the database
stream asks for each of its tables: the name's own table, a name matched ignoring case, a
disabled default name following its table's newest instance, nothing for an unknown or
ambiguous name."""

from __future__ import annotations

from mssql_cdc._native import Lsn
from mssql_cdc.source.catalog import table_instances
from mssql_cdc.source.client import CaptureInstance


def _instance(name: str, table: str, start: int) -> CaptureInstance:
    return CaptureInstance(name, "dbo", table, Lsn.parse(f"0x{start:020X}"), ("id",), ("id",))


ORDERS = _instance("dbo_orders", "orders", 10)
ORDERS_V2 = _instance("orders_v2", "orders", 20)
OTHER = _instance("dbo_other", "other", 5)


def _names(found: list[CaptureInstance]) -> list[str]:
    return [i.name for i in found]


def test_a_name_reads_every_instance_of_its_table_in_the_listing_s_order():
    """The listing (``capture_instances``) is oldest first; the table's instances keep it."""
    assert _names(table_instances("dbo_orders", [ORDERS, OTHER, ORDERS_V2])) == [
        "dbo_orders",
        "orders_v2",
    ]
    assert _names(table_instances("orders_v2", [ORDERS, OTHER, ORDERS_V2])) == [
        "dbo_orders",
        "orders_v2",
    ]
    assert _names(table_instances("DBO_OTHER", [ORDERS, OTHER])) == ["dbo_other"]


def test_a_disabled_default_name_follows_its_table_and_a_custom_one_does_not():
    assert _names(table_instances("dbo_orders", [OTHER, ORDERS_V2])) == ["orders_v2"]
    assert table_instances("orders_v1", [OTHER, ORDERS_V2]) == []
    assert table_instances("dbo_nothing", [ORDERS, OTHER]) == []


def test_two_names_matching_ignoring_case_resolve_to_none():
    twin = _instance("DBO_Orders", "orders", 30)
    assert table_instances("dbo_ORDERS", [ORDERS, twin]) == []


def test_an_instance_not_started_yet_bounds_nothing_unless_none_has_started():
    from mssql_cdc.source.retention import held_instances

    waiting = _instance("orders_v3", "orders", 0)  # its start capture has not set yet
    assert _names(held_instances([ORDERS, waiting])) == ["dbo_orders"]
    assert _names(held_instances([waiting])) == ["orders_v3"]
