"""Runs T-SQL batches for one session: statement dispatch, DML logging, transactions.

Plain SQL goes through sqlglot (T-SQL dialect) and DuckDB after :mod:`rewrite`; what CDC needs
is the emulator's own: every INSERT/UPDATE/DELETE on a table with a capture instance records
its before/after images in the session's logged transaction (one seqval and command id per
row change), and COMMIT gives the transaction its commit LSN (:mod:`core.log`). An error stops the
batch and is returned with the results produced so far.
"""

from __future__ import annotations

import logging
import re
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING

import duckdb
import sqlglot
from sqlglot import exp

from mssql_cdc.emulator.core.catalog import ColumnDef, TableDef
from mssql_cdc.emulator.core.duck import one_row
from mssql_cdc.emulator.core.errors import (
    SqlError,
    computed_column,
    invalid_column,
    invalid_object,
    missing_parameter,
    syntax_near,
    unsupported,
)
from mssql_cdc.emulator.core.literals import typed_literal
from mssql_cdc.emulator.core.locks import deadlock_victim
from mssql_cdc.emulator.core.log import DdlEvent, LoggedChange, LoggedTransaction
from mssql_cdc.emulator.core.results import BatchOutcome, StatementResult
from mssql_cdc.emulator.engine import batch, clr, ddl, guard
from mssql_cdc.emulator.engine.dialect import EmulatorTSQL
from mssql_cdc.emulator.engine.params import spell_types
from mssql_cdc.emulator.engine.procedures import call
from mssql_cdc.emulator.engine.rewrite import (
    DIVIDE_BY_ZERO,
    Context,
    Rewriter,
    constant,
    divide_by_zero,
)
from mssql_cdc.emulator.protocol import tokens
from mssql_cdc.emulator.protocol.arrowrows import ArrowRows
from mssql_cdc.emulator.protocol.clr import CLR_TYPES
from mssql_cdc.emulator.protocol.tokens import Column
from mssql_cdc.emulator.protocol.types import (
    SqlType,
    as_int,
    from_datatype,
    infer_from_engine,
    pack_variant,
)

if TYPE_CHECKING:
    from mssql_cdc.emulator.engine.database import Database

__all__ = ["Executor", "coerce"]

log = logging.getLogger("mssql_cdc.emulator.engine.executor")

_ISOLATION = re.compile(
    r"\bSET\s+TRANSACTION\s+ISOLATION\s+LEVEL\s+"
    r"(READ\s+UNCOMMITTED|READ\s+COMMITTED|REPEATABLE\s+READ|SNAPSHOT|SERIALIZABLE)",
    re.IGNORECASE,
)
#: ``0x`` not followed by a hex digit: maybe the empty binary literal (sqlglot reads it as an
#: identifier, see :func:`_empty_binary`)
_BARE_0X = re.compile(r"0x(?![0-9a-f])", re.IGNORECASE)
_EMPTY_BINARY = "__mssql_cdc_empty_binary__"
#: ``DENY`` at the start of a statement (sqlglot has no DENY: see guard.DENY_MARK)
_DENY = re.compile(r"(^|;)(\s*)DENY\s+", re.IGNORECASE)


class _NoStatementEcho(logging.Filter):
    """Drops sqlglot's WARNING "'<statement>' contains unsupported syntax. Falling back to
    parsing as a 'Command'": the emulator runs such statements itself, and their text may hold
    a password (``CREATE LOGIN ... WITH PASSWORD = ...``), which no log may show."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "contains unsupported syntax" not in record.getMessage()


logging.getLogger("sqlglot").addFilter(_NoStatementEcho())


def _parse(sql: str) -> list[exp.Expression]:
    text = _ISOLATION.sub(lambda m: f"SET __isolation_level = '{m.group(1).upper()}'", sql)
    text = spell_types(text)  # tds-types work: ntext survives sqlglot's parser
    text = _DENY.sub(lambda m: f"{m.group(1)}{m.group(2)}GRANT {guard.DENY_MARK}, ", text)
    empty = _BARE_0X.search(text) is not None
    try:
        if empty:
            text, empty = _empty_binary(text)
        statements = sqlglot.parse(text, read=EmulatorTSQL)
    except sqlglot.errors.ParseError as exc:
        token = ""
        if exc.errors:
            token = str(exc.errors[0].get("highlight") or "")
        raise syntax_near(token or text.strip().split(" ")[0]) from None
    except sqlglot.errors.TokenError:
        # an unclosed quote, bracket or comment (SQL Server: 105 / 1010 / 113)
        raise SqlError(
            105, f"Unclosed quotation mark after the character string '{text[-20:]}'."
        ) from None
    except RecursionError:  # absurdly nested expressions (SQL Server: 191)
        raise SqlError(191, "Some part of your SQL statement is nested too deeply.") from None
    out = [s for s in statements if isinstance(s, exp.Expression)]
    if empty:
        out = [s.transform(_empty_binary_literal) for s in out]
    return out


def _empty_binary(text: str) -> tuple[str, bool]:
    """Mark each bare ``0x`` (the empty binary literal, "Constants (Transact-SQL)": a binary
    constant may have no digits) with a placeholder identifier; ``[0x]`` stays a name."""
    marks = [
        t
        for t in sqlglot.Dialect.get_or_raise("tsql").tokenize(text)
        if t.token_type == sqlglot.TokenType.IDENTIFIER
        and text[t.start : t.end + 1].lower() == "0x"
    ]
    for t in reversed(marks):
        text = text[: t.start] + f"[{_EMPTY_BINARY}]" + text[t.end + 1 :]
    return text, bool(marks)


def _empty_binary_literal(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Column) and not node.table and node.name == _EMPTY_BINARY:
        return exp.HexString(this="")
    return node


def _surrogate_constants(st: exp.Expression) -> dict[int, object]:
    """Projections of a SELECT that are constants holding a lone surrogate (``NCHAR(55296)``):
    the engine computed NULL for them (see :func:`core.literals.string_literal`); the value is put
    back into every row by its position."""
    if not isinstance(st, exp.Select):
        return {}
    out: dict[int, object] = {}
    for i, proj in enumerate(st.expressions):
        node = proj.this if isinstance(proj, exp.Alias) else proj
        while isinstance(node, exp.Paren):
            node = node.this
        if node.meta.get("surrogate") or (
            node.meta.get("constant")
            and isinstance(node.meta.get("value"), str)
            and any(n.meta.get("surrogate") for n in node.walk())
        ):
            out[i] = node.meta.get("value")
    return out


def _to_clr(node: exp.Expression, t: SqlType) -> exp.Expression:
    """A value assigned to a hierarchyid, geography or geometry column: a string converts as
    ``Parse`` does (:mod:`clr`); a value of the type itself is kept."""
    given = node.meta.get("sqltype")
    if isinstance(given, SqlType) and given.name == t.name:
        return node
    ok, value = constant(node)
    if ok and value is None:
        return node
    if ok and isinstance(value, str):
        return typed_literal(t, clr.convert(t.name, value))
    if isinstance(given, SqlType) and given.name in CLR_TYPES:
        raise SqlError(206, f"Operand type clash: {given.name} is incompatible with {t.name}")
    if not ok and (given is None or not given.is_string):
        return node  # another column of the type (INSERT ... SELECT)
    raise unsupported(f"a non-constant value assigned to a {t.name} column")


def _to_variant(node: exp.Expression, t: SqlType) -> exp.Expression:
    """A value assigned to a sql_variant column keeps its own type as the base type (7 is an
    int, N'x' an nvarchar(1)), as SQL Server converts implicitly; the engine holds it packed
    (:func:`types.pack_variant`)."""
    given = node.meta.get("sqltype")
    if isinstance(given, SqlType) and given.name == "sql_variant":
        return node  # CAST(... AS sql_variant): packed already
    ok, value = constant(node)
    if not ok:
        if isinstance(node, exp.Column):
            return node  # another sql_variant column's value
        raise unsupported("a non-constant expression assigned to a sql_variant column")
    if value is None:
        return typed_literal(t, None)
    if not isinstance(given, SqlType):
        raise unsupported("a value of unknown type assigned to a sql_variant column")
    try:
        return typed_literal(t, pack_variant(given, value))
    except ValueError as exc:
        raise SqlError(206, f"Operand type clash: {exc}") from None


def coerce(t: SqlType, value: object) -> object:
    """A Python value converted into type ``t``'s storage form (for variables)."""
    if value is None:
        return None
    if t.is_temporal:
        literal = typed_literal(t, value)
        return literal.meta["value"]
    if t.is_binary and isinstance(value, str):
        return value.encode("cp1252", errors="replace")
    if t.name in ("tinyint", "smallint", "int", "bigint"):
        return int(value)  # type: ignore[call-overload]
    if t.is_string:
        return str(value)
    return value


#: DuckDB's names of the integer types in conversion errors, as SQL Server names them
_ENGINE_TYPES = {"UINT8": "tinyint", "INT16": "smallint", "INT32": "int", "INT64": "bigint"}


def _engine_error(exc: duckdb.Error, statement: exp.Expression) -> SqlError:  # noqa: PLR0911 (a dispatch over kinds)
    text = str(exc)
    raised = re.search(r"Msg (\d+), Level (\d+), State (\d+): (.*)", text)
    if raised:  # an error of an engine function of the emulator's (udfs.py)
        number, klass, state, message = raised.groups()
        return SqlError(int(number), message.strip(), state=int(state), klass=int(klass))
    if isinstance(exc, duckdb.InvalidInputException) and DIVIDE_BY_ZERO in text:
        return divide_by_zero()  # raised by the divisor check of rewrite.Rewriter._divide
    if isinstance(exc, duckdb.CatalogException):
        match = re.search(r"with name (\S+) does not exist", text)
        return invalid_object(match.group(1) if match else "?")
    if isinstance(exc, duckdb.BinderException):
        match = re.search(r'column "([^"]+)" not found', text) or re.search(
            r'does not have a column named "([^"]+)"', text
        )
        if match:
            return invalid_column(match.group(1))
        match = re.search(r"No function matches the given name and argument types '(\S+?)\(", text)
        if match:  # an operator or function over operands whose types the rewriter did not know
            return unsupported(
                f"{match.group(1)} over an expression of a type the emulator does not know "
                "(CAST it to a type)"
            )
    if isinstance(exc, duckdb.ConstraintException):
        if "NOT NULL" in text:
            match = re.search(r"NOT NULL constraint failed: (\S+)", text)
            column = match.group(1).split(".")[-1] if match else "?"
            return SqlError(
                515,
                f"Cannot insert the value NULL into column '{column}'; column does not allow "
                "nulls. INSERT fails.",
            )
        match = re.search(r"key \"?(.*?)\"? ", text)
        return SqlError(
            2627,
            "Violation of PRIMARY KEY constraint. Cannot insert duplicate key. The duplicate "
            f"key value is ({match.group(1) if match else '?'}).",
            state=1,
            klass=14,
        )
    if isinstance(exc, duckdb.ConversionException):
        match = re.search(r"Could not convert string '(.*)' to (\w+)", text)
        target = _ENGINE_TYPES.get(match.group(2)) if match else None
        if match and target:
            return SqlError(
                245,
                f"Conversion failed when converting the varchar value '{match.group(1)}' to "
                f"data type {target}.",
            )
        return SqlError(245, "Conversion failed: " + text.splitlines()[0])
    if isinstance(exc, duckdb.TransactionException):
        return SqlError(
            3960,
            "Snapshot isolation transaction aborted due to update conflict.",
        )
    if isinstance(exc, duckdb.ParserException):
        return syntax_near(statement.sql(dialect="tsql")[:40])
    log.info("engine error mapped to 50000: %s", text.splitlines()[0])
    return SqlError(50000, text.splitlines()[0])


class Executor:
    """The engine side of one session."""

    def __init__(self, db: Database, spid: int, *, login: str = "sa") -> None:
        self.db = db
        self.spid = spid
        self.login = login
        self.user = db.security.user_of(login)
        self.cursor = db.cursor()
        db.locks.forget(spid)  # a new session starts without waits
        self.variables: dict[str, tuple[SqlType, object]] = {}
        self.nocount = False
        self.lock_timeout = -1
        self.isolation = "READ COMMITTED"
        self.tran: LoggedTransaction | None = None
        self.trancount = 0
        self._descriptors = 0
        self.descriptor = bytes(8)

    # --- entry points ---

    def run_batch(
        self,
        sql: str,
        params: dict[str, tuple[SqlType, object]] | None = None,
        *,
        outputs: list[str] | None = None,
    ) -> BatchOutcome:
        """Run a batch; ``outputs`` names variables whose final values the outcome keeps
        (``BatchOutcome.variables``: an RPC's output parameters)."""
        results: list[StatementResult] = []
        self.variables = dict(params or {})
        finals: dict[str, object] = {}
        with self.db.lock:
            try:
                self._run_text(sql, results)
            except SqlError as err:
                return BatchOutcome(results + self._after_error(err), err)
            finally:
                finals = {n: self.variables[n][1] for n in outputs or () if n in self.variables}
                self.variables = {}
        return BatchOutcome(results, variables=finals)

    @staticmethod
    def _collect(results: list[StatementResult], result: StatementResult) -> None:
        """A statement's result, then the further result sets it has (sp_spaceused)."""
        results.append(result)
        results.extend(result.following)
        result.following = []

    def _run_text(self, sql: str, results: list[StatementResult]) -> None:
        """Run a batch's statements, with its IF/ELSE and BEGIN...END (:mod:`batch`)."""
        if not batch.needs_split(sql):
            for statement in _parse(sql):
                self._collect(results, self._statement(statement))
            return
        self._run_items(batch.split(sql), results)

    def _run_items(
        self, items: Sequence[batch.Run | batch.If | batch.Block], results: list[StatementResult]
    ) -> None:
        for item in items:
            if isinstance(item, batch.Run):
                for statement in _parse(item.text):
                    self._collect(results, self._statement(statement))
            elif isinstance(item, batch.Block):
                self._run_items(item.items, results)
            else:
                self._run_if(item, results)

    def _run_if(self, item: batch.If, results: list[StatementResult]) -> None:
        """``IF``: the branch the condition chooses; an unbraced branch is the first statement
        of its run, the run's other statements follow the IF whatever the condition."""
        after: list[exp.Expression] = []
        branches: list[list[exp.Expression] | Sequence[batch.Run | batch.If | batch.Block]] = []
        for items, single in ((item.then, item.single_then), (item.otherwise, item.single_else)):
            if items is None:
                branches.append([])
            elif single:
                assert isinstance(items[0], batch.Run)
                statements = _parse(items[0].text)
                branches.append(statements[:1])
                after += statements[1:]
            else:
                branches.append(items)
        chosen = branches[0] if self._condition(item.condition) else branches[1]
        for part in chosen:
            if isinstance(part, exp.Expression):
                self._collect(results, self._statement(part))
            else:
                self._run_items([part], results)
        for statement in after:
            self._collect(results, self._statement(statement))

    def _condition(self, text: str) -> bool:
        """An IF's search condition, true or not (NULL is not)."""
        statements = _parse(f"SELECT CASE WHEN {text} THEN 1 ELSE 0 END")
        if len(statements) != 1:
            raise syntax_near(text.split(maxsplit=1)[0] if text.split() else "IF")
        result = self._statement(statements[0])
        return bool(result.rows) and result.rows[0][0] == 1

    def _after_error(self, err: SqlError) -> list[StatementResult]:
        """A deadlock victim's transaction is rolled back (ENVCHANGE before the error)."""
        if err.number != 1205:
            return []
        if self.tran is None:
            self.db.locks.release_all(self.spid)
            return []
        return [self._rollback()]

    def run_nested(self, sql: str, params: dict[str, tuple[SqlType, object]]) -> BatchOutcome:
        """Run a batch inside the current one (``EXEC sp_executesql`` in a batch)."""
        saved = self.variables
        self.variables = dict(params)
        results: list[StatementResult] = []
        try:
            self._run_text(sql, results)
        except SqlError as err:
            return BatchOutcome(results, err)
        finally:
            self.variables = saved
        return BatchOutcome(results)

    def run_procedure(
        self, name: str, named: dict[str, object], positional: list[object]
    ) -> BatchOutcome:
        """An RPC request that names a procedure (``sys.sp_cdc_scan`` called by RPC)."""
        with self.db.lock:
            try:
                self._check_fault()
                results: list[StatementResult] = []
                self._collect(results, call(self, name.lower(), named, positional))
                return BatchOutcome(results)
            except SqlError as err:
                return BatchOutcome(self._after_error(err), err)
            except duckdb.Error as exc:
                return BatchOutcome([], _engine_error(exc, exp.Command(this=name)))

    def close(self) -> None:
        with self.db.lock:
            if self.tran is not None:
                self._rollback()
            self.db.locks.release_all(self.spid)
            self.db.locks.forget(self.spid)
            self.cursor.close()

    # --- dispatch ---

    def _check_fault(self) -> None:
        if self.db.faults.take("deadlock", self.spid) is not None:
            raise deadlock_victim(self.spid)
        fault = self.db.faults.take("error", self.spid)
        if fault is not None:
            raise SqlError(fault.number, fault.message)

    def _statement(self, statement: exp.Expression) -> StatementResult:
        self._check_fault()
        try:
            guard.before(self, statement)
            return self._dispatch(statement)
        except duckdb.Error as exc:
            raise _engine_error(exc, statement) from None
        finally:
            if self.tran is None:
                self.db.locks.release_all(self.spid)

    def _dispatch(self, st: exp.Expression) -> StatementResult:  # noqa: PLR0911, PLR0912 (a dispatch over kinds)
        if isinstance(st, (exp.Select, exp.Union)):
            return self._select(st)
        if isinstance(st, exp.Insert):
            return self._insert(st)
        if isinstance(st, exp.Update):
            return self._update(st)
        if isinstance(st, exp.Delete):
            return self._delete(st)
        if isinstance(st, exp.Create):
            return self._create(st)
        if isinstance(st, exp.Drop):
            return self._drop(st)
        if isinstance(st, exp.Transaction):
            return self._begin()
        if isinstance(st, exp.Commit):
            return self._commit()
        if isinstance(st, exp.Rollback):
            return self._rollback()
        if isinstance(st, exp.Set):
            return self._set(st)
        if isinstance(st, exp.Declare):
            return self._declare(st)
        if isinstance(st, exp.Execute):
            return self._execute(st)
        if isinstance(st, exp.Alter):
            return ddl.alter_table(self, st)
        if isinstance(st, (exp.Command, exp.Grant, exp.Revoke)):
            return guard.command(self, st)
        if isinstance(st, exp.Use):
            return self._use(st)
        first = st.sql(dialect="tsql").split(" ")[0] if st else "?"
        raise unsupported(first.upper())

    def _rewriter(self) -> Rewriter:
        ctx = Context(
            self.db,
            self.variables,
            spid=self.spid,
            trancount=self.trancount,
            user=self.user,
            login=self.login,
            cursor=self.cursor,
        )
        return Rewriter(ctx)

    # --- tables and scope ---

    def _table(self, node: exp.Table) -> TableDef:
        schema = node.db or "dbo"
        table = self.db.catalog.get(schema, node.name)
        if table is None:
            raise invalid_object(f"{node.db + '.' if node.db else ''}{node.name}")
        return table

    def _qualify(self, st: exp.Expression) -> None:
        for table in st.find_all(exp.Table):
            if (
                isinstance(table.this, exp.Identifier)
                and not table.db
                and self.db.catalog.get("dbo", table.name) is not None
            ):
                table.set("db", exp.to_identifier("dbo"))
            if table.args.get("catalog"):
                table.set("catalog", None)

    def _scope(self, select: exp.Select) -> dict[str, TableDef]:
        scope: dict[str, TableDef] = {}
        sources: list[exp.Expression] = []
        from_ = select.args.get("from_") or select.args.get("from")
        if isinstance(from_, exp.From):
            sources.append(from_.this)
        for join in select.args.get("joins") or []:
            sources.append(join.this)
        for source in sources:
            if isinstance(source, exp.Table):
                table = self._table(source)
                scope[source.alias_or_name.lower()] = table
            elif isinstance(source, exp.Subquery) and "tabledef" in source.meta:
                scope[source.alias_or_name.lower()] = source.meta["tabledef"]
        return scope

    # --- SELECT ---

    def _select(self, st: exp.Expression) -> StatementResult:  # noqa: PLR0912 (a dispatch over kinds)
        st = self._rewriter().rewrite(st)
        self._qualify(st)
        specs: list[tuple[str, SqlType | None, bool, bool]] = []
        if isinstance(st, exp.Select):
            scope = self._scope(st)
            expanded: list[exp.Expression] = []
            for proj in st.expressions:
                star_table = None
                if isinstance(proj, exp.Star):
                    star_table = ""
                elif isinstance(proj, exp.Column) and isinstance(proj.this, exp.Star):
                    star_table = proj.table.lower()
                if star_table is None:
                    expanded.append(proj)
                    specs.append(self._spec(proj, scope))
                    continue
                targets = [(a, t) for a, t in scope.items() if star_table in ("", a)]
                if not targets:
                    raise unsupported("* over a source without known columns")
                for alias, table in targets:
                    if table.partial:
                        raise unsupported(
                            f"SELECT * from {table.schema}.{table.name} (the emulator has only "
                            "some of its columns: name them)"
                        )
                    for col in table.columns:
                        expanded.append(exp.column(col.name, table=alias, quoted=True))
                        specs.append((col.name, col.type, col.nullable, col.identity))
            st.set("expressions", expanded)
        sql = st.sql(dialect="duckdb", identify=True)
        # rows stay Arrow, for the C row encoder (arrowrows.py); tuples only on demand. A
        # relation's to_arrow_table reads the rows once, on DuckDB 1.4 to 2.x alike (2.0 copies
        # and warns when an execute() result is read as Arrow, and 1.4's has no to_arrow_table).
        relation = self.cursor.sql(sql)
        desc = relation.description or []
        arrow = ArrowRows(relation.to_arrow_table(), [str(d[1]) for d in desc])
        rows: Sequence[tuple[object, ...]] = arrow
        patches = _surrogate_constants(st)
        if patches:
            rows = [tuple(patches.get(i, v) for i, v in enumerate(row)) for row in arrow]
        columns = []
        for i, d in enumerate(desc):
            if i < len(specs):
                name, t, nullable, identity = specs[i]
            else:
                name, t, nullable, identity = str(d[0]), None, True, False
            if t is None:
                values = [r[i] for r in rows] if patches else arrow.column(i)
                t = infer_from_engine(str(d[1]), values)
            if not nullable and arrow.null_count(i):
                nullable = True
            columns.append(Column(name, t, nullable, identity))
        return StatementResult("select", columns, rows, len(rows))

    def _spec(
        self, proj: exp.Expression, scope: dict[str, TableDef]
    ) -> tuple[str, SqlType | None, bool, bool]:
        name = ""
        node = proj
        if isinstance(proj, exp.Alias):
            name = proj.alias
            node = proj.this
        while isinstance(node, exp.Paren) and "sqltype" not in node.meta:
            node = node.this  # a parenthesized expression typed inside
        if isinstance(node, exp.Column):
            name = name or node.name
            col = self._column_def(node, scope)
            if col is not None:
                return name, col.type, col.nullable, col.identity
        t = node.meta.get("sqltype")
        is_const, value = constant(node)
        return name, t, not (is_const and value is not None), False

    def _column_def(self, node: exp.Column, scope: dict[str, TableDef]) -> ColumnDef | None:
        tables = [scope[node.table.lower()]] if node.table.lower() in scope else []
        if not node.table:
            tables = list(scope.values())
        for table in tables:
            col = table.column(node.name)
            if col is not None:
                return col
        return None

    # --- DML ---

    @staticmethod
    def _refuse_surrogates(st: exp.Expression) -> None:
        """A lone surrogate cannot be stored by the engine (docs/emulator.md)."""
        if any(n.meta.get("surrogate") for n in st.walk()):
            raise unsupported("storing a string that holds a lone UTF-16 surrogate")

    def _captured(self, table: TableDef) -> bool:
        return bool(self.db.cdc.instances_of(table))

    def _canonical(self, node: exp.Expression, col: ColumnDef | None) -> exp.Expression:
        if col is not None and col.type.name == "sql_variant":
            return _to_variant(node, col.type)
        if col is not None and col.type.name in CLR_TYPES:
            return _to_clr(node, col.type)
        if col is None or not col.type.is_temporal:
            return node
        ok, value = constant(node)
        if not ok or value is None:
            return node
        try:
            return typed_literal(col.type, value)
        except ValueError:
            raise SqlError(
                241, "Conversion failed when converting date and/or time from character string."
            ) from None

    def _record(
        self,
        table: TableDef,
        changes: list[
            tuple[str, tuple[object, ...] | None, tuple[object, ...] | None, frozenset[str]]
        ],
    ) -> None:
        """Log row changes in the open transaction, or in an implicit one that commits now."""
        if not changes:
            return
        implicit = self.tran is None
        tran = self.tran or self.db.log.begin(self.db.clock.local_naive())
        tran.touched.add((table.schema, table.name))
        if self._captured(table):
            names = tuple(c.name for c in table.columns)
            for operation, before, after, updated in changes:
                tran.changes.append(
                    LoggedChange(
                        table.schema,
                        table.name,
                        operation,
                        self.db.log.next_lsn(),
                        len(tran.changes) + 1,
                        before,
                        after,
                        updated,
                        names,
                    )
                )
        if implicit:
            self.db.log.commit(tran, self.db.clock.local_naive())

    def _count(self) -> int:
        row = one_row(self.cursor)
        return as_int(row[0]) if row else 0

    def _insert(self, st: exp.Insert) -> StatementResult:
        target = st.this
        names: list[str] | None = None
        if isinstance(target, exp.Schema):
            names = [c.name for c in target.expressions]
            target = target.this
        assert isinstance(target, exp.Table)
        table = self._table(target)
        st = self._rewriter().rewrite(st)  # type: ignore[assignment]
        self._refuse_surrogates(st)
        self._qualify(st)
        insertable = [c for c in table.columns if not c.identity and c.computed is None]
        cols = [table.column(n) for n in names] if names else insertable
        for i, name in enumerate(names or []):
            col = cols[i]
            if col is None:
                raise invalid_column(name)
            if col.computed is not None:
                raise computed_column(col.name)
        values = st.expression
        if isinstance(values, exp.Values):
            for tup in values.expressions:
                if len(tup.expressions) != len(cols):
                    raise SqlError(
                        110,
                        "There are fewer columns in the INSERT statement than values specified "
                        "in the VALUES clause.",
                        klass=15,
                    )
                tup.set(
                    "expressions",
                    [self._canonical(v, c) for v, c in zip(tup.expressions, cols, strict=False)],
                )
        sql = st.sql(dialect="duckdb", identify=True)
        if self._captured(table):
            self.cursor.execute(sql + " RETURNING *")
            images = [tuple(r) for r in self.cursor.fetchall()]
            count = len(images)
            self._record(table, [("insert", None, img, frozenset()) for img in images])
        else:
            self.cursor.execute(sql)
            count = self._count()
            self._record(table, [("insert", None, None, frozenset())] * min(count, 1))
        return StatementResult("insert", rowcount=count)

    def _update(self, st: exp.Update) -> StatementResult:
        target = st.this
        assert isinstance(target, exp.Table)
        table = self._table(target)
        st = self._rewriter().rewrite(st)  # type: ignore[assignment]
        self._refuse_surrogates(st)
        self._qualify(st)
        assigned: list[tuple[ColumnDef, exp.Expression]] = []
        new_sets = []
        for eq in st.expressions:
            col = table.column(eq.this.name)
            if col is None:
                raise invalid_column(eq.this.name)
            if col.computed is not None:
                raise computed_column(col.name)
            value = self._canonical(eq.expression, col)
            eq.set("expression", value)
            new_sets.append(eq)
            assigned.append((col, value))
        st.set("expressions", new_sets)
        if not self._captured(table):
            self.cursor.execute(st.sql(dialect="duckdb", identify=True))
            count = self._count()
            self._record(table, [("update", None, None, frozenset())] * min(count, 1))
            return StatementResult("update", rowcount=count)
        probe = exp.select(
            exp.Star(),
            *[
                exp.Cast(this=v.copy(), to=exp.DataType.build(c.type.storage(), dialect="duckdb"))
                for c, v in assigned
            ],
        ).from_(st.this.copy())
        where = st.args.get("where")
        if where is not None:
            probe.set("where", where.copy())
        self.cursor.execute(probe.sql(dialect="duckdb", identify=True))
        probed = self.cursor.fetchall()
        self.cursor.execute(st.sql(dialect="duckdb", identify=True))
        count = self._count()
        width = len(table.columns)
        positions = [table.index(c.name) for c, _ in assigned]
        updated = frozenset(c.name for c, _ in assigned)
        changes: list[
            tuple[str, tuple[object, ...] | None, tuple[object, ...] | None, frozenset[str]]
        ] = []
        for row in probed:
            before = tuple(row[:width])
            after = list(before)
            for pos, value in zip(positions, row[width:], strict=False):
                after[pos] = value
            changes.append(("update", before, tuple(after), updated))
        self._record(table, changes)
        return StatementResult("update", rowcount=count)

    def _delete(self, st: exp.Delete) -> StatementResult:
        target = st.this
        assert isinstance(target, exp.Table)
        table = self._table(target)
        st = self._rewriter().rewrite(st)  # type: ignore[assignment]
        self._qualify(st)
        sql = st.sql(dialect="duckdb", identify=True)
        if self._captured(table):
            self.cursor.execute(sql + " RETURNING *")
            images = [tuple(r) for r in self.cursor.fetchall()]
            self._record(table, [("delete", img, None, frozenset()) for img in images])
            return StatementResult("delete", rowcount=len(images))
        self.cursor.execute(sql)
        count = self._count()
        self._record(table, [("delete", None, None, frozenset())] * min(count, 1))
        return StatementResult("delete", rowcount=count)

    # --- DDL ---

    def _create(self, st: exp.Create) -> StatementResult:
        return ddl.create_table(self, st)

    def _drop(self, st: exp.Drop) -> StatementResult:
        return ddl.drop_table(self, st)

    def log_ddl(self, table: TableDef, event: DdlEvent) -> None:
        """Log an ALTER TABLE of a captured table (``cdc.ddl_history`` after the next scan)."""
        event.schema, event.table = table.schema, table.name
        implicit = self.tran is None
        tran = self.tran or self.db.log.begin(self.db.clock.local_naive())
        tran.touched.add((table.schema, table.name))
        tran.ddl.append(event)
        if implicit:
            self.db.log.commit(tran, self.db.clock.local_naive())

    # --- transactions ---

    def _begin(self) -> StatementResult:
        if self.tran is not None:
            self.trancount += 1
            return StatementResult("other")
        self.cursor.execute("BEGIN TRANSACTION")
        self.tran = self.db.log.begin(self.db.clock.local_naive())
        self.trancount = 1
        self._descriptors += 1
        self.descriptor = struct.pack("<Q", self._descriptors)
        env = tokens.env_bytes(tokens.ENV_BEGIN_TRAN, self.descriptor, b"")
        return StatementResult("other", env=[env])

    def _commit(self) -> StatementResult:
        if self.tran is None:
            raise SqlError(
                3902, "The COMMIT TRANSACTION request has no corresponding BEGIN TRANSACTION."
            )
        if self.trancount > 1:
            self.trancount -= 1
            return StatementResult("other")
        self.cursor.execute("COMMIT")
        tran, self.tran, self.trancount = self.tran, None, 0
        self.db.locks.release_all(self.spid)
        if tran.touched:
            self.db.log.commit(tran, self.db.clock.local_naive())
        env = tokens.env_bytes(tokens.ENV_COMMIT_TRAN, b"", self.descriptor)
        self.descriptor = bytes(8)
        return StatementResult("other", env=[env])

    def _rollback(self) -> StatementResult:
        if self.tran is None:
            raise SqlError(
                3903, "The ROLLBACK TRANSACTION request has no corresponding BEGIN TRANSACTION."
            )
        self.cursor.execute("ROLLBACK")
        self.tran, self.trancount = None, 0
        self.db.locks.release_all(self.spid)
        env = tokens.env_bytes(tokens.ENV_ROLLBACK_TRAN, b"", self.descriptor)
        self.descriptor = bytes(8)
        return StatementResult("other", env=[env])

    def begin(self) -> StatementResult:
        with self.db.lock:
            return self._begin()

    def commit(self) -> StatementResult:
        with self.db.lock:
            return self._commit()

    def rollback(self) -> StatementResult:
        with self.db.lock:
            return self._rollback()

    # --- USE ---

    def _use(self, st: exp.Use) -> StatementResult:
        """``USE db``: error 911 for a database that does not exist; any existing one is the
        one emulated database (docs/emulator.md)."""
        name = st.this.name if isinstance(st.this, exp.Expression) else ""
        if not self.db.exists(name):
            raise SqlError(
                911,
                f"Database '{name}' does not exist. Make sure that the name is entered correctly.",
            )
        return StatementResult("other")

    # --- SET / DECLARE ---

    def _evaluate(self, node: exp.Expression) -> tuple[SqlType | None, object]:
        rewritten = self._rewriter().rewrite(node)
        ok, value = constant(rewritten)
        if ok:
            return rewritten.meta.get("sqltype"), value
        result = self._select(exp.select(rewritten))
        assert result.columns is not None
        return result.columns[0].type, result.rows[0][0] if result.rows else None

    def _set(self, st: exp.Set) -> StatementResult:
        for item in st.expressions:
            eq = item.this
            if not isinstance(eq, exp.EQ):
                continue  # other SET options are accepted and ignored
            left = eq.this
            if isinstance(left, exp.Parameter):
                name = str(left.name).lower()
                if name not in self.variables:
                    raise SqlError(137, f'Must declare the scalar variable "@{left.name}".')
                t = self.variables[name][0]
                self.variables[name] = (t, coerce(t, self._evaluate(eq.expression)[1]))
                continue
            option = left.name.upper()
            value = eq.expression
            if option == "NOCOUNT":
                self.nocount = value.name.upper() == "ON"
            elif option == "LOCK_TIMEOUT":
                self.lock_timeout = int(constant(self._rewriter().rewrite(value))[1])  # type: ignore[call-overload]
            elif option == "__ISOLATION_LEVEL":
                self.isolation = " ".join(str(value.this).split())
        return StatementResult("other")

    def _declare(self, st: exp.Declare) -> StatementResult:
        for item in st.expressions:
            kind = item.args.get("kind")
            if not isinstance(kind, exp.DataType):
                raise unsupported("DECLARE of this kind")
            try:
                t = from_datatype(kind)
            except ValueError as exc:
                raise unsupported(str(exc)) from None
            default = item.args.get("default")  # sqlglot gives False for none: NULL
            value = (
                coerce(t, self._evaluate(default)[1])
                if isinstance(default, exp.Expression)
                else None
            )
            targets = item.this if isinstance(item.this, list) else [item.this]
            for target in targets:
                self.variables[str(target.name).lower()] = (t, value)
        return StatementResult("other")

    # --- EXEC ---

    def _execute(self, st: exp.Execute) -> StatementResult:
        target = st.this
        name = target.name if isinstance(target, exp.Table) else str(target)
        named: dict[str, object] = {}
        positional: list[object] = []
        for arg in st.expressions:
            if isinstance(arg, exp.EQ) and isinstance(arg.this, exp.Parameter):
                named[str(arg.this.name).lower()] = self._evaluate(arg.expression)[1]
            else:
                positional.append(self._evaluate(arg)[1])
        return call(self, name.lower(), named, positional)

    def require(self, proc: str, args: dict[str, object], name: str) -> object:
        if name not in args:
            raise missing_parameter(proc, "@" + name)
        return args[name]
