"""How a hint names the ``mssql-cdc`` command, so that it can be typed where it is printed.

A hint such as the demo's closing ``mssql-cdc status --facts ...`` must name a command that
exists on the user's machine: ``mssql-cdc`` when that is the one on ``PATH`` (an activated venv,
``pip install --user``, a platform's environment), else the path of the script pip installed
into this environment's scripts directory (``venv/bin/mssql-cdc`` of a venv used without
activating it, shown relative to the current directory when it is below it, as
``.venv/bin/mssql-cdc`` in a checkout), else ``<python> -m mssql_cdc.cli``.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

__all__ = ["SCRIPT", "command"]

#: the console script ``[project.scripts]`` of pyproject.toml installs
SCRIPT = "mssql-cdc"


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return False


def command(*, path: str | None = None, scripts: str | None = None, cwd: Path | None = None) -> str:
    """The words that run ``mssql-cdc`` from the current directory.

    Args:
        path: the ``PATH`` to search (default: the environment's).
        scripts: this environment's scripts directory (default: ``sysconfig``'s).
        cwd: the current directory (default: the process's).

    Returns:
        ``"mssql-cdc"`` when ``PATH`` finds this environment's script (or finds one and this
        environment has none); else that script's path, relative to ``cwd`` when it is below
        it; else ``"<sys.executable> -m mssql_cdc.cli"``.
    """
    directory = Path(scripts or sysconfig.get_path("scripts"))
    ours = directory / SCRIPT
    found = shutil.which(SCRIPT, path=path if path is not None else os.environ.get("PATH"))
    if found is not None and (not ours.is_file() or _same_file(Path(found), ours)):
        return SCRIPT
    if ours.is_file():
        here = (cwd or Path.cwd()).resolve()
        try:
            return str(ours.resolve().relative_to(here))
        except ValueError:
            return str(ours)
    return f"{sys.executable} -m mssql_cdc.cli"
