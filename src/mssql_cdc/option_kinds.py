"""The kinds of option values: how a string is read, what is allowed, what is refused.

A :class:`Kind` is one rule for one shape of value (a boolean, a count, a choice, an LSN, ...).
:mod:`mssql_cdc.options` declares each option with a kind; parsing, the error text, the docs
table and the tests all read the kind, so a rule is written once.

A kind's ``parse`` reads the option's text and raises :class:`RefusedError` for a value it does not
allow; :mod:`mssql_cdc.options` turns that into a ``ValueError`` naming the option, the value
(``<hidden>`` for secrets) and ``Kind.allowed``. ``Kind.bad`` holds sample values the kind
refuses (wrong type, out of range, not among the choices), for tests that feed every option
every kind of bad value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from mssql_cdc._native import Lsn
from mssql_cdc._timezones import windows_to_iana

__all__ = [
    "BOOL",
    "CAPTURE_INSTANCE",
    "ENDING_LSN",
    "INT32_MAX",
    "LSN",
    "OPTIONAL_TEXT",
    "SNAPSHOT_CHUNKS",
    "SNAPSHOT_KEYS",
    "STARTING_LSN",
    "TEXT",
    "TIME_ZONE",
    "TOKEN_PROVIDER",
    "EndingLsn",
    "Kind",
    "RefusedError",
    "StartingLsn",
    "between",
    "choice",
    "count",
    "count_or_auto",
    "non_negative",
]

T = TypeVar("T")
C = TypeVar("C", bound=str)

StartingLsn = Literal["earliest", "latest"] | Lsn
EndingLsn = Literal["latest"] | Lsn

INT32_MAX = 2**31 - 1
_DIGITS = re.compile(r"\+?[0-9]{1,10}")  # ASCII digits only; the range is checked after
_TRUE = frozenset({"true", "1", "yes", "y"})
_FALSE = frozenset({"false", "0", "no", "n"})
_MAX_INSTANCE_NAME = 100
#: inputs no number kind allows: signs, fractions, superscripts, other scripts' digits, sizes
_NOT_NUMBERS = ("x", "", "1.5", "++5", "\u00b2", "\u0661\u0662", "9" * 5000, "1e3", "0x10")


class RefusedError(ValueError):
    """A value the kind does not allow (the caller names the option and what is allowed)."""


@dataclass(frozen=True)
class Kind(Generic[T]):
    """One shape of option value.

    Attributes:
        allowed: what is allowed, as the error message and the docs table say it.
        parse: reads the option's text; raises :class:`RefusedError` for a value not allowed.
        bad: sample values ``parse`` refuses, for tests (empty for free text).
        choices: the allowed words of a choice, in their documented spelling.
    """

    allowed: str
    parse: Callable[[str], T]
    bad: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()


def _text(value: str) -> str:
    return value


def _optional_text(value: str) -> str | None:
    return value.strip() or None


#: any text, kept as given (secrets, user names, the connection string)
TEXT: Kind[str] = Kind("any text", _text)
#: any text, stripped; blank is the same as not giving the option
OPTIONAL_TEXT: Kind[str | None] = Kind("any text (blank = not set)", _optional_text)


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise RefusedError(value)


#: strict booleans, so that ``failOnDataLoss=ture`` never turns a guard off
BOOL: Kind[bool] = Kind(
    "true, false, 1, 0, yes, no, y or n (any case)",
    _bool,
    bad=("ture", "", "2", "on", "truee", "\u0661"),
)


def _whole_number(value: str) -> int | None:
    text = value.strip()
    return int(text) if _DIGITS.fullmatch(text) else None


def _ranged(lowest: int, maximum: int) -> Callable[[str], int]:
    def parse(value: str) -> int:
        number = _whole_number(value)
        if number is None or not lowest <= number <= maximum:
            raise RefusedError(value)
        return number

    return parse


def count(maximum: int = INT32_MAX) -> Kind[int]:
    """An integer from 1 to ``maximum`` (ASCII digits)."""
    return Kind(
        f"an integer from 1 to {maximum}",
        _ranged(1, maximum),
        bad=("0", "-1", str(maximum + 1), *_NOT_NUMBERS),
    )


def non_negative(maximum: int = INT32_MAX) -> Kind[int]:
    """An integer from 0 to ``maximum`` (ASCII digits)."""
    return Kind(
        f"an integer from 0 to {maximum}",
        _ranged(0, maximum),
        bad=("-1", str(maximum + 1), str(2**40), *_NOT_NUMBERS),
    )


def between(lowest: int, maximum: int) -> Kind[int]:
    """An integer from ``lowest`` to ``maximum`` (ASCII digits)."""
    return Kind(
        f"an integer from {lowest} to {maximum}",
        _ranged(lowest, maximum),
        bad=(str(lowest - 1), "-1", str(maximum + 1), *_NOT_NUMBERS),
    )


def count_or_auto(maximum: int) -> Kind[int | None]:
    """``auto`` (any case; read as ``None``) or an integer from 1 to ``maximum``."""
    numbers = _ranged(1, maximum)

    def parse(value: str) -> int | None:
        return None if value.strip().lower() == "auto" else numbers(value)

    return Kind(
        f"auto or an integer from 1 to {maximum}",
        parse,
        bad=("0", "-2", str(maximum + 1), "automatic", *_NOT_NUMBERS),
    )


def choice(*choices: C) -> Kind[C]:
    """One of ``choices``, matched ignoring case and read in its documented spelling."""

    def parse(value: str) -> C:
        for word in choices:
            if value.strip().lower() == word.lower():
                return word
        raise RefusedError(value)

    return Kind(
        " or ".join(choices) + " (any case)",
        parse,
        bad=("", "none", choices[0] + "x", ",".join(choices)),
        choices=tuple(choices),
    )


def _lsn(value: str) -> Lsn:
    try:
        return Lsn.parse(value.strip())
    except ValueError:
        raise RefusedError(value) from None


_LSN_BAD = ("", "0xZZ", "1" * 21, "-1", "0x 1")
#: an LSN: ``0x`` optional, up to 20 hex digits (left-padded)
LSN: Kind[Lsn] = Kind("an LSN such as 0x0000002A000001F40003", _lsn, bad=_LSN_BAD)


#: the largest LSN: it has no next LSN, so it cannot be a position already processed
_LARGEST_LSN = "0x" + "F" * 20


def _starting_lsn(value: str) -> StartingLsn:
    lowered = value.strip().lower()
    if lowered == "earliest":
        return "earliest"
    if lowered == "latest":
        return "latest"
    lsn = _lsn(value)
    if str(lsn) == _LARGEST_LSN:  # the first batch would read from its next LSN: none exists
        raise RefusedError(value)
    return lsn


#: where a new checkpoint starts; an explicit LSN is taken as already processed, so the first
#: batch reads from its next LSN, which the largest LSN does not have
STARTING_LSN: Kind[StartingLsn] = Kind(
    f"earliest, latest, or an LSN below {_LARGEST_LSN} such as 0x0000002A000001F40003",
    _starting_lsn,
    bad=("newest", _LARGEST_LSN, "ffffffffffffffffffff", *_LSN_BAD),
)


def _ending_lsn(value: str) -> EndingLsn:
    if value.strip().lower() == "latest":
        return "latest"
    return _lsn(value)


#: where a batch read of changes ends (that LSN's changes included)
ENDING_LSN: Kind[EndingLsn] = Kind(
    "latest, or an LSN such as 0x0000002A000001F40003",
    _ending_lsn,
    bad=("earliest", "newest", *_LSN_BAD),
)


def _capture_instance(value: str) -> str:
    if (
        not value.strip()
        or len(value) > _MAX_INSTANCE_NAME
        or "]" in value
        or any(ord(ch) < 32 for ch in value)
    ):
        raise RefusedError(value)
    return value


CAPTURE_INSTANCE: Kind[str] = Kind(
    "a capture instance name of at most 100 characters without ']' or control characters",
    _capture_instance,
    bad=("a]b", "x" * 101, "dbo_orders\n", "a\tb"),
)


def _time_zone(value: str) -> str:
    if value.strip().lower() == "auto":
        return "auto"
    try:
        windows_to_iana(value)
    except ValueError:
        raise RefusedError(value) from None
    return value.strip()


TIME_ZONE: Kind[str] = Kind(
    "auto, or a Windows time zone name such as 'UTC' or 'Pacific Standard Time'",
    _time_zone,
    bad=("Mars Standard Time", "", "Europe/Paris", "+02:00"),
)


_PROVIDER = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def _token_provider(value: str) -> str:
    text = value.strip()
    if text.lower() == "azure-identity":
        return "azure-identity"
    if not _PROVIDER.fullmatch(text):
        raise RefusedError(value)
    return text


#: how the reader gets an access token for each new connection (mssql_cdc.source.tokens)
TOKEN_PROVIDER: Kind[str] = Kind(
    "azure-identity, or module:callable naming a function that returns a token",
    _token_provider,
    bad=("", "module", ":f", "m:", "m:f()", "1m:f", "azure identity", "m f:g"),
)


def _json_list(value: str) -> list[object]:
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):  # RecursionError: absurdly nested input
        parsed = None
    if not isinstance(parsed, list):
        raise RefusedError(value)
    return parsed


def _snapshot_chunks(value: str) -> tuple[tuple[int, object, object], ...]:
    chunks = []
    for item in _json_list(value):
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], int)):
            raise RefusedError(value)
        chunks.append((item[0], item[1], item[2]))
    return tuple(chunks)


SNAPSHOT_CHUNKS: Kind[tuple[tuple[int, object, object], ...]] = Kind(
    "a JSON list of [chunk, lo, hi] (lo inclusive, hi exclusive, null = open)",
    _snapshot_chunks,
    bad=("[" * 100_000, "[[1, 2]]", '{"a": 1}', "", '[["0", 1, 2]]', "[1]"),
)


def _snapshot_keys(value: str) -> tuple[str, ...]:
    keys = _json_list(value)
    if not keys or not all(isinstance(k, str) and k for k in keys):
        raise RefusedError(value)
    return tuple(str(k) for k in keys)


SNAPSHOT_KEYS: Kind[tuple[str, ...]] = Kind(
    'a JSON list of column names (at least one), e.g. ["id"]',
    _snapshot_keys,
    bad=("id", "[]", '[""]', "[1]", ""),
)
