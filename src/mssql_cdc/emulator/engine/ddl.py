"""CREATE / DROP / ALTER TABLE: the engine table, the catalog, and what CDC sees of DDL.

Computed columns (``c AS expr [PERSISTED]``) become engine generated columns; their values are
never inserted and a change table holds NULL for them ("cdc.<capture_instance>_CT", Microsoft
docs: computed columns are always NULL).

ALTER TABLE on a table with capture instances follows "About change data capture"
(Microsoft docs, handling changes to source tables):
existing instances keep their captured columns (a new column is not captured, a dropped
captured column is NULL from then on), a type change of a captured column is propagated into
the change table (``required_column_update = 1``), and every DDL change writes one
``cdc.ddl_history`` row per capture instance when the capture scan reads it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from sqlglot import exp

from mssql_cdc.emulator.core.catalog import ColumnDef, TableDef
from mssql_cdc.emulator.core.duck import one_row
from mssql_cdc.emulator.core.errors import SqlError, invalid_column, invalid_object, unsupported
from mssql_cdc.emulator.core.log import DdlEvent
from mssql_cdc.emulator.core.results import StatementResult
from mssql_cdc.emulator.engine.rewrite import constant
from mssql_cdc.emulator.protocol.collations import lookup as lookup_collation
from mssql_cdc.emulator.protocol.types import SqlType, from_datatype, infer_from_engine

if TYPE_CHECKING:
    from mssql_cdc.emulator.engine.executor import Executor

__all__ = ["alter_table", "create_table", "drop_table"]


def _type(node: exp.DataType) -> SqlType:
    try:
        return from_datatype(node)
    except ValueError as exc:
        raise unsupported(str(exc)) from None


def _column(item: exp.ColumnDef, primary: list[str]) -> tuple[ColumnDef, tuple[int, int] | None]:
    """A catalog column from a column definition (and its identity seed/step, if any)."""
    kind_node = item.args.get("kind")
    nullable, identity = True, None
    computed: str | None = None
    collation = ""
    for constraint in item.constraints:
        ck = constraint.kind
        if isinstance(ck, exp.NotNullColumnConstraint):
            nullable = bool(ck.args.get("allow_null"))
        elif isinstance(ck, exp.PrimaryKeyColumnConstraint):
            primary.append(item.name)
            nullable = False
        elif isinstance(ck, exp.GeneratedAsIdentityColumnConstraint):
            start = constant(ck.args["start"])[1] if ck.args.get("start") else 1
            step = constant(ck.args["increment"])[1] if ck.args.get("increment") else 1
            identity = (int(start or 1), int(step or 1))  # type: ignore[call-overload]
            nullable = False
        elif isinstance(ck, exp.ComputedColumnConstraint):
            computed = ck.this.sql(dialect="duckdb", identify=True)
        elif isinstance(ck, exp.CollateColumnConstraint):
            collation = ck.this.name if isinstance(ck.this, exp.Expression) else str(ck.this)
    if computed is not None:
        t = _type(kind_node) if isinstance(kind_node, exp.DataType) else SqlType("int")
        return ColumnDef(item.name, t, True, False, computed), None
    if not isinstance(kind_node, exp.DataType):
        raise unsupported("column without a data type")
    t = _type(kind_node)
    if collation:
        if not t.is_string:
            raise SqlError(
                447,
                f"Expression type {t.name} is invalid for COLLATE clause.",
            )
        try:
            lookup_collation(collation)
        except ValueError:
            raise SqlError(448, f"Invalid collation '{collation}'.") from None
        t = replace(t, collation=collation)
    return ColumnDef(item.name, t, nullable, identity is not None), identity


def column_ddl(col: ColumnDef, schema: str, table: str) -> str:
    if col.computed is not None:
        return f'"{col.name}" GENERATED ALWAYS AS ({col.computed}) VIRTUAL'
    part = f'"{col.name}" {col.type.storage()}'
    if not col.nullable:
        part += " NOT NULL"
    if col.identity:
        sequence = f"{_ident(schema)}.{_ident(table + '__identity')}"
        part += f" DEFAULT nextval('{sequence}')"
    return part


def create_engine_table(
    ex: Executor,
    *,
    schema: str,
    name: str,
    columns: list[ColumnDef],
    primary_key: list[str],
    identity: tuple[int, int] | None,
) -> TableDef:
    """Create the engine table and its catalog entry (also used by the AdventureWorks loader)."""
    cursor = ex.cursor
    ex.db.system.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    if identity is not None:
        seq = f"{_ident(schema)}.{_ident(name + '__identity')}"
        cursor.execute(f"CREATE SEQUENCE {seq} START {identity[0]} INCREMENT {identity[1]}")
    ddl = [column_ddl(c, schema, name) for c in columns]
    if primary_key:
        ddl.append("PRIMARY KEY (" + ", ".join(f'"{k}"' for k in primary_key) + ")")
    cursor.execute(f'CREATE TABLE "{schema}"."{name}" ({", ".join(ddl)})')
    if any(c.computed is not None for c in columns):
        described = {
            str(r[0]): str(r[1]) for r in cursor.execute(f'DESCRIBE "{schema}"."{name}"').fetchall()
        }
        columns = [
            ColumnDef(c.name, infer_from_engine(described[c.name], []), True, False, c.computed)
            if c.computed is not None
            and c.type == SqlType("int")
            and described[c.name] != "INTEGER"
            else c
            for c in columns
        ]
    return ex.db.catalog.add(TableDef(schema, name, columns, primary_key))


def create_schema(ex: Executor, st: exp.Create) -> StatementResult:
    """``CREATE SCHEMA name`` (sqlglot puts the name in the table node's ``db``): error 2714
    if it exists ("CREATE SCHEMA (Transact-SQL)", Microsoft docs)."""

    target = st.this
    name = (target.db or target.name) if isinstance(target, exp.Table) else ""
    if not name:
        raise unsupported("CREATE SCHEMA without a name")
    existing = one_row(
        ex.db.system.execute(
            "SELECT 1 FROM duckdb_schemas() WHERE database_name = current_database() "
            "AND lower(schema_name) = lower(?)",
            [name],
        )
    )
    if existing is not None:
        raise SqlError(2714, f"There is already an object named '{name}' in the database.")
    ex.db.system.execute(f"CREATE SCHEMA {_ident(name)}")
    ex.db.catalog.add_schema(name)
    return StatementResult("other")


def _ident(name: str) -> str:
    """``name`` as an engine identifier (double quotes, ``"`` doubled)."""
    return '"' + name.replace('"', '""') + '"'


def create_table(ex: Executor, st: exp.Create) -> StatementResult:

    kind = str(st.args.get("kind") or "").upper()
    if kind == "SCHEMA":
        return create_schema(ex, st)
    if kind != "TABLE" or not isinstance(st.this, exp.Schema):
        raise unsupported(f"CREATE {kind}")
    target = st.this.this
    assert isinstance(target, exp.Table)
    schema = target.db or "dbo"
    if ex.db.catalog.get(schema, target.name) is not None:
        raise SqlError(2714, f"There is already an object named '{target.name}' in the database.")
    columns: list[ColumnDef] = []
    primary: list[str] = []
    identity: tuple[int, int] | None = None
    for item in st.this.expressions:
        if isinstance(item, exp.ColumnDef):
            col, seed = _column(item, primary)
            identity = seed or identity
            columns.append(col)
            continue
        pk = item.find(exp.PrimaryKey)
        if pk is None:
            raise unsupported("table constraint " + item.sql(dialect="tsql")[:40])
        for key in pk.expressions:
            primary.append(key.this.name if isinstance(key, exp.Ordered) else key.name)
    resolved_pk = []
    for key in primary:
        matches = [c.name for c in columns if c.name.lower() == key.lower()]
        if not matches:
            raise invalid_column(key)
        resolved_pk.append(matches[0])
    columns = [
        ColumnDef(c.name, c.type, False, c.identity) if c.name in resolved_pk else c
        for c in columns
    ]
    create_engine_table(
        ex,
        schema=schema,
        name=target.name,
        columns=columns,
        primary_key=resolved_pk,
        identity=identity,
    )
    return StatementResult("other")


def drop_table(ex: Executor, st: exp.Drop) -> StatementResult:

    if str(st.args.get("kind") or "").upper() != "TABLE" or not isinstance(st.this, exp.Table):
        raise unsupported("DROP " + str(st.args.get("kind")))
    target = st.this
    table = ex.db.catalog.get(target.db or "dbo", target.name)
    if table is None:
        if st.args.get("exists"):
            return StatementResult("other")
        raise SqlError(
            3701,
            f"Cannot drop the table '{target.name}', because it does not exist or you do "
            "not have permission.",
        )
    ex.db.cdc.disable_table(table, None)
    ex.cursor.execute(f'DROP TABLE "{table.schema}"."{table.name}"')
    ex.db.catalog.drop(table.schema, table.name)
    return StatementResult("other")


def alter_table(ex: Executor, st: exp.Alter) -> StatementResult:  # noqa: PLR0912 (one branch per action)
    """ALTER TABLE ... ADD col / DROP COLUMN col / ALTER COLUMN col type [NULL|NOT NULL]."""

    if str(st.args.get("kind") or "").upper() != "TABLE" or not isinstance(st.this, exp.Table):
        raise unsupported("ALTER " + str(st.args.get("kind")))
    target = st.this
    table = ex.db.catalog.get(target.db or "dbo", target.name)
    if table is None:
        raise invalid_object(f"{target.db + '.' if target.db else ''}{target.name}")
    qualified = f'"{table.schema}"."{table.name}"'
    changed_types: set[str] = set()
    for action in st.args.get("actions") or []:
        if isinstance(action, exp.ColumnDef):
            if table.column(action.name) is not None:
                raise SqlError(
                    2705,
                    "Column names in each table must be unique. Column name "
                    f"'{action.name}' in table '{table.qualified}' is specified more than once.",
                )
            col, seed = _column(action, [])
            if seed is not None:
                raise unsupported("ALTER TABLE ADD with IDENTITY")
            ex.cursor.execute(
                f"ALTER TABLE {qualified} ADD COLUMN {column_ddl(col, table.schema, table.name)}"
            )
            table.columns.append(col)
        elif (
            isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "COLUMN"
        ):
            for node in action.args.get("tables") or [action.this]:
                name = node.name
                dropped = table.column(name)
                if dropped is None:
                    raise SqlError(
                        4924,
                        f"ALTER TABLE DROP COLUMN failed because column '{name}' does not exist "
                        f"in table '{table.name}'.",
                    )
                if dropped.name in table.primary_key:
                    raise SqlError(
                        5074,
                        f"The object 'PK_{table.name}' is dependent on column '{dropped.name}'.",
                    )
                ex.cursor.execute(f'ALTER TABLE {qualified} DROP COLUMN "{dropped.name}"')
                table.columns.remove(dropped)
        elif isinstance(action, exp.AlterColumn):
            altered = table.column(action.name)
            if altered is None:
                raise invalid_column(action.name)
            col = altered
            dtype = action.args.get("dtype")
            if not isinstance(dtype, exp.DataType):
                raise unsupported("ALTER COLUMN without a data type")
            new_type = _type(dtype)
            # without NULL / NOT NULL the column becomes nullable ("ALTER TABLE", Microsoft docs)
            allow = action.args.get("allow_null")
            nullable = True if allow is None else bool(allow)
            ex.cursor.execute(
                f'ALTER TABLE {qualified} ALTER COLUMN "{col.name}" TYPE {new_type.storage()}'
            )
            verb = "DROP" if nullable else "SET"
            ex.cursor.execute(f'ALTER TABLE {qualified} ALTER COLUMN "{col.name}" {verb} NOT NULL')
            table.columns[table.index(col.name)] = ColumnDef(
                col.name, new_type, nullable, col.identity, col.computed
            )
            if new_type != col.type:
                changed_types.add(col.name)
        else:
            raise unsupported("ALTER TABLE " + action.sql(dialect="tsql")[:40])
    instances = ex.db.cdc.instances_of(table)
    if instances:
        required = ex.db.cdc.propagate_types(table, changed_types)
        ex.log_ddl(table, DdlEvent(st.sql(dialect="tsql"), required))
    return StatementResult("other")
