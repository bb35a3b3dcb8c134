"""The dependency ranges of pyproject.toml, for the install checks (scripts/check-install.sh).

    python scripts/dependency_ranges.py lowest EXTRAS             constraints of the lowest run
    python scripts/dependency_ranges.py report MODE EXTRAS VENV   what VENV resolved, checked
    python scripts/dependency_ranges.py dev NAME...               the dev extra's ranges of NAMEs

``lowest`` prints one ``name==floor`` line per requirement of ``[project] dependencies`` and of
the extras named in EXTRAS (comma-separated). pip has no lowest-version resolution, so the
lowest run installs with these lines as a constraints file (pip's ``-c``): every range is held
at its floor while pip resolves everything else. A requirement without one ``>=`` floor, or with
an environment marker, is an error: every range needs a floor CI can install.

``report`` prints each requirement's range and the version installed in VENV, and exits 1 when
one is outside its range or, in MODE ``lowest``, is not its floor. In MODE ``newest`` it also
names the requirements whose newest release on the package index is outside their range (kept
out by an upper bound until CI has run it; docs/installation.md, "Dependency ranges").

``dev`` prints the ``dev`` extra's requirements of the packages named (the test tools the
install checks add to their venvs: the newest releases for that venv's Python, so that a Python
3.10 venv gets a pytest or hypothesis that still supports it).

Runs with the project's .venv (``tomllib``, ``packaging``); reads VENV through its own pip.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent


def requirements(extras: list[str]) -> list[Requirement]:
    """The runtime requirements and those of ``extras``, each name once, in pyproject's order."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    optional = project["optional-dependencies"]
    unknown = [e for e in extras if e not in optional]
    if unknown:
        sys.exit(f"dependency_ranges: no extra {', '.join(unknown)} in pyproject.toml")
    found: dict[str, Requirement] = {}
    for text in [*project["dependencies"], *(r for e in extras for r in optional[e])]:
        req = Requirement(text)
        name = canonicalize_name(req.name)
        if req.marker is not None:
            sys.exit(f"dependency_ranges: {text!r} has a marker; give the lowest run its floor")
        if name in found and found[name].specifier != req.specifier:
            sys.exit(f"dependency_ranges: {name} has two ranges: {found[name]} and {req}")
        found[name] = req
    return list(found.values())


def floor(req: Requirement) -> str:
    lows = [s.version for s in req.specifier if s.operator == ">="]
    if len(lows) != 1:
        sys.exit(f"dependency_ranges: {req} has no single >= floor")
    return lows[0]


def _installed(venv: Path) -> dict[str, str]:
    done = subprocess.run(
        [
            str(venv / "bin/python"),
            "-m",
            "pip",
            "list",
            "--format=json",
            "--disable-pip-version-check",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return {canonicalize_name(p["name"]): p["version"] for p in json.loads(done.stdout)}


def _newest(venv: Path, name: str) -> str | None:
    """The newest release on the index (``pip index versions``), None when pip cannot say."""
    done = subprocess.run(
        [
            str(venv / "bin/python"),
            "-m",
            "pip",
            "index",
            "versions",
            name,
            "--disable-pip-version-check",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    match = re.search(r"^\S+ \(([^)]+)\)", done.stdout, re.M)
    return match[1] if match else None


def report(mode: str, extras: list[str], venv: Path) -> int:
    installed = _installed(venv)
    rows, problems, outside = [], [], []
    for req in requirements(extras):
        name = canonicalize_name(req.name)
        got = installed.get(name)
        rows.append((name, str(req.specifier), got or "-"))
        if got is None or not req.specifier.contains(got, prereleases=True):
            problems.append(f"{name} {got or '(not installed)'} is outside {req.specifier}")
        elif mode == "lowest" and Version(got) != Version(floor(req)):
            problems.append(f"{name} {got} is not the floor of {req.specifier}")
        if mode == "newest":
            newest = _newest(venv, name)
            if newest is not None and not req.specifier.contains(newest):
                outside.append(f"{name} {newest}")
    python = subprocess.run(
        [str(venv / "bin/python"), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    width = max(len(r[0]) for r in rows)
    spec_width = max(len(r[1]) for r in rows)
    print(f"{'package'.ljust(width)}  {'range'.ljust(spec_width)}  {mode} (Python {python})")
    for name, spec, got in rows:
        print(f"{name.ljust(width)}  {spec.ljust(spec_width)}  {got}")
    if outside:
        print("newest on the index, outside the range: " + ", ".join(outside))
    for problem in problems:
        print(f"dependency_ranges: {problem}", file=sys.stderr)
    return 1 if problems else 0


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "lowest":
        for req in requirements([e for e in argv[1].split(",") if e]):
            print(f"{canonicalize_name(req.name)}=={floor(req)}")
        return 0
    if len(argv) >= 2 and argv[0] == "dev":
        wanted = {canonicalize_name(n) for n in argv[1:]}
        with open(ROOT / "pyproject.toml", "rb") as f:
            dev = tomllib.load(f)["project"]["optional-dependencies"]["dev"]
        found = [r for r in dev if canonicalize_name(Requirement(r).name) in wanted]
        if len(found) != len(wanted):
            sys.exit(f"dependency_ranges: the dev extra lacks some of {' '.join(argv[1:])}")
        print("\n".join(found))
        return 0
    if len(argv) == 4 and argv[0] == "report" and argv[1] in ("newest", "lowest"):
        return report(argv[1], [e for e in argv[2].split(",") if e], Path(argv[3]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
