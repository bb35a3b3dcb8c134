"""Schema changes inside a micro-batch: DDL on the tracked table and newer capture instances
(docs/schema-changes.md).

Runs on the driver, in each batch's plan, only when the batch has a range to read (a quiet
stream keeps its one query per trigger). Its input is what planning already fetched (the
table's capture instances, ``sys.sp_cdc_help_change_data_capture``) plus one
``sys.sp_cdc_get_ddl_history`` per capture instance the batch reads; captured columns
(``sys.sp_cdc_get_captured_columns``) are read again only when the batch holds DDL or reaches a
newer instance.

The rules (pure functions, tested without a server):

* ``schemaChangePolicy=fail``: any DDL inside the batch fails it (:func:`fail_policy_error`).
* ``classify``: a captured column whose new type the query's type cannot hold
  (:func:`mssql_cdc.source.schema.holds`) fails the batch before it reads anything
  (:func:`type_change_error`); any other DDL goes on with a WARNING and a ``schema_change``
  event.
* A newer capture instance whose ``start_lsn`` lies inside the batch is switched to in place
  when the running schema holds each of its columns (:func:`switch_findings`), with a WARNING
  and a ``capture_instance_switched`` event; else the batch fails before reading
  (:func:`switch_error`) and the restarted query, whose schema is the union of the instances'
  columns, reads it.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mssql_cdc._metrics import metrics_dir
from mssql_cdc._native import Lsn
from mssql_cdc.errors import SchemaChangedError
from mssql_cdc.source.client import CapturedColumn, DdlChange
from mssql_cdc.source.offsets import format_utc
from mssql_cdc.source.run_warnings import AS_EVENT
from mssql_cdc.source.schema import Column, holds, spark_type

if TYPE_CHECKING:
    from mssql_cdc.source.client import CaptureInstance, CdcClient
    from mssql_cdc.source.clock import ServerClock

__all__ = [
    "SwitchFindings",
    "TypeChange",
    "ddl_in_range",
    "describe_ddl",
    "fail_policy_error",
    "review_batch",
    "sql_type_text",
    "switch_error",
    "switch_findings",
    "type_change_error",
    "unheld_types",
    "write_event",
]

log = logging.getLogger("mssql_cdc.source")

_SIZED = frozenset({"char", "varchar", "nchar", "nvarchar", "binary", "varbinary"})
_TIMED = frozenset({"datetime2", "datetimeoffset", "time"})


@dataclass(frozen=True)
class TypeChange:
    """A captured column whose SQL Server type is now one the running query cannot hold."""

    column: str
    #: the new SQL Server type, e.g. ``BIGINT`` or ``DECIMAL(18,4)``
    sql_type: str
    #: the Spark type the running query reads the column as
    read_as: str


@dataclass
class SwitchFindings:
    """How the running schema meets a newer capture instance's columns."""

    #: columns the new instance captures that the running schema lacks
    missing: list[str] = field(default_factory=list)
    #: columns the new instance types in a way the running schema cannot hold
    unheld: list[TypeChange] = field(default_factory=list)
    #: columns the running schema reads that the new instance does not capture (NULL from S)
    not_captured: list[str] = field(default_factory=list)
    #: with the ``columns`` option: columns the new instance captures that it leaves out
    left_out: list[str] = field(default_factory=list)

    @property
    def in_place(self) -> bool:
        """Whether the running query can read the new instance as it is."""
        return not self.missing and not self.unheld


def sql_type_text(column: CapturedColumn) -> str:
    """The column's SQL Server type as DDL text (``VARCHAR(50)``, ``DECIMAL(18,4)``)."""
    name = column.data_type.lower()
    if name in ("decimal", "numeric"):
        return f"{name.upper()}({column.precision or 18},{column.scale or 0})"
    if name in _SIZED and column.max_length is not None:
        size = "MAX" if column.max_length < 0 else str(column.max_length)
        return f"{name.upper()}({size})"
    if name in _TIMED and column.datetime_precision is not None:
        return f"{name.upper()}({column.datetime_precision})"
    return name.upper()


def ddl_in_range(changes: Sequence[DdlChange], low: Lsn, high: Lsn) -> list[DdlChange]:
    """The DDL with ``low <= lsn <= high``, once each (two instances of a table both record a
    statement made after the newer one started), in LSN order."""
    seen: set[tuple[bytes, str]] = set()
    out = []
    for change in sorted(changes, key=lambda d: bytes(d.lsn)):
        key = (bytes(change.lsn), change.command)
        if low <= change.lsn <= high and key not in seen:
            seen.add(key)
            out.append(change)
    return out


def describe_ddl(command: str) -> str:
    """What a DDL statement means for the stream, for the WARNING (by its verb)."""
    text = " ".join(command.upper().split())
    if re.search(r"\bADD\b", text) and "CONSTRAINT" not in text:
        return (
            "a column was added: the capture instance does not capture it (updates that touch "
            "only it write no change row); enable a new capture instance to read it"
        )
    if "DROP COLUMN" in text:
        return "a captured column was dropped: CDC keeps it, NULL from then on"
    if "ALTER COLUMN" in text:
        return "a column changed: the running query's types still hold it"
    return "the stream goes on"


def unheld_types(
    running: Sequence[Column],
    captured: Sequence[CapturedColumn],
    *,
    only: set[str] | None = None,
) -> list[TypeChange]:
    """The captured columns whose Spark type the running column of the same name (ignoring case)
    cannot hold; ``only``: look at these lower-case names alone."""
    by_name = {c.name.lower(): c for c in running}
    out = []
    for col in captured:
        key = col.name.lower()
        mine = by_name.get(key)
        if mine is None or (only is not None and key not in only):
            continue
        if not holds(mine.spark_type, spark_type(col)):
            out.append(TypeChange(col.name, sql_type_text(col), mine.spark_type))
    return out


def switch_findings(
    running: Sequence[Column], captured: Sequence[CapturedColumn], *, declared: bool
) -> SwitchFindings:
    """How the running schema's captured columns meet a newer instance's ``captured`` columns.

    With ``declared`` (the ``columns`` option) the declared list decides: columns it leaves out
    are not missing, and its types are read casts (never unheld).
    """
    names = {c.name.lower() for c in captured}
    known = {c.name.lower() for c in running}
    found = SwitchFindings()
    found.not_captured = [c.name for c in running if c.name.lower() not in names]
    outside = [c.name for c in captured if c.name.lower() not in known]
    if declared:
        found.left_out = outside
        return found
    found.missing = outside
    found.unheld = unheld_types(running, captured)
    return found


def _types_text(changes: Sequence[TypeChange]) -> str:
    return ", ".join(f"{c.column} {c.sql_type} (read as {c.read_as})" for c in changes)


def _ddl_text(changes: Sequence[DdlChange]) -> str:
    return "; ".join(f"{c.command.strip()} at {c.lsn}" for c in changes)


def type_change_error(
    capture_instance: str, changes: Sequence[TypeChange], ddl: Sequence[DdlChange]
) -> SchemaChangedError:
    """The error of a batch holding a type change the running query cannot hold."""
    return SchemaChangedError(
        f"{capture_instance}: the type of captured column(s) {_types_text(changes)} changed "
        f"inside the batch ({_ddl_text(ddl)}). Restart the query to re-infer the schema (and "
        "enable delta.enableTypeWidening on bronze for a widening)."
    )


def fail_policy_error(capture_instance: str, ddl: Sequence[DdlChange]) -> SchemaChangedError:
    """The error of a batch holding any DDL under ``schemaChangePolicy=fail``."""
    return SchemaChangedError(
        f"{capture_instance}: DDL at {ddl[0].lsn} inside the batch ({_ddl_text(ddl)}), and "
        "schemaChangePolicy=fail. Restart the query once with schemaChangePolicy=classify to "
        "go on (the replayed batch holds the same DDL)."
    )


def switch_error(old: str, new: str, start: Lsn, found: SwitchFindings) -> SchemaChangedError:
    """The error of a batch reaching a newer instance the running schema cannot hold."""
    parts = []
    if found.missing:
        parts.append(f"captures column(s) {', '.join(found.missing)} the running query lacks")
    if found.unheld:
        parts.append(f"types {_types_text(found.unheld)}")
    return SchemaChangedError(
        f"The stream reaches capture instance {new!r} at {start} (after {old!r}), which "
        f"{' and '.join(parts)}. Restart the query: it infers the union of the capture "
        "instances' columns and reads this batch again, nothing lost (bronze gains the new "
        "columns)."
    )


def write_event(metrics_path: str | None, kind: str, key: str, payload: dict[str, object]) -> None:
    """Writes a ``schema_change`` / ``capture_instance_switched`` event file when
    ``metrics_path`` is set (a replayed batch overwrites its own; never fails the batch)."""
    if not metrics_path:
        return
    try:
        metrics_dir(metrics_path).write_event(kind, key, payload)
    except ValueError as exc:
        log.warning("could not write the %s event: %s", kind, exc)


_ZERO = Lsn(bytes(10))


def review_batch(  # noqa: PLR0917 (one call site, the planner)
    client: CdcClient,
    clock: ServerClock,
    running: Sequence[Column],
    instances: Sequence[CaptureInstance],
    reading: Sequence[str],
    window: tuple[Lsn, Lsn],
    captured: dict[str, list[CapturedColumn]],
) -> None:
    """Checks the batch ``window`` (``(low, high)``, both read) for DDL and for a newer capture
    instance, before it reads.

    ``instances`` are the table's capture instances (oldest first), ``reading`` the ones the
    batch reads, ``captured`` the planner's cache of captured columns per instance (refreshed
    here for the instances whose DDL the batch holds). Findings are WARNINGs and, with
    ``metricsPath``, event files the sink turns into facts rows of this batch.

    Raises
    ------
    SchemaChangedError
        DDL under ``schemaChangePolicy=fail``; a type the running query cannot hold; a newer
        instance with columns the running schema lacks or cannot hold.
    """
    low, high = window
    options = client.options
    declared = options.columns is not None
    history = [d for name in dict.fromkeys(reading) for d in client.ddl_history(name)]
    ddl = ddl_in_range(history, low, high)
    if ddl and options.schema_change_policy == "fail":
        raise fail_policy_error(ddl[0].capture_instance, ddl)
    if ddl:
        for name in dict.fromkeys(reading):
            before = {c.name.lower(): spark_type(c) for c in captured.get(name, [])}
            fresh = captured[name] = client.captured_columns(name)
            only = None
            if declared:  # the declared types are read casts: only a change since start counts
                only = {
                    c.name.lower()
                    for c in fresh
                    if before.get(c.name.lower(), spark_type(c)) != spark_type(c)
                }
            unheld = unheld_types(running, fresh, only=only)
            if unheld:
                raise type_change_error(name, unheld, ddl)
    switches = []
    for older, newer in itertools.pairwise(instances):
        start = newer.start_lsn
        if start == _ZERO or not low <= start <= high:
            continue
        if newer.name not in captured:
            captured[newer.name] = client.captured_columns(newer.name)
        found = switch_findings(running, captured[newer.name], declared=declared)
        if not found.in_place:
            raise switch_error(older.name, newer.name, start, found)
        switches.append((older, newer, found))
    for index, change in enumerate(ddl):
        log.warning(
            "%s: DDL at %s inside the batch: %s (%s)",
            change.capture_instance,
            change.lsn,
            change.command.strip(),
            describe_ddl(change.command),
            extra=AS_EVENT,
        )
        when = clock.to_utc(change.local_time) if change.local_time is not None else None
        write_event(
            options.metrics_path,
            "schema_change",
            f"{change.lsn}-{index}",
            {
                "lsn": str(change.lsn),
                "commit_ts": format_utc(when),
                "detail": change.command.strip(),
                "capture_instance": change.capture_instance,
            },
        )
    for older, newer, found in switches:
        _switched(client, clock, older.name, newer.name, newer.start_lsn, high, found)


def _switched(  # noqa: PLR0917 (one call site)
    client: CdcClient,
    clock: ServerClock,
    old: str,
    new: str,
    start: Lsn,
    high: Lsn,
    found: SwitchFindings,
) -> None:
    detail = f"{old} -> {new}"
    if found.not_captured:
        detail += f"; no longer captured, read as NULL: {', '.join(found.not_captured)}"
    left_out = ""
    if found.left_out:
        left_out = f"; the columns option leaves out {', '.join(found.left_out)}"
    log.warning(
        "the stream switches from capture instance %r to %r at %s (LSNs below it are read from "
        "%r)%s%s",
        old,
        new,
        start,
        old,
        f"; column(s) {', '.join(found.not_captured)} no longer captured, read as NULL"
        if found.not_captured
        else "",
        left_out,
        extra=AS_EVENT,
    )
    first = client.first_commit_from(start)
    when = clock.to_utc(first.local_time) if first is not None and first.lsn <= high else None
    write_event(
        client.options.metrics_path,
        "capture_instance_switched",
        f"{new}-{start}",
        {
            "lsn": str(start),
            "commit_ts": format_utc(when),
            "detail": detail,
            "capture_instance": new,
        },
    )
