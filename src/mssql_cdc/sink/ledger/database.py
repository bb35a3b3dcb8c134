"""A database stream's own commits and reads (docs/many-tables.md#the-database-stream).

A database stream (``start_database``) keeps many tables in bronze with one streaming query:
each table's micro-batches go through that table's own ``Ledger`` (its sink id, its
``txnAppId``, the same commits a single stream makes), at the table's batch id
``database batch id + offset``. The offset is fixed when the table joins the stream and
recorded before its first commit, so that a replayed database batch gives every table the
batch id it had, and Delta skips what already landed. This module holds what is the database
stream's own:

* the membership rows (``database_joined`` / ``database_left`` event rows of each table's sink
  id; ``detail`` names the stream and its batch), one commit per batch that has any
  (``<D>#members``, the batch id);
* each batch's facts rows, every table's (the micro-batch rows of the tables written, the
  heartbeat rows of idle ones, the ``table_parked`` events, whose ``detail`` names the stream,
  its batch and the error), one commit per batch that has any
  (``<D>#database``, the batch id), checked to land on a run's first batch (a later one is the
  run's own);
* what the facts table says each table's stream did last (one aggregation for all tables).

Runs on the driver, or in Spark Connect's ``foreachBatch`` worker; building one reads nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from mssql_cdc.sink.facts import EventRow, FactRow, facts_row, utc_now
from mssql_cdc.sink.facts_table import append_facts
from mssql_cdc.sink.ledger import checkpoint, identity, ids, landed, metadata
from mssql_cdc.sink.ledger.landed import Member, ParkedTable, TableBatch
from mssql_cdc.sink.ledger.ledger import CommitKind, _commit
from mssql_cdc.sink.tables import TableRef, Txn

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DatabaseLedger",
    "Member",
    "ParkedTable",
    "TableBatch",
    "TableRow",
    "member_row",
    "parked_row",
]


@dataclass(frozen=True)
class TableRow:
    """A facts row of one table of a database stream: its sink id, its bronze table as the
    stream names it, and the row."""

    sink_id: str
    target: str
    row: FactRow


def member_row(
    database_app_id: str,
    database_batch: int,
    version: int,
    *,
    joined: bool,
    lsn: str | None,
    start: str | None = None,
) -> EventRow:
    """A table's ``database_joined`` (or ``database_left``) row: ``batch_id`` the table's batch
    id at ``database_batch``, ``end_lsn`` the batch's end, ``detail`` the stream and batch, and
    for a joining table its start (``start_lsn``: the LSN taken as processed, its
    ``startingLsn`` or bootstrap snapshot resolved; ``null``: its whole change table), which a
    run that finds the table joined without a micro-batch row goes on from."""
    fields: dict[str, object] = {
        "database_app_id": database_app_id,
        "database_batch": database_batch,
    }
    if joined:
        fields["start_lsn"] = start
    detail = json.dumps(fields, sort_keys=True, separators=(",", ":"))
    kind = landed.MEMBER_EVENTS[0] if joined else landed.MEMBER_EVENTS[1]
    return EventRow(version, kind, lsn, None, None, None, detail)


def parked_row(
    database_app_id: str,
    database_batch: int,
    version: int,
    lsn: str | None,
    reason: tuple[str, str],
) -> EventRow:
    """A table's ``table_parked`` row: ``batch_id`` the table's batch id at ``database_batch``
    (which it did not write), ``end_lsn`` the batch's end, ``detail`` the stream, the batch,
    the capture instance and the error (``reason``: the instance and the error)."""
    capture_instance, error = reason
    detail = json.dumps(  # the error first: `mssql-cdc status` shows the start of a detail
        {
            "error": error,
            "capture_instance": capture_instance,
            "database_app_id": database_app_id,
            "database_batch": database_batch,
        },
        separators=(",", ":"),
    )
    return EventRow(version, landed.PARKED_EVENT, lsn, None, None, None, detail)


class DatabaseLedger:
    """The database stream ``app_id``'s commits and reads on the facts table ``facts``."""

    def __init__(
        self, spark: SparkSession, facts: TableRef, app_id: str, seen: set[TableRef]
    ) -> None:
        self.spark = spark
        self.facts = facts
        self.app_id = app_id
        self.seen = seen

    def __repr__(self) -> str:
        return f"DatabaseLedger(app_id={self.app_id!r}, facts={self.facts.text!r})"

    def members(self) -> dict[str, Member]:
        """Each table's newest membership row of this stream, by sink id."""
        return landed.database_members(self.spark, self.facts, self.app_id)

    def parked(self) -> dict[str, ParkedTable]:
        """The tables this stream parked and has not written since, by sink id (one read;
        ``landed.database_parked``)."""
        return landed.database_parked(self.spark, self.facts, self.app_id)

    def record_parked(self, tables: Mapping[str, ParkedTable]) -> None:
        """Appends the ``table_parked`` rows of ``tables`` (by sink id) before the stream's
        query starts (tables whose bootstrap failed; ``database_batch`` and ``batch_id`` -1:
        before the run's first batch), without a transaction: a second start writes them
        again, and the newest row of a table wins."""
        rows = [
            TableRow(
                sid, t.target, parked_row(self.app_id, -1, -1, None, (t.capture_instance, t.error))
            )
            for sid, t in tables.items()
        ]
        if rows:
            self._append("database_parked", rows, None, None, utc_now())

    def last_batches(self, sink_ids: Sequence[str]) -> dict[str, TableBatch]:
        """The newest micro-batch row of each sink id that has one (one aggregation)."""
        if not self.facts.exists(self.spark):
            return {}
        return landed.last_batches(self.spark, self.facts, sink_ids)

    def table_ends(self) -> tuple[list[str], dict[str, TableBatch]]:
        """The stream's tables (joined in their live generation, not left), by their bronze
        table as the rows name them; and the newest micro-batch row of each that is not
        parked and has one (three reads: the membership rows, the parked tables, the newest
        rows)."""
        if not self.facts.exists(self.spark):
            return [], {}
        members = {
            sid: m.target for sid, m in self.members().items() if m.joined and m.target is not None
        }
        if not members:
            return [], {}
        parked = {p.target for p in self.parked().values()}
        last = self.last_batches(sorted(members))
        ends = {
            target: last[sid]
            for sid, target in members.items()
            if sid in last and target not in parked
        }
        return sorted(set(members.values())), ends

    def facts_txn(self, sink_id: str) -> int:
        """The ``txnVersion`` of ``sink_id``'s own facts commits (``<sink>#facts``: a single
        stream's; ``-1``: none)."""
        return landed.txn_version(self.spark, self.facts, ids.facts_id(sink_id))

    def recorded_targets(self, sink_ids: Sequence[str]) -> dict[str, set[str]]:
        """The targets the facts table records for each of ``sink_ids``, as written (one
        read; none when the facts table does not exist)."""
        if not sink_ids or not self.facts.exists(self.spark):
            return {}
        return landed.recorded_targets_of(self.spark, self.facts, sink_ids)

    def check_identity(self, target: TableRef, sink_id: str, *, checked_others: bool) -> None:
        """The one-target rule of a table: the facts table is not ``target``, and, when the
        facts table records ``sink_id`` with another spelling of a target
        (``checked_others``), that it is ``target`` resolved.

        Raises:
            ValueError: either rule is broken.
        """
        identity.check_facts_not_target(self.spark, target, self.facts)
        if checked_others:
            identity.check_one_target(self.spark, sink_id, target, self.facts)

    def batch_end(self, location: str, batch_id: int) -> dict[str, str] | None:
        """Database batch ``batch_id``'s end offset from the offset log of the checkpoint at
        ``location`` (``checkpoint.batch_end``; ``None`` when unreadable)."""
        return checkpoint.batch_end(self.spark, location, batch_id)

    def facts_version(self) -> int:
        """The newest database batch whose facts commit landed (``-1``: none)."""
        return landed.txn_version(self.spark, self.facts, ids.database_facts_id(self.app_id))

    def name_taken(self) -> bool:
        """Whether the facts table records rows of a sink whose id is this stream's name (a
        single stream's ``app_id``): the two would be told apart by nothing."""
        if not self.facts.exists(self.spark):
            return False
        return bool(landed.recorded_targets_of(self.spark, self.facts, [self.app_id]))

    def bronze_version(self, target: TableRef, sink_id: str) -> int:
        """Bronze's recorded micro-batch version of ``sink_id`` (``-1``: none)."""
        return landed.txn_version(self.spark, target, ids.bronze_id(sink_id))

    def bronze_holds(self, target: TableRef, sink_id: str, batch_id: int) -> bool:
        """Whether bronze records ``sink_id``'s micro-batch ``batch_id`` (or a later one)."""
        return landed.txn_version(self.spark, target, ids.bronze_id(sink_id)) >= batch_id

    def record_left(self, sink_id: str, target: str, database_checkpoint: str) -> None:
        """Appends the ``database_left`` row of ``sink_id`` (``leave_database``), at the
        database checkpoint's newest committed batch, without a transaction: a second call
        writes a second row, and the newest membership row wins."""
        batch = checkpoint.newest_committed(database_checkpoint)
        last = self.last_batches([sink_id]).get(sink_id)
        version = -1 if last is None else last.batch_id
        row = member_row(self.app_id, batch, version, joined=False, lsn=None)
        self._append("database_members", [TableRow(sink_id, target, row)], None, None, utc_now())

    def seed_single(
        self, target: TableRef, sink_id: str, database_checkpoint: str, location: str
    ) -> int:
        """Writes the new local checkpoint ``location`` of a single stream of ``sink_id``, a
        table leaving this database stream: one committed batch, the table's newest
        micro-batch id, ending at that batch's end (``checkpoint.seed_committed_batch``, the
        SQL settings copied from the database checkpoint's newest entry). Returns the batch id.

        Raises:
            ValueError: the facts table records no micro-batch of ``sink_id``, or none with an
                end; bronze holds a later batch of it without its facts row (the database
                stream stopped inside that batch: run it once more first); what
                ``seed_committed_batch`` and ``newest_conf`` raise.
        """
        last = self.last_batches([sink_id]).get(sink_id)
        bronze = self.bronze_version(target, sink_id)
        if bronze > (-1 if last is None else last.batch_id):
            raise ValueError(
                f"{sink_id}'s micro-batch {bronze} is in {target.text} without its facts row "
                "(the database stream stopped inside that batch): run the database stream once "
                "more with the table listed, then move it"
            )
        if last is None or last.end_lsn is None:
            raise ValueError(
                f"{self.facts.text} records no micro-batch of {sink_id!r} with an end LSN: "
                "nothing to go on from"
            )
        conf = checkpoint.newest_conf(database_checkpoint)
        end_ts = last.end_commit_ts
        offset = {
            "lsn": last.end_lsn,
            "commit_ts": ""
            if end_ts is None
            else end_ts.strftime("%Y-%m-%dT%H:%M:%S.") + f"{end_ts.microsecond // 1000:03d}Z",
        }
        checkpoint.seed_committed_batch(location, last.batch_id, offset, conf)
        return last.batch_id

    def record_members(self, rows: Sequence[TableRow], batch_id: int) -> None:
        """Commits the membership rows of database batch ``batch_id`` in one commit
        (``<D>#members``, the batch id): Delta skips it when a crashed run landed it; read
        :meth:`members` again to know what was recorded."""
        txn = ids.database_members(self.app_id, batch_id)
        meta = metadata.database_fact(self.app_id, "database_members", batch_id, len(rows))
        self._append("database_members", rows, txn, meta, utc_now())

    def record_facts(
        self, rows: Sequence[TableRow], batch_id: int, written_at: datetime, *, verify: bool
    ) -> None:
        """Commits the facts rows of database batch ``batch_id`` in one commit
        (``<D>#database``, the batch id): the micro-batch rows of the tables written, the
        heartbeat rows of idle ones, the ``table_parked`` events. A table's batch is done once
        this lands.

        Args:
            verify: read the recorded version back (Delta's state of the new version: about
                as long as the commit itself): a run's first batch, which may meet a commit of
                its batch id that another run landed; a run's later batches are its own.

        Raises:
            ValueError: (``verify``) the commit did not land (Delta skipped it: the facts table
                records this stream's batch ``batch_id`` or a later one, written by another
                run).
        """
        txn = ids.database_facts(self.app_id, batch_id)
        meta = metadata.database_fact(self.app_id, "database_facts", batch_id, len(rows))
        self._append("database_facts", rows, txn, meta, written_at)
        if not verify:
            return
        recorded = self.facts_version()
        if recorded != batch_id:
            raise ValueError(
                f"database stream {self.app_id!r}: the facts commit of batch {batch_id} did not "
                f"land; {self.facts.text} records its batch {recorded}: another run of this "
                "name wrote it (a checkpoint replaced under the same name?)"
            )

    def _append(
        self,
        kind: CommitKind,
        rows: Sequence[TableRow],
        txn: Txn | None,
        meta: str | None,
        written_at: datetime,
    ) -> None:
        tuples = [
            facts_row(r.row, app_id=r.sink_id, target=r.target, written_at=written_at) for r in rows
        ]
        _commit(
            kind,
            txn,
            lambda: append_facts(self.spark, self.facts, tuples, txn, meta, seen=self.seen),
        )
