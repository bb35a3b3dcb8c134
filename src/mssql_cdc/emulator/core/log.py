"""The emulator's transaction log: real-format LSNs and committed transactions in order.

An LSN is VLF:block:slot ("SQL Server transaction log architecture", Microsoft docs). Every
logged operation takes the next slot; a commit takes a slot and then flushes the block, so the
next record starts a new block. Each change keeps its own LSN (``__$seqval``) and its position
in the transaction (``__$command_id``); the transaction gets one commit LSN (``__$start_lsn``).
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
from dataclasses import dataclass, field

from mssql_cdc._native import Lsn

__all__ = ["DdlEvent", "LoggedChange", "LoggedTransaction", "TransactionLog"]

FIRST_VLF = 0x2A
FIRST_BLOCK = 0x10
BLOCKS_PER_VLF = 0x100000


@dataclass
class LoggedChange:
    schema: str
    table: str
    operation: str  # "insert" | "delete" | "update"
    seqval: Lsn
    command_id: int
    before: tuple[object, ...] | None
    after: tuple[object, ...] | None
    updated_columns: frozenset[str] = frozenset()
    #: the table's column names when the change was made (images follow this order)
    columns: tuple[str, ...] = ()

    def value(self, image: tuple[object, ...], column: str) -> object:
        """The value of ``column`` in ``image``, ``None`` if the table no longer had it."""
        lowered = column.lower()
        for name, value in zip(self.columns, image, strict=False):
            if name.lower() == lowered:
                return value
        return None


@dataclass
class DdlEvent:
    """An ALTER TABLE on a table with capture instances (becomes ``cdc.ddl_history`` rows)."""

    command: str
    required_column_update: bool
    schema: str = ""
    table: str = ""


@dataclass
class LoggedTransaction:
    tran_id: bytes
    begin_lsn: Lsn
    begin_time: dt.datetime
    changes: list[LoggedChange] = field(default_factory=list)
    touched: set[tuple[str, str]] = field(default_factory=set)
    ddl: list[DdlEvent] = field(default_factory=list)
    commit_lsn: Lsn | None = None
    end_time: dt.datetime | None = None


class TransactionLog:
    """Allocates LSNs and holds committed transactions until the capture job has read them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._vlf = FIRST_VLF
        self._block = FIRST_BLOCK
        self._slot = 1
        self._tran_ids = itertools.count(0x3E8)
        self.committed: list[LoggedTransaction] = []

    def next_lsn(self) -> Lsn:
        with self._lock:
            return self._take()

    def _take(self) -> Lsn:
        lsn = Lsn.from_parts(self._vlf, self._block, self._slot)
        self._slot += 1
        if self._slot > 0xFFF0:
            self._flush()
        return lsn

    def _flush(self) -> None:
        self._block += 8
        self._slot = 1
        if self._block >= BLOCKS_PER_VLF:
            self._vlf += 1
            self._block = FIRST_BLOCK

    def begin(self, now: dt.datetime) -> LoggedTransaction:
        with self._lock:
            tran_id = next(self._tran_ids).to_bytes(10, "big")
            return LoggedTransaction(tran_id, self._take(), now)

    def commit(self, tran: LoggedTransaction, now: dt.datetime) -> Lsn:
        """Give the transaction its commit LSN and make it visible to the capture job."""
        with self._lock:
            tran.commit_lsn = self._take()
            tran.end_time = now
            self._flush()
            self.committed.append(tran)
            return tran.commit_lsn

    def take_committed(self) -> list[LoggedTransaction]:
        """Everything committed since the last call, in commit-LSN order."""
        with self._lock:
            out, self.committed = self.committed, []
            return out
