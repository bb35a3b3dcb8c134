"""Request payloads: ALL_HEADERS (MS-TDS 2.2.5.3), SQLBatch text (2.2.6.7), RPC (2.2.6.6)
and Transaction Manager requests (2.2.6.9)."""

from __future__ import annotations

from dataclasses import dataclass

from mssql_cdc.emulator.protocol.types import SqlType, decode_param
from mssql_cdc.emulator.protocol.wire import ProtocolError, Reader, decode_utf16

__all__ = ["RpcCall", "RpcParam", "TmRequest", "parse_batch", "parse_rpc", "parse_tm"]

#: Well-known procedure ids of RPC requests that use ProcID instead of a name (2.2.6.6).
PROC_IDS = {
    1: "sp_cursor",
    10: "sp_executesql",
    11: "sp_prepare",
    12: "sp_execute",
    13: "sp_prepexec",
    15: "sp_unprepare",
}


@dataclass(frozen=True)
class RpcParam:
    name: str
    status: int
    type: SqlType
    value: object


@dataclass(frozen=True)
class RpcCall:
    name: str
    params: list[RpcParam]


@dataclass(frozen=True)
class TmRequest:
    kind: int  # 5 begin, 7 commit, 8 rollback
    begin_new: bool


def skip_all_headers(reader: Reader) -> None:
    total = reader.u32()
    if total < 4 or total - 4 > reader.remaining:
        raise ProtocolError(f"invalid ALL_HEADERS length {total}")
    reader.take(total - 4)


def parse_batch(payload: bytes) -> str:
    reader = Reader(payload)
    skip_all_headers(reader)
    text = reader.take(reader.remaining)
    if len(text) % 2:
        raise ProtocolError("SQLBatch text has an odd number of bytes")
    return decode_utf16(text)


def parse_rpc(payload: bytes) -> list[RpcCall]:
    reader = Reader(payload)
    skip_all_headers(reader)
    calls = []
    while reader.remaining:
        name_len = reader.u16()
        if name_len == 0xFFFF:
            proc_id = reader.u16()
            name = PROC_IDS.get(proc_id, f"#proc{proc_id}")
        else:
            name = decode_utf16(reader.take(name_len * 2))
        reader.u16()  # option flags
        params = []
        while reader.remaining:
            if payload[reader.pos] in (0xFF, 0x80):  # batch separator
                reader.pos += 1
                break
            pname = reader.b_varchar()
            status = reader.u8()
            ptype, value = decode_param(reader)
            params.append(RpcParam(pname, status, ptype, value))
        calls.append(RpcCall(name, params))
    if not calls:
        raise ProtocolError("RPC request without a procedure")
    return calls


def parse_tm(payload: bytes) -> TmRequest:
    reader = Reader(payload)
    skip_all_headers(reader)
    kind = reader.u16()
    if kind == 5:
        return TmRequest(5, False)
    if kind in (7, 8):
        begin_new = False
        if reader.remaining:
            reader.b_varchar()
            if reader.remaining:
                begin_new = bool(reader.u8() & 0x01)
        return TmRequest(kind, begin_new)
    raise ProtocolError(f"unsupported transaction manager request {kind}")
