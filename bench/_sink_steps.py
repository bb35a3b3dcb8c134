"""The sink's per-batch DEBUG line (docs/sink.md), collected for the benchmarks.

``micro-batch <id>: <rows> rows in <ms> ms (checks <ms> ms, bronze <ms> ms, ...)`` becomes
``{"total": ms, "checks": ms, "bronze": ms, ...}``, one dict per batch, in order.
"""

from __future__ import annotations

import logging
import re

_PAIR = re.compile(r"(\w+) (\d+) ms")


def collect_sink_steps() -> list[dict[str, int]]:
    """Turns on the ``mssql_cdc.sink`` DEBUG line and returns the list it appends each batch's
    step timings to (milliseconds; ``total`` is the whole batch)."""
    steps: list[dict[str, int]] = []

    class Steps(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            found = _PAIR.findall(message)
            if "micro-batch" in message and found:
                steps.append({("total" if n == "in" else n): int(ms) for n, ms in found})

    sink_log = logging.getLogger("mssql_cdc.sink")
    sink_log.setLevel(logging.DEBUG)
    sink_log.addHandler(Steps())
    return steps


def median_steps(steps: list[dict[str, int]]) -> str:
    """``"checks 300, bronze 408, ..."``: each step's median over ``steps`` (milliseconds;
    a step a batch did not take counts as 0)."""
    import statistics

    names = [name for name in steps[0] if name != "total"]
    return ", ".join(f"{n} {statistics.median(s.get(n, 0) for s in steps):.0f}" for n in names)
