"""What ``apply_changes`` asks SQL Server, only when given ``options``: the capture instance's
unique index (the default keys) and the other capture instances of its table, whose bronze rows
are the same table's (``sys.sp_cdc_help_change_data_capture``, one connection, driver)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mssql_cdc.options import parse_options
from mssql_cdc.source.catalog import find_instance
from mssql_cdc.source.client import CdcClient

__all__ = ["InstanceInfo", "instance_info"]


@dataclass(frozen=True)
class InstanceInfo:
    """The capture instance's unique index columns (empty without one) and the names of its
    table's capture instances."""

    index_columns: tuple[str, ...]
    instances: tuple[str, ...]


def instance_info(options: Mapping[str, str], capture_instance: str) -> InstanceInfo:
    """Looks the capture instance up (``options`` with ``captureInstance`` set to it).

    Raises:
        ValueError: a bad option or an unknown capture instance.
    """
    kept = {k: v for k, v in options.items() if k.lower() != "captureinstance"}
    client = CdcClient(parse_options({**kept, "captureInstance": capture_instance}))
    try:
        chosen, siblings = find_instance(client)
    finally:
        client.close()
    return InstanceInfo(chosen.index_columns, tuple(i.name for i in siblings))
