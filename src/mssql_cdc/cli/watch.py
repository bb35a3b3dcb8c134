"""``mssql-cdc status --watch``: the status as a live view that refreshes (``rich``).

Every ``interval`` seconds the facts table is read again (:mod:`mssql_cdc.cli.status`) and
the view redrawn: one row per stream, breached thresholds in red, then the recent events.
Ctrl-C ends it; the exit code is that of the last refresh (``BREACH_EXIT`` when a threshold
was breached). ``rich`` comes with the ``cli`` extra (``pip install 'mssql-cdc[cli]'``).
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mssql_cdc.cli.status import BREACH_EXIT, StreamStatus, Thresholds, breaches, status_rows

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

__all__ = ["Screen", "render", "watch"]

Snapshot = tuple[Sequence[StreamStatus], Sequence[dict[str, Any]]]


def _rich() -> None:
    try:
        import rich  # noqa: F401
    except ImportError:
        raise ValueError(
            "--watch needs the rich library: pip install 'mssql-cdc[cli]' (or leave out "
            "--watch; --json prints the same figures)"
        ) from None


def render(
    streams: Sequence[StreamStatus],
    events: Sequence[dict[str, Any]],
    *,
    now: dt.datetime,
    thresholds: Thresholds,
    retention_hours: float | None,
    title: str,
) -> RenderableType:
    """The view: a table of streams (breaches in red) and the recent events."""
    from rich.console import Group
    from rich.table import Table

    header, body = status_rows(streams, now, thresholds, retention_hours)
    table = Table(title=title, title_justify="left")
    for name in header:
        numeric = name not in ("app_id", "target", "alerts")
        table.add_column(name, justify="right" if numeric else "left")
    for s, cells in zip(streams, body, strict=True):
        bad = bool(breaches(s, thresholds, now, retention_hours))
        table.add_row(*cells, style="bold red" if bad else None)
    parts: list[RenderableType] = [table]
    if events:
        recent = Table(title="recent events", title_justify="left")
        for name in ("written_at", "app_id", "event", "rows", "detail"):
            recent.add_column(name)
        for e in events:
            rows = "-" if e.get("rows") is None else f"{e['rows']:,}"
            recent.add_row(
                str(e["written_at"])[:19],
                str(e["app_id"]),
                str(e["event"]),
                rows,
                (e.get("detail") or "")[:60],
            )
        parts.append(recent)
    return Group(*parts)


@dataclass(frozen=True)
class Screen:
    """Where and how long :func:`watch` draws: the console (``None``: the terminal), at most
    ``refreshes`` views (``None``: until Ctrl-C or ``stop``), the event that stops it, and the
    clock (naive UTC; ``None``: now)."""

    console: Console | None = None
    refreshes: int | None = None
    stop: threading.Event | None = None
    now: Callable[[], dt.datetime] | None = None


def watch(
    read: Callable[[], Snapshot],
    *,
    interval: float,
    thresholds: Thresholds,
    retention_hours: float | None,
    title: str,
    screen: Screen | None = None,
) -> int:
    """Redraws ``read()`` every ``interval`` seconds until Ctrl-C, ``screen.stop`` is set or
    ``screen.refreshes`` views were drawn; returns the last view's exit code (0 or
    ``BREACH_EXIT``)."""
    _rich()
    from rich.live import Live

    screen = screen or Screen()
    console, refreshes = screen.console, screen.refreshes
    clock = screen.now or (lambda: dt.datetime.now(dt.timezone.utc).replace(tzinfo=None))
    halt = screen.stop or threading.Event()
    code = 0
    drawn = 0
    with Live(console=console, auto_refresh=False) as live:
        try:
            while not halt.is_set():
                streams, events = read()
                current = clock()
                code = (
                    BREACH_EXIT
                    if any(breaches(s, thresholds, current, retention_hours) for s in streams)
                    else 0
                )
                stamp = f"{title}  (refreshed {current:%H:%M:%S} UTC, every {interval:g} s)"
                live.update(
                    render(
                        streams,
                        events,
                        now=current,
                        thresholds=thresholds,
                        retention_hours=retention_hours,
                        title=stamp,
                    ),
                    refresh=True,
                )
                drawn += 1
                if refreshes is not None and drawn >= refreshes:
                    break
                halt.wait(interval)
        except KeyboardInterrupt:
            pass
    return code
