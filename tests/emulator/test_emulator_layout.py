"""The emulator's package layout: importing it loads none of the product, and the import graph
check (`make lint`) finds a cycle when there is one (ADR 0080)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("check_imports", ROOT / "scripts/check_imports.py")
assert _spec is not None
assert _spec.loader is not None
check_imports = importlib.util.module_from_spec(_spec)
sys.modules["check_imports"] = check_imports  # dataclasses look their module up
_spec.loader.exec_module(check_imports)


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return set(out.split())


def test_starting_the_emulator_loads_none_of_the_product():
    pytest.importorskip("duckdb")
    start = ["from mssql_cdc.emulator import Emulator", "with Emulator() as emu:", "    emu.port"]
    loaded = _loaded_after("\n".join(start))
    product = {m for m in loaded if m.startswith("mssql_cdc.") and ".emulator" not in m}
    # the two leaves the emulator uses, the native extension (Lsn) and the zone names, and the
    # exception module the extension loads; no pipeline, sink, source or options
    assert product == {"mssql_cdc._native", "mssql_cdc._timezones", "mssql_cdc.errors"}
    assert "pyspark" not in loaded


def test_the_product_facade_resolves_its_names_on_first_use():
    loaded = _loaded_after("import mssql_cdc")
    assert not {m for m in loaded if m.startswith("mssql_cdc.")}
    loaded = _loaded_after("from mssql_cdc import Lsn, SourceOptions, stream")
    assert {"mssql_cdc._native", "mssql_cdc.options", "mssql_cdc.pipeline"} <= loaded


def test_the_facades_name_an_unknown_attribute():
    import mssql_cdc  # noqa: PLC0415 (the test is about what this import does)
    import mssql_cdc.emulator  # noqa: PLC0415

    for facade in (mssql_cdc, mssql_cdc.emulator):
        with pytest.raises(AttributeError, match="no_such_name"):
            _ = facade.no_such_name
    assert {"DEFAULT_PASSWORD", "Emulator"} <= set(dir(mssql_cdc.emulator))


def test_the_import_check_finds_a_cycle_and_an_upward_import(tmp_path, monkeypatch):
    package = tmp_path / "mssql_cdc"
    layer = package / "emulator" / "protocol"
    layer.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "emulator" / "__init__.py").write_text("")
    (layer / "__init__.py").write_text("")
    (layer / "a.py").write_text("from mssql_cdc.emulator.protocol import b\n")
    (layer / "b.py").write_text("def f():\n    from mssql_cdc.emulator.protocol import a\n")
    (package / "emulator" / "control.py").write_text("")
    (layer / "c.py").write_text("import mssql_cdc.emulator.control\n")
    monkeypatch.setattr(check_imports, "ROOT", tmp_path)
    monkeypatch.setattr(check_imports, "KNOWN_CYCLES", set())
    assert check_imports.main() == 1


def test_the_package_passes_the_import_check(capsys):
    assert check_imports.main() == 0
    assert "no cycle" in capsys.readouterr().out


def test_the_import_check_keeps_features_over_the_adapters():
    rule = check_imports.feature_violation
    assert rule("mssql_cdc.validate.reconcile", "mssql_cdc.sink.ledger.ledger") is None
    assert rule("mssql_cdc.cli.status", "mssql_cdc.pipeline.cdc_stream") is None
    assert rule("mssql_cdc.snapshots.backfill", "mssql_cdc.snapshots.chunked") is None
    assert "no feature" in rule("mssql_cdc.sink.delta", "mssql_cdc.pipeline.start")
    assert "no other feature" in rule("mssql_cdc.validate.reconcile", "mssql_cdc.silver.table")
    assert "no other feature" in rule("mssql_cdc.silver.apply", "mssql_cdc.validate.buckets")
    assert rule("mssql_cdc.pipeline.start", "mssql_cdc.snapshots.bootstrap") is None
    assert "no other feature" in rule("mssql_cdc.snapshots.switch", "mssql_cdc.pipeline.start")
    assert "no feature" in rule("mssql_cdc.sink.ledger.ledger", "mssql_cdc.snapshots.full")
