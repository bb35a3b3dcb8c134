"""What a statement must pass before it runs: permissions and table locks; and the statements
that change them (security DDL, ``ALTER DATABASE ... SET ALLOW_SNAPSHOT_ISOLATION``).

Tables a statement reads need SELECT, its target INSERT/UPDATE/DELETE (error 229, see
:mod:`security`). Locks follow :mod:`locks`: the target of a write (or of ALTER/DROP TABLE) is
taken exclusively until the transaction ends; READ COMMITTED reads wait for other sessions'
exclusive locks; ``WITH (NOLOCK)``, READ UNCOMMITTED and SNAPSHOT reads do not wait. Change
tables and the ``cdc`` metadata tables are read without waiting (the change functions read
``WITH (NOLOCK)``, docs/emulator.md). A SNAPSHOT transaction in a database
without ``ALLOW_SNAPSHOT_ISOLATION ON`` fails with 3952 when it touches data ("Snapshot
Isolation in SQL Server", Microsoft docs).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from sqlglot import exp

from mssql_cdc.emulator.core.errors import SqlError, no_permission, unsupported
from mssql_cdc.emulator.core.results import StatementResult
from mssql_cdc.emulator.core.security import permission_denied

if TYPE_CHECKING:
    from mssql_cdc.emulator.core.catalog import TableDef
    from mssql_cdc.emulator.engine.executor import Executor

__all__ = ["DENY_MARK", "before", "command"]

#: the first "permission" of a GRANT that stands for a DENY statement (sqlglot cannot parse
#: DENY; the executor rewrites ``DENY x`` at the start of a statement to ``GRANT <mark>, x``)
DENY_MARK = "__MSSQL_CDC_DENY__"

_NOWAIT_HINTS = {"NOLOCK", "READUNCOMMITTED"}
_SYSTEM_SCHEMAS = {"sys", "information_schema"}
_SNAPSHOT_OPTION = re.compile(
    r"^DATABASE\s+\S+\s+SET\s+ALLOW_SNAPSHOT_ISOLATION\s+(ON|OFF)\s*;?\s*$", re.I
)


def _resolve(ex: Executor, node: exp.Table) -> TableDef | None:
    if not isinstance(node.this, exp.Identifier):
        return None  # a table-valued function: checked where it is expanded
    schema = node.db or "dbo"
    if schema.lower() in _SYSTEM_SCHEMAS:
        return None
    return ex.db.catalog.get(schema, node.name)


def _hints(node: exp.Table) -> set[str]:
    out: set[str] = set()
    for hint in node.args.get("hints") or []:
        for item in hint.expressions if isinstance(hint, exp.Expression) else []:
            out.add(item.name.upper())
    return out


def _check(ex: Executor, permission: str, table: TableDef) -> None:
    if not ex.db.security.has_permission(ex.user, permission, table.schema, table.name):
        raise permission_denied(permission, table.schema, table.name, ex.db.name)


def _columns_read(st: exp.Expression, node: exp.Table, table: TableDef) -> list[str]:
    """The columns of ``table`` (named by ``node`` in ``st``) that ``st`` reads: those named
    with its alias or unqualified, and all of them for ``*`` or ``alias.*``."""
    alias = node.alias_or_name.lower()
    names: list[str] = []
    for star in st.find_all(exp.Star):
        parent = star.parent
        qualifier = parent.table.lower() if isinstance(parent, exp.Column) else ""
        if qualifier in ("", alias):
            return [c.name for c in table.columns]
    for col in st.find_all(exp.Column):
        if col.table.lower() not in ("", alias):
            continue
        found = table.column(col.name)
        if found is not None and found.name not in names:
            names.append(found.name)
    return names


def _check_read(ex: Executor, st: exp.Expression, node: exp.Table, table: TableDef) -> None:
    """SELECT on a table: the table permission, or, where column GRANT/DENY rules exist, the
    permission on each column the statement reads (error 230 names the first denied one)."""
    security = ex.db.security
    if not security.has_column_rules(table.schema, table.name):
        _check(ex, "SELECT", table)
        return
    columns = _columns_read(st, node, table)
    if not columns:
        _check(ex, "SELECT", table)
    for column in columns:
        if not security.column_permission(ex.user, "SELECT", table.schema, table.name, column):
            raise SqlError(
                230,
                f"The SELECT permission was denied on the column '{column}' of the object "
                f"'{table.name}', database '{ex.db.name}', schema '{table.schema}'.",
                klass=14,
            )


def _snapshot_allowed(ex: Executor) -> None:
    if ex.isolation == "SNAPSHOT" and not ex.db.allow_snapshot_isolation:
        raise SqlError(
            3952,
            f"Snapshot isolation transaction failed accessing database '{ex.db.name}' because "
            "snapshot isolation is not allowed in this database. Use ALTER DATABASE to allow "
            "snapshot isolation.",
        )


def _target(st: exp.Expression) -> exp.Table | None:
    node = st.this
    if isinstance(node, exp.Schema):
        node = node.this
    return node if isinstance(node, exp.Table) else None


def before(ex: Executor, st: exp.Expression) -> None:
    """Check permissions and take or wait for locks for ``st`` (raises 229, 1222, 1205)."""
    target_node: exp.Table | None = None
    if isinstance(st, (exp.Insert, exp.Update, exp.Delete)):
        target_node = _target(st)
        target = _resolve(ex, target_node) if target_node is not None else None
        if target is not None:
            _snapshot_allowed(ex)
            _check(ex, type(st).__name__.upper(), target)
            ex.db.locks.acquire(ex.spid, target.schema, target.name, ex.lock_timeout)
    elif isinstance(st, (exp.Alter, exp.Drop)) and isinstance(st.this, exp.Table):
        target = _resolve(ex, st.this)
        if target is not None:
            if not ex.db.security.is_owner(ex.user):
                raise no_permission()
            ex.db.locks.acquire(ex.spid, target.schema, target.name, ex.lock_timeout)
        return
    elif not isinstance(st, (exp.Select, exp.Union)):
        return
    for node in st.find_all(exp.Table):
        if node is target_node:
            continue
        table = _resolve(ex, node)
        if table is None:
            continue
        _check_read(ex, st, node, table)
        if table.schema.lower() == "cdc":
            continue
        _snapshot_allowed(ex)
        if ex.isolation in ("SNAPSHOT", "READ UNCOMMITTED") or _hints(node) & _NOWAIT_HINTS:
            continue
        ex.db.locks.wait_readable(ex.spid, table.schema, table.name, ex.lock_timeout)


def command(ex: Executor, st: exp.Expression) -> StatementResult:
    """Security statements and ALTER DATABASE, which sqlglot leaves as commands."""

    if isinstance(st, (exp.Grant, exp.Revoke)):
        # comments before the statement are not part of it (sqlglot attaches them to it)
        verb = "GRANT" if isinstance(st, exp.Grant) else "REVOKE"
        text = st.sql(dialect="tsql", comments=False)[len(verb) :]
        if text.lstrip().startswith(DENY_MARK):  # DENY, parsed as a marked GRANT (see _parse)
            verb, text = "DENY", text.lstrip()[len(DENY_MARK) :].lstrip(" ,")
    else:
        verb = str(st.this).upper()
        rest = st.args.get("expression")
        text = rest.name if isinstance(rest, exp.Expression) else str(rest or "")
    if not ex.db.security.is_owner(ex.user):
        raise no_permission()
    if verb == "ALTER" and text.strip().upper().startswith("DATABASE"):
        match = _SNAPSHOT_OPTION.match(text.strip())
        if match is None:
            raise unsupported("ALTER DATABASE " + " ".join(text.split()[2:4]))
        ex.db.allow_snapshot_isolation = match.group(1).upper() == "ON"
        return StatementResult("other")
    if verb in ("CREATE", "ALTER", "GRANT", "REVOKE", "DENY"):
        ex.db.security.execute(verb, text)
        return StatementResult("other")
    raise unsupported(verb)
