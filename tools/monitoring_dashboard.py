"""Writes sql/monitoring/mssql-cdc.lvdash.json, the Databricks SQL (AI/BI, "Lakeview")
dashboard over a facts table, from the queries in sql/monitoring/ (docs/monitoring.md).

Run after changing a query: ``python tools/monitoring_dashboard.py``. The tests check that the
file is what this script writes, so the dashboard and the queries cannot drift apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SQL = Path(__file__).resolve().parents[1] / "sql" / "monitoring"
OUT = SQL / "mssql-cdc.lvdash.json"
#: the facts table the dashboard opens with; the "Facts table" box at the top changes it
DEFAULT_FACTS = "main.ops.ingestion_facts"
#: dataset name (the .sql file's stem) and its display name
DATASETS = {
    "health": "Stream health",
    "timeline": "Micro-batches (24 h)",
    "events": "Events (7 days)",
    "warnings": "Reader warnings (7 days)",
}


def _dataset(name: str, display: str) -> dict[str, Any]:
    default = {"dataType": "STRING", "values": [{"value": DEFAULT_FACTS}]}
    return {
        "name": name,
        "displayName": display,
        "queryLines": (SQL / f"{name}.sql").read_text().splitlines(keepends=True),
        "parameters": [
            {
                "displayName": "facts",
                "keyword": "facts",
                "dataType": "STRING",
                "defaultSelection": {"values": default},
            }
        ],
    }


def _fields(columns: list[str]) -> list[dict[str, str]]:
    return [{"name": c, "expression": f"`{c}`"} for c in columns]


def _position(x: int, y: int, width: int, height: int) -> dict[str, int]:
    return {"x": x, "y": y, "width": width, "height": height}


def _table(
    name: str, dataset: str, columns: list[str], title: str, pos: dict[str, int]
) -> dict[str, Any]:
    query = {"datasetName": dataset, "fields": _fields(columns), "disaggregated": True}
    spec = {
        "version": 1,
        "widgetType": "table",
        "encodings": {"columns": [{"fieldName": c, "displayName": c} for c in columns]},
        "frame": {"showTitle": True, "title": title},
    }
    return {
        "widget": {"name": name, "queries": [{"name": "main_query", "query": query}], "spec": spec},
        "position": pos,
    }


def _line(name: str, y: str, title: str, unit: str, pos: dict[str, int]) -> dict[str, Any]:
    columns = ["written_at", y, "app_id"]
    query = {"datasetName": "timeline", "fields": _fields(columns), "disaggregated": True}
    spec = {
        "version": 3,
        "widgetType": "line",
        "encodings": {
            "x": {
                "fieldName": "written_at",
                "scale": {"type": "temporal"},
                "displayName": "written_at (UTC)",
            },
            "y": {"fieldName": y, "scale": {"type": "quantitative"}, "displayName": unit},
            "color": {
                "fieldName": "app_id",
                "scale": {"type": "categorical"},
                "displayName": "stream",
            },
        },
        "frame": {"showTitle": True, "title": title},
    }
    return {
        "widget": {"name": name, "queries": [{"name": "main_query", "query": query}], "spec": spec},
        "position": pos,
    }


def _facts_box() -> dict[str, Any]:
    """A text box that sets every dataset's ``facts`` parameter."""
    queries = [
        {
            "name": f"parameter_{d}_facts",
            "query": {
                "datasetName": d,
                "parameters": [{"name": "facts", "keyword": "facts"}],
                "disaggregated": False,
            },
        }
        for d in DATASETS
    ]
    fields = [{"parameterName": "facts", "queryName": f"parameter_{d}_facts"} for d in DATASETS]
    spec = {
        "version": 2,
        "widgetType": "filter-text-entry",
        "encodings": {"fields": fields},
        "frame": {"showTitle": True, "title": "Facts table"},
    }
    return {
        "widget": {"name": "facts_table", "queries": queries, "spec": spec},
        "position": _position(0, 0, 4, 2),
    }


def _counter() -> dict[str, Any]:
    field = {"name": "sum(unhealthy)", "expression": "SUM(`unhealthy`)"}
    query = {"datasetName": "health", "fields": [field], "disaggregated": False}
    spec = {
        "version": 2,
        "widgetType": "counter",
        "encodings": {"value": {"fieldName": "sum(unhealthy)", "displayName": "unhealthy streams"}},
        "frame": {"showTitle": True, "title": "Unhealthy streams"},
    }
    return {
        "widget": {
            "name": "unhealthy_streams",
            "queries": [{"name": "main_query", "query": query}],
            "spec": spec,
        },
        "position": _position(4, 0, 2, 2),
    }


def dashboard() -> dict[str, Any]:
    """The dashboard definition."""
    health = [
        "app_id",
        "target",
        "last_written_at",
        "hours_since_last",
        "ingestion_lag_seconds",
        "capture_lag_seconds",
        "headroom_left_hours",
        "last_duration_ms",
        "problems",
    ]
    events = ["written_at", "app_id", "event", "rows", "lsn", "lost_from_ts", "lost_to_ts"]
    warnings = ["app_id", "warning", "recorded", "first_at", "last_at"]
    layout = [
        _facts_box(),
        _counter(),
        _table(
            "health",
            "health",
            health,
            "Streams: the newest micro-batch of each",
            _position(0, 2, 6, 5),
        ),
        _line(
            "rows_per_second", "rows_per_second", "Rows per second", "rows/s", _position(0, 7, 3, 6)
        ),
        _line("rows_per_batch", "rows", "Rows per micro-batch", "rows", _position(3, 7, 3, 6)),
        _line(
            "ingestion_lag",
            "ingestion_lag_seconds",
            "Ingestion lag",
            "seconds",
            _position(0, 13, 3, 6),
        ),
        _line(
            "capture_lag", "capture_lag_seconds", "Capture lag", "seconds", _position(3, 13, 3, 6)
        ),
        _line(
            "headroom",
            "retention_headroom_hours",
            "Retention headroom",
            "hours",
            _position(0, 19, 3, 6),
        ),
        _line("duration", "duration_seconds", "Batch duration", "seconds", _position(3, 19, 3, 6)),
        _table(
            "events",
            "events",
            [*events, "detail"],
            "Events (alert on resnapshot and data_skipped)",
            _position(0, 25, 6, 5),
        ),
        _table("warnings", "warnings", warnings, "Reader warnings", _position(0, 30, 6, 4)),
    ]
    return {
        "datasets": [_dataset(name, display) for name, display in DATASETS.items()],
        "pages": [{"name": "streams", "displayName": "mssql-cdc streams", "layout": layout}],
    }


def dashboard_text() -> str:
    """The file's text."""
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    OUT.write_text(dashboard_text())
    print(f"wrote {OUT}")
