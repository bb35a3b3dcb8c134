"""Bounds-checked byte reading and small TDS string helpers shared by the codec modules.

Every read checks the remaining length first and raises :class:`ProtocolError` instead of
over-reading, so a malformed client message becomes a clean "close this connection" decision
(MS-TDS 2.2.5.1 describes the B_VARCHAR / US_VARCHAR / B_VARBYTE / US_VARBYTE forms).
"""

from __future__ import annotations

import struct

__all__ = ["ProtocolError", "Reader", "b_varchar", "us_varchar"]


class ProtocolError(Exception):
    """A client sent bytes that are not valid TDS; the connection is closed."""


class Reader:
    """A cursor over one complete message payload."""

    __slots__ = ("_data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self._data = data
        self.pos = pos

    @property
    def remaining(self) -> int:
        return len(self._data) - self.pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self._data):
            raise ProtocolError(f"truncated message: need {n} bytes at offset {self.pos}")
        out = self._data[self.pos : self.pos + n]
        self.pos += n
        return out

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return int(struct.unpack("<H", self.take(2))[0])

    def u16be(self) -> int:
        return int(struct.unpack(">H", self.take(2))[0])

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def i32(self) -> int:
        return int(struct.unpack("<i", self.take(4))[0])

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.take(8))[0])

    def b_varchar(self) -> str:
        """B_VARCHAR: a byte count of UTF-16 code units, then UTF-16LE text."""
        return decode_utf16(self.take(self.u8() * 2))

    def us_varchar(self) -> str:
        """US_VARCHAR: a u16 count of UTF-16 code units, then UTF-16LE text."""
        return decode_utf16(self.take(self.u16() * 2))


def decode_utf16(data: bytes) -> str:
    """Decode UTF-16LE; a lone surrogate becomes U+FFFD rather than an exception."""
    return data.decode("utf-16-le", errors="replace")


def b_varchar(text: str) -> bytes:
    raw = text.encode("utf-16-le")
    return bytes([len(raw) // 2]) + raw


def us_varchar(text: str) -> bytes:
    raw = text.encode("utf-16-le")
    return struct.pack("<H", len(raw) // 2) + raw
