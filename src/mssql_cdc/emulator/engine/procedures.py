"""System stored procedures: the CDC ones (``sys.sp_cdc_*``) and ``sp_executesql``.

Parameters and result columns follow the Microsoft reference pages of each procedure
("sys.sp_cdc_enable_table (Transact-SQL)", "sys.sp_cdc_get_captured_columns (Transact-SQL)",
...). Unknown procedures get error 2812.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mssql_cdc.emulator.cdc.procedures import OWNER_ONLY as _OWNER_ONLY
from mssql_cdc.emulator.cdc.procedures import extra as _extra
from mssql_cdc.emulator.core.errors import SqlError, no_permission, unsupported
from mssql_cdc.emulator.core.results import StatementResult, result_set
from mssql_cdc.emulator.engine.params import parse_param_declarations
from mssql_cdc.emulator.engine.space import spaceused
from mssql_cdc.emulator.protocol.types import MAX, SqlType, scalar

if TYPE_CHECKING:
    from mssql_cdc.emulator.core.catalog import TableDef
    from mssql_cdc.emulator.engine.executor import Executor

__all__ = ["call"]


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _source(ex: Executor, proc: str, args: dict[str, object]) -> TableDef:
    schema = _text(ex.require(proc, args, "source_schema")) or "dbo"
    name = _text(ex.require(proc, args, "source_name")) or ""
    table = ex.db.catalog.get(schema, name)
    if table is None:
        raise SqlError(
            22931,
            f"Source table '{schema}.{name}' does not exist in the current database. Ensure "
            "that the correct database context is set. Specify a valid schema and table name "
            "for the database.",
        )
    return table


def call(  # noqa: PLR0911, PLR0912, PLR0915 (a dispatch over procedures)
    ex: Executor, name: str, args: dict[str, object], positional: list[object]
) -> StatementResult:

    short = name.rsplit(".", maxsplit=1)[-1]
    cdc = ex.db.cdc
    if short in _OWNER_ONLY and not ex.db.security.is_owner(ex.user):
        raise no_permission()
    extra = _extra(ex, short, args, positional)
    if extra is not None:
        return extra
    if short == "sp_cdc_enable_db":
        cdc.enable_db()
        return StatementResult("exec")
    if short == "sp_cdc_enable_table":
        source = _source(ex, short, args)
        ex.require(short, args, "role_name")
        columns_text = _text(args.get("captured_column_list"))
        columns = None
        if columns_text:
            columns = [c.strip().strip("[]") for c in columns_text.split(",") if c.strip()]
        net = args.get("supports_net_changes")
        cdc.enable_table(
            source,
            capture_instance=_text(args.get("capture_instance")),
            role_name=_text(args.get("role_name")),
            captured_columns=columns,
            supports_net_changes=None if net is None else bool(net),
            index_name=_text(args.get("index_name")),
        )
        return StatementResult("exec")
    if short == "sp_cdc_disable_table":
        source = _source(ex, short, args)
        cdc.disable_table(source, _text(ex.require(short, args, "capture_instance")))
        return StatementResult("exec")
    if short == "sp_cdc_scan":
        cdc.scan()
        return StatementResult("exec")
    if short == "sp_cdc_get_captured_columns":
        ci = _text(ex.require(short, args, "capture_instance")) or ""
        instance = cdc.instance(ci)
        if instance is None:
            raise SqlError(
                22964,
                f"The capture instance '{ci}' does not exist in the current database.",
            )
        nv = scalar("nvarchar", length=128)
        cols = [
            ("source_schema", nv),
            ("source_table", nv),
            ("capture_instance", nv),
            ("column_name", nv),
            ("column_id", scalar("int")),
            ("column_ordinal", scalar("int")),
            ("data_type", nv),
            ("character_maximum_length", scalar("int")),
            ("numeric_precision", scalar("tinyint")),
            ("numeric_precision_radix", scalar("smallint")),
            ("numeric_scale", scalar("int")),
            ("datetime_precision", scalar("smallint")),
        ]
        rows = []
        for ordinal, col in enumerate(instance.column_defs, start=1):
            t = col.type
            char_len = None
            if t.is_string or t.is_binary:
                char_len = -1 if t.length == MAX else t.length
            precision = t.precision or {"tinyint": 3, "smallint": 5, "int": 10}.get(t.name)
            if t.name == "bigint":
                precision = 19
            radix = 10 if precision else None
            scale = t.scale if t.is_decimal else None
            if t.name in ("tinyint", "smallint", "int", "bigint"):
                scale = 0
            dt_precision = t.scale if t.name in ("time", "datetime2", "datetimeoffset") else None
            if t.name == "datetime":
                dt_precision = 3
            rows.append(
                (
                    instance.source.schema,
                    instance.source.name,
                    instance.name,
                    col.name,
                    instance.column_ids[ordinal - 1],
                    ordinal,
                    t.name,
                    char_len,
                    precision,
                    radix,
                    scale,
                    dt_precision,
                )
            )
        return result_set(cols, rows)
    if short == "sp_spaceused":
        return spaceused(ex, args, positional)
    if short == "sp_executesql":
        stmt = positional[0] if positional else args.get("stmt")
        if not isinstance(stmt, str):
            raise SqlError(
                214, "Procedure expects parameter '@statement' of type 'ntext/nchar/nvarchar'."
            )
        decl = positional[1] if len(positional) > 1 else args.get("params")
        declared = parse_param_declarations(decl) if isinstance(decl, str) else {}
        params: dict[str, tuple[SqlType, object]] = {}
        for pname, ptype in declared.items():
            params[pname] = (ptype, args.get(pname))
        outcome = ex.run_nested(stmt, params)
        if outcome.error is not None:
            raise outcome.error
        selects = [r for r in outcome.results if r.columns is not None]
        return selects[-1] if selects else StatementResult("exec")
    if short in ("sp_prepare", "sp_execute", "sp_prepexec", "sp_unprepare"):
        raise unsupported(f"EXEC {short} in a batch (the emulator answers it as an RPC)")
    raise SqlError(2812, f"Could not find stored procedure '{name}'.")
