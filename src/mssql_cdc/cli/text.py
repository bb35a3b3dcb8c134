"""Plain-text tables for the command line (no dependency, no colours)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["count_text", "table_text"]


def table_text(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned text columns separated by two spaces, numbers right-aligned (a cell that
    starts with a digit or ``-``), with a rule under the header."""
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = []
        for cell, width in zip(cells, widths, strict=True):
            numeric = bool(cell) and (cell[0].isdigit() or cell == "-")
            parts.append(cell.rjust(width) if numeric else cell.ljust(width))
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def count_text(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` with thousands separators and ``noun``, plural unless ``n`` is 1:
    ``count_text(1, "micro-batch", "micro-batches")`` is ``"1 micro-batch"``,
    ``count_text(2262, "row")`` is ``"2,262 rows"``."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
