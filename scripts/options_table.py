"""Writes the Options table of docs/data-sources.md from the declaration in mssql_cdc.options.

Usage: python scripts/options_table.py [--check]

The table sits between the two marker comments below; everything else in the page is left
as is. ``--check`` changes nothing and exits 1 when the page's table differs from the
declaration (tests/source/test_option_declaration.py runs the same comparison).
"""

from __future__ import annotations

import sys
from pathlib import Path

from mssql_cdc.options import markdown_table

PAGE = Path(__file__).resolve().parent.parent / "docs" / "data-sources.md"
START = "<!-- options-table: written by scripts/options_table.py from mssql_cdc.options -->\n"
END = "<!-- /options-table -->\n"


def render(page: str) -> str:
    """``page`` with the table between the markers replaced by the declaration's."""
    head, start, rest = page.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise SystemExit(f"{PAGE}: the options-table marker comments are missing")
    return head + START + markdown_table() + END + tail


def main(argv: list[str]) -> int:
    page = PAGE.read_text(encoding="utf-8")
    fresh = render(page)
    if "--check" in argv:
        if fresh != page:
            print(f"{PAGE}: the Options table differs from mssql_cdc.options; run {argv[0]}")
            return 1
        return 0
    PAGE.write_text(fresh, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
