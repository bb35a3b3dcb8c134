"""Rows appended to a local Delta table so far, read from its commit files (the demo's progress).

A Delta table's log holds one JSON file per commit, ``_delta_log/<version, 20 digits>.json``,
one action per line; Delta Lake on Spark adds a ``commitInfo`` action whose
``operationMetrics.numOutputRows`` is the number of rows a write appended (the Delta protocol's
"Commit Provenance Information": https://github.com/delta-io/delta/blob/master/PROTOCOL.md).
Counting them needs no Spark job, so the demo can print, every two seconds while its streams run,
how many change rows each bronze table holds: the figure its summary table and its
exactly-once check read at the end. Spark's ``numInputRows`` cannot serve: it counts every read
of a micro-batch, and the sink reads a batch's first row once more before it creates a target.

Runs on the driver; local paths only; commit files are written whole (renamed into place), so
a file that exists is complete.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["LandedRows"]

#: operations of Delta Lake on Spark that append rows
_APPENDS = frozenset({"WRITE", "STREAMING UPDATE"})


class LandedRows:
    """The rows and the commits that appended them, of one local Delta table, so far.

    Attributes:
        rows: rows appended by the commits read so far.
        commits: commits read so far that appended at least one row.
    """

    def __init__(self, table: Path) -> None:
        self._log = table / "_delta_log"
        self._next = 0
        self.rows = 0
        self.commits = 0

    def refresh(self) -> LandedRows:
        """Reads the commits written since the last call (none while the table does not exist);
        returns ``self``.

        Raises:
            ValueError: a commit file that is not JSON lines.
        """
        while True:
            try:
                text = (self._log / f"{self._next:020d}.json").read_text(encoding="utf-8")
            except FileNotFoundError:
                return self
            for line in text.splitlines():
                info = json.loads(line).get("commitInfo") if line.strip() else None
                if not isinstance(info, dict) or info.get("operation") not in _APPENDS:
                    continue
                rows = int((info.get("operationMetrics") or {}).get("numOutputRows") or 0)
                if rows:
                    self.rows += rows
                    self.commits += 1
            self._next += 1
