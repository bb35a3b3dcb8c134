"""``mssql-cdc report``: a facts table drawn over time, per stream (docs/monitoring.md).

The facts are read once on the driver (``sink.facts_history``: one Arrow table); everything
here works on that table, so it is tested without Spark. Five panels share the time axis:
rows per micro-batch, rows per second, ingestion and capture lag, retention headroom and
batch duration, one colour per stream (``app_id``); events are vertical lines across every
panel, one style per kind: snapshots (``snapshot_open`` when a full read starts, ``bootstrap``
and ``resnapshot`` when it lands), schema changes (``schema_change``,
``capture_instance_switched``) and ``data_skipped``.

Rows per second is a micro-batch's rows over the seconds since the stream's previous row was
written (over the batch's own duration for its first row): what the stream landed per second
of wall-clock time, idle time between triggers included.

The output's extension picks the format: ``.png`` or ``.svg`` (the figure), ``.html`` (one
self-contained page: the figure as inline SVG, a table per stream and the events; no
scripts, no network). Drawing uses matplotlib (the ``report`` extra,
``pip install 'mssql-cdc[report]'``), imported only here.
"""

from __future__ import annotations

import datetime as dt
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mssql_cdc.cli.streams import stream_of
from mssql_cdc.cli.text import count_text

if TYPE_CHECKING:
    import pyarrow as pa
    from matplotlib.figure import Figure
    from pyspark.sql import SparkSession

__all__ = [
    "EVENT_STYLES",
    "FORMATS",
    "StreamSeries",
    "read_facts",
    "render_report",
    "report_figure",
    "report_html",
    "require_matplotlib",
    "stream_series",
]

#: output formats by file extension
FORMATS = (".html", ".png", ".svg")

#: how each event kind is drawn: (group shown in the legend, colour, line style)
EVENT_STYLES: dict[str, tuple[str, str, str]] = {
    "snapshot_open": ("snapshot started", "#2ca02c", ":"),
    "bootstrap": ("snapshot landed", "#2ca02c", "-"),
    "resnapshot": ("re-snapshot landed", "#d62728", "-"),
    "schema_change": ("schema change", "#9467bd", "--"),
    "capture_instance_switched": ("capture instance switched", "#9467bd", "-."),
    "data_skipped": ("data skipped", "#d62728", "--"),
}


@dataclass
class StreamSeries:
    """One stream's micro-batch rows as columns (times naive UTC), and its events."""

    app_id: str
    target: str = ""
    written_at: list[dt.datetime] = field(default_factory=list)
    rows: list[float] = field(default_factory=list)
    rows_per_second: list[float | None] = field(default_factory=list)
    ingestion_lag_seconds: list[float | None] = field(default_factory=list)
    capture_lag_seconds: list[float | None] = field(default_factory=list)
    retention_headroom_hours: list[float | None] = field(default_factory=list)
    duration_seconds: list[float | None] = field(default_factory=list)
    #: (written_at, event, detail) of the stream's event rows drawn (EVENT_STYLES)
    events: list[tuple[dt.datetime, str, str]] = field(default_factory=list)

    @property
    def total_rows(self) -> int:
        return int(sum(self.rows))


def read_facts(spark: SparkSession, facts_table: str, hours: float | None = None) -> pa.Table:
    """The facts rows to draw: the last ``hours`` hours (all without it).

    Raises:
        ValueError: ``facts_table`` does not exist, or ``hours`` is not positive.
    """
    from mssql_cdc.sink import facts_history

    since = None
    if hours is not None:
        if hours <= 0:
            raise ValueError(f"--hours must be positive, got {hours:g}")
        since = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(hours=hours)
    return facts_history(spark, facts_table, since)


def stream_series(facts: pa.Table) -> list[StreamSeries]:
    """The facts rows (any order) as one :class:`StreamSeries` per stream, by ``app_id``.

    Micro-batch rows (``event`` NULL) become the series, in ``written_at`` order; event rows
    of a kind in :data:`EVENT_STYLES` become the stream's events.
    """
    columns = facts.to_pydict()
    n = facts.num_rows
    order = sorted(
        range(n),
        key=lambda i: (
            columns["written_at"][i] or dt.datetime.min,
            -1 if columns["batch_id"][i] is None else columns["batch_id"][i],
        ),
    )
    streams: dict[str, StreamSeries] = {}
    previous: dict[str, dt.datetime] = {}
    for i in order:
        app_id = stream_of(str(columns["app_id"][i]))  # generations drawn as one stream
        s = streams.setdefault(app_id, StreamSeries(app_id))
        written = columns["written_at"][i]
        event = columns["event"][i]
        if written is None:
            continue
        if event is not None:
            if event in EVENT_STYLES:
                s.events.append((written, str(event), str(columns["detail"][i] or "")))
            continue
        s.target = str(columns["target"][i] or s.target)
        rows = float(columns["rows"][i] or 0)
        duration_ms = columns["duration_ms"][i]
        seconds = None if duration_ms is None else duration_ms / 1000.0
        before = previous.get(app_id)
        span = (written - before).total_seconds() if before is not None else seconds
        previous[app_id] = written
        s.written_at.append(written)
        s.rows.append(rows)
        s.rows_per_second.append(rows / span if span else None)
        s.ingestion_lag_seconds.append(columns["ingestion_lag_seconds"][i])
        s.capture_lag_seconds.append(columns["capture_lag_seconds"][i])
        s.retention_headroom_hours.append(columns["retention_headroom_hours"][i])
        s.duration_seconds.append(seconds)
    return [streams[k] for k in sorted(streams)]


def require_matplotlib() -> None:
    """Raises ``ValueError`` naming the extra to install when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ValueError(
            "matplotlib is needed for the report: pip install 'mssql-cdc[report]'"
        ) from None


def _values(values: Sequence[float | None]) -> list[float]:
    return [float("nan") if v is None else float(v) for v in values]


#: the narrowest time axis drawn: a single batch sits in the middle of this window
_NARROWEST = dt.timedelta(minutes=20)


def report_figure(streams: Sequence[StreamSeries], title: str) -> Figure:
    """The five panels (module docstring) of ``streams`` on one time axis."""
    require_matplotlib()
    import matplotlib.dates as mdates
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    panels = [
        ("rows per batch", "rows"),
        ("rows per second since the stream's previous batch (idle time included)", "rows/s"),
        ("lag: ingestion (solid, dots), capture (dashed, crosses)", "seconds"),
        ("retention headroom", "hours"),
        ("batch duration", "seconds"),
    ]
    fig = Figure(figsize=(11, 13), dpi=100, layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True)
    palette = [f"C{i}" for i in range(10)]
    for ax, (name, unit) in zip(axes, panels, strict=True):
        ax.set_title(name, loc="left", fontsize=10)
        ax.set_ylabel(unit)
        ax.grid(True, alpha=0.3)
    handles: list[Any] = []
    seen_kinds: set[str] = set()
    for k, s in enumerate(streams):
        color = palette[k % len(palette)]
        x = s.written_at
        # markers on at most about 60 points of a series, so a long one stays a line
        every = max(1, len(x) // 60)
        style: dict[str, Any] = {
            "color": color,
            "marker": "o",
            "markevery": every,
            "markersize": 3,
            "lw": 1.2,
        }
        if x:
            axes[0].plot(x, _values(s.rows), **style)
            axes[1].plot(x, _values(s.rows_per_second), **style)
            axes[2].plot(x, _values(s.ingestion_lag_seconds), **style)
            crosses = {**style, "marker": "x"}
            axes[2].plot(x, _values(s.capture_lag_seconds), ls="--", **crosses)
            axes[3].plot(x, _values(s.retention_headroom_hours), **style)
            axes[4].plot(x, _values(s.duration_seconds), **style)
        batches = count_text(len(x), "batch", "batches")
        label = f"{s.app_id}: {batches}, {count_text(s.total_rows, 'row')}"
        handles.append(Line2D([], [], color=color, lw=2, label=label))
        for when, kind, _ in s.events:
            _, ecolor, ls = EVENT_STYLES[kind]
            seen_kinds.add(kind)
            for ax in axes:
                ax.axvline(when, color=ecolor, ls=ls, lw=1.0, alpha=0.7)
    for kind, (group, ecolor, ls) in EVENT_STYLES.items():
        if kind in seen_kinds:
            handles.append(Line2D([], [], color=ecolor, ls=ls, lw=1.2, label=group))
    for ax in axes:  # every figure is a size: its zero is part of the picture
        top = max(ax.get_ylim()[1], 0.0)
        ax.set_ylim(0.0, top * 1.08 if top > 0 else 1.0)
    times = [t for s in streams for t in s.written_at] + [e[0] for s in streams for e in s.events]
    if times and max(times) - min(times) < _NARROWEST:
        # one point (or a few at once): a window around it, not the years matplotlib picks
        middle = min(times) + (max(times) - min(times)) / 2
        axes[-1].set_xlim(middle - _NARROWEST / 2, middle + _NARROWEST / 2)
    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
    axes[-1].xaxis.set_major_locator(locator)
    formatter = mdates.ConciseDateFormatter(locator)  # type: ignore[no-untyped-call]
    axes[-1].xaxis.set_major_formatter(formatter)
    axes[-1].set_xlabel("written_at (UTC)")
    fig.suptitle(title, x=0.01, ha="left", fontsize=12)
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=9, frameon=False)
    if not any(s.written_at for s in streams):
        axes[0].text(0.5, 0.5, "no micro-batch rows", transform=axes[0].transAxes, ha="center")
    return fig


def _figure_bytes(fig: Figure, fmt: str) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format=fmt)
    return out.getvalue()


def _cell(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _last(values: Sequence[float | None]) -> float | None:
    return values[-1] if values else None


def _max(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def report_html(streams: Sequence[StreamSeries], title: str, svg: str, now: dt.datetime) -> str:
    """One self-contained page: ``svg`` (the figure), a row per stream and the events."""
    e = html.escape
    head = (
        "stream",
        "target",
        "batches",
        "rows",
        "max rows/s",
        "last ingestion lag (s)",
        "last capture lag (s)",
        "last headroom (h)",
        "max batch duration (s)",
    )
    body = [
        (
            s.app_id,
            s.target,
            f"{len(s.written_at):,}",
            f"{s.total_rows:,}",
            _cell(_max(s.rows_per_second)),
            _cell(_last(s.ingestion_lag_seconds)),
            _cell(_last(s.capture_lag_seconds)),
            _cell(_last(s.retention_headroom_hours)),
            _cell(_max(s.duration_seconds), 2),
        )
        for s in streams
    ]
    events = sorted(
        ((when, s.app_id, kind, detail) for s in streams for when, kind, detail in s.events),
        key=lambda r: r[0],
    )

    def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
        th = "".join(f"<th>{e(h)}</th>" for h in header)
        trs = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
        return f"<table><thead><tr>{th}</tr></thead><tbody>{trs}</tbody></table>"

    event_rows = [
        (when.isoformat(sep=" ", timespec="seconds"), app, EVENT_STYLES[kind][0], kind, d[:200])
        for when, app, kind, d in events
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{e(title)}</title>",
        "<style>body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;"
        "margin:1em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}"
        "td{font-variant-numeric:tabular-nums}svg{max-width:100%;height:auto}</style>",
        "</head><body>",
        f"<h1>{e(title)}</h1>",
        f"<p>Generated {e(now.isoformat(sep=' ', timespec='seconds'))} UTC.</p>",
        table(head, body),
        svg,
        "<h2>Events</h2>",
        table(("written_at (UTC)", "stream", "what", "event", "detail"), event_rows)
        if event_rows
        else "<p>none</p>",
        "</body></html>",
    ]
    return "\n".join(parts)


def render_report(facts: pa.Table, out: Path, *, title: str = "mssql-cdc report") -> Path:
    """Draws ``facts`` (``sink.facts_history``'s columns) into ``out``; the extension picks
    the format (:data:`FORMATS`). Returns ``out``.

    Raises:
        ValueError: an extension not in :data:`FORMATS`, or matplotlib is not installed.
    """
    fmt = out.suffix.lower()
    if fmt not in FORMATS:
        raise ValueError(
            f"--out {str(out)!r}: the extension picks the format, one of {', '.join(FORMATS)}"
        )
    streams = stream_series(facts)
    fig = report_figure(streams, title)
    if fmt == ".html":
        svg = _figure_bytes(fig, "svg").decode()
        svg = svg[svg.find("<svg") :]  # drop the XML prolog and DOCTYPE inside HTML
        now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
        out.write_text(report_html(streams, title, svg, now), encoding="utf-8")
    else:
        out.write_bytes(_figure_bytes(fig, fmt[1:]))
    return out
