"""The option declaration drives parsing, errors, the docs table; no option does nothing."""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import re
from pathlib import Path

import pytest

from mssql_cdc import options as options_module
from mssql_cdc.option_kinds import OPTIONAL_TEXT, TEXT
from mssql_cdc.options import OPTIONS, ReaderOptions, SourceOptions, markdown_table, parse_options

ROOT = Path(__file__).resolve().parents[2]
BASE = {"connectionString": "Server=h;PWD=s3cret-pw", "captureInstance": "dbo_orders"}
FREE_TEXT = (TEXT, OPTIONAL_TEXT)
#: every declared option with every kind of value it refuses
BAD_VALUES = [
    pytest.param(o, value, id=f"{o.name}-{i}")
    for o in OPTIONS
    for i, value in enumerate(o.kind.bad)
] + [pytest.param(o, " ", id=f"{o.name}-blank") for o in OPTIONS if o.required]
#: values no option but free text allows, whatever its kind: NUL, a tab-only blank and 10,000
#: characters
UNIVERSAL_BAD = ("\x00", " \t ", "x" * 10_000)
UNIVERSAL = [
    pytest.param(o, value, id=f"{o.name}-universal-{i}")
    for o in OPTIONS
    if o.kind not in FREE_TEXT
    for i, value in enumerate(UNIVERSAL_BAD)
]


def _script():
    spec = importlib.util.spec_from_file_location(
        "options_table", ROOT / "scripts/options_table.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_typeddict_lists_exactly_the_declared_names():
    assert list(SourceOptions.__annotations__) == [o.name for o in OPTIONS]
    assert len({o.name.lower() for o in OPTIONS}) == len(OPTIONS)


def test_every_option_but_free_text_declares_values_it_refuses():
    for o in OPTIONS:
        assert o.kind.bad or o.kind in FREE_TEXT, o.name
        assert o.doc, o.name
        assert o.default_doc, o.name
        assert o.kind.allowed, o.name


def test_declared_defaults_are_what_parsing_gives():
    parsed = parse_options(BASE)
    for f in dataclasses.fields(ReaderOptions):
        if f.default is not dataclasses.MISSING:
            assert getattr(parsed, f.name) == f.default, f.name


@pytest.mark.parametrize(("option", "value"), BAD_VALUES + UNIVERSAL)
def test_every_bad_value_of_every_option_names_the_option_and_what_is_allowed(option, value):
    given = {**BASE, option.name.lower(): value}  # lower-cased, as Spark passes names
    with pytest.raises(ValueError, match=f"Option {option.name!r}") as info:
        parse_options(given)
    message = str(info.value)
    if option.required and not value.strip():
        assert message == f"Option {option.name!r} is required"
        return
    assert f"Option {option.name!r} has the value " in message
    assert f"allowed: {option.kind.allowed}" in message
    if option.secret:
        assert "<hidden>" in message
    if option.kind.choices:
        assert all(word in message for word in option.kind.choices)


@pytest.mark.parametrize("option", [o for o in OPTIONS if o.secret], ids=lambda o: o.name)
def test_secrets_are_hidden_in_repr_and_errors(option):
    secret = "Zz-secret-9]\n"
    parsed = parse_options({**BASE, option.name: secret})
    assert secret not in repr(parsed)
    assert "Zz-secret-9" not in repr(parsed)
    refused = option.refuse(secret)
    assert "Zz-secret-9" not in str(refused)
    assert "<hidden>" in str(refused)


def test_the_docs_table_is_the_declaration():
    page = (ROOT / "docs/data-sources.md").read_text(encoding="utf-8")
    assert _script().render(page) == page, "run: python scripts/options_table.py"
    for o in OPTIONS:
        assert f"| `{o.name}` |" in markdown_table()


def test_no_option_is_inert_and_schema_change_policy_parses_without_a_warning(caplog, monkeypatch):
    """schemaChangePolicy was the last inert option (docs/schema-changes.md gives it effect)."""
    assert [o.name for o in OPTIONS if o.inert is not None] == []
    monkeypatch.setattr(options_module, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="mssql_cdc"):
        assert parse_options(BASE).schema_change_policy == "classify"
        assert parse_options({**BASE, "schemachangepolicy": "FAIL"}).schema_change_policy == "fail"
        parse_options({**BASE, "schemaChangePolicy": "classify"})
    assert not caplog.records
    assert "no effect yet" not in markdown_table()


def test_no_option_in_effect_is_read_by_nothing():
    """An option is either read by a module of the package or declared inert."""
    sources = [
        p.read_text(encoding="utf-8")
        for p in (ROOT / "src/mssql_cdc").rglob("*.py")
        if p.name not in ("options.py", "option_kinds.py") and "emulator" not in p.parts
    ]
    for o in OPTIONS:
        read = any(re.search(rf"\.{o.attr}\b", text) for text in sources)
        assert read == (o.inert is None), o.name


@pytest.mark.parametrize(
    "option", [o for o in OPTIONS if o.kind not in FREE_TEXT], ids=lambda o: o.name
)
def test_a_good_value_with_a_nul_appended_is_refused(option):
    """A NUL cut off by a C layer would turn a refused value into an accepted one."""
    samples = [*option.kind.choices, "true", "1", "1048576", "auto", "earliest", "UTC", "a:b"]
    accepted = 0
    for sample in samples:
        try:
            option.kind.parse(sample)
        except ValueError:
            continue
        accepted += 1
        with pytest.raises(ValueError, match=f"Option {option.name!r}"):
            parse_options({**BASE, option.name: sample + "\x00"})
    assert accepted or option.kind.parse.__name__ in ("_snapshot_chunks", "_snapshot_keys")
