"""Workload generator: inserts, updates, deletes and transactions against AdventureWorks tables.

Command line (through TDS, with python-tds)::

    python -m mssql_cdc.emulator.workload --server 127.0.0.1,PORT --password PW \\
        --tables Sales.Customer,Person.EmailAddress --rate 20 --seconds 60 --seed 7

Python::

    workload = Workload(WorkloadConfig(tables=["Sales.Customer"], transactions=100, rate=None))
    with TdsSession("127.0.0.1", port, password=pw) as session:
        record = workload.run(session)
    record.tables["Sales.Customer"].inserted

Each transaction is one of:

* ``single``: one INSERT (1-5 rows), UPDATE (1-5 rows) or DELETE (1-3 rows), autocommitted;
* ``multi``: ``BEGIN TRANSACTION``, 2-5 such statements over one or more tables, ``COMMIT``;
  a fraction (``rollback_ratio``) ends in ``ROLLBACK`` instead and changes nothing;
* ``large``: every ``large_every``-th transaction inserts, updates or deletes hundreds to
  thousands of rows of one table in one transaction (INSERTs of at most 1000 rows each).

The run is deterministic for a seed: the choices come from ``random.Random(seed)`` and the
initial state of the tables (read at the start), never from the clock; the time bound only
decides where the sequence stops. The workload keeps a model of each table's keys (its identity
column) to pick rows to update and delete, so it must be the only writer of its tables. Every
statement's row count is checked against the model (:class:`WorkloadError` if they differ).

The :class:`WorkloadRecord` says what committed: rows inserted, updated and deleted per table,
and per transaction, in commit order. With CDC on a table, ``cdc.fn_cdc_get_all_changes_<ci>``
over the run holds (with ``N'all'``) one operation 2 row per inserted row, one operation 4 row
per updated row and one operation 1 row per deleted row, and each committed transaction's rows
share one ``__$start_lsn``: :func:`verify_capture` checks exactly that. Updates never change a
key column (SQL Server would log those as delete plus insert).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import logging
import random
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from mssql_cdc.emulator.adventureworks import ColumnSpec, TableSpec, default_directory, read_tables
from mssql_cdc.emulator.engine.database import Database
from mssql_cdc.emulator.engine.executor import Executor
from mssql_cdc.emulator.protocol.types import SqlType
from mssql_cdc.emulator.server.server import DEFAULT_PASSWORD

if TYPE_CHECKING:
    from mssql_cdc.emulator.control import Emulator

__all__ = [
    "LocalSession",
    "Session",
    "TableCounts",
    "TdsSession",
    "TransactionRecord",
    "Workload",
    "WorkloadConfig",
    "WorkloadError",
    "WorkloadRecord",
    "enable_cdc",
    "main",
    "verify_capture",
]

log = logging.getLogger("mssql_cdc.emulator.workload")

#: rows per INSERT statement at most (T-SQL's limit for a VALUES list)
MAX_VALUES_ROWS = 1000
#: keys per IN list of a large UPDATE or DELETE
IN_LIST_KEYS = 500
_BASE_TIME = dt.datetime(2026, 1, 1)
_NAMES = (
    "ken",
    "terri",
    "rob",
    "gail",
    "josé",
    "françois",
    "maría",
    "zoë",
    "łukasz",
    "đorđe",
    "søren",
    "jürgen",
    "niño",
    "ana",
    "björk",
    "chloé",
)
_WORDS = (
    "Road",
    "Mountain",
    "Touring",
    "Frame",
    "Wheel",
    "Pedal",
    "Chain",
    "Seat",
    "Crème",
    "Ölfilter",
)


class WorkloadError(RuntimeError):
    """A statement failed or changed another number of rows than the workload expected.

    ``record`` holds what committed before the failure.
    """

    def __init__(self, message: str, record: WorkloadRecord | None = None) -> None:
        super().__init__(message)
        self.record = record


# --- sessions ------------------------------------------------------------------------------


class Session(Protocol):
    """Where the workload sends T-SQL: one connection (one SQL Server session)."""

    def execute(self, sql: str) -> int:
        """Run a batch; the row count of its last DML statement (-1 if none)."""
        ...

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Run a query; its rows."""
        ...

    def close(self) -> None: ...


class TdsSession:
    """A real TDS connection through python-tds (``pytds``), autocommit on."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        user: str = "sa",
        password: str | None = None,
        database: str = "master",
        timeout: float = 60.0,
    ) -> None:
        try:
            # python-tds is optional (only this session needs it): imported when used
            import pytds  # type: ignore[import-untyped]  # noqa: PLC0415
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError(
                "the workload's TDS session needs python-tds: pip install python-tds"
            ) from exc
        self._conn = pytds.connect(
            host,
            port=port,
            user=user,
            password=DEFAULT_PASSWORD if password is None else password,
            database=database,
            autocommit=True,
            timeout=timeout,
            login_timeout=timeout,
        )
        self._cursor = self._conn.cursor()

    def __repr__(self) -> str:  # no password
        return "TdsSession()"

    def execute(self, sql: str) -> int:
        self._cursor.execute(sql)
        return int(self._cursor.rowcount)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        self._cursor.execute(sql)
        return [tuple(r) for r in self._cursor.fetchall()]

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> TdsSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class LocalSession:
    """An in-process session on an :class:`Emulator` (or its :class:`Database`), no TDS."""

    _spids = itertools.count(900)

    def __init__(self, target: Emulator | Database) -> None:
        db = target if isinstance(target, Database) else target.db
        self._executor = Executor(db, next(self._spids))

    def _run(self, sql: str) -> list[Any]:
        outcome = self._executor.run_batch(sql)
        if outcome.error is not None:
            raise WorkloadError(f"SQL error {outcome.error.number}: {outcome.error}")
        return outcome.results

    def execute(self, sql: str) -> int:
        counts = [
            r.rowcount for r in self._run(sql) if r.kind != "select" and r.rowcount is not None
        ]
        return counts[-1] if counts else -1

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        selects = [r for r in self._run(sql) if r.kind == "select"]
        return [tuple(r) for r in selects[-1].rows] if selects else []

    def close(self) -> None:
        self._executor.close()

    def __enter__(self) -> LocalSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _quoted(text: str) -> str:
    """``text`` inside a T-SQL ``N'...'`` literal."""
    return text.replace("'", "''")


def enable_cdc(target: Emulator | Database, tables: Sequence[str]) -> list[str]:
    """Enables CDC on the database and on each ``schema.table`` of ``tables`` (as
    ``sys.sp_cdc_enable_db`` and ``sys.sp_cdc_enable_table`` with no gating role do); returns
    the capture instances, ``schema_table`` each.

    Raises:
        WorkloadError: the emulator refused a statement (e.g. no such table).
    """
    instances = []
    with LocalSession(target) as session:
        session.execute("EXEC sys.sp_cdc_enable_db")
        for table in tables:
            schema, dot, name = table.partition(".")
            if not (schema and dot and name):
                raise WorkloadError(f"{table!r}: expected schema.table")
            session.execute(
                f"EXEC sys.sp_cdc_enable_table @source_schema = N'{_quoted(schema)}', "
                f"@source_name = N'{_quoted(name)}', @role_name = NULL"
            )
            instances.append(f"{schema}_{name}")
    return instances


# --- configuration and record -------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadConfig:
    """What to run. ``rate`` is transactions per second (``None``: as fast as possible); the
    run stops after ``seconds``, after ``transactions`` transactions, or when stopped, whichever
    comes first."""

    tables: Sequence[str]
    seed: int = 0
    rate: float | None = 10.0
    seconds: float | None = None
    transactions: int | None = None
    #: share of transactions that are explicit multi-statement ones
    multi_ratio: float = 0.3
    #: share of multi-statement transactions that end in ROLLBACK
    rollback_ratio: float = 0.05
    #: every n-th transaction is a large one (``None``: never)
    large_every: int | None = 50
    #: rows of a large transaction: at least, at most
    large_rows: tuple[int, int] = (200, 2000)
    #: tables.json's directory (default:
    #: :func:`~mssql_cdc.emulator.adventureworks.default_directory`)
    data_dir: str | Path | None = None

    def __post_init__(self) -> None:
        if not self.tables:
            raise ValueError("tables: name at least one table, e.g. ['Sales.Customer']")
        if self.rate is not None and self.rate <= 0:
            raise ValueError(
                f"rate must be positive or None (as fast as possible), got {self.rate}"
            )
        low, high = self.large_rows
        if not 1 <= low <= high:
            raise ValueError(
                f"large_rows must be (min, max) with 1 <= min <= max, got {self.large_rows}"
            )
        if self.large_every is not None and self.large_every < 1:
            raise ValueError(f"large_every must be at least 1 or None, got {self.large_every}")


@dataclass
class TableCounts:
    """Rows one table got: inserted, updated (one per row per UPDATE) and deleted."""

    inserted: int = 0
    updated: int = 0
    deleted: int = 0

    def add(self, other: TableCounts) -> None:
        self.inserted += other.inserted
        self.updated += other.updated
        self.deleted += other.deleted

    @property
    def total(self) -> int:
        return self.inserted + self.updated + self.deleted


@dataclass
class TransactionRecord:
    number: int
    kind: str  # "single" | "multi" | "large"
    committed: bool
    statements: int = 0
    changes: dict[str, TableCounts] = field(default_factory=dict)


@dataclass
class WorkloadRecord:
    """What the workload did; counts are of committed transactions only."""

    seed: int
    tables: dict[str, TableCounts] = field(default_factory=dict)
    transactions: list[TransactionRecord] = field(default_factory=list)
    initial_rows: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def committed(self) -> list[TransactionRecord]:
        return [t for t in self.transactions if t.committed]

    @property
    def rolled_back(self) -> int:
        return sum(not t.committed for t in self.transactions)

    @property
    def final_rows(self) -> dict[str, int]:
        """Rows each table holds after the run (initial + inserted - deleted)."""
        return {
            name: self.initial_rows[name] + counts.inserted - counts.deleted
            for name, counts in self.tables.items()
        }

    def expected_transactions(self, table: str) -> list[TableCounts]:
        """Per committed transaction that changed ``table``, in commit order, its counts."""
        out = []
        for tran in self.committed:
            counts = tran.changes.get(table)
            if counts is not None and counts.total:
                out.append(counts)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "seconds": round(self.seconds, 3),
            "transactions": len(self.transactions),
            "committed": len(self.committed),
            "rolled_back": self.rolled_back,
            "large": sum(t.kind == "large" for t in self.committed),
            "tables": {
                name: {**asdict(c), "initial_rows": self.initial_rows[name], "final_rows": n}
                for (name, c), n in zip(self.tables.items(), self.final_rows.values(), strict=True)
            },
            "transaction_log": [
                {
                    "number": t.number,
                    "kind": t.kind,
                    "committed": t.committed,
                    "statements": t.statements,
                    "changes": {k: asdict(v) for k, v in t.changes.items()},
                }
                for t in self.transactions
            ],
        }


# --- table models ---------------------------------------------------------------------------


def _quote_name(name: str) -> str:
    return "[" + name.replace("]", "]]") + "]"


def _literal_string(text: str, *, unicode: bool) -> str:
    return ("N" if unicode else "") + "'" + text.replace("'", "''") + "'"


class _Keys:
    """The live keys of a table: O(1) add, remove and random pick, deterministic order."""

    def __init__(self, keys: Sequence[int]) -> None:
        self._items = list(keys)
        self._where = {k: i for i, k in enumerate(self._items)}

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: int) -> bool:
        return key in self._where

    def add(self, key: int) -> None:
        if key not in self._where:
            self._where[key] = len(self._items)
            self._items.append(key)

    def remove(self, key: int) -> None:
        i = self._where.pop(key)
        last = self._items.pop()
        if i < len(self._items):
            self._items[i] = last
            self._where[last] = i

    def sample(self, rng: random.Random, n: int) -> list[int]:
        return rng.sample(self._items, min(n, len(self._items)))

    @property
    def max(self) -> int:
        return max(self._items, default=0)


class _Table:
    """What the workload knows of one table: its columns, its live keys, value generators."""

    def __init__(self, spec: TableSpec) -> None:
        identity = spec.identity
        if identity is None:
            raise ValueError(f"{spec.qualified} has no identity column to key the workload on")
        self.spec = spec
        self.name = spec.qualified
        self.target = f"{_quote_name(spec.schema)}.{_quote_name(spec.name)}"
        self.key = identity.name
        self.insertable = [c for c in spec.columns if not c.identity and c.computed is None]
        self.updatable = [
            c
            for c in self.insertable
            if c.name not in spec.primary_key and c.name.lower() not in ("rowguid", "modifieddate")
        ]
        self.modified = next((c for c in spec.columns if c.name.lower() == "modifieddate"), None)
        self.keys = _Keys([])
        self.high_water = 0

    def load_keys(self, session: Session) -> int:
        rows = session.query(f"SELECT {_quote_name(self.key)} FROM {self.target} ORDER BY 1")
        self.keys = _Keys([int(r[0]) for r in rows])
        self.high_water = self.keys.max
        return len(rows)


def _value(rng: random.Random, col: ColumnSpec, t: SqlType) -> str:
    """A T-SQL literal of a random value for ``col`` (NULL now and then if it is nullable)."""
    if col.nullable and rng.random() < 0.1:
        return "NULL"
    if t.is_temporal:
        return _temporal_value(rng, t)
    if t.is_string:
        return _string_value(rng, col, t)
    return _number_value(rng, col, t)


def _number_value(rng: random.Random, col: ColumnSpec, t: SqlType) -> str:
    name = t.name
    if name in ("tinyint", "smallint", "int", "bigint"):
        top = {"tinyint": 9, "smallint": 1000}.get(name, 30000)
        return str(rng.randint(1, top))
    if name == "bit":
        return str(rng.randint(0, 1))
    if name in ("money", "smallmoney", "decimal", "numeric"):
        scale = t.scale
        digits = min(t.precision - scale, 4)
        units = rng.randint(0, 10 ** (digits + scale) - 1)
        return str(Decimal(units).scaleb(-scale))
    if name in ("float", "real"):
        return repr(round(rng.uniform(0, 1000), 3))
    if name == "uniqueidentifier":
        return f"'{uuid.UUID(int=rng.getrandbits(128), version=4)}'"
    raise ValueError(f"the workload cannot generate values of type {t.sql()} ({col.name})")


def _temporal_value(rng: random.Random, t: SqlType) -> str:
    """A moment of 2026, on whole 10 ms (exact in ``datetime``'s 1/300 s grid too)."""
    when = _BASE_TIME + dt.timedelta(
        seconds=rng.randint(0, 365 * 86400), milliseconds=10 * rng.randint(0, 99)
    )
    if t.name == "date":
        return f"'{when:%Y-%m-%d}'"
    if t.name == "smalldatetime":
        return f"'{when:%Y-%m-%d %H:%M}:00'"
    if t.name == "time":
        return f"'{when:%H:%M:%S}.{when.microsecond // 1000:03d}'"
    return f"'{when:%Y-%m-%d %H:%M:%S}.{when.microsecond // 1000:03d}'"


def _string_value(rng: random.Random, col: ColumnSpec, t: SqlType) -> str:
    unicode = t.name.startswith("n")
    if t.name in ("char", "nchar"):
        text = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(t.length))
        return _literal_string(text, unicode=unicode)
    limit = 4000 if t.length < 0 else t.length
    if "email" in col.name.lower():
        text = f"{rng.choice(_NAMES)}{rng.randint(0, 9999)}@adventure-works.com"
    else:
        text = f"{rng.choice(_WORDS)} {rng.choice(_NAMES).title()}-{rng.randint(1, 999)}"
    if not unicode:
        text = text.encode("ascii", "replace").decode("ascii")
    return _literal_string(text[:limit], unicode=unicode)


# --- the workload ---------------------------------------------------------------------------


class _Transaction:
    """One transaction in progress: its record and how to undo its key changes."""

    def __init__(self, record: TransactionRecord) -> None:
        self.record = record
        self.undo: list[tuple[_Table, str, int]] = []

    def counts(self, table: _Table) -> TableCounts:
        return self.record.changes.setdefault(table.name, TableCounts())


class Workload:
    """Generates and runs transactions; :meth:`run` returns the :class:`WorkloadRecord`."""

    def __init__(self, config: WorkloadConfig) -> None:
        self.config = config
        directory = config.data_dir if config.data_dir is not None else default_directory()
        specs = read_tables(directory)
        self.tables: list[_Table] = []
        for name in config.tables:
            match = [s for s in specs if s.matches(name)]
            if not match:
                known = ", ".join(s.qualified for s in specs)
                raise ValueError(f"unknown AdventureWorks table {name!r} (known: {known})")
            if all(t.name != match[0].qualified for t in self.tables):
                self.tables.append(_Table(match[0]))
        self._types = {(t.name, c.name): c.type for t in self.tables for c in t.spec.columns}
        self._rng = random.Random(config.seed)

    # --- statements ---

    def _insert(self, session: Session, tx: _Transaction, table: _Table, rows: int) -> None:
        rng = self._rng
        names = ", ".join(_quote_name(c.name) for c in table.insertable)
        done = 0
        while done < rows:
            chunk = min(rows - done, MAX_VALUES_ROWS)
            values = ",\n".join(
                "("
                + ", ".join(
                    _value(rng, c, self._types[(table.name, c.name)]) for c in table.insertable
                )
                + ")"
                for _ in range(chunk)
            )
            count = session.execute(f"INSERT INTO {table.target} ({names}) VALUES {values}")
            self._expect(table, "INSERT", count, chunk)
            new = session.query(
                f"SELECT {_quote_name(table.key)} FROM {table.target} "
                f"WHERE {_quote_name(table.key)} > {table.high_water} ORDER BY 1"
            )
            if len(new) != chunk:
                raise WorkloadError(
                    f"{table.name}: expected {chunk} new keys above {table.high_water}, "
                    f"found {len(new)} (is another session writing this table?)"
                )
            for (key,) in new:
                table.keys.add(int(key))
                tx.undo.append((table, "add", int(key)))
            table.high_water = max(table.high_water, int(new[-1][0]))
            tx.counts(table).inserted += chunk
            tx.record.statements += 1
            done += chunk

    def _in_lists(self, keys: list[int]) -> Iterator[str]:
        for start in range(0, len(keys), IN_LIST_KEYS):
            yield ", ".join(str(k) for k in sorted(keys[start : start + IN_LIST_KEYS]))

    def _update(self, session: Session, tx: _Transaction, table: _Table, rows: int) -> None:
        rng = self._rng
        keys = table.keys.sample(rng, rows)
        if not keys:
            return
        columns = rng.sample(table.updatable, min(len(table.updatable), rng.randint(1, 2)))
        assignments = [
            f"{_quote_name(c.name)} = {_value(rng, c, self._types[(table.name, c.name)])}"
            for c in columns
        ]
        if table.modified is not None:
            assignments.append(
                f"{_quote_name(table.modified.name)} = "
                f"{_value(rng, table.modified, self._types[(table.name, table.modified.name)])}"
            )
        sets = ", ".join(assignments)
        for in_list in self._in_lists(keys):
            expected = in_list.count(",") + 1
            count = session.execute(
                f"UPDATE {table.target} SET {sets} WHERE {_quote_name(table.key)} IN ({in_list})"
            )
            self._expect(table, "UPDATE", count, expected)
            tx.counts(table).updated += expected
            tx.record.statements += 1

    def _delete(self, session: Session, tx: _Transaction, table: _Table, rows: int) -> None:
        keys = table.keys.sample(self._rng, rows)
        for in_list in self._in_lists(keys):
            expected = in_list.count(",") + 1
            count = session.execute(
                f"DELETE FROM {table.target} WHERE {_quote_name(table.key)} IN ({in_list})"
            )
            self._expect(table, "DELETE", count, expected)
            tx.counts(table).deleted += expected
            tx.record.statements += 1
        for key in keys:
            table.keys.remove(key)
            tx.undo.append((table, "remove", key))

    def _expect(self, table: _Table, verb: str, count: int, expected: int) -> None:
        if count != expected:
            raise WorkloadError(
                f"{verb} on {table.name} changed {count} rows, the workload expected {expected}"
            )

    def _statement(self, session: Session, tx: _Transaction) -> None:
        rng = self._rng
        table = rng.choice(self.tables)
        pick = rng.random()
        if pick < 0.4 or len(table.keys) < 10:
            self._insert(session, tx, table, rng.randint(1, 5))
        elif pick < 0.8:
            self._update(session, tx, table, rng.randint(1, 5))
        else:
            self._delete(session, tx, table, rng.randint(1, 3))

    def _large(self, session: Session, tx: _Transaction) -> None:
        rng = self._rng
        low, high = self.config.large_rows
        rows = rng.randint(low, high)
        table = rng.choice(self.tables)
        pick = rng.random()
        if pick < 0.45 or len(table.keys) < 2 * rows:
            self._insert(session, tx, table, rows)
        elif pick < 0.9:
            self._update(session, tx, table, rows)
        else:
            self._delete(session, tx, table, min(rows, len(table.keys) // 10))

    # --- transactions ---

    def _kind(self, number: int) -> str:
        cfg = self.config
        if cfg.large_every is not None and number % cfg.large_every == 0:
            return "large"
        return "multi" if self._rng.random() < cfg.multi_ratio else "single"

    def _transaction(self, session: Session, number: int) -> TransactionRecord:
        rng = self._rng
        kind = self._kind(number)
        rollback = kind == "multi" and rng.random() < self.config.rollback_ratio
        tx = _Transaction(TransactionRecord(number, kind, committed=False))
        explicit = kind != "single"
        try:
            if explicit:
                session.execute("BEGIN TRANSACTION")
            if kind == "large":
                self._large(session, tx)
            else:
                for _ in range(rng.randint(2, 5) if kind == "multi" else 1):
                    self._statement(session, tx)
            if rollback:
                session.execute("ROLLBACK TRANSACTION")
            elif explicit:
                session.execute("COMMIT TRANSACTION")
        except Exception:
            if explicit:
                try:
                    session.execute("ROLLBACK TRANSACTION")
                except Exception:  # the first error is the one to report
                    log.debug("rollback after a failed transaction failed too")
            self._undo(tx)
            raise
        if rollback:
            self._undo(tx)
        else:
            tx.record.committed = True
        return tx.record

    def _undo(self, tx: _Transaction) -> None:
        for table, action, key in reversed(tx.undo):
            if action == "add":
                table.keys.remove(key)
            else:
                table.keys.add(key)

    def _wait_turn(
        self, number: int, started: float, deadline: float | None, stop: threading.Event
    ) -> bool:
        """Wait until transaction ``number`` is due; ``False`` when the run is over."""
        cfg = self.config
        if cfg.transactions is not None and number > cfg.transactions:
            return False
        if cfg.rate is not None:
            now = time.monotonic()
            wait = started + (number - 1) / cfg.rate - now
            if deadline is not None:
                wait = min(wait, deadline - now)
            if wait > 0 and stop.wait(wait):
                return False
        if deadline is not None and time.monotonic() >= deadline:
            return False
        return not stop.is_set()

    def run(self, session: Session, stop: threading.Event | None = None) -> WorkloadRecord:
        """Run on ``session`` until the configured bound or ``stop`` is set.

        Raises :class:`WorkloadError` (with the record so far) if a statement fails or
        changes another number of rows than expected.
        """
        cfg = self.config
        self._rng = random.Random(cfg.seed)
        stop = stop or threading.Event()
        record = WorkloadRecord(cfg.seed)
        for table in self.tables:
            record.initial_rows[table.name] = table.load_keys(session)
            record.tables[table.name] = TableCounts()
        log.info(
            "workload: tables %s, seed %d, rate %s/s, seconds %s, transactions %s",
            ", ".join(t.name for t in self.tables),
            cfg.seed,
            cfg.rate,
            cfg.seconds,
            cfg.transactions,
        )
        started = time.monotonic()
        deadline = None if cfg.seconds is None else started + cfg.seconds
        number = 0
        while self._wait_turn(number + 1, started, deadline, stop):
            number += 1
            try:
                tran = self._transaction(session, number)
            except WorkloadError as exc:
                exc.record = record
                raise
            except Exception as exc:
                raise WorkloadError(f"transaction {number} failed: {exc}", record) from exc
            record.transactions.append(tran)
            if tran.committed:
                for name, counts in tran.changes.items():
                    record.tables[name].add(counts)
        record.seconds = time.monotonic() - started
        log.info(
            "workload done: %d transactions (%d rolled back) in %.2f s",
            len(record.transactions),
            record.rolled_back,
            record.seconds,
        )
        return record


# --- checking change tables -----------------------------------------------------------------


def verify_capture(
    session: Session, record: WorkloadRecord, table: str, capture_instance: str | None = None
) -> list[str]:
    """Compare ``cdc.fn_cdc_get_all_changes_<ci>`` (``N'all'``, whole validity range) with what
    the workload committed on ``table``; returns the differences (empty when they agree).

    Assumes the capture instance existed before the run and that the capture job has read the
    whole run (e.g. after ``emu.scan()``), and that nothing else changed the table.
    """
    ci = capture_instance or table.replace(".", "_")
    rows = session.query(
        f"SELECT __$start_lsn, __$operation FROM cdc.fn_cdc_get_all_changes_{ci}("
        f"sys.fn_cdc_get_min_lsn('{ci}'), sys.fn_cdc_get_max_lsn(), N'all') "
        "ORDER BY __$start_lsn, __$seqval, __$operation"
    )
    groups: dict[bytes, TableCounts] = {}
    for lsn, operation in rows:
        counts = groups.setdefault(bytes(lsn), TableCounts())
        if operation == 2:
            counts.inserted += 1
        elif operation == 4:
            counts.updated += 1
        elif operation == 1:
            counts.deleted += 1
    problems: list[str] = []
    total = TableCounts()
    for counts in groups.values():
        total.add(counts)
    expected_total = record.tables.get(table, TableCounts())
    if total != expected_total:
        problems.append(f"{ci}: change table has {total}, the workload committed {expected_total}")
    expected = record.expected_transactions(table)
    actual = list(groups.values())
    if actual != expected:
        first = next(
            (i for i, (a, b) in enumerate(zip(actual, expected, strict=False)) if a != b),
            min(len(actual), len(expected)),
        )
        problems.append(
            f"{ci}: {len(actual)} commit LSNs, {len(expected)} committed transactions changing "
            f"the table; they differ from the {first + 1}. on"
        )
    return problems


# --- command line ---------------------------------------------------------------------------


def _server(text: str) -> tuple[str, int]:
    value = text.removeprefix("tcp:")
    sep = "," if "," in value else ":"
    host, _, port = value.rpartition(sep)
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST,PORT (e.g. 127.0.0.1,1433), got {text!r}")
    return host, int(port)


def _range(text: str) -> tuple[int, int]:
    low, sep, high = text.partition("-")
    try:
        return (int(low), int(high)) if sep else (int(low), int(low))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected MIN-MAX (e.g. 200-2000), got {text!r}"
        ) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mssql_cdc.emulator.workload",
        description=(
            "Run inserts, updates, deletes, multi-statement and large transactions against "
            "AdventureWorks tables (loaded with 'python -m mssql_cdc.emulator --adventureworks "
            "DIR') over TDS, at a rate, for a bounded time or number of transactions. "
            "Deterministic for a seed. Prints a JSON summary (per table rows inserted, "
            "updated, deleted; transactions committed and rolled back) on stdout."
        ),
        epilog=(
            "Example: python -m mssql_cdc.emulator.workload --server 127.0.0.1,14330 "
            "--tables Sales.Customer,Person.EmailAddress --rate 20 --seconds 60 --seed 7. "
            "The workload must be the only writer of its tables. Docs: docs/emulator.md."
        ),
    )
    parser.add_argument("--server", type=_server, required=True, help="HOST,PORT of the server")
    parser.add_argument("--user", default="sa", help="login (default: sa)")
    parser.add_argument(
        "--password", default=DEFAULT_PASSWORD, help="password (default: the emulator's default)"
    )
    parser.add_argument("--database", default="master", help="database (default: master)")
    parser.add_argument(
        "--tables",
        default="Sales.Customer,Sales.CurrencyRate,Person.EmailAddress",
        help="comma-separated tables (default: Sales.Customer,Sales.CurrencyRate,"
        "Person.EmailAddress); any table of tables.json",
    )
    parser.add_argument(
        "--rate", type=float, default=10.0, help="transactions per second; 0 = as fast as possible"
    )
    parser.add_argument("--seconds", type=float, help="stop after this many seconds")
    parser.add_argument("--transactions", type=int, help="stop after this many transactions")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument(
        "--multi-ratio", type=float, default=0.3, help="share of multi-statement transactions"
    )
    parser.add_argument(
        "--rollback-ratio",
        type=float,
        default=0.05,
        help="share of multi-statement transactions that roll back (default: 0.05)",
    )
    parser.add_argument(
        "--large-every",
        type=int,
        default=50,
        help="every N-th transaction is large; 0 = none (default: 50)",
    )
    parser.add_argument(
        "--large-rows",
        type=_range,
        default=(200, 2000),
        help="rows of a large transaction, MIN-MAX",
    )
    parser.add_argument("--data", metavar="DIR", help="directory of tables.json (default: found)")
    parser.add_argument("--record", metavar="FILE", help="also write the full record (JSON) here")
    parser.add_argument("--log-level", default="INFO", help="log level (default: INFO)")
    return parser


def _config(args: argparse.Namespace) -> WorkloadConfig:
    return WorkloadConfig(
        tables=[t.strip() for t in args.tables.split(",") if t.strip()],
        seed=args.seed,
        rate=args.rate or None,
        seconds=args.seconds,
        transactions=args.transactions,
        multi_ratio=args.multi_ratio,
        rollback_ratio=args.rollback_ratio,
        large_every=args.large_every or None,
        large_rows=args.large_rows,
        data_dir=args.data,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit code (0, or 1 if the workload failed)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.seconds is None and args.transactions is None:
        parser.error("give --seconds or --transactions (or both)")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    package_log = logging.getLogger("mssql_cdc.emulator")
    package_log.addHandler(handler)
    package_log.setLevel(args.log_level.upper())
    try:
        workload = Workload(_config(args))
    except (ValueError, FileNotFoundError) as exc:
        parser.error(str(exc))
    stop = threading.Event()

    def _stop(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    host, port = args.server
    code = 0
    try:
        with TdsSession(
            host, port, user=args.user, password=args.password, database=args.database
        ) as session:
            try:
                record = workload.run(session, stop)
            except WorkloadError as exc:
                log.error("workload failed: %s", exc)
                if exc.record is None:
                    return 1
                record, code = exc.record, 1
    finally:
        for sig, handler_before in previous.items():
            signal.signal(sig, handler_before)
        package_log.removeHandler(handler)
    summary = record.to_dict()
    if args.record:
        Path(args.record).write_text(json.dumps(summary, indent=1), encoding="utf-8")
    summary.pop("transaction_log")
    sys.stdout.write(json.dumps(summary) + "\n")
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main())
