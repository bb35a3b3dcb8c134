"""mssql_cdc.Lsn: the Python face of the C LSN code (native/src/util/lsn.c)."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mssql_cdc import Lsn

lsn_bytes = st.binary(min_size=10, max_size=10)


def test_parse_gives_the_documented_example_parts():
    # docs/reference/sql-server-cdc.md: VLF 42, block 500, slot 3.
    lsn = Lsn.parse("0x0000002A000001F40003")
    assert (lsn.vlf, lsn.block, lsn.slot) == (42, 500, 3)
    assert bytes(lsn) == bytes.fromhex("0000002A000001F40003")
    assert str(lsn) == "0x0000002A000001F40003"
    assert repr(lsn) == "Lsn('0x0000002A000001F40003')"
    assert lsn.format_parts() == "0000002a:000001f4:0003"


@pytest.mark.parametrize(
    "text",
    [
        "0x0000002a000001f40003",
        "0000002A000001F40003",
        "0X2A000001F40003",
        "2a000001f40003",
        "0000002a:000001f4:0003",
        "2A:1F4:3",
    ],
)
def test_parse_accepts_every_documented_form(text):
    assert Lsn.parse(text) == Lsn.from_parts(42, 500, 3)


def test_short_text_is_left_padded_with_zeros():
    assert str(Lsn.parse("0x1")) == "0x00000000000000000001"
    assert str(Lsn.parse("ABC")) == "0x00000000000000000ABC"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "empty"),
        ("0x", "no hex digits"),
        ("0x0000002G000001F40003", "'G' at position 9"),
        ("0x" + "1" * 21, "21 hex digits"),
        (" 0x1", "' ' at position 0"),
        ("1:2", "three parts"),
        ("123456789:0:0", "VLF part"),
        ("0x\u00e91", "not a hex digit"),
    ],
)
def test_bad_text_is_a_value_error_that_says_what_was_wrong(text, says):
    with pytest.raises(ValueError, match="invalid LSN") as info:
        Lsn.parse(text)
    assert says in str(info.value)


def test_long_bad_text_is_quoted_only_in_part():
    with pytest.raises(ValueError, match=r"\.\.\.") as info:
        Lsn.parse("z" * 500)
    assert len(str(info.value)) < 200


def test_parse_rejects_non_str():
    with pytest.raises(TypeError, match="takes a str"):
        Lsn.parse(b"0x01")  # type: ignore[arg-type]


def test_constructor_takes_ten_bytes_or_text_or_an_lsn():
    raw = bytes.fromhex("0000002A000001F40003")
    assert Lsn(raw) == Lsn(bytearray(raw)) == Lsn(memoryview(raw)) == Lsn("0x2A000001F40003")
    lsn = Lsn(raw)
    assert Lsn(lsn) is lsn
    with pytest.raises(ValueError, match="expected 10 bytes, got 9"):
        Lsn(raw[:9])
    with pytest.raises(TypeError, match="not int"):
        Lsn(42)  # type: ignore[arg-type]


def test_next_and_prev_carry_like_fn_cdc_increment_lsn():
    assert str(Lsn.from_parts(42, 500, 0xFFFF).next()) == "0x0000002A000001F50000"
    assert str(Lsn.from_parts(42, 0xFFFFFFFF, 0xFFFF).next()) == "0x0000002B000000000000"
    assert Lsn.from_parts(43, 0, 0).prev() == Lsn.from_parts(42, 0xFFFFFFFF, 0xFFFF)
    with pytest.raises(OverflowError, match="largest LSN"):
        Lsn("0x" + "F" * 20).next()
    with pytest.raises(OverflowError, match="zero LSN"):
        Lsn("0x0").prev()


@pytest.mark.parametrize(
    ("vlf", "block", "slot", "says"),
    [(-1, 0, 0, "vlf"), (0, 2**32, 0, "block"), (0, 0, 2**16, "slot")],
)
def test_from_parts_checks_ranges(vlf, block, slot, says):
    with pytest.raises(ValueError, match=f"LSN {says} must be in"):
        Lsn.from_parts(vlf, block, slot)


def test_lsn_is_immutable():
    lsn = Lsn("0x1")
    with pytest.raises(AttributeError):
        lsn.vlf = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        lsn.anything = 3  # type: ignore[attr-defined]


def test_pickle_and_copy_round_trip():
    lsn = Lsn.from_parts(1, 2, 3)
    assert pickle.loads(pickle.dumps(lsn)) == lsn
    assert copy.deepcopy(lsn) == lsn


def test_comparison_with_other_types_is_not_equal_and_not_ordered():
    lsn = Lsn("0x1")
    assert lsn != "0x00000000000000000001"
    assert lsn != bytes(lsn)
    with pytest.raises(TypeError):
        _ = lsn < "0x2"  # type: ignore[operator]


@given(lsn_bytes)
def test_parse_of_format_is_identity(raw):
    lsn = Lsn(raw)
    assert Lsn.parse(str(lsn)) == lsn
    assert Lsn.parse(lsn.format_parts()) == lsn
    assert bytes(Lsn.parse(str(lsn))) == raw


@given(lsn_bytes, lsn_bytes)
def test_order_is_byte_order_and_hash_follows_equality(a, b):
    x, y = Lsn(a), Lsn(b)
    assert (x < y) == (a < b)
    assert (x == y) == (a == b)
    assert (x <= y) == (a <= b)
    if x == y:
        assert hash(x) == hash(y)


@given(lsn_bytes)
def test_next_is_the_integer_successor(raw):
    value = int.from_bytes(raw, "big")
    lsn = Lsn(raw)
    if value == 2**80 - 1:
        with pytest.raises(OverflowError):
            lsn.next()
    else:
        assert int.from_bytes(bytes(lsn.next()), "big") == value + 1
        assert lsn.next().prev() == lsn


@given(st.text(max_size=30))
def test_any_text_parses_or_raises_value_error(text):
    outcome: Lsn | str
    try:
        outcome = Lsn.parse(text)
    except ValueError as exc:
        outcome = str(exc)
    if isinstance(outcome, Lsn):
        assert Lsn.parse(str(outcome)) == outcome
    else:
        assert outcome.startswith("invalid LSN")
