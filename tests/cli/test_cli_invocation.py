"""How hints name the ``mssql-cdc`` command (mssql_cdc.cli.invocation): a command that exists
where the hint is printed, in a checkout and outside one."""

from __future__ import annotations

import sys

from mssql_cdc.cli.invocation import SCRIPT, command


def _script(directory):
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / SCRIPT
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    return script


def test_the_bare_name_when_path_finds_this_environments_script(tmp_path):
    scripts = tmp_path / "venv" / "bin"
    _script(scripts)
    assert command(path=str(scripts), scripts=str(scripts), cwd=tmp_path) == "mssql-cdc"


def test_a_venv_used_without_activating_it_gets_its_scripts_path(tmp_path):
    scripts = tmp_path / "venv" / "bin"
    _script(scripts)
    # below the current directory: relative, as `.venv/bin/mssql-cdc` in a checkout
    assert command(path="", scripts=str(scripts), cwd=tmp_path) == "venv/bin/mssql-cdc"
    # elsewhere: absolute
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    assert command(path="", scripts=str(scripts), cwd=elsewhere) == str(scripts / SCRIPT)


def test_another_environments_script_on_path_is_not_this_one(tmp_path):
    ours = tmp_path / "venv" / "bin"
    other = tmp_path / "other" / "bin"
    _script(ours)
    _script(other)
    assert command(path=str(other), scripts=str(ours), cwd=tmp_path) == "venv/bin/mssql-cdc"


def test_without_a_script_the_module_runs_it(tmp_path):
    empty = tmp_path / "no-scripts"
    empty.mkdir()
    assert command(path="", scripts=str(empty), cwd=tmp_path) == (
        f"{sys.executable} -m mssql_cdc.cli"
    )
