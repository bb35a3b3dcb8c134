"""Planning a micro-batch: which capture instance reads which LSNs, in how many ranges.

Pure functions over LSNs and counts (the driver fetches them), so they are tested without a
server. A batch covers the commits ``low <= lsn <= high``; each capture instance of the table
reads from its ``start_lsn`` until the next newer instance's ``start_lsn``
(docs/reference/sql-server-cdc.md, "Schema changes and capture instances"), and each
instance's part is cut at commit boundaries into ranges of about equal change rows, at least
``min_rows`` each, at most ``max_parts`` in all.
"""

from __future__ import annotations

from collections.abc import Sequence

from mssql_cdc._native import Lsn

__all__ = ["MIN_ROWS_PER_PARTITION", "instance_segments", "split_commits"]

#: a range holds about this many change rows or more, so small batches read in one partition
MIN_ROWS_PER_PARTITION = 50_000


def instance_segments(
    instances: Sequence[tuple[str, Lsn]], low: Lsn, high: Lsn
) -> list[tuple[str, Lsn, Lsn]]:
    """``(capture instance, from, to)`` covering ``low..high``, oldest instance first.

    ``instances`` are the table's ``(name, start_lsn)``, oldest first. The part below the
    oldest instance's start is left to the retention check (it is not covered).
    """
    out = []
    for i, (name, start) in enumerate(instances):
        seg_low = max(low, start)
        seg_high = high
        if i + 1 < len(instances):
            seg_high = min(high, instances[i + 1][1].prev())
        if seg_low <= seg_high:
            out.append((name, seg_low, seg_high))
    return out


def split_commits(
    counts: Sequence[tuple[Lsn, int]],
    low: Lsn,
    high: Lsn,
    parts: int,
) -> list[tuple[Lsn, Lsn]]:
    """Cut ``low..high`` into at most ``parts`` ranges of about equal change rows.

    ``counts`` are ``(commit LSN, change rows)`` in LSN order within the range. Each range
    ends on a commit (the last one at ``high``) and the ranges tile ``low..high`` without gap
    or overlap.
    """
    total = sum(n for _, n in counts)
    if parts <= 1 or total == 0 or len(counts) < 2:
        return [(low, high)]
    target = total / parts
    out: list[tuple[Lsn, Lsn]] = []
    start = low
    seen = 0
    for index, (lsn, rows) in enumerate(counts):
        seen += rows
        is_last_commit = index == len(counts) - 1
        if not is_last_commit and len(out) < parts - 1 and seen >= target * (len(out) + 1):
            out.append((start, lsn))
            start = lsn.next()
    out.append((start, high))
    return out


def partition_count(total_rows: int, max_parts: int, min_rows: int) -> int:
    """How many ranges ``total_rows`` change rows are read in (at least 1)."""
    return max(1, min(max_parts, total_rows // max(min_rows, 1)))
