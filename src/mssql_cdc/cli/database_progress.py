"""Live progress of ``mssql-cdc stream --database-stream``: what the database stream's batches
did, while it runs.

The query's own progress holds no rows (its source is the clock, ``mssql_cdc_database``), so
the view is built from the sink's report of each database batch
(``mssql_cdc.sink.observe_batches``), handed over in this process on classic Spark: the tables
read, their rows, the tables parked. On Spark Connect the sink runs in the server and reports
nothing here; the view then shows the batches and the offset from the query's progress alone.
On a terminal with ``rich`` installed a panel refreshes in place; otherwise one plain line is
printed per database batch that read a table or parked one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TextIO

from mssql_cdc.cli.progress import REFRESH_S, live_display, offset_mapping, progress_events
from mssql_cdc.cli.text import count_text
from mssql_cdc.sink import DatabaseBatchReport, observe_batches

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery
    from rich.table import Table

__all__ = [
    "DatabaseProgress",
    "DatabaseProgressPrinter",
    "database_line",
    "follow_database",
    "progress_line",
]

#: capture instances named in a plain line before "and N more"
_NAMED = 5


@dataclass
class DatabaseProgress:
    """What one database stream has done in this run."""

    name: str
    batches: int = 0
    rows: int = 0
    last_batch: int | None = None
    last_tables: tuple[str, ...] = ()
    last_rows: int = 0
    parked: int = 0
    offset: str = ""
    commit_ts: str = ""
    #: whether any report arrived (``False`` on Spark Connect: rows unknown)
    reported: bool = False
    _ran: set[int] = field(default_factory=set, repr=False)

    def take(self, report: DatabaseBatchReport) -> DatabaseProgress:
        """Takes one batch's report; returns a copy of the state after it."""
        self.reported = True
        self.batches += 1
        self.rows += report.rows
        self.last_batch = report.batch_id
        self.last_tables = report.tables
        self.last_rows = report.rows
        self.parked = report.parked_total
        self.offset = report.end_lsn
        self.commit_ts = report.end_commit_ts
        return replace(self, _ran=set())

    def take_progress(self, events: Sequence[Mapping[str, Any]]) -> list[DatabaseProgress]:
        """Without reports (Spark Connect): the batches run and the offset reached, from the
        query's progress events (Spark keeps the last ones only: each batch id counts once, as
        it is first seen). Returns a copy of the state after each batch not seen before."""
        if self.reported:
            return []
        landed: list[DatabaseProgress] = []
        for event in sorted(events, key=lambda e: int(e.get("batchId", -1))):
            batch = int(event.get("batchId", -1))
            if "addBatch" not in (event.get("durationMs") or {}) or batch in self._ran:
                continue
            self._ran.add(batch)
            self.batches += 1
            self.last_batch = batch
            sources = event.get("sources") or [{}]
            end = offset_mapping(sources[0].get("endOffset"))
            self.offset = str(end.get("lsn") or self.offset)
            self.commit_ts = str(end.get("commit_ts") or self.commit_ts)
            landed.append(replace(self, _ran=set()))
        return landed


def _nothing() -> None:
    pass


def _named(tables: tuple[str, ...]) -> str:
    shown = ", ".join(tables[:_NAMED])
    more = len(tables) - _NAMED
    return f"{shown} and {more} more" if more > 0 else shown


def _end(offset: str, commit_ts: str) -> str:
    return f"to {offset or '-'}" + (f" ({commit_ts})" if commit_ts else "")


def database_line(p: DatabaseProgress, report: DatabaseBatchReport) -> str:
    """The plain line of a database batch that read a table or parked one."""
    read = count_text(len(report.tables), "table")
    line = f"{p.name}: batch {report.batch_id} read {read}"
    if report.tables:
        line += f" ({_named(report.tables)})"
    line += f", {count_text(report.rows, 'row')}, {_end(report.end_lsn, report.end_commit_ts)}"
    if report.parked:
        line += f"; parked {', '.join(report.parked)}"
    return (
        f"{line}; {count_text(p.batches, 'batch', 'batches')}, {count_text(p.rows, 'row')} so far"
    )


def progress_line(p: DatabaseProgress) -> str:
    """The plain line of a database batch seen in the query's progress only (no report)."""
    return (
        f"{p.name}: batch {p.last_batch} ran, {_end(p.offset, p.commit_ts)}; "
        f"{count_text(p.batches, 'batch', 'batches')} so far (tables and rows: see the facts "
        "table)"
    )


def _table(p: DatabaseProgress, state: str) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(title="mssql-cdc stream", title_justify="left", box=box.SIMPLE_HEAD)
    headers = ("database stream", "batches", "tables", "rows", "rows total", "parked", "offset")
    for header in (*headers, "commit time", "state"):
        text = header in ("database stream", "offset", "commit time", "state")
        table.add_column(
            header, justify="left" if text else "right", no_wrap=True, min_width=len(header)
        )
    known = p.reported
    table.add_row(
        p.name,
        f"{p.batches:,}",
        f"{len(p.last_tables):,}" if known else "-",
        f"{p.last_rows:,}" if known else "-",
        f"{p.rows:,}" if known else "-",
        f"{p.parked:,}" if known else "-",
        p.offset or "-",
        p.commit_ts or "-",
        state,
    )
    return table


class DatabaseProgressPrinter:
    """Follows the database stream ``name`` until :meth:`stop`: a refreshing panel
    (``live=True``, needs ``rich``) or plain lines. The sink's reports only update the state
    (on the query's ``foreachBatch`` thread, under a lock); a thread of the printer prints and
    draws, so a slow terminal never holds a batch. Enter it before the query starts, so that
    its first batch's report is not missed, and :meth:`attach` the query once started."""

    def __init__(
        self,
        name: str,
        out: TextIO,
        *,
        live: bool,
        interval: float = REFRESH_S,
        width: int | None = None,
    ) -> None:
        self.out = out
        self.interval = interval
        self.progress = DatabaseProgress(name)
        self.query: StreamingQuery | None = None
        self._lock = threading.Lock()
        self._lines: list[str] = []
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._unobserve: Callable[[], None] = _nothing
        self._live: Any = live_display(out, width) if live else None
        self._thread = threading.Thread(
            target=self._run, name="mssql-cdc-database-progress", daemon=True
        )

    def __enter__(self) -> DatabaseProgressPrinter:
        self._unobserve = observe_batches(self._report)
        if self._live is not None:
            self._live.start()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def attach(self, query: StreamingQuery) -> None:
        """The started query, whose progress gives the batches and the offset when no report
        comes (Spark Connect)."""
        self.query = query

    def stop(self) -> None:
        """Stops following; prints what is left (the panel once more)."""
        if self._stop.is_set():
            return
        self._unobserve()
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(10)
        self._show()
        if self._live is not None:
            self._live.stop()

    def _report(self, report: DatabaseBatchReport) -> None:
        """An observer of the sink (its ``foreachBatch`` thread): the state, nothing printed."""
        if report.stream != self.progress.name:
            return
        with self._lock:
            after = self.progress.take(report)
            if report.tables or report.parked:
                self._lines.append(database_line(after, report))
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.interval)
            self._wake.clear()
            self._show()

    def _show(self) -> None:
        events: list[Mapping[str, Any]] = []
        state = ""
        if self.query is not None:
            try:
                events = progress_events(self.query.recentProgress)
                state = "running" if self.query.isActive else "stopped"
            except Exception:  # a query stopping while it is asked
                events = []
        with self._lock:
            for seen in self.progress.take_progress(events):
                self._lines.append(progress_line(seen))
            lines, self._lines = self._lines, []
            table = _table(self.progress, state) if self._live is not None else None
        if table is not None:
            self._live.update(table, refresh=True)
            return
        for line in lines:
            print(line, file=self.out, flush=True)


def follow_database(name: str, out: TextIO, *, enabled: bool) -> DatabaseProgressPrinter | None:
    """A :class:`DatabaseProgressPrinter` of the database stream ``name`` (a panel when ``out``
    is a terminal), or ``None`` when ``enabled`` is false."""
    if not enabled:
        return None
    return DatabaseProgressPrinter(name, out, live=out.isatty())
