"""The engine's own functions: SQL Server functions the rewriter cannot fold into a constant
because an argument is a column or another expression (``OBJECT_NAME(source_object_id)``,
``HAS_PERMS_BY_NAME(..., name, 'COLUMN')``, ``sys.fn_cdc_increment_lsn(__$start_lsn)``).

:func:`register` adds them to the database's DuckDB engine once (they are shared by every
session's connection); the rewriter calls them by the names in :data:`NAMES`, passing the
session's user where the answer depends on it. Each computes what :mod:`metadata` or
:class:`~mssql_cdc._native.Lsn` computes for a constant, so a column gives the same answer as a
literal. No T-SQL can call them: their names are not T-SQL functions (the rewriter answers
error 195 for a function it does not know).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from duckdb import func, sqltypes

from mssql_cdc._native import Lsn
from mssql_cdc.emulator.engine import builtins, datefuncs
from mssql_cdc.emulator.engine.metadata import Metadata, quotename

if TYPE_CHECKING:
    from mssql_cdc.emulator.engine.database import Database

__all__ = ["NAMES", "register"]

#: T-SQL function -> the engine function standing for it
NAMES = {
    "OBJECT_ID": "__mssql_object_id",
    "OBJECT_NAME": "__mssql_object_name",
    "OBJECT_SCHEMA_NAME": "__mssql_object_schema_name",
    "SCHEMA_NAME": "__mssql_schema_name",
    "SCHEMA_ID": "__mssql_schema_id",
    "TYPE_NAME": "__mssql_type_name",
    "TYPE_ID": "__mssql_type_id",
    "DB_ID": "__mssql_db_id",
    "QUOTENAME": "__mssql_quotename",
    "HAS_PERMS_BY_NAME": "__mssql_has_perms_by_name",
    "LSN_STEP": "__mssql_lsn_step",
}


def _lsn_step(value: bytes | None, step: int | None) -> bytes | None:
    if value is None or step is None:
        return None
    lsn = Lsn(bytes(value))
    return bytes(lsn.next() if step > 0 else lsn.prev())


def register(db: Database) -> None:
    """Add the functions to ``db``'s engine."""
    meta = Metadata(db)
    text, integer, blob = sqltypes.VARCHAR, sqltypes.INTEGER, sqltypes.BLOB
    functions: list[
        tuple[str, Callable[..., Any], list[sqltypes.DuckDBPyType], sqltypes.DuckDBPyType]
    ] = [
        ("OBJECT_ID", meta.object_id, [text, text, text], integer),
        (
            "OBJECT_NAME",
            lambda i, d, u: meta.object_name(i, u, schema=False, database_id=d),
            [integer, integer, text],
            text,
        ),
        (
            "OBJECT_SCHEMA_NAME",
            lambda i, d, u: meta.object_name(i, u, schema=True, database_id=d),
            [integer, integer, text],
            text,
        ),
        ("SCHEMA_NAME", meta.schema_name, [integer], text),
        ("SCHEMA_ID", meta.schema_id, [text], integer),
        ("TYPE_NAME", meta.type_name, [integer], text),
        ("TYPE_ID", meta.type_id, [text], integer),
        ("DB_ID", meta.db_id, [text], integer),
        ("QUOTENAME", quotename, [text, text], text),
        (
            "HAS_PERMS_BY_NAME",
            lambda s, c, p, ss, sc, u: meta.has_perms(u, s, c, p, ss, sc),
            [text, text, text, text, text, text],
            integer,
        ),
        ("LSN_STEP", _lsn_step, [blob, integer], blob),
    ]
    datefuncs.register(db.engine)
    builtins.register(db.engine)
    for key, function, params, result in functions:
        db.engine.create_function(
            NAMES[key],
            function,
            list[Any](params),
            result,
            null_handling=func.SPECIAL,
            side_effects=False,
        )
