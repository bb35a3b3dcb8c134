"""Cross-references in the docs and the code point at things that exist (issue 40, item 10).

* every ``ADR NNNN`` (or ``ADRs NNNN, NNNN``) cited outside ``docs/adr`` has its file there,
  also when the citation is wrapped over two lines;
* no guide says of a built feature that it is "not built yet".
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ADR_DIR = ROOT / "docs" / "adr"
_CITED = re.compile(r"\bADRs?\s+((?:\d{4})(?:(?:\s*,\s*|\s+and\s+|\s*/\s*)\d{4})*)")


def _texts() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "mkdocs.yml"]
    files += [p for p in (ROOT / "docs").rglob("*.md") if ADR_DIR not in p.parents]
    files += list((ROOT / "src").rglob("*.py")) + list((ROOT / "sql").rglob("*.sql"))
    return files


def cited_adrs(text: str) -> set[str]:
    """The ADR numbers ``text`` cites."""
    found: set[str] = set()
    for match in _CITED.finditer(text):
        found.update(re.findall(r"\d{4}", match.group(1)))
    return found


def test_the_citation_pattern_sees_wrapped_and_listed_numbers() -> None:
    assert cited_adrs("as ADR\n0195 says, and ADRs 0006, 0055 and 0128") == {
        "0195",
        "0006",
        "0055",
        "0128",
    }
    assert cited_adrs("adr/0035-secrets.md") == set()


def test_every_cited_adr_exists() -> None:
    existing = {p.name[:4] for p in ADR_DIR.glob("[0-9][0-9][0-9][0-9]-*.md")}
    missing = {
        f"{path.relative_to(ROOT)}: ADR {number}"
        for path in _texts()
        for number in cited_adrs(path.read_text(encoding="utf-8"))
        if number not in existing
    }
    assert not missing, sorted(missing)


def test_adr_links_name_existing_files() -> None:
    broken = {
        f"{path.relative_to(ROOT)}: {link}"
        for path in _texts()
        for link in re.findall(r"adr/(\d{4}-[A-Za-z0-9-]+\.md)", path.read_text(encoding="utf-8"))
        if not (ADR_DIR / link).is_file()
    }
    assert not broken, sorted(broken)


def test_no_guide_calls_chunked_snapshots_unbuilt() -> None:
    stale = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "docs").glob("*.md")
        if re.search(r"chunked snapshots? (?:is|are) not built", path.read_text(encoding="utf-8"))
    ]
    assert stale == []
