"""T-SQL expression rewriting before the engine runs a statement.

sqlglot parses T-SQL; this module replaces what the engine cannot know with values computed
by the emulator, bottom-up, and tags every node whose SQL Server type is known with
``meta["sqltype"]`` (and constant values with ``meta["value"]``):

* variables and ``sp_executesql`` parameters, ``@@VERSION``, ``@@SPID``, ``@@TRANCOUNT``;
* server functions (``SERVERPROPERTY``, ``CURRENT_TIMEZONE_ID()``, ``SYSDATETIMEOFFSET()``,
  ``GETDATE()``, ``DB_NAME()``) and the CDC scalar functions (``sys.fn_cdc_*``);
* ``CAST``/``CONVERT`` into the emulator's storage forms (date/time types are canonical text,
  see :mod:`temporal`), including ``CONVERT(binary(10), '0x...', 1)`` and
  ``CONVERT(varchar(22), lsn, 1)`` (style 1 keeps the ``0x`` prefix, "CAST and CONVERT
  (Transact-SQL)", binary styles);
* ``cdc.fn_cdc_get_all_changes_<ci>(from, to, row_filter)`` in FROM, validated like SQL Server
  (error 313) and replaced by a query on the change table.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from sqlglot import exp

from mssql_cdc._native import Lsn
from mssql_cdc.emulator.cdc.functions import change_function, map_time_to_lsn
from mssql_cdc.emulator.core.duck import one_row
from mssql_cdc.emulator.core.errors import SqlError, unsupported
from mssql_cdc.emulator.core.literals import (
    constant,
    string_literal,
    tag,
    temporal_text,
    typed_literal,
)
from mssql_cdc.emulator.engine import builtins, clr, datefuncs
from mssql_cdc.emulator.engine.metadata import (
    DATABASE_ID,
    Metadata,
    quotename,
    unmodelled_class,
)
from mssql_cdc.emulator.engine.system_views import (
    SYSTEM_SCHEMAS,
    referenced_columns,
    system_view,
    view_table,
)
from mssql_cdc.emulator.engine.udfs import NAMES as UDF_NAMES
from mssql_cdc.emulator.protocol.collations import lookup as lookup_collation
from mssql_cdc.emulator.protocol.temporal import parse_temporal
from mssql_cdc.emulator.protocol.types import (
    MAX,
    SqlType,
    data_length,
    fixed_data_length,
    from_datatype,
    pack_variant,
    scalar,
    unpack_variant,
)

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from mssql_cdc.emulator.core.catalog import TableDef
    from mssql_cdc.emulator.engine.database import Database

__all__ = [
    "DIVIDE_BY_ZERO",
    "Context",
    "Rewriter",
    "constant",
    "divide_by_zero",
]

VERSION_TEXT = (
    "Microsoft SQL Server 2022 (RTM-CU12) (KB5033663) - 16.0.4135.4 (X64) \n"
    "\tMar 30 2024 00:00:00 \n\tCopyright (C) 2022 Microsoft Corporation\n"
    "\tDeveloper Edition (64-bit) on Linux (mssql-cdc emulator) <X64>"
)
_PROPERTY_TEXT = scalar("nvarchar", length=128)
_PROPERTY_INT = scalar("int")
#: the SERVERPROPERTY values the emulator has: ``lower(name) -> (base type, value)``, base
#: types as "SERVERPROPERTY (Transact-SQL)" lists them, the version's parts those of
#: :data:`VERSION_TEXT` (16.0.4135.4, RTM-CU12, Developer Edition); ``None`` values are NULL
#: as on SQL Server (the default instance has no InstanceName)
SERVER_PROPERTIES: dict[str, tuple[SqlType, object]] = {
    "productversion": (_PROPERTY_TEXT, "16.0.4135.4"),
    "productmajorversion": (_PROPERTY_TEXT, "16"),
    "productminorversion": (_PROPERTY_TEXT, "0"),
    "productbuild": (_PROPERTY_TEXT, "4135"),
    "productlevel": (_PROPERTY_TEXT, "RTM"),
    "productupdatelevel": (_PROPERTY_TEXT, "CU12"),
    "productupdatereference": (_PROPERTY_TEXT, "KB5033663"),
    "edition": (_PROPERTY_TEXT, "Developer Edition (64-bit)"),
    "editionid": (scalar("bigint"), -2117995310),
    "engineedition": (_PROPERTY_INT, 3),
    "machinename": (_PROPERTY_TEXT, "EMULATOR"),
    "servername": (_PROPERTY_TEXT, "EMULATOR"),
    "computernamephysicalnetbios": (_PROPERTY_TEXT, "EMULATOR"),
    "instancename": (_PROPERTY_TEXT, None),
    "collation": (_PROPERTY_TEXT, "SQL_Latin1_General_CP1_CI_AS"),
    "ishadrenabled": (_PROPERTY_INT, 0),
    "isclustered": (_PROPERTY_INT, 0),
    "isfulltextinstalled": (_PROPERTY_INT, 0),
    "isintegratedsecurityonly": (_PROPERTY_INT, 0),
    "issingleuser": (_PROPERTY_INT, 0),
    "isxtpsupported": (_PROPERTY_INT, 0),
    "islocaldb": (_PROPERTY_INT, 0),
    "pathseparator": (scalar("nvarchar", length=1), "/"),
}


class Context:
    """What a rewrite needs from the session: variables, ids, transaction depth."""

    def __init__(
        self,
        db: Database,
        variables: dict[str, tuple[SqlType, object]],
        *,
        spid: int,
        trancount: int,
        user: str = "dbo",
        login: str = "sa",
        cursor: duckdb.DuckDBPyConnection | None = None,
    ) -> None:
        self.db = db
        self.user = user
        self.login = login
        self.variables = variables
        self.spid = spid
        self.trancount = trancount
        #: the session's engine connection, which runs the rewritten statement
        self._cursor = cursor
        self._views = 0

    def register_rows(self, rows: pa.Table) -> str | None:
        """Makes ``rows`` a relation the statement can name (DuckDB's registered Arrow table, on
        the session's own connection) and returns its name; ``None`` without a connection. A
        context serves one statement, and its names replace the last statement's."""
        if self._cursor is None:
            return None
        name = f"__mssql_cdc_rows_{self._views}"
        self._views += 1
        self._cursor.register(name, rows)
        return name


def _literal_type(node: exp.Literal) -> SqlType:
    if node.is_string:
        return scalar("varchar", length=max(len(str(node.this)), 1))
    text = str(node.this)
    if "e" in text.lower():
        return scalar("float")
    whole, _, fraction = text.lstrip("-").partition(".")
    # a constant's precision counts its digits but not the leading zeros of the whole part:
    # 0.5 is numeric(1,1), 0.000...01 with 38 decimals numeric(38,38)
    precision = max(len(whole.lstrip("0")) + len(fraction), len(fraction), 1)
    if precision > 38:
        raise SqlError(
            1007,
            f"The number '{text}' is out of the range for numeric representation "
            "(maximum precision 38).",
            klass=15,
        )
    if "." in text:
        return scalar("decimal", precision=precision, scale=len(fraction))
    value = int(text)
    if -(2**31) <= value < 2**31:
        return scalar("int")
    return scalar("decimal", precision=precision, scale=0)


def _lsn_arg(value: object) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    raise SqlError(
        257,
        "Implicit conversion from data type nvarchar to binary is not allowed. Use the CONVERT "
        "function to run this query.",
    )


class Rewriter:
    """Rewrites one statement's expressions bottom-up (see the module docstring)."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        #: tables of the statement being rewritten, by alias (see _note_tables)
        self.tables: dict[str, TableDef] = {}
        #: derived tables (``(SELECT ...) AS x``) by alias: their select lists type ``x.col``
        self.derived: dict[str, exp.Select] = {}
        self.functions: dict[str, Callable[[list[exp.Expression]], exp.Expression]] = {
            "SERVERPROPERTY": self._serverproperty,
            "CURRENT_TIMEZONE_ID": self._timezone_id,
            "GETUTCDATE": lambda a: typed_literal(
                scalar("datetime"), self.ctx.db.clock.utcnow().replace(tzinfo=None)
            ),
            "SYSUTCDATETIME": lambda a: typed_literal(
                scalar("datetime2", scale=7), self.ctx.db.clock.utcnow().replace(tzinfo=None)
            ),
            # "SYSDATETIME (Transact-SQL)": datetime2(7), the server's local time
            "SYSDATETIME": lambda a: typed_literal(
                scalar("datetime2", scale=7), self.ctx.db.clock.local_naive()
            ),
            "DATEPART": self._datepart,
            "DATEDIFF": lambda a: self._datediff(a, big=False),
            "DATEDIFF_BIG": lambda a: self._datediff(a, big=True),
            "DATEADD": self._dateadd,
            "DB_NAME": self._db_name,
            # the session's login and database user (never the engine's own user)
            "SUSER_NAME": lambda a: typed_literal(scalar("nvarchar", length=128), self.ctx.login),
            "SUSER_SNAME": lambda a: typed_literal(scalar("nvarchar", length=128), self.ctx.login),
            "USER_NAME": lambda a: typed_literal(scalar("nvarchar", length=128), self.ctx.user),
            "IS_ROLEMEMBER": self._is_rolemember,
            "DATALENGTH": self._datalength,
            "NCHAR": self._nchar,
            "FN_CDC_GET_MIN_LSN": self._min_lsn,
            "FN_CDC_GET_MAX_LSN": self._max_lsn,
            "FN_CDC_INCREMENT_LSN": lambda a: self._step_lsn(a, +1),
            "FN_CDC_DECREMENT_LSN": lambda a: self._step_lsn(a, -1),
            "FN_CDC_MAP_LSN_TO_TIME": self._map_lsn_to_time,
            "FN_CDC_MAP_TIME_TO_LSN": self._map_time_to_lsn,
            "FN_CDC_GET_COLUMN_ORDINAL": self._column_ordinal,
            **self._metadata_functions(),
        }

    def rewrite(self, node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.Select, exp.Update, exp.Delete)):
            self._note_tables(node)
        if isinstance(node, exp.Parameter):
            return self._parameter(node)
        for key, value in list(node.args.items()):
            if isinstance(value, exp.Expression):
                node.set(key, self.rewrite(value))
            elif isinstance(value, list):
                node.set(
                    key, [self.rewrite(v) if isinstance(v, exp.Expression) else v for v in value]
                )
        return self._node(node)

    def _note_tables(self, statement: exp.Expression) -> None:
        """Remember the catalog tables and system views a statement names (for a column's
        type)."""
        for table in statement.find_all(exp.Table):
            if isinstance(table.this, exp.Identifier):
                found = self.ctx.db.catalog.get(table.db or "dbo", table.name)
                if found is None and table.db.lower() in SYSTEM_SCHEMAS:
                    found = view_table(table.db, table.name)
                if found is not None:
                    self.tables.setdefault(table.alias_or_name.lower(), found)
        for sub in statement.find_all(exp.Subquery):
            if sub.alias and isinstance(sub.this, exp.Select):
                self.derived.setdefault(sub.alias.lower(), sub.this)

    def _column_type(self, node: exp.Expression) -> SqlType | None:
        """The declared type of a column of a table the statement names."""
        if not isinstance(node, exp.Column):
            return None
        qualifier = node.table.lower()
        for alias, table in self.tables.items():
            if qualifier in ("", alias):
                col = table.column(node.name)
                if col is not None:
                    return col.type
        select = self.derived.get(qualifier) if qualifier else None
        if select is not None:  # a derived table's column: its select list's expression
            for projection in select.expressions:
                if projection.alias_or_name.lower() == node.name.lower():
                    inner = projection.unalias()
                    t = inner.meta.get("sqltype") or self._column_type(inner)
                    return t if isinstance(t, SqlType) else None
        return None

    # --- per node ---

    def _node(self, node: exp.Expression) -> exp.Expression:  # noqa: PLR0911, PLR0912, PLR0915 (a dispatch over kinds)
        if isinstance(node, exp.Parameter):
            return self._parameter(node)
        if isinstance(node, exp.Column) and "sqltype" not in node.meta:
            column_type = self._column_type(node)
            if column_type is not None:
                node.meta["sqltype"] = column_type
            return node
        if isinstance(node, exp.Add):
            return self._add(node)
        if isinstance(node, exp.National):
            text = str(node.this)
            # nvarchar(n) counts UTF-16 code units: a character outside the BMP takes two.
            units = len(text.encode("utf-16-le")) // 2
            return tag(string_literal(text), scalar("nvarchar", length=max(units, 1)), text)
        if isinstance(node, exp.Literal):
            node.meta.setdefault("sqltype", _literal_type(node))
            return node
        if isinstance(node, exp.HexString):
            length = max(len(str(node.this)) // 2, 1)
            node.meta.setdefault("sqltype", scalar("varbinary", length=length))
            return node
        if isinstance(node, exp.CurrentTimestampLTZ):
            now = self.ctx.db.clock.now()
            return typed_literal(scalar("datetimeoffset", scale=7), now)
        if isinstance(node, exp.CurrentTimestamp):
            return typed_literal(scalar("datetime"), self.ctx.db.clock.local_naive())
        if isinstance(node, exp.CurrentSchema):
            return self._schema_name(node)
        if isinstance(node, exp.ObjectId):  # OBJECT_ID(name [, type])
            given = [a for a in (node.this, node.args.get("expression")) if a is not None]
            return self.functions["OBJECT_ID"](given)
        if isinstance(node, exp.CurrentUser):
            # sqlglot reads SUSER_NAME(), SUSER_SNAME() and CURRENT_USER alike; all give the
            # login here (SQL Server's CURRENT_USER would give the database user, e.g. dbo)
            return typed_literal(scalar("nvarchar", length=128), self.ctx.login)
        if isinstance(node, exp.Anonymous):
            # node.name: a bracketed function name ([fn_cdc_...]) without its brackets
            upper = node.name.upper()
            handler = self.functions.get(upper)
            if handler is not None:
                return handler(list(node.expressions))
            if upper in _STRING_FUNCTIONS:
                return builtins.string_function(upper, list(node.expressions), self._type_of)
            if upper in ("DAY", "MONTH", "YEAR"):  # "DAY (Transact-SQL)": DATEPART(day, d)
                return self._datepart([exp.var(upper.lower()), *node.expressions])
            if isinstance(node.parent, (exp.Dot, exp.ScopeResolution, exp.Table)):
                return node  # a CLR method or a table-valued function: handled by the parent
            if upper.startswith("FN_CDC_") and not upper.startswith(
                ("FN_CDC_GET_ALL_CHANGES_", "FN_CDC_GET_NET_CHANGES_")
            ):
                raise unsupported(node.name)
            raise SqlError(195, f"'{node.name}' is not a recognized built-in function name.")
        if isinstance(node, exp.Neg):
            inner_type = node.this.meta.get("sqltype")
            if isinstance(inner_type, SqlType) and not inner_type.is_string:
                node.meta["sqltype"] = inner_type
            return node
        if isinstance(node, (exp.Div, exp.Mod)):
            return self._divide(node)
        if isinstance(node, (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.EQ, exp.NEQ)):
            return self._comparison(node)
        if isinstance(node, exp.Ordered) and self._is_guid(node.this):
            node.set("this", guid_order_key(node.this))
            return node
        if isinstance(node, exp.ScopeResolution):  # hierarchyid::Parse(...), geography::...
            static = clr.static_call(node, self._args)
            if static is not None:
                return static
        if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Anonymous):
            method = clr.method_call(node, self._column_type)  # h.ToString(), g.STAsBinary()
            if method is not None:
                return method
        if isinstance(node, exp.Dot) and (
            node.expression.meta.get("constant") or _is_sys_qualifier(node.this)
        ):
            inner: exp.Expression = node.expression  # sys.fn_cdc_...(...): the function
            return inner
        if isinstance(node, (exp.Cast, exp.TryCast, exp.Convert)):
            return self._cast(node)
        if isinstance(node, exp.Collate):  # tds-types work: COLLATE labels a string's type
            return self._collate(node)
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous):
            return self._table_function(node)
        if isinstance(node, exp.Table) and node.db.lower() in SYSTEM_SCHEMAS:
            view = system_view(
                self.ctx.db,
                self.ctx.user,
                node.db,
                node.name,
                node.alias_or_name,
                self.ctx.spid,
                referenced_columns(node),
                self.ctx.register_rows,
            )
            return view if view is not None else node
        if isinstance(node, (exp.Func, exp.Window)):  # COUNT, SUM, ISNULL...: typed, or 40517
            return builtins.annotate(node, self._type_of)
        return node

    def _type_of(self, node: exp.Expression) -> SqlType | None:
        """The SQL Server type of an expression the rewriter has seen (None: not known)."""
        t = node.meta.get("sqltype") or self._column_type(node)
        return t if isinstance(t, SqlType) else None

    def _parameter(self, node: exp.Parameter) -> exp.Expression:
        inner = node.this
        if isinstance(inner, exp.Parameter):  # @@NAME
            name = str(inner.name).upper()
            if name == "VERSION":
                return typed_literal(scalar("nvarchar", length=300), VERSION_TEXT)
            if name == "SPID":
                return typed_literal(scalar("smallint"), self.ctx.spid)
            if name == "TRANCOUNT":
                return typed_literal(scalar("int"), self.ctx.trancount)
            if name == "SERVERNAME":
                return typed_literal(scalar("nvarchar", length=128), "EMULATOR")
            raise unsupported(f"@@{name}")
        name = str(node.name).lower()
        if name not in self.ctx.variables:
            raise SqlError(137, f'Must declare the scalar variable "@{node.name}".', klass=15)
        t, value = self.ctx.variables[name]
        return typed_literal(t, value)

    def _serverproperty(self, args: list[exp.Expression]) -> exp.Expression:
        """``SERVERPROPERTY('name')``: sql_variant whose base type is the property's
        ("SERVERPROPERTY (Transact-SQL)"); NULL for a name that is not a property or that
        the emulator does not have (:data:`SERVER_PROPERTIES`)."""
        if len(args) != 1:
            raise wrong_arguments("SERVERPROPERTY", 1, 1)
        ok, name = constant(args[0])
        if not ok or not isinstance(name, str):
            raise unsupported("SERVERPROPERTY with a non-constant argument")
        found = SERVER_PROPERTIES.get(name.lower())
        variant = scalar("sql_variant", length=8016)
        if found is None or found[1] is None:
            return typed_literal(variant, None)
        base, value = found
        return typed_literal(variant, pack_variant(base, value))

    def _is_rolemember(self, args: list[exp.Expression]) -> exp.Expression:
        """``IS_ROLEMEMBER(role)``: 1 when the session's user is a member (``dbo`` is of every
        role), 0 when not, NULL when no such role ("IS_ROLEMEMBER (Transact-SQL)")."""
        (role,) = self._args(args[:1], "IS_ROLEMEMBER") or [None]
        security = self.ctx.db.security
        value: int | None = None
        if isinstance(role, str) and role.lower() in security.roles:
            value = 1 if security.is_member(self.ctx.user, role) else 0
        return typed_literal(scalar("int"), value)

    # --- metadata functions (:mod:`metadata`) ---

    def _metadata_functions(self) -> dict[str, Callable[[list[exp.Expression]], exp.Expression]]:
        meta = Metadata(self.ctx.db)
        user = self.ctx.user
        name_t, int_t = scalar("nvarchar", length=128), scalar("int")

        def object_name(schema: bool) -> Callable[..., object]:
            def fold(i: object, d: object = DATABASE_ID) -> object:
                return meta.object_name(_int(i), user, schema=schema, database_id=_int(d))

            return fold

        def object_id(n: object, k: object = None) -> object:
            return meta.object_id(_str(n), _str(k), user)

        def quote(t: object, q: object = "[") -> object:
            return quotename(_str(t), _str(q))

        def perms(s: object, c: object, p: object, ss: object = None, sc: object = None) -> object:
            return meta.has_perms(user, _str(s), _str(c), _str(p), _str(ss), _str(sc))

        specs: list[tuple[str, int, int, str, SqlType, Callable[..., object]]] = [
            # T-SQL name, fewest and most arguments, the engine's argument kinds, result, fold
            ("OBJECT_ID", 1, 2, "ttu", int_t, object_id),
            ("OBJECT_NAME", 1, 2, "iiu", name_t, object_name(False)),
            ("OBJECT_SCHEMA_NAME", 1, 2, "iiu", name_t, object_name(True)),
            ("SCHEMA_ID", 0, 1, "t", int_t, lambda n=None: meta.schema_id(_str(n))),
            ("TYPE_NAME", 1, 1, "i", name_t, lambda i: meta.type_name(_int(i))),
            ("TYPE_ID", 1, 1, "t", int_t, lambda n: meta.type_id(_str(n))),
            ("DB_ID", 0, 1, "t", int_t, lambda n=None: meta.db_id(_str(n))),
            ("QUOTENAME", 1, 2, "tt", scalar("nvarchar", length=258), quote),
            ("HAS_PERMS_BY_NAME", 3, 5, "tttttu", int_t, perms),
        ]
        out: dict[str, Callable[[list[exp.Expression]], exp.Expression]] = {}
        for key, least, most, kinds, result, fold in specs:
            out[key] = self._metadata_call(key, least, most, kinds, result, fold)
        return out

    def _metadata_call(  # noqa: PLR0917 (one metadata function's description)
        self,
        key: str,
        least: int,
        most: int,
        kinds: str,
        result: SqlType,
        fold: Callable[..., object],
    ) -> Callable[[list[exp.Expression]], exp.Expression]:
        """A handler: constant arguments fold in Python, others call the engine function of
        :mod:`udfs` (``kinds``: ``t`` text, ``i`` int, ``u`` the session's user, appended)."""

        def handler(args: list[exp.Expression]) -> exp.Expression:
            if not least <= len(args) <= most:
                raise wrong_arguments(key, least, most)
            if key == "HAS_PERMS_BY_NAME":
                self._check_perms_class(args)
            values = [constant(a) for a in args]
            if all(ok for ok, _ in values):
                return typed_literal(result, fold(*[v for _, v in values]))
            given = [*args, *[exp.Null() for _ in range(len(kinds.rstrip("u")) - len(args))]]
            if key in ("OBJECT_NAME", "OBJECT_SCHEMA_NAME") and len(args) == 1:
                given[1] = exp.Literal.number(DATABASE_ID)
            if key == "QUOTENAME" and len(args) == 1:
                given[1] = exp.Literal.string("[")
            engine_args: list[exp.Expression] = [
                exp.Cast(this=a, to=exp.DataType.build("VARCHAR" if k == "t" else "INTEGER"))
                for a, k in zip(given, kinds.rstrip("u"), strict=True)
            ]
            if kinds.endswith("u"):
                engine_args.append(exp.Literal.string(self.ctx.user))
            return _untag(exp.Anonymous(this=UDF_NAMES[key], expressions=engine_args), result)

        return handler

    def _check_perms_class(self, args: list[exp.Expression]) -> None:
        """``HAS_PERMS_BY_NAME`` needs a constant class and permission; a class the emulator
        does not model is refused (40517), never answered."""
        for arg, what in ((args[1], "securable class"), (args[2], "permission")):
            ok, value = constant(arg)
            if not ok:
                raise unsupported(f"HAS_PERMS_BY_NAME with a non-constant {what}")
            if what == "securable class" and unmodelled_class(_str(value)):
                raise unsupported(f"HAS_PERMS_BY_NAME for the securable class {value}")

    def _schema_name(self, node: exp.Expression) -> exp.Expression:
        """``SCHEMA_NAME([id])`` (sqlglot reads it as CURRENT_SCHEMA): the default schema
        ``dbo`` without an argument."""
        arg = node.this if isinstance(node.this, exp.Expression) else None
        if arg is None:
            return typed_literal(scalar("nvarchar", length=128), "dbo")
        ok, value = constant(arg)
        meta = Metadata(self.ctx.db)
        t = scalar("nvarchar", length=128)
        if ok:
            return typed_literal(t, meta.schema_name(_int(value)))
        cast = exp.Cast(this=arg, to=exp.DataType.build("INTEGER"))
        return _untag(exp.Anonymous(this=UDF_NAMES["SCHEMA_NAME"], expressions=[cast]), t)

    def _db_name(self, args: list[exp.Expression]) -> exp.Expression:
        """``DB_NAME([id])``: the emulated database's name for its id (:data:`DATABASE_ID`) or
        no argument, else NULL."""
        t = scalar("nvarchar", length=128)
        if len(args) > 1:
            raise wrong_arguments("DB_NAME", 0, 1)
        if not args:
            return typed_literal(t, self.ctx.db.name)
        ok, value = constant(args[0])
        if ok:
            return typed_literal(t, self.ctx.db.name if _int(value) == DATABASE_ID else None)
        check = exp.EQ(this=args[0], expression=exp.Literal.number(DATABASE_ID))
        case = exp.Case(ifs=[exp.If(this=check, true=string_literal(self.ctx.db.name))])
        return _untag(case, t)

    def _timezone_id(self, args: list[exp.Expression]) -> exp.Expression:
        # "CURRENT_TIMEZONE_ID (Transact-SQL)": varchar (its length is not documented)
        return typed_literal(scalar("varchar", length=128), self.ctx.db.clock.windows_zone)

    def _nchar(self, args: list[exp.Expression]) -> exp.Expression:
        """``NCHAR(n)``: the UTF-16 code unit ``n`` as nchar(1), a lone surrogate included; NULL
        outside 0-65535 (the default collation has no supplementary characters)
        ("NCHAR (Transact-SQL)", Microsoft docs)."""
        if len(args) != 1:
            raise SqlError(174, "The nchar function requires 1 argument(s).", klass=15)
        t = scalar("nchar", length=1)
        ok, value = constant(args[0])
        if ok:
            if value is None:
                return typed_literal(t, None)
            code = int(value)  # type: ignore[call-overload]
            return typed_literal(t, chr(code) if 0 <= code <= 0xFFFF else None)
        code_node = args[0]
        guarded = exp.Case(
            ifs=[
                exp.If(
                    this=exp.Between(
                        this=code_node.copy(),
                        low=exp.Literal.number(0),
                        high=exp.Literal.number(0xFFFF),
                    ),
                    true=exp.Anonymous(this="chr", expressions=[code_node]),
                )
            ]
        )
        return _untag(guarded, t)

    def _is_guid(self, node: object) -> bool:
        if not isinstance(node, exp.Expression):
            return False
        t = node.meta.get("sqltype") or self._column_type(node)
        return isinstance(t, SqlType) and t.name == "uniqueidentifier"

    def _comparison(self, node: exp.Expression) -> exp.Expression:
        """``<``, ``<=``, ``>``, ``>=`` of ``uniqueidentifier`` values compare in SQL Server's
        order (:func:`guid_order_key`); ``=`` and ``<>`` need no key. Character strings
        compare without their trailing spaces ("How SQL Server compares strings with trailing
        spaces": ``'a' = 'a '``)."""
        left, right = node.this, node.expression
        if isinstance(node.parent, (exp.Update, exp.Set, exp.SetItem, exp.Execute)):
            return node  # an assignment (UPDATE ... SET c = v, EXEC p @a = v), not a comparison
        lt, rt = self._type_of(left), self._type_of(right)
        if (lt is not None and lt.is_string and not lt.is_long) and (
            rt is not None and rt.is_string and not rt.is_long
        ):
            for side, value in (("this", left), ("expression", right)):
                trimmed = exp.Anonymous(this="rtrim", expressions=[value, exp.Literal.string(" ")])
                node.set(side, trimmed)
            return node
        if isinstance(node, (exp.EQ, exp.NEQ)) or not (self._is_guid(left) or self._is_guid(right)):
            return node
        node.set("this", guid_order_key(left))
        node.set("expression", guid_order_key(right))
        return node

    def _divide(self, node: exp.Expression) -> exp.Expression:
        """``a / b`` and ``a % b``: integer operands give the truncated integer quotient
        (7 / 2 = 3, -7 / 2 = -3), and a zero divisor is error 8134 ("Divide by zero error
        encountered.", as with SQL Server's default ARITHABORT and ANSI_WARNINGS ON), for every
        numeric type."""
        left, right = node.this, node.expression
        assert isinstance(left, exp.Expression)
        assert isinstance(right, exp.Expression)
        lt = left.meta.get("sqltype") or self._column_type(left)
        rt = right.meta.get("sqltype") or self._column_type(right)
        ok, divisor = constant(right)
        if ok and divisor is not None and not isinstance(divisor, str) and divisor == 0:
            raise divide_by_zero()
        if not ok:
            check = exp.EQ(this=right.copy(), expression=exp.Literal.number(0))
            fail = exp.Anonymous(this="error", expressions=[exp.Literal.string(DIVIDE_BY_ZERO)])
            right = exp.Paren(this=exp.Case(ifs=[exp.If(this=check, true=fail)], default=right))
        ranks = ("tinyint", "smallint", "int", "bigint")
        if (
            isinstance(lt, SqlType)
            and isinstance(rt, SqlType)
            and lt.name in ranks
            and rt.name in ranks
        ):
            wider = max(lt, rt, key=lambda t: ranks.index(t.name))
            cls = exp.IntDiv if isinstance(node, exp.Div) else exp.Mod
            return _untag(exp.Paren(this=cls(this=left, expression=right)), wider)
        node.set("expression", right)
        return node

    def _add(self, node: exp.Add) -> exp.Expression:
        """``a + b``: string concatenation when both are character strings or both binary
        ("+ (String concatenation) (Transact-SQL)"), else arithmetic (:func:`concatenation`)."""
        left, right = node.this, node.expression
        lt: SqlType | None = left.meta.get("sqltype") or self._column_type(left)
        rt: SqlType | None = right.meta.get("sqltype") or self._column_type(right)
        # an untyped NULL takes the other operand's type
        lt = lt or (rt if isinstance(left, exp.Null) else None)
        rt = rt or (lt if isinstance(right, exp.Null) else None)
        if lt is None or rt is None:
            return node  # the engine adds; a string it cannot add is error 40517 (executor)
        if lt.is_long or rt.is_long:
            raise SqlError(
                402, f"The data types {lt.name} and {rt.name} are incompatible in the add operator."
            )
        result = concatenation(lt, rt)
        if result is None:
            numeric = _numeric_side(lt, rt)
            if numeric is not None:  # '1' + 2: the string converts to the number's type
                side = "this" if numeric is rt else "expression"
                node.set(
                    side,
                    exp.Cast(
                        this=node.args[side],
                        to=exp.DataType.build(
                            (lt if numeric is lt else rt).storage(), dialect="duckdb"
                        ),
                    ),
                )
            return node
        cap = (
            MAX
            if result.length == MAX
            else (4000 if result.name in ("nchar", "nvarchar") else 8000)
        )
        ok_l, vl = constant(left)
        ok_r, vr = constant(right)
        if ok_l and ok_r:
            value = None
            if vl is not None and vr is not None:
                value = _padded(lt, vl) + _padded(rt, vr)  # type: ignore[operator]
                if cap != MAX:
                    value = value[:cap]
            return typed_literal(result, value)
        joined: exp.Expression = exp.DPipe(
            this=_pad_node(left, lt), expression=_pad_node(right, rt), safe=False
        )
        if result.length != MAX and lt.length + rt.length > cap:
            joined = exp.Anonymous(this="left", expressions=[joined, exp.Literal.number(cap)])
        return _untag(exp.Paren(this=joined), result)

    # --- DATEPART, DATEDIFF, DATEADD (:mod:`datefuncs`) ---

    @staticmethod
    def _part(node: exp.Expression, function: str) -> str:
        """The datepart argument, a bare word (``year``, ``TZOFFSET``)."""
        if isinstance(node, (exp.Column, exp.Var, exp.Identifier)) and not (
            isinstance(node, exp.Column) and node.table
        ):
            return datefuncs.part_name(node.name, function)
        raise SqlError(1023, f"Invalid parameter 1 specified for {function}.", klass=15)

    def _temporal_arg(self, node: exp.Expression, function: str) -> tuple[str, bool, object]:
        """(SQL type name or :data:`datefuncs.LITERAL`, is constant, value) of a date
        argument: a string literal or string column converts with its parts' defaults."""
        t: SqlType | None = node.meta.get("sqltype") or self._column_type(node)
        ok, value = constant(node)
        if isinstance(t, SqlType) and t.is_temporal:
            return t.name, ok, value
        if (t is None and ok and isinstance(value, str)) or (
            isinstance(t, SqlType) and t.is_string
        ):
            return datefuncs.LITERAL, ok, value
        if ok and value is None:
            return datefuncs.LITERAL, ok, None
        raise unsupported(f"{function} of an expression of type {t.sql() if t else 'unknown'}")

    def _datepart(self, args: list[exp.Expression]) -> exp.Expression:
        if len(args) != 2:
            raise wrong_arguments("datepart", 2, 2)
        part = self._part(args[0], "datepart")
        kind, ok, value = self._temporal_arg(args[1], "DATEPART")
        t = scalar("int")
        if ok:
            return typed_literal(t, datefuncs.datepart(part, value, kind))
        call = exp.Anonymous(
            this="__mssql_datepart",
            expressions=[
                exp.Literal.string(part),
                exp.Cast(this=args[1], to=exp.DataType.build("VARCHAR")),
                exp.Literal.string(kind),
            ],
        )
        return _untag(call, t)

    def _datediff(self, args: list[exp.Expression], *, big: bool) -> exp.Expression:
        name = "datediff_big" if big else "datediff"
        if len(args) != 3:
            raise wrong_arguments(name, 3, 3)
        part = self._part(args[0], name)
        ka, oka, va = self._temporal_arg(args[1], name.upper())
        kb, okb, vb = self._temporal_arg(args[2], name.upper())
        t = scalar("bigint" if big else "int")
        if oka and okb:
            return typed_literal(t, datefuncs.datediff(part, va, vb, ka, kb, big=big))
        call = exp.Anonymous(
            this=f"__mssql_{name}",
            expressions=[
                exp.Literal.string(part),
                exp.Cast(this=args[1], to=exp.DataType.build("VARCHAR")),
                exp.Cast(this=args[2], to=exp.DataType.build("VARCHAR")),
                exp.Literal.string(ka),
                exp.Literal.string(kb),
            ],
        )
        return _untag(call, t)

    def _dateadd(self, args: list[exp.Expression]) -> exp.Expression:
        if len(args) != 3:
            raise wrong_arguments("dateadd", 3, 3)
        part = self._part(args[0], "dateadd")
        kind, ok, value = self._temporal_arg(args[2], "DATEADD")
        given = args[2].meta.get("sqltype") or self._column_type(args[2])
        # a string converts to datetime ("DATEADD (Transact-SQL)", return types)
        t = (
            given
            if kind != datefuncs.LITERAL and isinstance(given, SqlType)
            else scalar("datetime")
        )
        ok_n, number = constant(args[1])
        if ok and ok_n:
            return typed_literal(t, datefuncs.dateadd(part, number, value, t))
        call = exp.Anonymous(
            this="__mssql_dateadd",
            expressions=[
                exp.Literal.string(part),
                exp.Cast(this=args[1], to=exp.DataType.build("BIGINT")),
                exp.Cast(this=args[2], to=exp.DataType.build("VARCHAR")),
                exp.Literal.string(t.name),
                exp.Literal.number(t.scale),
            ],
        )
        return _untag(call, t)

    def _datalength(self, args: list[exp.Expression]) -> exp.Expression:
        """``DATALENGTH(expr)``: bytes of the stored value; bigint for the (max) types, else
        int ("DATALENGTH (Transact-SQL)", Microsoft docs)."""
        if len(args) != 1:
            raise SqlError(174, "The datalength function requires 1 argument(s).", klass=15)
        (arg,) = args
        t = arg.meta.get("sqltype") or self._column_type(arg)
        ok, value = constant(arg)
        if ok and value is None:
            return typed_literal(scalar("int"), None)
        if not isinstance(t, SqlType):
            raise unsupported("DATALENGTH of an expression of unknown type")
        result = scalar("bigint" if t.is_max or t.is_long else "int")
        if ok:
            try:
                return typed_literal(result, data_length(t, value))
            except ValueError as exc:
                raise unsupported(str(exc)) from None
        fixed = fixed_data_length(t)
        size: exp.Expression
        if fixed is not None:
            size = exp.Literal.number(fixed)
        elif t.name in ("nvarchar", "ntext", "xml"):
            # UTF-16 code units: a character outside the BMP takes two
            astral = exp.Anonymous(
                this="regexp_replace",
                expressions=[
                    arg.copy(),
                    exp.Literal.string("[^\\x{10000}-\\x{10FFFF}]"),
                    exp.Literal.string(""),
                    exp.Literal.string("g"),
                ],
            )
            units = exp.Add(this=exp.Length(this=arg.copy()), expression=exp.Length(this=astral))
            size = exp.Mul(this=exp.Literal.number(2), expression=exp.Paren(this=units))
        elif t.is_string:
            size = (
                exp.Anonymous(this="strlen", expressions=[arg.copy()])
                if t.coll.utf8
                else exp.Length(this=arg.copy())  # one byte per character in a code page
            )
        elif t.is_binary:
            size = exp.Anonymous(this="octet_length", expressions=[arg.copy()])
        else:
            raise unsupported(f"DATALENGTH of {t.sql()}")
        case = exp.Case(
            ifs=[exp.If(this=exp.Is(this=arg, expression=exp.Null()), true=exp.Null())],
            default=size,
        )
        return _untag(exp.Cast(this=case, to=exp.DataType.build(result.storage())), result)

    # --- CDC scalar functions ---

    def _args(self, args: list[exp.Expression], what: str) -> list[object]:
        values = []
        for arg in args:
            ok, value = constant(arg)
            if not ok:
                raise unsupported(f"{what} with a non-constant argument")
            values.append(value)
        return values

    def _min_lsn(self, args: list[exp.Expression]) -> exp.Expression:
        (name,) = self._args(args, "fn_cdc_get_min_lsn") or [None]
        lsn = bytes(10)
        instance = self.ctx.db.cdc.instance(name) if isinstance(name, str) else None
        if instance is not None and self.ctx.db.security.can_read_changes(
            self.ctx.user,
            (instance.source.schema, instance.source.name),
            instance.change_table,
            instance.role_name,
        ):
            lsn = bytes(instance.start_lsn)
        return typed_literal(scalar("binary", length=10), lsn)

    def _max_lsn(self, args: list[exp.Expression]) -> exp.Expression:
        return typed_literal(scalar("binary", length=10), self.ctx.db.cdc.max_lsn())

    def _step_lsn(self, args: list[exp.Expression], step: int) -> exp.Expression:
        """``sys.fn_cdc_increment_lsn(lsn)`` / ``decrement``: binary(10), of a constant or of
        any expression such as a column (the engine's ``LSN_STEP`` function, :mod:`udfs`)."""
        name = "fn_cdc_increment_lsn" if step > 0 else "fn_cdc_decrement_lsn"
        t = scalar("binary", length=10)
        if len(args) != 1:
            raise wrong_arguments(name, 1, 1)
        ok, value = constant(args[0])
        if not ok:
            call = exp.Anonymous(
                this=UDF_NAMES["LSN_STEP"],
                expressions=[
                    exp.Cast(this=args[0], to=exp.DataType.build("BLOB")),
                    exp.Literal.number(step),
                ],
            )
            return _untag(call, t)
        lsn = _lsn_arg(value)
        if lsn is None:
            return typed_literal(t, None)
        moved = Lsn(lsn).next() if step > 0 else Lsn(lsn).prev()
        return typed_literal(t, bytes(moved))

    def _map_lsn_to_time(self, args: list[exp.Expression]) -> exp.Expression:
        """``sys.fn_cdc_map_lsn_to_time(lsn)``: the ``tran_end_time`` of ``lsn`` in
        ``cdc.lsn_time_mapping`` (datetime), NULL when none; of a column too (a subquery)."""
        if len(args) != 1:
            raise wrong_arguments("fn_cdc_map_lsn_to_time", 1, 1)
        t = scalar("datetime")
        ok, value = constant(args[0])
        if ok:
            text = self.ctx.db.cdc.map_lsn_to_time(_lsn_arg(value))
            return typed_literal(t, text)
        if not self.ctx.db.cdc.enabled:
            return typed_literal(t, None)
        mapping = exp.table_("lsn_time_mapping", db="cdc", quoted=True)
        lookup = (
            exp.select(exp.column("tran_end_time", quoted=True))
            .from_(mapping)
            .where(exp.EQ(this=exp.column("start_lsn", quoted=True), expression=args[0]))
            .order_by(exp.Ordered(this=exp.column("tran_end_time", quoted=True), desc=True))
            .limit(1)
        )
        return _untag(exp.Subquery(this=lookup), t)

    def _map_time_to_lsn(self, args: list[exp.Expression]) -> exp.Expression:
        operator, when = self._args(args, "fn_cdc_map_time_to_lsn")
        lsn = map_time_to_lsn(self.ctx.db, operator, when)
        return typed_literal(scalar("binary", length=10), lsn)

    def _column_ordinal(self, args: list[exp.Expression]) -> exp.Expression:
        ci, column = self._args(args, "fn_cdc_get_column_ordinal")
        instance = self.ctx.db.cdc.instance(str(ci))
        ordinal: int | None = None
        if instance is not None:
            for n, name in enumerate(instance.columns, start=1):  # names never change
                if name.lower() == str(column).lower():
                    ordinal = n
        return typed_literal(scalar("int"), ordinal)

    # --- CAST / CONVERT ---

    def _cast(self, node: exp.Expression) -> exp.Expression:  # noqa: PLR0911, PLR0912, PLR0915 (a dispatch over kinds)
        to = node.args.get("to") if not isinstance(node, exp.Convert) else node.this
        inner = node.this if not isinstance(node, exp.Convert) else node.expression
        assert isinstance(to, exp.DataType)
        assert isinstance(inner, exp.Expression)
        try:
            t = from_datatype(to, in_cast=True)
        except ValueError as exc:
            raise unsupported(str(exc)) from None
        inner_type_: SqlType | None = inner.meta.get("sqltype")
        if t.name == "sql_variant":  # tds-types work
            return self._variant(inner, t)
        if inner_type_ is not None and inner_type_.name == "sql_variant":
            # CAST(sql_variant AS t): the base value converts ("sql_variant (Transact-SQL)")
            held, packed = constant(inner)
            if not held:
                raise unsupported(f"CAST of a sql_variant expression to {t.sql()}")
            if packed is None:
                return typed_literal(t, None)
            base, base_value = unpack_variant(packed)
            node.set(
                "expression" if isinstance(node, exp.Convert) else "this",
                typed_literal(base, base_value),
            )
            return self._cast(node)
        if t.is_string and inner_type_ is not None and inner_type_.collation:  # tds-types work
            t = replace(t, collation=inner_type_.collation)
        style_node = node.args.get("style")
        style = constant(style_node)[1] if isinstance(style_node, exp.Expression) else None
        ok, value = constant(inner)
        inner_type: SqlType | None = inner.meta.get("sqltype")
        if t.is_temporal:
            if ok:
                if value is None:
                    return typed_literal(t, None)
                try:
                    tv = parse_temporal(value)
                except ValueError:
                    raise SqlError(
                        241,
                        "Conversion failed when converting date and/or time from character string.",
                    ) from None
                return typed_literal(t, temporal_text(t, tv))
            return _untag(exp.Cast(this=inner, to=exp.DataType.build("VARCHAR")), t)
        if t.is_binary and style in (1, 2) and (inner_type is None or inner_type.is_string):
            if ok:
                if value is None:
                    return typed_literal(t, None)
                text = str(value)
                if style == 1:
                    if not text[:2].lower() == "0x":
                        raise conversion_error(text, t)
                    text = text[2:]
                try:
                    return typed_literal(t, bytes.fromhex(text))
                except ValueError:
                    raise conversion_error(str(value), t) from None
            start = 3 if style == 1 else 1
            call = exp.Anonymous(
                this="unhex",
                expressions=[exp.Substring(this=inner, start=exp.Literal.number(start))],
            )
            return _untag(call, t)
        if t.is_string and style in (1, 2) and inner_type is not None and inner_type.is_binary:
            # "CAST and CONVERT (Transact-SQL)", binary styles: 1 is 0x and upper-case hex
            # digits, 2 the digits alone; the result is cut to the target's length
            prefix = "0x" if style == 1 else ""
            if ok:
                if value is None:
                    return typed_literal(t, None)
                text = prefix + bytes(value).hex().upper()  # type: ignore[call-overload]
                return typed_literal(t, text if t.length == MAX else text[: t.length])
            hexed: exp.Expression = exp.Anonymous(this="hex", expressions=[inner])
            if prefix:
                hexed = exp.DPipe(this=exp.Literal.string(prefix), expression=hexed)
            if t.length != MAX:
                hexed = exp.Anonymous(
                    this="left", expressions=[hexed, exp.Literal.number(t.length)]
                )
            return _untag(hexed, t)
        if t.is_string and style in (None, 0) and inner_type is not None and inner_type.is_binary:
            # binary to character, style 0: the bytes as characters of the target's code page
            # (UTF-16LE for the N types), cut to the target's length ("CAST and CONVERT")
            if not ok:
                raise unsupported(f"CAST of a {inner_type.name} expression to {t.sql()}")
            if value is None:
                return typed_literal(t, None)
            data = bytes(value)  # type: ignore[call-overload]
            wide = t.name in ("nchar", "nvarchar", "ntext")
            text = (
                data.decode("utf-16-le", errors="surrogatepass")
                if wide
                else data.decode(t.coll.codec, errors="replace")
            )
            return typed_literal(t, text if t.length == MAX else text[: t.length])
        if ok and isinstance(value, str) and t.is_binary and style in (None, 0):
            # a string's bytes: UTF-16LE for the N types, else the collation's code page
            # ("CAST and CONVERT (Transact-SQL)": character to binary keeps the bytes)
            wide = inner_type is not None and inner_type.name in ("nchar", "nvarchar", "ntext")
            data = (
                value.encode("utf-16-le", errors="surrogatepass")
                if wide
                else value.encode((inner_type or t).coll.codec, errors="replace")
            )
            if t.length not in (0, MAX):
                data = data[: t.length]
                if t.name == "binary":
                    data = data.ljust(t.length, b"\x00")
            return typed_literal(t, data)
        if ok and value is not None and t.name == "uniqueidentifier":
            try:
                return typed_literal(t, uuid.UUID(str(value)))
            except ValueError:
                raise SqlError(
                    8169,
                    "Conversion failed when converting from a character string to "
                    "uniqueidentifier.",
                ) from None
        if ok and value is None:
            return typed_literal(t, None)
        if ok and t.is_decimal:
            try:
                return typed_literal(t, value)
            except ArithmeticError:
                raise SqlError(8114, f"Error converting data type varchar to {t.sql()}.") from None
        storage = t.storage()
        if t.is_string and t.length != MAX:
            cast: exp.Expression = exp.Anonymous(
                this="left",
                expressions=[
                    exp.Cast(this=inner, to=exp.DataType.build("VARCHAR")),
                    exp.Literal.number(t.length),
                ],
            )
        else:
            cast = exp.Cast(this=inner, to=exp.DataType.build(storage, dialect="duckdb"))
        return _untag(cast, t)

    def _collate(self, node: exp.Collate) -> exp.Expression:
        """``expr COLLATE name``: the engine sees ``expr``; its SQL Server type takes the
        collation (tds-types work; error 448 for a name the emulator does not know)."""
        inner = node.this
        assert isinstance(inner, exp.Expression)
        name = node.expression.name if isinstance(node.expression, exp.Expression) else ""
        try:
            lookup_collation(name)
        except ValueError:
            raise SqlError(448, f"Invalid collation '{name}'.", klass=16) from None
        t = inner.meta.get("sqltype")
        if isinstance(t, SqlType) and t.is_string:
            inner.meta["sqltype"] = replace(t, collation=name)
        return inner

    def _variant(self, inner: exp.Expression, t: SqlType) -> exp.Expression:
        """``CAST(constant AS sql_variant)``: the engine holds the base type and value as text
        (:func:`types.pack_variant`). Added by the tds-types work."""
        ok, value = constant(inner)
        if not ok and inner.find(exp.Column) is None:
            # a constant expression the engine folds (CAST(CAST(1 AS int) AS sql_variant))
            with self.ctx.db.engine.cursor() as cursor:
                row = one_row(cursor.execute("SELECT " + inner.sql(dialect="duckdb")))
            ok, value = True, row[0] if row else None
        if not ok:
            raise unsupported("CAST of a non-constant expression to sql_variant")
        if value is None:
            return typed_literal(t, None)
        base = inner.meta.get("sqltype")
        if not isinstance(base, SqlType):
            base = scalar("nvarchar", length=4000) if isinstance(value, str) else scalar("int")
        return typed_literal(t, pack_variant(base, value))

    # --- table-valued functions ---

    def _table_function(self, node: exp.Table) -> exp.Expression:
        func = node.this
        assert isinstance(func, exp.Anonymous)
        # cdc.[fn_cdc_get_all_changes_dbo_Order Details]: the name without its brackets
        name = func.name
        args = self._args(list(func.expressions), name)
        sub = change_function(self.ctx.db, self.ctx.user, name, args, node.alias or None)
        if sub is None:
            raise unsupported(f"table-valued function {name}")
        return sub


#: ``(start, length)`` in a GUID's text ``xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx`` of each byte
#: (or run of bytes) in the order SQL Server compares ``uniqueidentifier`` values: stored bytes
#: 10-15, then 8-9, 6-7, 4-5, 0-3, where bytes 0-7 are stored little-endian per group (the
#: text's groups of 4, 2 and 2 bytes reversed) ("Comparing GUID and uniqueidentifier Values",
#: https://learn.microsoft.com/sql/connect/ado-net/sql/compare-guid-uniqueidentifier-values;
#: ``System.Data.SqlTypes.SqlGuid`` compares the same way).
GUID_ORDER = (
    (25, 12),
    (20, 4),
    (17, 2),
    (15, 2),
    (12, 2),
    (10, 2),
    (7, 2),
    (5, 2),
    (3, 2),
    (1, 2),
)


def guid_order_key(node: exp.Expression) -> exp.Expression:
    """An expression whose text order is SQL Server's order of the ``uniqueidentifier``
    ``node`` (:data:`GUID_ORDER` over its lower-case text; NULL stays NULL)."""
    text = exp.Lower(this=exp.Cast(this=node.copy(), to=exp.DataType.build("VARCHAR")))
    parts: list[exp.Expression] = [
        exp.Substring(
            this=text.copy(), start=exp.Literal.number(start), length=exp.Literal.number(n)
        )
        for start, n in GUID_ORDER
    ]
    key = parts[0]
    for part in parts[1:]:
        key = exp.DPipe(this=key, expression=part)
    return exp.Paren(this=key)


#: character types by data type precedence, highest first ("Data type precedence")
_CHAR_PRECEDENCE = ("nvarchar", "nchar", "varchar", "char")
_NUMERIC_NAMES = frozenset(
    {
        "tinyint",
        "smallint",
        "int",
        "bigint",
        "decimal",
        "numeric",
        "money",
        "smallmoney",
        "real",
        "float",
        "bit",
    }
)


def concatenation(lt: SqlType, rt: SqlType) -> SqlType | None:
    """The type of ``a + b`` as string concatenation, ``None`` when it is not one: the
    operand type of higher precedence, the lengths added (``(max)`` if either is), at most
    8000 bytes ("+ (String concatenation)": a longer result is truncated)."""
    if lt.name in _CHAR_PRECEDENCE and rt.name in _CHAR_PRECEDENCE:
        name = min(lt.name, rt.name, key=_CHAR_PRECEDENCE.index)
        cap = 4000 if name in ("nchar", "nvarchar") else 8000
    elif lt.name in ("binary", "varbinary") and rt.name in ("binary", "varbinary"):
        name = "varbinary" if "varbinary" in (lt.name, rt.name) else "binary"
        cap = 8000
    else:
        return None
    if MAX in (lt.length, rt.length):
        return replace(lt, name=name, length=MAX) if lt.name == name else replace(rt, length=MAX)
    base = lt if lt.name == name else rt
    return replace(base, length=min(lt.length + rt.length, cap))


def _numeric_side(lt: SqlType, rt: SqlType) -> SqlType | None:
    """Of a character string and a number, the number (which has the higher precedence)."""
    if lt.is_string and rt.name in _NUMERIC_NAMES:
        return rt
    if rt.is_string and lt.name in _NUMERIC_NAMES:
        return lt
    return None


def _padded(t: SqlType, value: object) -> object:
    """A ``char(n)``/``nchar(n)``/``binary(n)`` value at its full length."""
    if t.name in ("char", "nchar") and isinstance(value, str):
        return value.ljust(t.length)
    if t.name == "binary" and isinstance(value, (bytes, bytearray)):
        return bytes(value).ljust(t.length, b"\x00")
    return value


def _pad_node(node: exp.Expression, t: SqlType) -> exp.Expression:
    if t.name in ("char", "nchar") and t.length > 0:
        return exp.Anonymous(
            this="rpad", expressions=[node, exp.Literal.number(t.length), exp.Literal.string(" ")]
        )
    return node


_STRING_FUNCTIONS = frozenset({"LEN", "CHARINDEX", "REPLACE", "SUBSTRING", "LEFT", "RIGHT"})


def _is_sys_qualifier(node: object) -> bool:
    """``sys`` or ``<database>.sys``, the qualifier of a system function call."""
    if isinstance(node, exp.Dot):
        return _is_sys_qualifier(node.expression)
    return isinstance(node, (exp.Column, exp.Identifier, exp.Var)) and node.name.lower() == "sys"


def _int(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def _str(value: object) -> str | None:
    return None if value is None else str(value)


def wrong_arguments(function: str, least: int, most: int) -> SqlError:
    """Error 174 (or 189 for a range) for a built-in called with the wrong argument count."""
    if least == most:
        return SqlError(174, f"The {function.lower()} function requires {least} argument(s).")
    return SqlError(
        189, f"The {function.lower()} function requires {least} to {most} arguments.", klass=15
    )


def _untag(node: exp.Expression, t: SqlType) -> exp.Expression:
    node.meta["sqltype"] = t
    return node


DIVIDE_BY_ZERO = "Divide by zero error encountered."


def divide_by_zero() -> SqlError:
    return SqlError(8134, DIVIDE_BY_ZERO)


def conversion_error(text: str, t: SqlType) -> SqlError:
    return SqlError(
        8114 if t.is_binary else 245,
        f"Error converting data type varchar to {t.sql()}.",
    )
