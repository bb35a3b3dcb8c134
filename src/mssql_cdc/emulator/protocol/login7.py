"""LOGIN7 (MS-TDS 2.2.6.4): the fixed header, the offset/length table and FeatureExt.

Strings are UTF-16LE, located by (offset, character count) pairs relative to the start of the
message. The password is obfuscated: each byte had its nibbles swapped and was then XORed with
0xA5, so the server XORs then swaps back. The password is kept in a field excluded from
``repr`` and is never logged.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from mssql_cdc.emulator.protocol.wire import ProtocolError, decode_utf16

__all__ = ["Login7", "parse"]

FEATURE_FEDAUTH = 0x02
FEATURE_UTF8 = 0x0A
FEATURE_TERMINATOR = 0xFF
_FIXED = struct.Struct("<IIIIIIBBBBiI")


@dataclass(frozen=True)
class Login7:
    tds_version: int
    packet_size: int
    client_pid: int
    option_flags3: int
    hostname: str
    username: str
    app_name: str
    server_name: str
    library: str
    language: str
    database: str
    features: dict[int, bytes]
    password: str = field(repr=False, default="")


def deobfuscate(data: bytes) -> str:
    """Undo the LOGIN7 password obfuscation (XOR 0xA5, then swap nibbles)."""
    plain = bytearray()
    for byte in data:
        x = byte ^ 0xA5
        plain.append(((x << 4) & 0xF0) | (x >> 4))
    return decode_utf16(bytes(plain))


def _features(payload: bytes, offset: int) -> dict[int, bytes]:
    features: dict[int, bytes] = {}
    pos = offset
    while True:
        if pos >= len(payload):
            raise ProtocolError("LOGIN7 FeatureExt has no terminator")
        feature = payload[pos]
        if feature == FEATURE_TERMINATOR:
            return features
        if pos + 5 > len(payload):
            raise ProtocolError("truncated LOGIN7 FeatureExt")
        (length,) = struct.unpack_from("<I", payload, pos + 1)
        end = pos + 5 + length
        if end > len(payload):
            raise ProtocolError("LOGIN7 FeatureExt runs past the message")
        features[feature] = payload[pos + 5 : end]
        pos = end


def fedauth_token(data: bytes) -> str | None:
    """The access token of a FEDAUTH FeatureExt with the SECURITYTOKEN library (2.2.6.4):
    options byte (library << 1 | echo), u32 token length, UTF-16LE token, optional nonce.
    None for another library or a malformed block."""
    if len(data) < 5 or (data[0] >> 1) != 0x01:
        return None
    (length,) = struct.unpack_from("<I", data, 1)
    if length > len(data) - 5 or length % 2:
        return None
    return data[5 : 5 + length].decode("utf-16-le", errors="replace")


def parse(payload: bytes) -> Login7:
    if len(payload) < _FIXED.size + 58:
        raise ProtocolError("LOGIN7 shorter than its fixed part")
    (length, version, packet_size, _prog, pid, _conn, _f1, _f2, _tf, flags3, _tz, _lcid) = (
        _FIXED.unpack_from(payload)
    )
    if length != len(payload):
        raise ProtocolError(f"LOGIN7 length field {length} != message size {len(payload)}")

    def pair(index: int) -> tuple[int, int]:
        off, count = struct.unpack_from("<HH", payload, _FIXED.size + index * 4)
        return off, count

    def text(index: int) -> str:
        off, count = pair(index)
        if off + count * 2 > len(payload):
            raise ProtocolError("LOGIN7 string points past the message")
        return decode_utf16(payload[off : off + count * 2])

    pw_off, pw_len = pair(2)
    if pw_off + pw_len * 2 > len(payload):
        raise ProtocolError("LOGIN7 password points past the message")
    password = deobfuscate(payload[pw_off : pw_off + pw_len * 2])
    features: dict[int, bytes] = {}
    if flags3 & 0x10:
        ext_off, ext_len = pair(5)
        if ext_len < 4 or ext_off + 4 > len(payload):
            raise ProtocolError("LOGIN7 extension pointer is invalid")
        (feature_offset,) = struct.unpack_from("<I", payload, ext_off)
        features = _features(payload, feature_offset)
    return Login7(
        tds_version=version,
        packet_size=packet_size,
        client_pid=pid,
        option_flags3=flags3,
        hostname=text(0),
        username=text(1),
        app_name=text(3),
        server_name=text(4),
        library=text(6),
        language=text(7),
        database=text(8),
        features=features,
        password=password,
    )
