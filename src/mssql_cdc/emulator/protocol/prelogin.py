"""PRELOGIN (MS-TDS 2.2.6.5): the option table and the server's encryption decision.

The option table is token u8, offset u16 BE, length u16 BE, ended by 0xFF; offsets count from
the start of the payload. Encryption values: OFF 0, ON 1, NOT_SUP 2, REQ 3. The server answer
follows the table in MS-TDS 2.2.6.5 ("ENCRYPTION"): a client that says OFF gets OFF (only
LOGIN7 is encrypted), ON or REQ gets ON (everything is encrypted), NOT_SUP gets NOT_SUP unless
the server requires encryption, in which case the connection is refused.
"""

from __future__ import annotations

import struct

from mssql_cdc.emulator.protocol.wire import ProtocolError

__all__ = [
    "ENCRYPT_NOT_SUP",
    "ENCRYPT_OFF",
    "ENCRYPT_ON",
    "ENCRYPT_REQ",
    "build_response",
    "negotiate",
    "parse",
]

VERSION = 0
ENCRYPTION = 1
INSTOPT = 2
THREADID = 3
MARS = 4
TRACEID = 5
FEDAUTHREQUIRED = 6
TERMINATOR = 0xFF

ENCRYPT_OFF = 0
ENCRYPT_ON = 1
ENCRYPT_NOT_SUP = 2
ENCRYPT_REQ = 3

#: SQL Server 2022 RTM-CU (16.0.4135), sent as UL_VERSION + US_SUBBUILD.
SERVER_VERSION = (16, 0, 4135, 0)


def parse(payload: bytes) -> dict[int, bytes]:
    """Option token -> its bytes. Raises ProtocolError on an inconsistent table."""
    options: dict[int, bytes] = {}
    pos = 0
    while True:
        if pos >= len(payload):
            raise ProtocolError("PRELOGIN option table has no terminator")
        token = payload[pos]
        if token == TERMINATOR:
            break
        if pos + 5 > len(payload):
            raise ProtocolError("truncated PRELOGIN option table")
        offset, length = struct.unpack_from(">HH", payload, pos + 1)
        if offset + length > len(payload):
            raise ProtocolError("PRELOGIN option points past the end of the message")
        options[token] = payload[offset : offset + length]
        pos += 5
    if VERSION not in options:
        raise ProtocolError("PRELOGIN without VERSION")
    return options


def negotiate(client: int, *, tls_available: bool, force: bool = False) -> int | None:
    """The server's ENCRYPTION answer, or ``None`` when the connection must end."""
    if not tls_available:
        if client in (ENCRYPT_ON, ENCRYPT_REQ):
            return None
        return ENCRYPT_NOT_SUP
    if client == ENCRYPT_NOT_SUP:
        return None if force else ENCRYPT_NOT_SUP
    if client == ENCRYPT_OFF:
        return ENCRYPT_REQ if force else ENCRYPT_OFF
    return ENCRYPT_ON


def build_response(encryption: int, *, fedauth: bool = False) -> bytes:
    major, minor, build, sub = SERVER_VERSION
    options: list[tuple[int, bytes]] = [
        (VERSION, struct.pack(">BBHH", major, minor, build, sub)),
        (ENCRYPTION, bytes([encryption])),
        (INSTOPT, b"\x00"),
        (THREADID, b""),
        (MARS, b"\x00"),
    ]
    if fedauth:
        options.append((FEDAUTHREQUIRED, b"\x00"))
    table_size = len(options) * 5 + 1
    table = bytearray()
    data = bytearray()
    for token, value in options:
        table += struct.pack(">BHH", token, table_size + len(data), len(value))
        data += value
    return bytes(table) + b"\xff" + bytes(data)
