"""SQL Server collations: their 5-byte TDS form and the code page of their ``varchar`` data.

The wire form is MS-TDS 2.2.5.1.2 (COLLATION): a u32 holding the LCID (bits 0-19), the flags
fIgnoreCase (20), fIgnoreAccent (21), fIgnoreKanaType (22), fIgnoreWidth (23), fBinary (24),
fBinary2 (25), fUTF8 (26) and the collation version (bits 28-31), then a SortId byte that is
non-zero only for the SQL Server (``SQL_``) collations. A client picks the code page of
``char``/``varchar``/``text`` data from it: UTF-8 when fUTF8 is set, else the SortId's code page
for a SQL collation, else the ANSI code page of the LCID.

Names follow "Windows collation name (Transact-SQL)": ``<base>[_<version>]_<options>`` where the
options are ``CI``/``CS``, ``AI``/``AS``, ``KS``, ``WS``, ``SC``, ``UTF8``, ``BIN``, ``BIN2``;
omitting ``KS``/``WS`` means kana type and width are ignored. Text is converted with Python's
codecs for the code page (``cp936``, ``cp932``, ...), never with tables of our own.
"""

from __future__ import annotations

import codecs
import struct
from dataclasses import dataclass

__all__ = ["DEFAULT", "Collation", "UnknownCollationError", "codec_of", "lookup"]

_IGNORE_CASE = 1 << 20
_IGNORE_ACCENT = 1 << 21
_IGNORE_KANA = 1 << 22
_IGNORE_WIDTH = 1 << 23
_BINARY = 1 << 24
_BINARY2 = 1 << 25
_UTF8 = 1 << 26

#: Windows collation designators -> (LCID, ANSI code page) ("Windows collation name", and
#: the LCID/ANSI code page pairs Windows documents for each locale).
_WINDOWS: dict[str, tuple[int, int]] = {
    "latin1_general": (0x0409, 1252),
    "arabic": (0x0401, 1256),
    "chinese_prc": (0x0804, 936),
    "chinese_simplified_pinyin": (0x0804, 936),
    "chinese_taiwan_stroke": (0x0404, 950),
    "chinese_traditional_stroke_count": (0x0404, 950),
    "cyrillic_general": (0x0419, 1251),
    "czech": (0x0405, 1250),
    "estonian": (0x0425, 1257),
    "french": (0x040C, 1252),
    "german_phonebook": (0x10407, 1252),
    "greek": (0x0408, 1253),
    "hebrew": (0x040D, 1255),
    "japanese": (0x0411, 932),
    "korean_wansung": (0x0412, 949),
    "modern_spanish": (0x0C0A, 1252),
    "polish": (0x0415, 1250),
    "thai": (0x041E, 874),
    "turkish": (0x041F, 1254),
    "ukrainian": (0x0422, 1251),
    "vietnamese": (0x042A, 1258),
}

#: SQL Server collations (``SQL_...``): name -> (LCID, flags, SortId, code page), from
#: "SQL Server collation name (Transact-SQL)" (sys.fn_helpcollations) and the sort order ids
#: SQL Server reports for them.
_SQL: dict[str, tuple[int, int, int, int]] = {
    "sql_latin1_general_cp1_ci_as": (
        0x0409,
        _IGNORE_CASE | _IGNORE_KANA | _IGNORE_WIDTH,
        52,
        1252,
    ),
    "sql_latin1_general_cp1_cs_as": (0x0409, _IGNORE_KANA | _IGNORE_WIDTH, 51, 1252),
    "sql_latin1_general_cp1_ci_ai": (
        0x0409,
        _IGNORE_CASE | _IGNORE_ACCENT | _IGNORE_KANA | _IGNORE_WIDTH,
        54,
        1252,
    ),
    "sql_latin1_general_cp850_ci_as": (
        0x0409,
        _IGNORE_CASE | _IGNORE_KANA | _IGNORE_WIDTH,
        42,
        850,
    ),
}

_VERSIONS = {"80": 0, "90": 1, "100": 2, "140": 3}
_REPLACE = "mssql-cdc-replace"


def _replace_per_code_unit(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    bad = exc.object[exc.start : exc.end]
    return "".join("??" if ord(ch) > 0xFFFF else "?" for ch in bad), exc.end


codecs.register_error(_REPLACE, _replace_per_code_unit)


class UnknownCollationError(ValueError):
    """A collation name the emulator does not know (SQL Server error 448)."""


@dataclass(frozen=True)
class Collation:
    """One collation: its name, wire fields and the code page of its non-Unicode data."""

    name: str
    lcid: int
    flags: int
    version: int
    sort_id: int
    code_page: int

    @property
    def utf8(self) -> bool:
        return bool(self.flags & _UTF8)

    @property
    def codec(self) -> str:
        """The Python codec of ``char``/``varchar``/``text`` data in this collation."""
        return "utf-8" if self.utf8 else f"cp{self.code_page}"

    def wire(self) -> bytes:
        """The 5-byte COLLATION structure (MS-TDS 2.2.5.1.2)."""
        info = (self.lcid & 0xFFFFF) | self.flags | (self.version << 28)
        return struct.pack("<IB", info, self.sort_id)

    def without_utf8(self) -> Collation:
        """The closest non-UTF-8 collation, what SQL Server reports to a client that did not
        announce UTF8_SUPPORT (KB5016780): same locale and options, the LCID's code page."""
        if not self.utf8:
            return self
        name = self.name.replace("_UTF8", "").replace("_utf8", "")
        return Collation(name, self.lcid, self.flags & ~_UTF8, self.version, 0, self.code_page)

    def encode(self, text: str) -> bytes:
        """Text in this collation's code page; what it cannot hold becomes ``?``, one per
        UTF-16 code unit (so a character outside the BMP becomes ``??``), as SQL Server's
        conversion from Unicode does."""
        return text.encode(self.codec, errors=_REPLACE)

    def decode(self, data: bytes) -> str:
        return data.decode(self.codec, errors="replace")


def _option_flags(name: str, options: set[str]) -> int:
    if "bin" in options:
        return _BINARY
    if "bin2" in options:
        return _BINARY2
    if "ci" not in options and "cs" not in options:
        raise UnknownCollationError(name)
    flags = _IGNORE_CASE if "ci" in options else 0
    if "ai" in options:
        flags |= _IGNORE_ACCENT
    if "ks" not in options:
        flags |= _IGNORE_KANA
    if "ws" not in options:
        flags |= _IGNORE_WIDTH
    return flags


def _windows(name: str) -> Collation:
    parts = name.split("_")
    lowered = [p.lower() for p in parts]
    for cut in range(len(parts), 0, -1):
        base = "_".join(lowered[:cut])
        if base in _WINDOWS:
            break
    else:
        raise UnknownCollationError(name)
    lcid, code_page = _WINDOWS[base]
    rest = lowered[cut:]
    version = 0
    if rest and rest[0] in _VERSIONS:
        version = _VERSIONS[rest.pop(0)]
    options = set(rest)
    known = {"ci", "cs", "ai", "as", "ks", "ws", "sc", "vss", "utf8", "bin", "bin2"}
    if not options <= known:
        raise UnknownCollationError(name)
    flags = _option_flags(name, options)
    if "utf8" in options:
        if version < 2:  # UTF-8 needs a version 100 or later collation
            raise UnknownCollationError(name)
        flags |= _UTF8
    return Collation(name, lcid, flags, version, 0, code_page)


def lookup(name: str) -> Collation:
    """The collation called ``name`` (case-insensitive); raises :class:`UnknownCollationError`."""
    lowered = name.lower()
    if lowered in _SQL:
        lcid, flags, sort_id, code_page = _SQL[lowered]
        return Collation(name, lcid, flags, 0, sort_id, code_page)
    collation = _windows(name)
    codecs.lookup(collation.codec)  # every code page above has a Python codec
    return collation


def codec_of(wire: bytes) -> str:
    """The Python codec of character data sent with the COLLATION bytes ``wire`` (a client's
    RPC parameter): UTF-8 flag first, then a SQL collation's SortId, then the LCID."""
    if len(wire) != 5:
        return "cp1252"
    info, sort_id = struct.unpack("<IB", wire)
    if info & _UTF8:
        return "utf-8"
    if sort_id:
        for lcid, _flags, sid, code_page in _SQL.values():
            if sid == sort_id and lcid == info & 0xFFFFF:
                return f"cp{code_page}"
        return "cp1252"
    for lcid, code_page in _WINDOWS.values():
        if lcid == info & 0xFFFFF:
            return f"cp{code_page}"
    return "cp1252"


#: The server and database default, SQL_Latin1_General_CP1_CI_AS (bytes 09 04 D0 00 34).
DEFAULT = lookup("SQL_Latin1_General_CP1_CI_AS")
