"""The RPC procedures of parameterized and prepared statements: ``sp_executesql`` (ProcID 10),
``sp_prepare`` (11), ``sp_execute`` (12), ``sp_prepexec`` (13) and ``sp_unprepare`` (15)
(MS-TDS 2.2.6.6, RPC Request; "sp_prepare (Transact-SQL)", "sp_execute", "sp_prepexec",
"sp_unprepare", "sp_executesql").

* ``sp_prepare handle OUTPUT, params, stmt [, options]`` keeps the statement and its parameter
  declarations and answers the handle (an int, from 1 per session) as the RETURNVALUE of the
  ``handle`` parameter; ``options`` 1 (RETURN_METADATA: the result's columns without running
  it) is refused with 40517.
* ``sp_execute handle, values...`` runs a kept statement with the values (positional in
  declaration order, or named ``@P1 = ...``); an unknown handle is error 8179.
* ``sp_prepexec handle OUTPUT, params, stmt, values...`` is ``sp_prepare`` then
  ``sp_execute``: the statement's results, then the handle.
* ``sp_unprepare handle`` forgets it (8179 when unknown).
* ``sp_executesql stmt, params, values...``: declared parameters with ``OUTPUT`` and an RPC
  parameter sent by reference (status bit 0x01) come back with their final values.

Handles belong to the session (each has its own :class:`Prepared`), as in SQL Server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mssql_cdc.emulator.core.errors import SqlError, unsupported
from mssql_cdc.emulator.core.results import BatchOutcome, OutputParam
from mssql_cdc.emulator.engine.executor import coerce
from mssql_cdc.emulator.engine.params import parse_param_declarations
from mssql_cdc.emulator.protocol.types import SqlType, scalar

if TYPE_CHECKING:
    from mssql_cdc.emulator.engine.executor import Executor
    from mssql_cdc.emulator.protocol.rpc import RpcParam

__all__ = ["PROCEDURES", "Prepared"]

#: the procedures this module answers, as an RPC names them (ProcID or name)
PROCEDURES = frozenset({"sp_executesql", "sp_prepare", "sp_execute", "sp_prepexec", "sp_unprepare"})
_BYREF = 0x01
_INT = scalar("int")


@dataclass
class _Statement:
    declared: dict[str, SqlType]
    text: str


@dataclass
class Prepared:
    """The prepared statements of one session, by handle."""

    statements: dict[int, _Statement] = field(default_factory=dict)
    last: int = 0

    def call(self, executor: Executor, name: str, params: list[RpcParam]) -> BatchOutcome:
        """Run RPC ``name`` (one of :data:`PROCEDURES`) with its parameters."""
        try:
            if name == "sp_executesql":
                return _executesql(executor, params)
            if name == "sp_prepare":
                return self._prepare(params)
            if name == "sp_prepexec":
                return self._prepexec(executor, params)
            if name == "sp_execute":
                handle = _handle(params, name)
                return _run(executor, self._get(handle), params, 1)
            handle = _handle(params, name)
            self._get(handle)
            del self.statements[handle]
            return BatchOutcome([])
        except SqlError as err:
            return BatchOutcome([], err)

    def _get(self, handle: int) -> _Statement:
        found = self.statements.get(handle)
        if found is None:
            raise SqlError(8179, f"Could not find prepared statement with handle {handle}.")
        return found

    def _keep(self, params: list[RpcParam], name: str) -> tuple[int, OutputParam]:
        if len(params) < 3:
            raise SqlError(
                201,
                f"Procedure or function '{name}' expects parameter '@stmt', which was not "
                "supplied.",
            )
        declared = _declarations(params[1].value)
        text = params[2].value
        if not isinstance(text, str):
            raise SqlError(
                214, "Procedure expects parameter '@statement' of type 'ntext/nchar/nvarchar'."
            )
        self.last += 1
        self.statements[self.last] = _Statement(declared, text)
        return self.last, OutputParam(0, params[0].name, _INT, self.last)

    def _prepare(self, params: list[RpcParam]) -> BatchOutcome:
        if len(params) > 3 and params[3].value is not None and int(params[3].value) & 1:  # type: ignore[call-overload]
            raise unsupported("sp_prepare with RETURN_METADATA")
        _, handle = self._keep(params, "sp_prepare")
        return BatchOutcome([], outputs=[handle])

    def _prepexec(self, executor: Executor, params: list[RpcParam]) -> BatchOutcome:
        number, handle = self._keep(params, "sp_prepexec")
        outcome = _run(executor, self.statements[number], params, 3)
        outcome.outputs.insert(0, handle)
        return outcome


def _handle(params: list[RpcParam], name: str) -> int:
    if not params or params[0].value is None:
        raise SqlError(
            201,
            f"Procedure or function '{name}' expects parameter '@handle', which was not supplied.",
        )
    value = params[0].value
    return value if isinstance(value, int) else int(str(value))


def _declarations(value: object) -> dict[str, SqlType]:
    if value is None:
        return {}
    if not isinstance(value, str):
        raise SqlError(214, "Procedure expects parameter '@params' of type 'ntext/nchar/nvarchar'.")
    return parse_param_declarations(value)


def _executesql(executor: Executor, params: list[RpcParam]) -> BatchOutcome:
    if not params or not isinstance(params[0].value, str):
        raise SqlError(
            214, "Procedure expects parameter '@statement' of type 'ntext/nchar/nvarchar'."
        )
    first = 1
    declared: dict[str, SqlType] = {}
    if len(params) > 1 and (not params[1].name or params[1].name.lower() == "@params"):
        declared = _declarations(params[1].value)
        first = 2
    return _run(executor, _Statement(declared, params[0].value), params, first)


def _run(
    executor: Executor, statement: _Statement, params: list[RpcParam], first: int
) -> BatchOutcome:
    """Run ``statement`` with ``params[first:]`` bound to its declared parameters (by name,
    else in declaration order); parameters sent by reference come back as output parameters
    (their ordinal is their position in the request)."""
    values = params[first:]
    names = list(statement.declared)
    bound: dict[str, tuple[SqlType, object]] = {n: (t, None) for n, t in statement.declared.items()}
    returned: list[tuple[int, RpcParam, str]] = []
    for position, param in enumerate(values):
        key = param.name.lstrip("@").lower() if param.name else ""
        if not key:
            if position >= len(names):
                raise SqlError(8144, "Procedure or function has too many arguments specified.")
            key = names[position]
        t = statement.declared.get(key, param.type)
        try:
            bound[key] = (t, coerce(t, param.value))
        except (ValueError, TypeError):
            raise SqlError(8114, f"Error converting data type for parameter @{key}.") from None
        if param.status & _BYREF:
            returned.append((first + position, param, key))
    outcome = executor.run_batch(statement.text, bound, outputs=[k for _, _, k in returned])
    finals = outcome.variables
    for position, param, key in returned:
        t = bound[key][0]
        outcome.outputs.append(OutputParam(position, param.name, t, finals.get(key)))
    return outcome
