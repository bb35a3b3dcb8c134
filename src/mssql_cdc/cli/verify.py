"""Checking a bronze table against SQL Server's own change history.

Runs on the driver: one ``cdc.fn_cdc_get_all_changes_<ci>`` query over the whole validity
range (``N'all update old'``) and one Spark read of bronze; the change rows (operations 1-4)
must be the same, each exactly once, in the same order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Queryable", "bronze_history", "compare", "source_history"]

Change = tuple[str, str, int]


class Queryable(Protocol):
    """Something that runs a query and returns its rows as tuples (the emulator's sessions)."""

    def query(self, sql: str) -> list[tuple[Any, ...]]: ...


def _hex(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex().upper()
    return str(value)


def source_history(session: Queryable, capture_instance: str) -> list[Change]:
    """Every change row CDC holds for the instance: ``(start_lsn, seqval, operation)``."""
    ci = capture_instance.replace("'", "''")
    rows = session.query(
        f"SELECT __$start_lsn, __$seqval, __$operation FROM cdc.fn_cdc_get_all_changes_{ci}("
        f"sys.fn_cdc_get_min_lsn(N'{ci}'), sys.fn_cdc_get_max_lsn(), N'all update old') "
        "ORDER BY __$start_lsn, __$seqval, __$operation"
    )
    return [(_hex(lsn), _hex(seq), int(op)) for lsn, seq, op in rows]


def bronze_history(spark: SparkSession, bronze: str) -> list[Change]:
    """Bronze's change rows (operation 1-4) as ``(start_lsn, seqval, operation)``, in order
    (read by ``mssql_cdc.sink``, the tables' owner; empty before the first batch with rows)."""
    from mssql_cdc.sink import change_history

    return change_history(spark, bronze)


def compare(name: str, source: list[Change], bronze: list[Change]) -> list[str]:
    """The differences as sentences (empty when bronze is exactly the source's history)."""
    if source == bronze:
        return []
    problems = [f"{name}: bronze has {len(bronze)} change rows, CDC holds {len(source)}"]
    seen: dict[Change, int] = {}
    for change in bronze:
        seen[change] = seen.get(change, 0) + 1
    twice = [c for c, n in seen.items() if n > 1]
    missing = sorted(set(source) - set(seen))
    extra = sorted(set(seen) - set(source))
    if twice:
        problems.append(f"{name}: {len(twice)} change rows written more than once, e.g. {twice[0]}")
    if missing:
        problems.append(f"{name}: {len(missing)} change rows missing, e.g. {missing[0]}")
    if extra:
        problems.append(f"{name}: {len(extra)} change rows CDC does not hold, e.g. {extra[0]}")
    return problems
