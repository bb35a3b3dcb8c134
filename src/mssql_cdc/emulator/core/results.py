"""What a statement returns: a result set, a row count or environment changes.

The engine (:mod:`mssql_cdc.emulator.engine`) and the CDC procedures
(:mod:`mssql_cdc.emulator.cdc`) build these; the server renders them as TDS tokens
(:mod:`mssql_cdc.emulator.server.render`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mssql_cdc.emulator.core.errors import SqlError
from mssql_cdc.emulator.protocol.tokens import Column
from mssql_cdc.emulator.protocol.types import SqlType

__all__ = ["CURCMD", "BatchOutcome", "OutputParam", "StatementResult", "result_set"]

#: the DONE token's CurCmd per statement kind (MS-TDS 2.2.7.6)
CURCMD = {"select": 0xC1, "insert": 0xC3, "delete": 0xC4, "update": 0xC5, "exec": 0xE0}


@dataclass
class StatementResult:
    kind: str
    columns: list[Column] | None = None
    rows: Sequence[tuple[object, ...]] = field(default_factory=list)
    rowcount: int | None = None
    env: list[bytes] = field(default_factory=list)
    #: further result sets of the same statement (a procedure's second result set)
    following: list[StatementResult] = field(default_factory=list)

    @property
    def curcmd(self) -> int:
        return CURCMD.get(self.kind, 0)


@dataclass(frozen=True)
class OutputParam:
    """An RPC output parameter's final value: sent as a RETURNVALUE token (MS-TDS 2.2.7.18)."""

    ordinal: int
    name: str
    type: SqlType
    value: object


@dataclass
class BatchOutcome:
    results: list[StatementResult]
    error: SqlError | None = None
    #: the output parameters of an RPC, in request order
    outputs: list[OutputParam] = field(default_factory=list)
    #: the final values of the variables a batch was asked for (``outputs`` of run_batch)
    variables: dict[str, object] = field(default_factory=dict)


def result_set(
    columns: list[tuple[str, SqlType]], rows: Sequence[tuple[object, ...]]
) -> StatementResult:
    return StatementResult("select", [Column(n, t) for n, t in columns], list(rows), len(rows))
