"""A stream's tables bound to a session: bronze (the target), its facts table and the tables
already known to exist (docs/sink.md).

Runs on the driver (or Spark Connect's ``foreachBatch`` worker). Building one reads nothing;
``seen`` is shared with its builder, so a sink that keeps one set for its whole run looks each
table up once (ADR 0090).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mssql_cdc.sink.bronze import BronzeTable
from mssql_cdc.sink.facts_table import FactsTable
from mssql_cdc.sink.tables import TableRef, table_ref

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["StreamTables"]


@dataclass(frozen=True)
class StreamTables:
    """Bronze (``target``) and the facts table (``None``: none) of a stream, on ``spark``.

    Attributes:
        seen: the tables known to exist (found or created); ``None``: looked up every time.
    """

    spark: SparkSession
    target: TableRef
    facts: TableRef | None = None
    seen: set[TableRef] | None = field(default=None, compare=False)

    @classmethod
    def parse(cls, spark: SparkSession, target: str, facts_table: str | None) -> StreamTables:
        """The tables of a call's ``target`` and ``facts_table`` arguments, parsed
        (``tables.table_ref``).

        Raises:
            TypeError, ValueError: a table argument that is not a table name or path.
        """
        facts = None if facts_table is None else table_ref(facts_table, "facts_table")
        return cls(spark, table_ref(target, "target"), facts)

    @property
    def bronze(self) -> BronzeTable:
        """The target's writer."""
        return BronzeTable(self.spark, self.target, seen=self.seen)

    @property
    def facts_table(self) -> FactsTable:
        """The facts table's writer.

        Raises:
            ValueError: the stream has no facts table.
        """
        if self.facts is None:
            raise ValueError(f"{self.target.text}: no facts table")
        return FactsTable(self.spark, self.facts, seen=self.seen)

    def exists(self, ref: TableRef) -> bool:
        """Whether ``ref`` exists: looked up once, then remembered in ``seen``."""
        if self.seen is not None and ref in self.seen:
            return True
        if ref.exists(self.spark):
            if self.seen is not None:
                self.seen.add(ref)
            return True
        return False
