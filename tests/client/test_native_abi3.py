"""mssql_cdc._native as built for CPython's stable ABI (abi3): the types behave as the static
types they replaced (immutable, Connection and Result made only by the module), and error
messages name argument types as before."""

from __future__ import annotations

import array
import datetime
import pathlib

import pytest

from mssql_cdc import Lsn, _native


def test_the_extension_is_the_abi3_build():
    assert pathlib.Path(_native.__file__).name == "_native.abi3.so"


@pytest.mark.parametrize("cls", [Lsn, _native.Connection, _native.Result])
def test_types_are_immutable(cls):
    with pytest.raises(TypeError, match="immutable"):
        cls.anything = 1


@pytest.mark.parametrize("cls", [_native.Connection, _native.Result])
def test_connection_and_result_come_only_from_the_module(cls):
    with pytest.raises(TypeError, match="cannot create"):
        cls()


def test_type_names_in_errors_are_the_full_type_names():
    class Custom:
        pass

    with pytest.raises(TypeError, match=r"not datetime\.date$"):
        Lsn(datetime.date(2024, 1, 1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not Custom$"):
        Lsn.parse(Custom())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"LSN vlf must be an int, not str$"):
        Lsn.from_parts("1", 0, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"user must be a str or None, not bytes$"):
        _native.connect("Server=127.0.0.1,1;Encrypt=no", user=b"sa")


def test_any_bytes_like_object_of_ten_bytes_is_an_lsn():
    raw = bytes.fromhex("0000002A000001F40003")
    assert Lsn(array.array("B", raw)) == Lsn(raw)
    with pytest.raises(ValueError, match="expected 10 bytes, got 12"):
        Lsn(array.array("i", [1, 2, 3]))
