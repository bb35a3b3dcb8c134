"""Builders for the server's token stream (MS-TDS 2.2.7).

Each function returns the bytes of one token. The login response order is SQL Server's:
ENVCHANGE(database), INFO 5701, ENVCHANGE(collation), ENVCHANGE(language), INFO 5703,
LOGINACK, [FEATUREEXTACK], ENVCHANGE(packet size), DONE.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from mssql_cdc.emulator.protocol.types import SqlType, encode_value, type_info, user_type
from mssql_cdc.emulator.protocol.wire import b_varchar, us_varchar

__all__ = [
    "Column",
    "colmetadata",
    "done",
    "envchange",
    "error",
    "info",
    "loginack",
    "row",
]

DONE = 0xFD
DONEPROC = 0xFE
DONEINPROC = 0xFF

DONE_FINAL = 0x00
DONE_MORE = 0x01
DONE_ERROR = 0x02
DONE_INXACT = 0x04
DONE_COUNT = 0x10
DONE_ATTN = 0x20
DONE_SRVERROR = 0x100

ENV_DATABASE = 1
ENV_LANGUAGE = 2
ENV_PACKET_SIZE = 4
ENV_COLLATION = 7
ENV_BEGIN_TRAN = 8
ENV_COMMIT_TRAN = 9
ENV_ROLLBACK_TRAN = 10

SERVER_NAME = "EMULATOR"


@dataclass(frozen=True)
class Column:
    name: str
    type: SqlType
    nullable: bool = True
    identity: bool = False


def colmetadata(columns: Sequence[Column]) -> bytes:
    """COLMETADATA (2.2.7.4): count, then UserType, Flags, TYPE_INFO and name per column."""
    out = bytearray(b"\x81")
    out += struct.pack("<H", len(columns))
    for col in columns:
        flags = 0x01 if col.nullable else 0x00
        flags |= 0x08  # usUpdateable = 2 (unknown), bits 2-3
        if col.identity:
            flags |= 0x10
        out += struct.pack("<IH", user_type(col.type), flags)
        out += type_info(col.type, nullable=col.nullable)
        out += b_varchar(col.name)
    return bytes(out)


def row(columns: Sequence[Column], values: Sequence[object]) -> bytes:
    """ROW (2.2.7.19): the values in column order."""
    parts = [b"\xd1"]
    for col, value in zip(columns, values, strict=False):
        parts.append(encode_value(col.type, value, nullable=col.nullable))
    return b"".join(parts)


def done(status: int = DONE_FINAL, curcmd: int = 0, rows: int = 0, token: int = DONE) -> bytes:
    """DONE / DONEPROC / DONEINPROC (2.2.7.6-8): status, current command, u64 row count."""
    return struct.pack("<BHHQ", token, status, curcmd, rows)


def _message(
    token: int, number: int, state: int, klass: int, text: str, *, proc: str = ""
) -> bytes:
    body = struct.pack("<iBB", number, state, klass)
    body += us_varchar(text) + b_varchar(SERVER_NAME) + b_varchar(proc) + struct.pack("<i", 1)
    return bytes([token]) + struct.pack("<H", len(body)) + body


def error(number: int, state: int, klass: int, text: str, proc: str = "") -> bytes:
    """ERROR (2.2.7.10)."""
    return _message(0xAA, number, state, klass, text, proc=proc)


def info(number: int, state: int, klass: int, text: str) -> bytes:
    """INFO (2.2.7.13)."""
    return _message(0xAB, number, state, klass, text)


def envchange(kind: int, new: bytes, old: bytes) -> bytes:
    """ENVCHANGE (2.2.7.9); ``new``/``old`` already carry their own length prefixes."""
    body = bytes([kind]) + new + old
    return b"\xe3" + struct.pack("<H", len(body)) + body


def env_text(kind: int, new: str, old: str) -> bytes:
    return envchange(kind, b_varchar(new), b_varchar(old))


def env_bytes(kind: int, new: bytes, old: bytes) -> bytes:
    return envchange(kind, bytes([len(new)]) + new, bytes([len(old)]) + old)


def env_routing(host: str, port: int) -> bytes:
    """ENVCHANGE routing (2.2.7.9, type 20): u16 length, protocol 0 (TCP), u16 port, the
    server name as US_VARCHAR; the old value is empty (u16 0)."""
    name = host.encode("utf-16-le")
    body = b"\x00" + struct.pack("<HH", port, len(name) // 2) + name
    return envchange(20, struct.pack("<H", len(body)) + body, b"\x00\x00")


def loginack(tds_version: int, version: tuple[int, int, int]) -> bytes:
    """LOGINACK (2.2.7.14): interface 1 (T-SQL), TDS version (big-endian), program name."""
    major, minor, build = version
    body = b"\x01" + struct.pack(">I", tds_version) + b_varchar("Microsoft SQL Server")
    body += struct.pack(">BBH", major, minor, build)
    return b"\xad" + struct.pack("<H", len(body)) + body


def featureextack(features: dict[int, bytes]) -> bytes:
    """FEATUREEXTACK (2.2.7.11)."""
    out = bytearray(b"\xae")
    for feature, data in features.items():
        out += bytes([feature]) + struct.pack("<I", len(data)) + data
    out += b"\xff"
    return bytes(out)


def returnvalue(ordinal: int, name: str, t: SqlType, value: object) -> bytes:
    """RETURNVALUE (2.2.7.18) of an output parameter of an RPC: the parameter's ordinal in the
    request, its name as sent, status 0x01 (output parameter), UserType, Flags (nullable),
    TYPE_INFO and the value."""
    head = struct.pack("<H", ordinal) + b_varchar(name) + b"\x01"
    head += struct.pack("<IH", user_type(t), 0x01)
    return b"\xac" + head + type_info(t, nullable=True) + encode_value(t, value)


def returnstatus(value: int) -> bytes:
    """RETURNSTATUS (2.2.7.18)."""
    return b"\x79" + struct.pack("<i", value)
