"""The SQL types of a result's columns as the server declared them in COLMETADATA (MS-TDS
2.2.7.4), read through python-tds.

python-tds decodes each column's TYPE_INFO (2.2.5.4) but its cursor description keeps only a
type code, a size, a precision and a scale, in which ``char`` and ``varchar`` (and ``binary``
and ``varbinary``) look alike. :func:`columns` runs a query with python-tds recording the
TYPE_INFO's type byte (and the UserType, 80 for ``timestamp``) of each column as python-tds
reads it, and spells each column's type as T-SQL does (``nvarchar(128)``, ``binary(10)``,
``decimal(38,0)``, ``datetime2(7)``, ``varchar(max)``); a column sent as a nullable N type
(INTN, BITN, FLTN, MONEYN, DATETIMN) is spelled by its size, as SQL Server's types are.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import pytds
from pytds import tds_session

__all__ = ["Column", "columns", "connect", "first_type", "spell"]

#: TYPE_INFO type bytes of the fixed-length types (MS-TDS 2.2.5.4.1)
_FIXED = {0x30: "tinyint", 0x34: "smallint", 0x38: "int", 0x7F: "bigint", 0x32: "bit",
          0x3B: "real", 0x3E: "float", 0x3C: "money", 0x7A: "smallmoney", 0x3D: "datetime",
          0x3A: "smalldatetime", 0x24: "uniqueidentifier", 0x28: "date", 0x62: "sql_variant",
          0x23: "text", 0x63: "ntext", 0x22: "image", 0xF1: "xml"}  # fmt: skip
#: the nullable N types, by size
_BY_SIZE = {
    0x26: {1: "tinyint", 2: "smallint", 4: "int", 8: "bigint"},
    0x68: {1: "bit"},
    0x6D: {4: "real", 8: "float"},
    0x6E: {4: "smallmoney", 8: "money"},
    0x6F: {4: "smalldatetime", 8: "datetime"},
}
_SCALED = {0x29: "time", 0x2A: "datetime2", 0x2B: "datetimeoffset"}
_CHARS = {0xA7: "varchar", 0xAF: "char", 0xE7: "nvarchar", 0xEF: "nchar", 0xA5: "varbinary",
          0xAD: "binary"}  # fmt: skip


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # as T-SQL spells it
    nullable: bool


def spell(type_id: int, user_type: int, size: int, precision: int, scale: int) -> str:  # noqa: PLR0911 (a dispatch over type bytes)
    """T-SQL's spelling of a column's type from its TYPE_INFO fields."""
    if type_id in _FIXED:
        return _FIXED[type_id]
    if type_id in _BY_SIZE:
        return _BY_SIZE[type_id][size]
    if type_id in (0x6A, 0x6C):
        return f"{'decimal' if type_id == 0x6A else 'numeric'}({precision},{scale})"
    if type_id in _SCALED:
        return f"{_SCALED[type_id]}({scale})"
    if type_id in _CHARS:
        if type_id == 0xAD and user_type == 80:
            return "timestamp"
        name = _CHARS[type_id]
        if size == 0xFFFF:
            return f"{name}(max)"
        return f"{name}({size // 2 if name.startswith('n') else size})"
    if type_id == 0xF0:
        return "udt"
    raise ValueError(f"type byte 0x{type_id:02x}")


class _Recorder:
    """Keeps, for each column python-tds reads the TYPE_INFO of, its raw fields."""

    def __init__(self) -> None:
        self.types: list[tuple[int, int, int]] = []  # (type byte, user type, max size)


@contextlib.contextmanager
def _recording(recorder: _Recorder) -> Iterator[None]:
    """python-tds reads each column's TYPE_INFO (UserType, Flags, the type byte, then the
    type's own fields) here; the type byte comes from the reader as it passes by."""
    original = tds_session._TdsSession.get_type_info

    def get_type_info(self: tds_session._TdsSession, curcol: object) -> None:
        factory = self._tds.type_factory
        lookup = factory.get_type_serializer
        seen: list[int] = []

        def get_type_serializer(type_id: int) -> object:
            seen.append(type_id)
            return lookup(type_id)

        factory.get_type_serializer = get_type_serializer
        try:
            original(self, curcol)
        finally:
            del factory.get_type_serializer  # back to the class's method
        serializer = curcol.serializer  # type: ignore[attr-defined]
        size = serializer.size
        if "Max" in type(serializer).__name__:
            size = 0xFFFF
        elif seen[0] in (0xE7, 0xEF):
            size *= 2  # python-tds counts characters; TYPE_INFO bytes
        recorder.types.append((seen[0], curcol.column_usertype, int(size or 0)))  # type: ignore[attr-defined]

    tds_session._TdsSession.get_type_info = get_type_info  # type: ignore[method-assign]
    try:
        yield
    finally:
        tds_session._TdsSession.get_type_info = original  # type: ignore[method-assign]


def _precision_scale(type_id: int, described: tuple) -> tuple[int, int]:
    """python-tds describes a time type's scale as its precision."""
    precision, scale = described[4] or 0, described[5] or 0
    return (0, precision) if type_id in _SCALED else (precision, scale)


def connect(server, **kwargs):
    return pytds.connect(
        server.host, port=server.port, user=server.user, password=server.password,
        database=server.database, autocommit=True, **kwargs,
    )  # fmt: skip


def columns(cursor, sql: str, params=None) -> list[list[Column]]:
    """Every result set's columns of ``sql``, in order, as COLMETADATA declared them."""
    recorder = _Recorder()
    out: list[list[Column]] = []
    with _recording(recorder):
        cursor.execute(sql, params)
        while True:
            if cursor.description:
                described = cursor.description
                raw = recorder.types[-len(described) :]
                out.append(
                    [
                        Column(d[0], spell(t, u, size, *_precision_scale(t, d)), bool(d[6]))
                        for d, (t, u, size) in zip(described, raw, strict=True)
                    ]
                )
                cursor.fetchall()
            if not cursor.nextset():
                break
    return out


def first_type(cursor, sql: str) -> str:
    """The first column's type of ``sql``'s first result, also when python-tds cannot decode
    its value (a lone UTF-16 surrogate): the connection is not usable afterwards."""
    recorder = _Recorder()
    with _recording(recorder), contextlib.suppress(UnicodeDecodeError):
        cursor.execute(sql)
        cursor.fetchall()
    type_id, user_type, size = recorder.types[0]
    return spell(type_id, user_type, size, 0, 0)
