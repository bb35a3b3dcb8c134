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
        first_version: the first commit counted: 0, or the oldest commit file when Delta's log
            cleanup removed the first ones (the rows of those are then not counted).
    """

    def __init__(self, table: Path) -> None:
        self._log = table / "_delta_log"
        self._next: int | None = None
        self.first_version: int | None = None
        self.rows = 0
        self.commits = 0

    def refresh(self) -> LandedRows:
        """Reads the commits written since the last call (none while the table does not exist);
        returns ``self``.

        Raises:
            ValueError: a commit file that is not JSON lines of objects (the file named).
            OSError: the log directory cannot be read.
        """
        if self._next is None:
            self._next = self._oldest()
            if self._next is None:
                return self
            self.first_version = self._next
        while True:
            path = self._log / f"{self._next:020d}.json"
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                return self
            rows, commits = _appended(path, text)
            self.rows += rows
            self.commits += commits
            self._next += 1

    def _oldest(self) -> int | None:
        """The oldest commit version in the log; ``None`` when there is none yet."""
        if (self._log / f"{0:020d}.json").is_file():
            return 0
        try:
            names = [p.name for p in self._log.iterdir()]
        except FileNotFoundError:
            return None
        versions = [
            int(n[:20]) for n in names if len(n) == 25 and n.endswith(".json") and n[:20].isdigit()
        ]
        return min(versions, default=None)


def _appended(path: Path, text: str) -> tuple[int, int]:
    """``(rows, 1)`` for a commit file whose ``commitInfo`` is an append of rows, else
    ``(0, 0)``."""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            action = json.loads(line)
            if not isinstance(action, dict):
                raise ValueError(f"a {type(action).__name__}, not an object")
            info = action.get("commitInfo")
            if not isinstance(info, dict) or info.get("operation") not in _APPENDS:
                continue
            rows = int((info.get("operationMetrics") or {}).get("numOutputRows") or 0)
        except (ValueError, TypeError, AttributeError) as exc:
            raise ValueError(f"{path} line {number}: not a Delta commit action: {exc}") from None
        return (rows, 1) if rows else (0, 0)
    return 0, 0
