"""Reconcile's reads of SQL Server: row counts and key sums per fine bucket of the source table,
and the keys of change rows not yet in bronze (docs/validation.md).

Read-only ``SELECT`` statements through :class:`~mssql_cdc.source.client.CdcClient`, on a
connection opened with the snapshot reader's session settings
(:func:`~mssql_cdc.source.snapshot.session_setup`: ``READ COMMITTED`` or ``SNAPSHOT`` from
``isolationLevel``, ``SET LOCK_TIMEOUT`` from ``lockTimeoutMs``); never a table hint, never
NOLOCK, never a write. Only portable T-SQL that SQL Server and the emulator both run:

* ``COUNT_BIG`` (https://learn.microsoft.com/sql/t-sql/functions/count-big-transact-sql);
* ``SUM`` of ``CAST(... AS DECIMAL(38,0))`` so a sum of ``bigint`` keys cannot overflow
  (https://learn.microsoft.com/sql/t-sql/functions/sum-transact-sql);
* a date key as ``DATEDIFF(DAY, CAST('1970-01-01' AS DATE), key)``, its day number
  (https://learn.microsoft.com/sql/t-sql/functions/datediff-transact-sql);
* the fine bucket as ``CAST(unit - @lo AS BIGINT) / CAST(@width AS BIGINT)``: integer
  division, which truncates toward zero
  (https://learn.microsoft.com/sql/t-sql/language-elements/divide-transact-sql);
  ``unit - @lo`` is never negative, so that is the floor.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from mssql_cdc._native import Lsn
from mssql_cdc.options import ReaderOptions
from mssql_cdc.source.catalog import find_instance
from mssql_cdc.source.client import CapturedColumn, CaptureInstance, CdcClient
from mssql_cdc.source.snapshot import session_setup
from mssql_cdc.source.sql import change_table, quote_name, table_name

__all__ = ["SourceTallies", "open_tallies"]


def _unit(column: str, kind: str) -> str:
    quoted = quote_name(column)
    if kind == "date":
        return f"CAST(DATEDIFF(DAY, CAST('1970-01-01' AS DATE), {quoted}) AS BIGINT)"
    return f"CAST({quoted} AS BIGINT)"


class SourceTallies:
    """Reconcile's queries on one connection (``close()`` it)."""

    def __init__(self, client: CdcClient) -> None:
        self.client = client
        self.instance, self.instances = find_instance(client)
        inst = self.instance
        self.table = table_name(inst.source_schema, inst.source_table)

    def close(self) -> None:
        """Closes the connection."""
        self.client.close()

    def captured_columns(self) -> list[CapturedColumn]:
        """The capture instance's captured columns, in capture order."""
        return self.client.captured_columns(self.instance.name)

    def computed_columns(self) -> set[str]:
        """Names of computed captured columns (NULL in change rows, left out of row hashes)."""
        return self.client.computed_columns(self.instance)

    def max_lsn(self) -> str | None:
        """``sys.fn_cdc_get_max_lsn()`` as ``0x`` text (``None`` before any commit)."""
        commit = self.client.max_commit()
        return None if commit is None else str(commit.lsn)

    def rows(self) -> int:
        """``COUNT_BIG(*)`` of the source table."""
        return int(str(self.client.scalar(f"SELECT COUNT_BIG(*) FROM {self.table}")))

    def span(self, key: str, kind: str) -> tuple[int | None, int | None]:
        """The smallest and largest unit of the key (``None`` on an empty table)."""
        unit = _unit(key, kind)
        row = self.client.table(f"SELECT MIN({unit}) AS lo, MAX({unit}) AS hi FROM {self.table}")
        lo, hi = row.column("lo")[0].as_py(), row.column("hi")[0].as_py()
        return (None if lo is None else int(lo)), (None if hi is None else int(hi))

    def fine_tallies(
        self, key: str, kind: str, lo: int, width: int
    ) -> dict[int | None, tuple[int, Decimal]]:
        """Rows and unit sum per fine bucket ``(unit - lo) / width``; a NULL key's rows under
        ``None``."""
        unit = _unit(key, kind)
        # CASTs on both operands: SQL Server divides bigint by bigint as integers, and the
        # emulator sees the operand types
        result = self.client.table(
            "SELECT x.b, COUNT_BIG(*) AS n, SUM(CAST(x.u AS DECIMAL(38,0))) AS s FROM "
            f"(SELECT {unit} AS u, CAST({unit} - @P1 AS BIGINT) / CAST(@P2 AS BIGINT) AS b "
            f"FROM {self.table}) AS x GROUP BY x.b",
            [lo, width],
        )
        out: dict[int | None, tuple[int, Decimal]] = {}
        for row in result.to_pylist():
            b = row["b"]
            s = row["s"]
            out[None if b is None else int(b)] = (
                int(row["n"]),
                Decimal(0) if s is None else Decimal(str(s)),
            )
        return out

    def changed_keys(self, keys: Sequence[str], after: str, upto: str) -> list[tuple[object, ...]]:
        """Distinct keys of the change rows with ``after < __$start_lsn <= upto`` in every
        capture instance of the table that captures all the key columns."""
        out: set[tuple[object, ...]] = set()
        cols = ", ".join(quote_name(k) for k in keys)
        for inst in self.instances:
            if not _captures(inst, keys):
                continue
            rows = self.client.table(
                f"SELECT DISTINCT {cols} FROM {change_table(inst.name)} "
                "WHERE __$start_lsn > @P1 AND __$start_lsn <= @P2",
                [Lsn.parse(after), Lsn.parse(upto)],
            ).to_pylist()
            out.update(tuple(r[k] for k in keys) for r in rows)
        return sorted(out, key=repr)


def _captures(instance: CaptureInstance, keys: Sequence[str]) -> bool:
    names = {c.lower() for c in instance.columns}
    return all(k.lower() in names for k in keys)


def open_tallies(options: ReaderOptions) -> SourceTallies:
    """Reconcile's queries on a new connection with the snapshot reader's session settings."""
    return SourceTallies(CdcClient(options, session_setup(options)))
