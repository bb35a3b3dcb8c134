"""The AdventureWorks data ships inside the package and is found without a checkout."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from mssql_cdc.emulator import adventureworks
from mssql_cdc.emulator.adventureworks import (
    ENV_DIR,
    default_directory,
    packaged_directory,
    read_rows,
    read_tables,
)

PACKAGE = Path(adventureworks.__file__).resolve().parent


def test_the_default_is_the_packaged_copy_inside_the_package(monkeypatch):
    monkeypatch.delenv(ENV_DIR, raising=False)
    assert default_directory() == packaged_directory()
    assert packaged_directory().is_relative_to(PACKAGE)
    # nothing outside the package is consulted: not the working directory, not a sibling
    monkeypatch.chdir("/")
    assert default_directory() == packaged_directory()


def test_the_packaged_copy_has_every_table_with_its_row_count_and_license():
    directory = packaged_directory()
    specs = read_tables(directory)
    assert {s.qualified for s in specs} == {
        "Sales.Customer",
        "Sales.CurrencyRate",
        "Person.EmailAddress",
        "Production.Product",
        "Purchasing.PurchaseOrderHeader",
        "Purchasing.PurchaseOrderDetail",
    }
    for spec in specs:
        assert (directory / (spec.file + ".gz")).is_file()
        assert len(read_rows(spec, directory)) == spec.rows  # read_rows checks the count too
    assert "MIT License" in (directory / "LICENSE.txt").read_text(encoding="utf-8")
    assert "Microsoft" in (directory / "README.md").read_text(encoding="utf-8")


def test_the_environment_variable_overrides_the_packaged_copy(monkeypatch, tmp_path):
    shutil.copy(packaged_directory() / "tables.json", tmp_path / "tables.json")
    monkeypatch.setenv(ENV_DIR, str(tmp_path))
    assert default_directory() == tmp_path


def test_a_directory_without_tables_json_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv(ENV_DIR, str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match=rf"nowhere.*\${ENV_DIR}.*tables.json"):
        default_directory()


def test_a_plain_file_and_its_gzip_copy_read_the_same(tmp_path):
    directory = packaged_directory()
    spec = next(s for s in read_tables(directory) if s.name == "Product")
    packed = read_rows(spec, directory)
    plain = gzip.decompress((directory / (spec.file + ".gz")).read_bytes())
    (tmp_path / spec.file).write_bytes(plain)
    assert read_rows(spec, tmp_path) == packed
    assert packed[0][0] == "1"  # ProductID of the first product
