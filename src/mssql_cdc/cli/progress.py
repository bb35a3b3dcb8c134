"""Live progress of ``mssql-cdc stream``: what each running query has done, while it runs.

Read from Spark's query progress (``StreamingQuery.recentProgress``, one event per
micro-batch), never from SQL Server: per stream the micro-batches that read changes, the rows
of the last one, its rows per second, the ingestion lag (how far the batch's end is behind the
newest commit CDC captured, as the facts' ``ingestion_lag_seconds``) and the offset it reached.
On a terminal with ``rich`` installed a panel refreshes in place; otherwise (output to a file
or a pipe, a scheduler's log) one plain line is printed per micro-batch that read changes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TextIO

from mssql_cdc.cli.text import count_text
from mssql_cdc.finalization import offset_from_text

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery
    from rich.live import Live
    from rich.table import Table

__all__ = [
    "ProgressPrinter",
    "StreamProgress",
    "batch_line",
    "live_display",
    "offset_mapping",
    "progress_events",
]

#: seconds between refreshes of the panel / looks at the queries' progress
REFRESH_S = 1.0


def offset_mapping(value: object) -> dict[str, Any]:
    """An offset of a progress event (JSON text, a Python dict literal as PySpark 4.0/4.1's
    Connect client holds it, or already a mapping; ``finalization.offset_from_text``)."""
    if isinstance(value, str):
        value = offset_from_text(value)
    return dict(value) if isinstance(value, Mapping) else {}


def _utc(text: object) -> dt.datetime | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return dt.datetime.fromisoformat(text.removesuffix("Z"))
    except ValueError:
        return None


@dataclass
class StreamProgress:
    """What one query has done, updated from its progress events."""

    name: str
    batches: int = 0
    rows: int = 0
    last_batch: int | None = None
    last_rows: int = 0
    rows_per_second: float | None = None
    lag_seconds: float | None = None
    offset: str = ""
    _seen: int = field(default=-1, repr=False)

    def update(self, events: Sequence[Mapping[str, Any]]) -> list[StreamProgress]:
        """Take the events of batches not seen yet; returns a copy of the state after each
        new micro-batch that read rows (for the plain lines)."""
        landed: list[StreamProgress] = []
        for event in sorted(events, key=lambda e: int(e["batchId"])):
            batch = int(event["batchId"])
            rows = int(event.get("numInputRows") or 0)
            # an idle trigger's event carries the id of the batch that runs next: only events
            # that read rows count, each batch once
            if rows == 0 or batch <= self._seen:
                continue
            self._seen = batch
            self.batches += 1
            self.rows += rows
            self.last_batch = batch
            self.last_rows = rows
            speed = event.get("processedRowsPerSecond")
            self.rows_per_second = float(speed) if speed is not None else None
            sources = event.get("sources") or []
            source = sources[0] if sources else {}
            end = offset_mapping(source.get("endOffset"))
            newest = offset_mapping(source.get("latestOffset"))
            self.offset = str(end.get("lsn") or self.offset)
            end_ts, newest_ts = _utc(end.get("commit_ts")), _utc(newest.get("commit_ts"))
            self.lag_seconds = None
            if end_ts is not None and newest_ts is not None:
                self.lag_seconds = max((newest_ts - end_ts).total_seconds(), 0.0)
            landed.append(replace(self))
        return landed


def live_display(out: TextIO, width: int | None = None) -> Live | None:
    """A ``rich.live.Live`` panel writing to ``out`` (refreshed by its caller), or ``None``
    when the ``cli`` extra (``rich``) is not installed: plain lines then."""
    try:
        from rich.console import Console
        from rich.live import Live as Display
    except ImportError:
        return None
    console = Console(file=out, force_terminal=True, width=width)
    return Display(console=console, auto_refresh=False, transient=False)


def _number(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:,.1f}{unit}"


def batch_line(p: StreamProgress) -> str:
    """The plain line of a micro-batch that read rows."""
    return (
        f"{p.name}: batch {p.last_batch} read {count_text(p.last_rows, 'row')} "
        f"({_number(p.rows_per_second)} rows/s), lag {_number(p.lag_seconds, ' s')}, "
        f"offset {p.offset or '-'}; {count_text(p.batches, 'batch', 'batches')}, "
        f"{count_text(p.rows, 'row')} so far"
    )


def _table(streams: Sequence[StreamProgress], states: Mapping[str, str]) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(title="mssql-cdc stream", title_justify="left", box=box.SIMPLE_HEAD)
    for header in ("stream", "batches", "rows", "rows/s", "lag s", "offset", "state"):
        text = header in ("stream", "offset", "state")
        table.add_column(
            header, justify="left" if text else "right", no_wrap=True, min_width=len(header)
        )
    for p in streams:
        table.add_row(
            p.name,
            f"{p.batches:,}",
            f"{p.last_rows:,}",
            _number(p.rows_per_second),
            _number(p.lag_seconds),
            p.offset or "-",
            states.get(p.name, ""),
        )
    return table


def _state(query: StreamingQuery) -> str:
    """``reading`` (a trigger runs), ``waiting`` or ``stopped``."""
    try:
        if not query.isActive:
            return "stopped"
        return "reading" if query.status.get("isTriggerActive") else "waiting"
    except Exception:  # a query stopping while it is asked
        return ""


class ProgressPrinter:
    """Follows running queries in a background thread until :meth:`stop` (which prints what
    the last look missed): a refreshing panel (``live=True``, needs ``rich``) or plain
    lines."""

    def __init__(
        self,
        queries: Mapping[str, StreamingQuery],
        out: TextIO,
        *,
        live: bool,
        interval: float = REFRESH_S,
        width: int | None = None,
    ) -> None:
        self.queries = dict(queries)
        self.out = out
        self.interval = interval
        self.streams = {name: StreamProgress(q.name or name) for name, q in self.queries.items()}
        self._stop = threading.Event()
        self._live: Any = live_display(out, width) if live else None
        self._thread = threading.Thread(target=self._run, name="mssql-cdc-progress", daemon=True)

    def __enter__(self) -> ProgressPrinter:
        if self._live is not None:
            self._live.start()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(10)
        self._look()
        if self._live is not None:
            self._live.stop()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._look()

    def _look(self) -> None:
        landed: list[StreamProgress] = []
        for name, query in self.queries.items():
            landed += self.streams[name].update(progress_events(query.recentProgress))
        if self._live is not None:
            states = {self.streams[n].name: _state(q) for n, q in self.queries.items()}
            self._live.update(_table(list(self.streams.values()), states), refresh=True)
            return
        for p in landed:
            print(batch_line(p), file=self.out, flush=True)


def progress_events(progress: Sequence[Any]) -> list[Mapping[str, Any]]:
    """Progress events as mappings (PySpark's progress objects are dicts; Spark Connect's
    too)."""
    out: list[Mapping[str, Any]] = []
    for p in progress:
        if isinstance(p, Mapping):
            out.append(p)
        else:  # pragma: no cover (older PySpark: a JSON text)
            out.append(json.loads(getattr(p, "json", "{}")))
    return out


def follow(
    queries: Mapping[str, StreamingQuery], out: TextIO, *, enabled: bool
) -> contextlib.AbstractContextManager[object]:
    """A :class:`ProgressPrinter` over ``queries`` (a panel when ``out`` is a terminal), or
    nothing when ``enabled`` is false."""
    if not enabled:
        return contextlib.nullcontext()
    return ProgressPrinter(queries, out, live=out.isatty())
