"""Change data capture: capture instances, the capture scan, LSN functions and cleanup.

Behaviour follows Microsoft's docs ("About change data capture" and the reference pages of the
``cdc.*`` functions and ``sys.sp_cdc_*`` procedures):

* capture is asynchronous: committed transactions wait in the log until a scan (the capture
  job, or ``sys.sp_cdc_scan``) copies their changes into ``cdc.<ci>_CT`` and writes
  ``cdc.lsn_time_mapping`` in server local time; a scan commits one engine transaction;
* a scan that saw only non-captured activity writes one ``tran_id = 0x00`` row (section 1);
* ``fn_cdc_get_max_lsn`` is ``MAX(start_lsn)`` of the mapping table, so it moves only after a
  scan; ``fn_cdc_get_min_lsn`` is the instance's ``start_lsn``, the zero LSN if unknown;
* operations 1 delete, 2 insert, 3/4 update before/after; the update mask has a bit per
  captured column ordinal (ordinal 1 = lowest bit of the last byte); inserts and deletes set
  every bit, updates the columns the UPDATE assigned;
* at most two capture instances per source table (22962);
* cleanup and retention live in :mod:`cleanup`; the change functions in :mod:`functions`.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from mssql_cdc._native import Lsn
from mssql_cdc.emulator.cdc.cleanup import run_cleanup_job
from mssql_cdc.emulator.core.catalog import ColumnDef, TableDef
from mssql_cdc.emulator.core.duck import one_row
from mssql_cdc.emulator.core.errors import SqlError, cdc_range
from mssql_cdc.emulator.core.log import LoggedChange, LoggedTransaction
from mssql_cdc.emulator.protocol.temporal import datetime_text
from mssql_cdc.emulator.protocol.types import MAX, SqlType, scalar

if TYPE_CHECKING:
    from mssql_cdc.emulator.engine.database import Database

__all__ = ["ZERO_LSN", "CaptureInstance", "CdcState", "ScanSession"]

log = logging.getLogger("mssql_cdc.emulator.cdc.state")
ZERO_LSN = bytes(10)
DEFAULT_RETENTION_MINUTES = 4320
_LSN = scalar("binary", length=10)

_SYSTEM_TABLES: dict[str, list[tuple[str, SqlType]]] = {
    "change_tables": [
        ("object_id", scalar("int")),
        ("version", scalar("int")),
        ("source_object_id", scalar("int")),
        ("capture_instance", scalar("nvarchar", length=128)),
        ("start_lsn", _LSN),
        ("end_lsn", _LSN),
        ("supports_net_changes", scalar("bit")),
        ("has_drop_pending", scalar("bit")),
        ("role_name", scalar("nvarchar", length=128)),
        ("index_name", scalar("nvarchar", length=128)),
        ("filegroup_name", scalar("nvarchar", length=128)),
        ("create_date", scalar("datetime")),
        ("partition_switch", scalar("bit")),
    ],
    "lsn_time_mapping": [
        ("start_lsn", _LSN),
        ("tran_begin_time", scalar("datetime")),
        ("tran_end_time", scalar("datetime")),
        ("tran_id", scalar("varbinary", length=10)),
    ],
    "captured_columns": [
        ("object_id", scalar("int")),
        ("column_name", scalar("nvarchar", length=128)),
        ("column_id", scalar("int")),
        ("column_type", scalar("nvarchar", length=128)),
        ("column_ordinal", scalar("int")),
        ("is_computed", scalar("bit")),
    ],
    "ddl_history": [
        ("source_object_id", scalar("int")),
        ("object_id", scalar("int")),
        ("required_column_update", scalar("bit")),
        ("ddl_command", scalar("nvarchar", length=MAX)),
        ("ddl_lsn", _LSN),
        ("ddl_time", scalar("datetime")),
    ],
    "index_columns": [
        ("object_id", scalar("int")),
        ("column_name", scalar("nvarchar", length=128)),
        ("index_ordinal", scalar("tinyint")),
        ("column_id", scalar("int")),
    ],
}


def update_mask(ordinals: list[int], width: int) -> bytes:
    """varbinary mask: bit (ordinal - 1) of a big-endian integer of ceil(width / 8) bytes."""
    value = 0
    for ordinal in ordinals:
        value |= 1 << (ordinal - 1)
    return value.to_bytes((width + 7) // 8, "big")


@dataclass
class ScanSession:
    """A capture scan that read transactions (a row of ``sys.dm_cdc_log_scan_sessions``)."""

    session_id: int
    start_time: dt.datetime
    end_time: dt.datetime
    tran_count: int
    #: commit time of the last transaction the scan captured (``None``: it captured none)
    last_commit_time: dt.datetime | None
    #: scans since this one that found nothing to read
    empty_scans: int = 0


@dataclass
class CaptureInstance:
    name: str
    source: TableDef
    columns: list[str]
    role_name: str | None
    supports_net_changes: bool
    index_name: str | None
    start_lsn: Lsn
    create_date: dt.datetime
    object_id: int = 0
    #: the captured columns as they were at enable time (types follow ALTER COLUMN)
    column_defs: list[ColumnDef] = field(default_factory=list)
    #: source column ids (1-based) of the captured columns at enable time
    column_ids: list[int] = field(default_factory=list)

    def captured(self, name: str) -> ColumnDef | None:
        lowered = name.lower()
        for col in self.column_defs:
            if col.name.lower() == lowered:
                return col
        return None

    @property
    def change_table(self) -> str:
        return f"{self.name}_CT"


class CdcState:
    """CDC configuration and data of the one emulated database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.enabled = False
        self.instances: dict[str, CaptureInstance] = {}
        self.retention_minutes = DEFAULT_RETENTION_MINUTES
        self.threshold = 5000
        #: the capture and cleanup jobs exist (made by the first ``sp_cdc_enable_table``)
        self.jobs_created = False
        #: when the jobs were created (server local time)
        self.jobs_created_at: dt.datetime | None = None
        #: scans since the emulator started, for ``sys.dm_cdc_log_scan_sessions``
        self.scan_sessions: list[ScanSession] = []
        #: change rows of the scan in progress, per change table (flushed before its COMMIT)
        self._pending: dict[str, list[list[object]]] = {}

    # --- configuration ---

    def enable_db(self) -> None:
        if self.enabled:
            return
        cur = self.db.system
        self.db.catalog.add_schema("cdc")  # "sys.sp_cdc_enable_db": creates the cdc schema
        for name, columns in _SYSTEM_TABLES.items():
            cols = ", ".join(f'"{c}" {t.storage()}' for c, t in columns)
            cur.execute(f'CREATE TABLE IF NOT EXISTS cdc."{name}" ({cols})')
            table = TableDef("cdc", name, [ColumnDef(c, t) for c, t in columns])
            self.db.catalog.add(table)
        self.enabled = True
        log.info("CDC enabled for database %s", self.db.name)

    def instances_of(self, source: TableDef) -> list[CaptureInstance]:
        return [i for i in self.instances.values() if i.source is source]

    def enable_table(
        self,
        source: TableDef,
        *,
        capture_instance: str | None,
        role_name: str | None,
        captured_columns: list[str] | None,
        supports_net_changes: bool | None,
        index_name: str | None,
    ) -> CaptureInstance:
        if not self.enabled:
            raise SqlError(
                22901,
                f"The database '{self.db.name}' is not enabled for Change Data Capture. Ensure "
                "that the correct database context is set and retry the operation. To report on "
                "the databases enabled for Change Data Capture, query the is_cdc_enabled column "
                "in the sys.databases catalog view.",
            )
        name = capture_instance or f"{source.schema}_{source.name}"
        if name.lower() in self.instances:
            raise SqlError(
                22926,
                "Could not create a capture instance because the capture instance name "
                f"'{name}' already exists in the current database. Specify an explicit unique "
                "name for the parameter @capture_instance.",
            )
        if len(self.instances_of(source)) >= 2:
            raise SqlError(
                22962,
                f"Two capture instances already exist for source table '{source.qualified}'. "
                "A table can have at most two capture instances. If you want to create a new "
                "capture instance for this table, you must first disable one of the existing "
                "capture instances.",
            )
        if supports_net_changes is None:
            supports_net_changes = bool(source.primary_key)
        if supports_net_changes and not source.primary_key and not index_name:
            raise SqlError(
                22939,
                "The parameter @supports_net_changes is set to 1, but the source table does not "
                "have a primary key defined and no alternate unique index has been specified.",
            )
        if captured_columns is None:
            columns = [c.name for c in source.columns]
        else:
            columns = []
            for wanted in captured_columns:
                col = source.column(wanted)
                if col is None:
                    raise SqlError(
                        22944,
                        f"Column '{wanted}' in captured column list is not a column of "
                        f"source table '{source.qualified}'.",
                    )
                columns.append(col.name)
            columns = [c.name for c in source.columns if c.name in columns]
            for key in source.primary_key:
                if key not in columns and supports_net_changes:
                    raise SqlError(
                        22945,
                        f"Could not create a capture instance: index column '{key}' must be "
                        "in the captured column list.",
                    )
        instance = CaptureInstance(
            name=name,
            source=source,
            columns=columns,
            role_name=role_name,
            supports_net_changes=supports_net_changes,
            index_name=index_name or (source.pk_name if source.primary_key else None),
            start_lsn=self.db.log.next_lsn(),
            create_date=self.db.clock.local_naive(),
            column_defs=[c for c in source.columns if c.name in columns],
            column_ids=[source.index(c) + 1 for c in columns],
        )
        if role_name:
            self.db.security.create_role(role_name)
        self.jobs_created_at = self.jobs_created_at or self.db.clock.local_naive()
        self.jobs_created = True
        self._create_change_table(instance)
        self.instances[name.lower()] = instance
        # the DDL itself is a logged transaction (so the next scan records progress)
        tran = self.db.log.begin(self.db.clock.local_naive())
        self.db.log.commit(tran, self.db.clock.local_naive())
        log.info("capture instance %s created for %s", name, source.qualified)
        return instance

    def _ct_columns(self, instance: CaptureInstance) -> list[ColumnDef]:
        cols = [
            ColumnDef("__$start_lsn", _LSN, nullable=False),
            ColumnDef("__$end_lsn", _LSN),
            ColumnDef("__$seqval", _LSN, nullable=False),
            ColumnDef("__$operation", scalar("int"), nullable=False),
            ColumnDef("__$update_mask", scalar("varbinary", length=128)),
        ]
        for src in instance.column_defs:
            ctype = src.type
            if ctype.name == "rowversion":
                ctype = scalar("binary", length=8)
            cols.append(ColumnDef(src.name, ctype))
        cols.append(ColumnDef("__$command_id", scalar("int")))
        return cols

    def _create_change_table(self, instance: CaptureInstance) -> None:
        columns = self._ct_columns(instance)
        ddl = ", ".join(f'"{c.name}" {c.type.storage()}' for c in columns)
        self.db.system.execute(f'CREATE TABLE cdc."{instance.change_table}" ({ddl})')
        table = self.db.catalog.add(TableDef("cdc", instance.change_table, columns))
        instance.object_id = table.object_id
        self.write_metadata(instance)

    def write_metadata(self, instance: CaptureInstance) -> None:
        cur = self.db.system
        cur.execute('DELETE FROM cdc."change_tables" WHERE object_id = ?', [instance.object_id])
        cur.execute(
            'INSERT INTO cdc."change_tables" VALUES (?, 0, ?, ?, ?, NULL, ?, false, ?, ?, '
            "'PRIMARY', ?, false)",
            [
                instance.object_id,
                instance.source.object_id,
                instance.name,
                bytes(instance.start_lsn),
                instance.supports_net_changes,
                instance.role_name,
                instance.index_name,
                datetime_text(instance.create_date),
            ],
        )
        cur.execute('DELETE FROM cdc."captured_columns" WHERE object_id = ?', [instance.object_id])
        for ordinal, col in enumerate(instance.column_defs, start=1):
            cur.execute(
                'INSERT INTO cdc."captured_columns" VALUES (?, ?, ?, ?, ?, ?)',
                [
                    instance.object_id,
                    col.name,
                    instance.column_ids[ordinal - 1],
                    col.type.sql().split("(")[0],
                    ordinal,
                    col.computed is not None,
                ],
            )
        cur.execute('DELETE FROM cdc."index_columns" WHERE object_id = ?', [instance.object_id])
        for ordinal, key in enumerate(instance.source.primary_key, start=1):
            cur.execute(
                'INSERT INTO cdc."index_columns" VALUES (?, ?, ?, ?)',
                [instance.object_id, key, ordinal, instance.source.index(key) + 1],
            )

    def disable_table(self, source: TableDef, capture_instance: str | None) -> None:
        targets = self.instances_of(source)
        if capture_instance and capture_instance.lower() != "all":
            targets = [i for i in targets if i.name.lower() == capture_instance.lower()]
            if not targets:
                raise SqlError(
                    22960,
                    f"Could not find the capture instance '{capture_instance}' for the "
                    f"source table '{source.qualified}'.",
                )
        for instance in targets:
            self.db.system.execute(f'DROP TABLE cdc."{instance.change_table}"')
            self.db.catalog.drop("cdc", instance.change_table)
            for table in ("change_tables", "captured_columns", "index_columns", "ddl_history"):
                self.db.system.execute(
                    f'DELETE FROM cdc."{table}" WHERE object_id = ?', [instance.object_id]
                )
            del self.instances[instance.name.lower()]

    def propagate_types(self, source: TableDef, changed: set[str]) -> bool:
        """ALTER COLUMN of captured columns: change tables follow the new type (section 5)."""
        required = False
        for instance in self.instances_of(source):
            for i, col in enumerate(instance.column_defs):
                if col.name not in changed:
                    continue
                new = source.column(col.name)
                assert new is not None
                instance.column_defs[i] = ColumnDef(col.name, new.type, col.nullable)
                self.db.system.execute(
                    f'ALTER TABLE cdc."{instance.change_table}" ALTER COLUMN "{col.name}" '
                    f"TYPE {new.type.storage()}"
                )
                ct = self.db.catalog.get("cdc", instance.change_table)
                if ct is not None:
                    ct.columns[ct.index(col.name)] = ColumnDef(col.name, new.type)
                required = True
            self.write_metadata(instance)
        return required

    # --- the capture scan ---

    def scan(self) -> int:
        """Copy every committed, not yet captured transaction; returns how many were read."""
        started = self.db.clock.local_naive()
        transactions = self.db.log.take_committed()
        if not transactions or not self.enabled:
            if self.scan_sessions:
                self.scan_sessions[-1].empty_scans += 1
            return len(transactions)
        self.scan_sessions.append(
            ScanSession(
                len(self.scan_sessions) + 1,
                started,
                self.db.clock.local_naive(),
                len(transactions),
                transactions[-1].end_time,
            )
        )
        cur = self.db.system
        cur.execute("BEGIN TRANSACTION")
        self._pending = {}
        try:
            captured_any = False
            for tran in transactions:
                if self._capture(tran):
                    captured_any = True
                    self._map(tran, tran.tran_id)
            last = transactions[-1]
            if not captured_any or not self._is_captured(last):
                self._map(last, ZERO_LSN[:1], dummy=True)
            self._flush_changes()
            cur.execute("COMMIT")
        except Exception:
            cur.execute("ROLLBACK")
            raise
        finally:
            self._pending = {}
        return len(transactions)

    def _flush_changes(self) -> None:
        """Inserts the scan's change rows, one bulk INSERT per change table (through Arrow):
        row-at-a-time inserts cost about 1 ms each under the database lock."""
        for table, rows in self._pending.items():
            if not rows:
                continue
            width = len(rows[0])
            columns = {f"c{i}": _inferable([row[i] for row in rows]) for i in range(width)}
            staged = pa.table(columns)
            view = f"_captured_{uuid.uuid4().hex}"
            self.db.system.register(view, staged)
            try:
                self.db.system.execute(f'INSERT INTO cdc."{table}" SELECT * FROM "{view}"')
            finally:
                self.db.system.unregister(view)

    def _is_captured(self, tran: LoggedTransaction) -> bool:
        assert tran.commit_lsn is not None
        return any(
            self._instances_for(change.schema, change.table, tran.commit_lsn)
            for change in tran.changes
        )

    def _instances_for(self, schema: str, table: str, commit_lsn: Lsn) -> list[CaptureInstance]:
        return [
            i
            for i in self.instances.values()
            if i.source.schema.lower() == schema.lower()
            and i.source.name.lower() == table.lower()
            and commit_lsn > i.start_lsn
        ]

    def _map(self, tran: LoggedTransaction, tran_id: bytes, *, dummy: bool = False) -> None:
        assert tran.commit_lsn is not None
        assert tran.end_time is not None
        now = self.db.clock.local_naive()
        begin = now if dummy else tran.begin_time
        end = now if dummy else tran.end_time
        self.db.system.execute(
            'INSERT INTO cdc."lsn_time_mapping" VALUES (?, ?, ?, ?)',
            [bytes(tran.commit_lsn), datetime_text(begin), datetime_text(end), tran_id],
        )

    def _capture(self, tran: LoggedTransaction) -> bool:
        assert tran.commit_lsn is not None
        commit = bytes(tran.commit_lsn)
        wrote = False
        for event in tran.ddl:
            for instance in self._instances_for(event.schema, event.table, tran.commit_lsn):
                wrote = True
                self.db.system.execute(
                    'INSERT INTO cdc."ddl_history" VALUES (?, ?, ?, ?, ?, ?)',
                    [
                        instance.source.object_id,
                        instance.object_id,
                        event.required_column_update,
                        event.command,
                        commit,
                        datetime_text(tran.end_time or self.db.clock.local_naive()),
                    ],
                )
        for change in tran.changes:
            for instance in self._instances_for(change.schema, change.table, tran.commit_lsn):
                wrote = True
                self._write_change(instance, commit, change)
        return wrote

    def _write_change(self, instance: CaptureInstance, commit: bytes, change: object) -> None:

        assert isinstance(change, LoggedChange)
        width = len(instance.columns)
        all_bits = update_mask(list(range(1, width + 1)), width)
        seqval = bytes(change.seqval)
        rows: list[tuple[int, bytes, tuple[object, ...]]] = []
        if change.operation == "insert" and change.after is not None:
            rows.append((2, all_bits, change.after))
        elif change.operation == "delete" and change.before is not None:
            rows.append((1, all_bits, change.before))
        elif change.before is not None and change.after is not None:
            updated = {c.lower() for c in change.updated_columns}
            ordinals = [
                n for n, name in enumerate(instance.columns, start=1) if name.lower() in updated
            ]
            mask = update_mask(ordinals, width)
            rows.append((3, mask, change.before))
            rows.append((4, mask, change.after))
        pending = self._pending.setdefault(instance.change_table, [])
        for operation, mask, image in rows:
            values: list[object] = [commit, None, seqval, operation, mask]
            values += [
                None if col.computed is not None else change.value(image, col.name)
                for col in instance.column_defs
            ]
            values.append(change.command_id)
            pending.append(values)

    # --- functions ---

    def instance(self, name: str) -> CaptureInstance | None:
        return self.instances.get(name.lower())

    def min_lsn(self, name: str) -> bytes:
        instance = self.instance(name)
        return bytes(instance.start_lsn) if instance else ZERO_LSN

    def max_lsn(self) -> bytes | None:
        if not self.enabled:
            return None
        row = one_row(self.db.system.execute('SELECT max(start_lsn) FROM cdc."lsn_time_mapping"'))
        return None if row is None or row[0] is None else bytes(row[0])

    def map_lsn_to_time(self, lsn: bytes | None) -> str | None:
        if lsn is None or not self.enabled:
            return None
        row = one_row(
            self.db.system.execute(
                'SELECT tran_end_time FROM cdc."lsn_time_mapping" WHERE start_lsn = ? '
                "ORDER BY tran_end_time DESC LIMIT 1",
                [lsn],
            )
        )
        return None if row is None else str(row[0])

    def check_range(
        self, instance: CaptureInstance, from_lsn: bytes | None, to_lsn: bytes | None
    ) -> None:
        """The validation of ``sys.fn_cdc_check_parameters``: NULL or out-of-range -> 313."""
        max_lsn = self.max_lsn()
        if from_lsn is None or to_lsn is None or max_lsn is None:
            raise cdc_range()
        if from_lsn < bytes(instance.start_lsn) or to_lsn > max_lsn or from_lsn > to_lsn:
            raise cdc_range()

    # --- cleanup (see :mod:`cleanup`) ---

    def cleanup(self, retention_minutes: int | None = None) -> int:
        """Run the cleanup job now; returns the change rows deleted."""

        return run_cleanup_job(self, retention_minutes)


def _inferable(values: list[object]) -> list[object]:
    """A change column's values as Arrow infers them on every pyarrow the ranges allow: pyarrow
    19 infers no type from ``uuid.UUID`` (later releases make it the ``arrow.uuid`` extension
    type), so a uniqueidentifier column goes as text, which the INSERT casts back to UUID."""
    if any(isinstance(v, uuid.UUID) for v in values):
        return [str(v) if isinstance(v, uuid.UUID) else v for v in values]
    return values
